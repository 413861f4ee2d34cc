//! Where the next run of a study will put a ratio, from this run and the
//! earlier runs of the same study on the same machine.
//!
//! A run's interval is drawn over its launches, and launches sample what
//! differs between starts of a server. They cannot sample what differs
//! between runs minutes apart: a machine whose state drifts over minutes
//! (another tenant, the page cache, a thermal phase) moves every launch of
//! a run together. Runs of one study are then a third level of the design,
//! and its variance can only be seen across runs: one run, however many
//! launches it has, says nothing of it.
//!
//! The model is random effects at two levels: a launch's log ratio is the
//! truth, plus its run's effect (variance τ²), plus its own (σ²). A run's
//! mean over L launches varies by τ² + σ²/L around the truth, and the next
//! run's mean differs from this one's by twice that. Two estimates of
//! τ² + σ²/L are at hand: the spread of the runs' means (n − 1 degrees of
//! freedom, and it contains τ²), and the launches' spread pooled over
//! every run, over L (many more degrees of freedom, but blind to τ²). The
//! larger is taken, with Student's t at its own degrees of freedom: with
//! no run effect the pooled launches govern, and the range is no wider
//! than one run alone gives; with one, the runs' own spread does, and the
//! range is as wide as that truth. Simulated over τ from 0 to twice σ,
//! this covers the next run's mean 95–99% of the time from three runs on;
//! two runs cover it as promised while τ is at most half of σ, and 91% of
//! the time beyond (the tests below check those cases).
//!
//! Launches themselves may differ more than a run's few show. A server
//! whose starts are bimodal (Apache's event MPM with a thousand threads in
//! one process: in about one start in six, where address-space layout
//! puts a hot futex on the hash chain its idle workers wait on,
//! `futex_wake` takes 15% of its CPU and it serves 30% less) shows no
//! slow start in two runs of five launches out of five, and the spread of
//! those launches promises a range the next run leaves. The machine's A/A
//! calibration starts each server many times; the launch variance it
//! found is a [`Prior`]: the larger of it and the run's own is taken, at
//! its own degrees of freedom, for the run's interval and its next-run
//! range alike.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The range the next run's mean log ratio should land in, around this
/// run's mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    /// This run's mean of its launches' log ratios.
    pub mean: f64,
    /// Half the 95% range, in log ratio.
    pub half: f64,
    /// Runs it was drawn over, this one included.
    pub runs: u32,
    /// The runs' means spread beyond what their launches give: the range
    /// is the runs' own spread.
    pub runs_differ: bool,
    /// The calibration's launch variance, larger than the runs' own, set
    /// the range.
    pub prior_governs: bool,
}

fn t975(df: f64) -> Option<f64> {
    Some(StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(0.975))
}

/// What the machine's calibration found of one pair's launches before
/// this run: the variance of one launch's log ratio, and the degrees of
/// freedom it was estimated with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    pub var: f64,
    pub df: usize,
}

/// The launch variance a run's ranges are drawn with: the larger of the
/// one seen (`var` at `df`) and the prior's, at the degrees of freedom of
/// whichever is taken, and whether the prior's was.
fn larger(var: f64, df: usize, prior: Option<Prior>) -> (f64, usize, bool) {
    match prior {
        Some(p) if p.df > 0 && p.var > var => (p.var, p.df, true),
        _ => (var, df, false),
    }
}

/// The 95% interval of the mean log ratio of one run's launches, with the
/// launch variance no smaller than `prior`'s: its mean, half-width, and
/// whether the prior set it. `None` with fewer than two launches.
pub fn interval(this: &[f64], prior: Option<Prior>) -> Option<(f64, f64, bool)> {
    if this.len() < 2 {
        return None;
    }
    let mean = crate::mean(this)?;
    let own = crate::variance(this)?;
    let (var, df, governs) = larger(own, this.len() - 1, prior);
    Some((
        mean,
        t975(df as f64)? * (var / this.len() as f64).sqrt(),
        governs,
    ))
}

/// The next run's range from each run's launch log ratios, the earliest
/// first and this run last. Runs with fewer than two launches say nothing
/// of either spread and are passed over; `None` when this run itself has
/// fewer than two.
pub fn next_run(runs: &[&[f64]]) -> Option<Reach> {
    next_run_given(runs, None)
}

/// [`next_run`] with the launch variance no smaller than `prior`'s.
pub fn next_run_given(runs: &[&[f64]], prior: Option<Prior>) -> Option<Reach> {
    let this = runs.last()?;
    if this.len() < 2 {
        return None;
    }
    let usable: Vec<&[f64]> = runs.iter().copied().filter(|r| r.len() >= 2).collect();
    let mean = crate::mean(this)?;
    let launches = this.len() as f64;
    let df_seen: usize = usable.iter().map(|r| r.len() - 1).sum();
    let seen = usable
        .iter()
        .map(|r| crate::variance(r).unwrap_or(0.0) * (r.len() - 1) as f64)
        .sum::<f64>()
        / df_seen as f64;
    let (pooled, df_within, prior_governs) = larger(seen, df_seen, prior);
    let from_launches = pooled / launches;
    let means: Vec<f64> = usable.iter().filter_map(|r| crate::mean(r)).collect();
    let (var, df, runs_differ) = match crate::variance(&means) {
        Some(between) if between > from_launches => (between, means.len() - 1, true),
        _ => (from_launches, df_within, false),
    };
    let half = t975(df as f64)? * (2.0 * var).sqrt();
    Some(Reach {
        mean,
        half,
        runs: usable.len() as u32,
        runs_differ,
        prior_governs: prior_governs && !runs_differ,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} against {b}");
    }

    #[test]
    fn one_run_alone_is_its_launches_spread_for_this_run_and_the_next() {
        let this = [0.10, 0.12, 0.08, 0.11, 0.09];
        let r = next_run(&[&this]).unwrap();
        let s2 = crate::variance(&this).unwrap();
        close(r.mean, 0.10);
        close(r.half, 2.776445105 * (2.0 * s2 / 5.0).sqrt());
        assert_eq!((r.runs, r.runs_differ), (1, false));
    }

    #[test]
    fn runs_that_agree_pool_their_launches_and_stay_as_narrow() {
        // Three runs with the same mean and the same spread: the pooled
        // spread is each run's, at 12 degrees of freedom, not 4.
        let run = [0.10, 0.12, 0.08, 0.11, 0.09];
        let r = next_run(&[&run, &run, &run]).unwrap();
        let s2 = crate::variance(&run).unwrap();
        close(r.half, 2.178812830 * (2.0 * s2 / 5.0).sqrt());
        assert_eq!((r.runs, r.runs_differ), (3, false));
        let alone = next_run(&[&run]).unwrap();
        assert!(r.half < alone.half);
    }

    #[test]
    fn runs_apart_beyond_their_launches_set_the_range_by_their_own_spread() {
        // Launches within ±0.5% of their run's mean; the runs' means 8%
        // apart (0.165 against 0.179 of another server, as one server's
        // runs measured here were).
        let at = |m: f64| [m - 0.005, m, m + 0.005];
        let (a, b, c) = (at(0.165f64.ln()), at(0.172f64.ln()), at(0.179f64.ln()));
        let r = next_run(&[&a, &b, &c]).unwrap();
        let between = crate::variance(&[0.165f64.ln(), 0.172f64.ln(), 0.179f64.ln()]).unwrap();
        close(r.half, 4.302652730 * (2.0 * between).sqrt());
        assert_eq!((r.runs, r.runs_differ), (3, true));
        // Each earlier run's ratio is inside the range drawn from the last.
        for m in [0.165f64, 0.172] {
            assert!((m.ln() - r.mean).abs() <= r.half);
        }
        // This run alone would have excluded the first.
        let alone = next_run(&[&c]).unwrap();
        assert!((0.165f64.ln() - alone.mean).abs() > alone.half);
    }

    #[test]
    fn a_run_of_one_launch_says_nothing_and_is_passed_over() {
        let run = [0.10, 0.12, 0.08];
        assert_eq!(next_run(&[&run, &[0.5]]), None);
        let r = next_run(&[&[0.5], &run]).unwrap();
        assert_eq!(r.runs, 1);
    }

    /// A deterministic normal sample (xorshift and Box–Muller): the
    /// coverage below is the same on every machine.
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn next(&mut self, sd: f64) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// How often the range drawn after `n` runs holds the next run's mean,
    /// with run effects of `tau` and launch effects of `sigma`, 5 launches
    /// a run; and the median half-width.
    fn coverage(n: usize, tau: f64, sigma: f64) -> (f64, f64) {
        let mut g = Normal(0x2545_f491_4f6c_dd1d);
        let trials = 2000;
        let (mut hit, mut halves) = (0, Vec::new());
        for _ in 0..trials {
            let runs: Vec<Vec<f64>> = (0..=n)
                .map(|_| {
                    let u = g.next(tau);
                    (0..5).map(|_| u + g.next(sigma)).collect()
                })
                .collect();
            let seen: Vec<&[f64]> = runs[..n].iter().map(Vec::as_slice).collect();
            let r = next_run(&seen).unwrap();
            let next = crate::mean(&runs[n]).unwrap();
            hit += usize::from((next - r.mean).abs() <= r.half);
            halves.push(r.half);
        }
        (hit as f64 / trials as f64, crate::median(&halves).unwrap())
    }

    /// One launch's log ratio against a steady server, of a server whose
    /// starts are bimodal: one in six serves 30% less.
    fn bimodal(g: &mut Normal) -> f64 {
        let slow = g.uniform() < 1.0 / 6.0;
        (if slow { 0.7f64.ln() } else { 0.0 }) + g.next(0.01)
    }

    /// How often one run of 5 launches, with and without the prior a
    /// calibration of 5 runs of 5 twin launches gives, holds the next
    /// run's mean; and how often its own interval holds the truth (the
    /// mixture's mean log ratio).
    fn bimodal_coverage() -> [f64; 4] {
        let mut g = Normal(0x9e37_79b9_7f4a_7c15);
        let truth = (5.0 * 0.0 + 0.7f64.ln()) / 6.0;
        let trials = 2000;
        let mut hits = [0usize; 4];
        for _ in 0..trials {
            // The calibration: twins of the server, each launch of each
            // twin bimodal; a twin pair's log ratio carries both twins'
            // variance, so one server's is half the pooled one.
            let (mut ss, mut df) = (0.0, 0);
            for _ in 0..5 {
                let twins: Vec<f64> = (0..5).map(|_| bimodal(&mut g) - bimodal(&mut g)).collect();
                ss += crate::variance(&twins).unwrap() * 4.0;
                df += 4;
            }
            let prior = Prior {
                var: ss / df as f64 / 2.0,
                df,
            };
            let this: Vec<f64> = (0..5).map(|_| bimodal(&mut g)).collect();
            let next: Vec<f64> = (0..5).map(|_| bimodal(&mut g)).collect();
            let next = crate::mean(&next).unwrap();
            for (k, p) in [None, Some(prior)].into_iter().enumerate() {
                let r = next_run_given(&[&this], p).unwrap();
                hits[k] += usize::from((next - r.mean).abs() <= r.half);
                let (m, half, _) = interval(&this, p).unwrap();
                hits[2 + k] += usize::from((truth - m).abs() <= half);
            }
        }
        hits.map(|h| h as f64 / trials as f64)
    }

    #[test]
    fn a_calibration_that_saw_slow_starts_holds_the_next_run_one_run_alone_misses() {
        let [alone, given, ci_alone, ci_given] = bimodal_coverage();
        // Two runs in five see no slow start and promise a range the next
        // run leaves whenever it has one.
        assert!(alone < 0.8, "one run alone held the next {alone}");
        assert!(given >= 0.94, "with the calibration {given}");
        assert!(ci_alone < 0.8, "its interval held the truth {ci_alone}");
        assert!(ci_given >= 0.94, "with the calibration {ci_given}");
    }

    #[test]
    fn the_prior_is_taken_only_where_it_is_wider_and_at_its_own_freedom() {
        let this = [0.10, 0.12, 0.08, 0.11, 0.09];
        let own = crate::variance(&this).unwrap();
        // Narrower than the run's own launches: the run's figures stand.
        let narrow = Prior {
            var: own / 2.0,
            df: 40,
        };
        let (m, half, governs) = interval(&this, Some(narrow)).unwrap();
        close(m, 0.10);
        close(half, 2.776445105 * (own / 5.0).sqrt());
        assert!(!governs);
        assert_eq!(next_run_given(&[&this], Some(narrow)), next_run(&[&this]));
        // Wider: its variance at its 20 degrees of freedom.
        let wide = Prior { var: 0.01, df: 20 };
        let (_, half, governs) = interval(&this, Some(wide)).unwrap();
        close(half, 2.085963447 * (0.01f64 / 5.0).sqrt());
        assert!(governs);
        let r = next_run_given(&[&this], Some(wide)).unwrap();
        close(r.half, 2.085963447 * (2.0 * 0.01f64 / 5.0).sqrt());
        assert_eq!((r.runs, r.runs_differ, r.prior_governs), (1, false, true));
    }

    /// What two runs can promise, stated in docs/methodology.md ("Runs as
    /// a level"): the earlier run's difference from this one is the runs'
    /// spread to one degree of freedom, and about one time in three it
    /// reads below the launches' spread however large the run effect is;
    /// the launches then set a range too narrow for it. With no run effect,
    /// or half the launches', two runs hold the next one as promised; at
    /// once or twice the launches', 91%; a third run restores the promise.
    #[test]
    fn two_runs_hold_the_next_less_often_where_runs_differ_as_much_as_launches() {
        let at = |n, tau| coverage(n, tau, 0.02).0;
        assert!(at(2, 0.0) >= 0.95, "{}", at(2, 0.0));
        assert!(at(2, 0.01) >= 0.95, "{}", at(2, 0.01));
        for tau in [0.02, 0.04] {
            let c = at(2, tau);
            assert!((0.89..0.93).contains(&c), "two runs, tau {tau}: {c}");
            let c = at(3, tau);
            assert!((0.95..0.99).contains(&c), "three runs, tau {tau}: {c}");
        }
    }

    #[test]
    fn the_range_holds_the_next_run_whether_or_not_runs_differ() {
        // Runs that differ by as much as launches do: one run alone misses
        // the next one's mean far more often than 5%; five runs hold it.
        let (alone, _) = coverage(1, 0.02, 0.02);
        assert!(alone < 0.75, "one run alone covered {alone}");
        let (five, _) = coverage(5, 0.02, 0.02);
        assert!((0.94..=0.99).contains(&five), "five runs covered {five}");
        // No run effect: five runs hold it and are no wider than one run
        // alone (the pooled launches have more degrees of freedom).
        let (steady, width) = coverage(5, 0.0, 0.02);
        let (_, alone_width) = coverage(1, 0.0, 0.02);
        assert!(
            (0.94..=0.995).contains(&steady),
            "steady runs covered {steady}"
        );
        assert!(width <= alone_width, "{width} wider than {alone_width}");
    }
}
