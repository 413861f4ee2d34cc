//! The earlier runs of a study on this machine, for the range the next run
//! should land in. Launches sample what differs between starts of a
//! server; only runs sample what differs between runs minutes apart (a
//! phase of the machine that moves every launch of a run together), so a
//! run's range for the next one takes in the earlier runs' pooled ratios
//! as well as its own (`throng_stats::reruns`), and no narrower than the
//! launch spread the machine's calibration found of its servers
//! ([`LaunchSpreads`]).

use throng_model::{Comparison, Decision, Environment, IntervalKind, RunKind};
use throng_stats::reruns::Prior;
use throng_store::Store;

use crate::calibration::same_machine;
use crate::launch_prior::LaunchSpreads;
use crate::study::Study;

/// Earlier runs the range is drawn over at most, the latest first: the
/// machine's state of a week ago says less of the next run than of today.
pub const MAX_EARLIER: usize = 19;

/// The pooled comparisons of each earlier complete run of the same study
/// (its name and its file, word for word) on the same machine, the
/// earliest first.
#[derive(Debug, Clone, Default)]
pub struct Earlier {
    runs: Vec<(i64, Vec<Comparison>)>,
    /// What the machine's calibrations found of the servers' launches.
    pub spreads: LaunchSpreads,
}

impl Earlier {
    /// None: what a run learns from when the store holds no earlier run.
    pub fn none() -> Earlier {
        Earlier::default()
    }

    /// The earlier runs of `study` on `here` in `store`.
    pub fn load(store: &Store, study: &Study, here: &Environment) -> anyhow::Result<Earlier> {
        let mut runs = Vec::new();
        for r in store.list_runs()?.into_iter().rev() {
            if runs.len() == MAX_EARLIER {
                break;
            }
            let same_study = matches!(r.kind(), RunKind::Study { name, toml }
                if name == study.name && toml == study.toml);
            if !r.complete || !same_study || !same_machine(here, &r.environment) {
                continue;
            }
            let pooled: Vec<Comparison> = store
                .load_outline(r.id)?
                .comparisons
                .into_iter()
                .filter(|c| c.concurrency.is_none())
                .collect();
            runs.push((r.id, pooled));
        }
        runs.reverse();
        Ok(Earlier {
            runs,
            spreads: LaunchSpreads::load(store, study, here)?,
        })
    }

    /// The earlier runs' ids, the earliest first.
    pub fn ids(&self) -> Vec<i64> {
        self.runs.iter().map(|(id, _)| *id).collect()
    }

    /// Each earlier run's launch log ratios of B over A at `c`'s workload
    /// and core count, turned round where it stored A over B; runs that
    /// did not draw that pair over launches are left out.
    fn launches_of(&self, c: &Comparison) -> Vec<Vec<f64>> {
        self.runs
            .iter()
            .filter_map(|(_, cs)| {
                let o = cs.iter().find(|o| {
                    o.workload == c.workload
                        && o.cores == c.cores
                        && o.interval == IntervalKind::Launches
                        && ((o.a == c.a && o.b == c.b) || (o.a == c.b && o.b == c.a))
                })?;
                let sign = if o.a == c.a { 1.0 } else { -1.0 };
                let logs: Option<Vec<f64>> = o
                    .launch_ratios
                    .iter()
                    .map(|r| (r.is_finite() && *r > 0.0).then(|| sign * r.ln()))
                    .collect();
                logs
            })
            .collect()
    }

    /// Where the machine's calibration found `c`'s servers' launches
    /// further apart than its own are, its interval drawn with that
    /// spread, and decided again at `threshold`: a level's comparison as
    /// well as the sweep's. The launch log ratios, and the calibration's
    /// prior for them.
    pub fn bound(&self, c: &mut Comparison, threshold: f64) -> (Vec<f64>, Option<Prior>) {
        let own: Vec<f64> = c.launch_ratios.iter().map(|r| r.ln()).collect();
        if c.interval != IntervalKind::Launches {
            return (own, None);
        }
        let prior = self.spreads.prior(c);
        if let Some((m, half, true)) = throng_stats::reruns::interval(&own, prior) {
            c.ci_low = (m - half).exp();
            c.ci_high = (m + half).exp();
            c.decision = Decision::of(c.ci_low, c.ci_high, threshold);
        }
        (own, prior)
    }

    /// Each pooled comparison drawn over launches is bounded as
    /// [`Earlier::bound`] says, and gets its next-run range from the
    /// earlier runs' launches and its own; one with no earlier run keeps
    /// the range its launches alone give.
    pub fn widen(&self, cs: &mut [Comparison], threshold: f64) {
        for c in cs
            .iter_mut()
            .filter(|c| c.interval == IntervalKind::Launches && c.concurrency.is_none())
        {
            let (own, prior) = self.bound(c, threshold);
            let mut runs = self.launches_of(c);
            runs.push(own);
            let seen: Vec<&[f64]> = runs.iter().map(Vec::as_slice).collect();
            if let Some(r) = throng_stats::reruns::next_run_given(&seen, prior) {
                c.next_run = Some([(r.mean - r.half).exp(), (r.mean + r.half).exp()]);
                c.next_run_runs = Some(r.runs);
                c.runs_differ = r.runs_differ;
            }
        }
    }

    /// The run's note, when it has earlier runs to learn from: "next-run
    /// ranges drawn over this run and 4 earlier runs of this study on this
    /// machine (3, 4, 5, 6)". Without one the report says what the ranges
    /// cannot see.
    pub fn note(&self) -> Option<String> {
        let ids = self.ids();
        if ids.is_empty() {
            return None;
        }
        Some(format!(
            "next-run ranges drawn over this run and {} earlier run{} of this study on this \
             machine ({})",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            ids.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled(a: &str, b: &str, launches: &[f64]) -> Comparison {
        Comparison {
            interval: IntervalKind::Launches,
            launch_ratios: launches.to_vec(),
            ..throng_testkit::model::comparison(
                a,
                b,
                None,
                [1.0, 1.0, 1.0],
                40,
                throng_model::Decision::Undecided,
            )
        }
    }

    #[test]
    fn an_earlier_run_that_stored_the_pair_the_other_way_round_counts_turned_round() {
        let earlier = Earlier {
            spreads: LaunchSpreads::none(),
            runs: vec![
                (3, vec![pooled("b", "a", &[2.0, 2.0, 2.0])]),
                (4, vec![pooled("a", "c", &[9.0, 9.0])]),
            ],
        };
        let c = pooled("a", "b", &[0.5, 0.5]);
        let logs = earlier.launches_of(&c);
        assert_eq!(logs.len(), 1);
        for x in &logs[0] {
            assert!((x - 0.5f64.ln()).abs() < 1e-12);
        }
    }

    #[test]
    fn runs_apart_widen_the_next_run_range_and_say_over_how_many_runs() {
        let at = |r: f64| [r * 0.995, r, r * 1.005];
        let earlier = Earlier {
            spreads: LaunchSpreads::none(),
            runs: vec![
                (1, vec![pooled("nginx", "apache", &at(0.165))]),
                (2, vec![pooled("nginx", "apache", &at(0.172))]),
            ],
        };
        let mut cs = [pooled("nginx", "apache", &at(0.179))];
        let mut alone = cs.clone();
        Earlier::none().widen(&mut alone, 0.05);
        earlier.widen(&mut cs, 0.05);
        let [lo, hi] = cs[0].next_run.unwrap();
        assert!(lo <= 0.165 && hi >= 0.179, "{lo}–{hi}");
        assert_eq!((cs[0].next_run_runs, cs[0].runs_differ), (Some(3), true));
        let [lo1, _] = alone[0].next_run.unwrap();
        assert!(lo1 > 0.172, "the run alone reached {lo1}");
        assert_eq!(
            (alone[0].next_run_runs, alone[0].runs_differ),
            (Some(1), false)
        );
        assert_eq!(Earlier::none().note(), None);
        assert_eq!(
            earlier.note().unwrap(),
            "next-run ranges drawn over this run and 2 earlier runs of this study on this \
             machine (1, 2)"
        );
    }
}
