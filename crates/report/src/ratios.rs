//! Paired ratios between servers, as the lab stored them: B's requests per
//! second over A's, from rounds of the two measured back to back, with a
//! distribution-free interval and the lab's decision. Slices measured close
//! in time share the machine's drift, so their ratio says more than two
//! means measured minutes apart; the report leads with it, worded the way
//! hyperfine words its comparisons.
//!
//! Lines here are plain text; each format escapes them whole, since server
//! and workload names come from the study.

use throng_model::{Comparison, Decision, RunData};

use crate::cost::{self, SyscallGap};
use crate::figures::{self, grouped, StepFigures};

/// The server the others are compared against: the run's, or for runs
/// stored before it was named, the first server.
pub fn baseline(run: &RunData) -> Option<String> {
    run.run
        .baseline
        .clone()
        .or_else(|| figures::server_names(run).into_iter().next())
}

/// `c` as B = `b` over A = `a`: as stored, turned around when stored the
/// other way, `None` when it compares other servers.
pub fn oriented(c: &Comparison, a: &str, b: &str) -> Option<Comparison> {
    if c.a == a && c.b == b {
        Some(c.clone())
    } else if c.a == b && c.b == a {
        // The median of 1/x is 1/median, and the interval's bounds swap.
        Some(Comparison {
            a: a.to_string(),
            b: b.to_string(),
            ratio: 1.0 / c.ratio,
            ci_low: 1.0 / c.ci_high,
            ci_high: 1.0 / c.ci_low,
            decision: match c.decision {
                Decision::Higher => Decision::Lower,
                Decision::Lower => Decision::Higher,
                d => d,
            },
            launch_ratios: c.launch_ratios.iter().map(|r| 1.0 / r).collect(),
            next_run: c.next_run.map(|[lo, hi]| [1.0 / hi, 1.0 / lo]),
            ..c.clone()
        })
    } else {
        None
    }
}

/// The decision in words.
pub fn decision_words(d: Decision) -> &'static str {
    match d {
        Decision::Equal => "equal within noise",
        d => d.name(),
    }
}

/// Decimals for a comparison's figures: two, or as many more (up to four)
/// as it takes for the interval's bounds to read apart, since "0.60–0.60"
/// would hide a tight interval as if it had none.
fn decimals(c: &Comparison) -> usize {
    if !c.bounded() {
        return 2;
    }
    (2..4)
        .find(|&d| format!("{:.d$}", c.ci_low) != format!("{:.d$}", c.ci_high))
        .unwrap_or(4)
}

/// "0.80×".
pub fn ratio_text(c: &Comparison) -> String {
    format!("{:.d$}×", c.ratio, d = decimals(c))
}

/// "0.79–0.81", or for a ratio no interval bounds, why: its stored
/// bounds are the ratio itself and would read as certainty.
pub fn interval_text(c: &Comparison) -> String {
    if !c.bounded() {
        return c.unbounded_words();
    }
    let d = decimals(c);
    format!("{:.d$}–{:.d$}", c.ci_low, c.ci_high)
}

/// "(95% CI 0.79–0.81, 48 pairs)", or "(too few pairs to bound: 3)".
pub fn interval_aside(c: &Comparison) -> String {
    if c.bounded() {
        format!("(95% CI {}, {})", interval_text(c), pairs_text(c.pairs))
    } else {
        format!("({})", interval_text(c))
    }
}

/// The relative noise band around 1 the lab decided with: the threshold
/// the run stored; for a run stored before it kept one, the study's
/// `[rounds] precision` as the run stored its study file, else the lab's
/// default.
pub fn threshold(run: &RunData) -> f64 {
    const DEFAULT: f64 = throng_model::DEFAULT_PRECISION;
    if let Some(t) = &run.run.threshold {
        return t.value;
    }
    let Ok(study) = run.run.study_toml.parse::<toml::Table>() else {
        return DEFAULT;
    };
    study
        .get("rounds")
        .and_then(|r| r.get("precision"))
        .and_then(|p| p.as_float().or_else(|| p.as_integer().map(|i| i as f64)))
        .filter(|p| p.is_finite() && *p > 0.0)
        .unwrap_or(DEFAULT)
}

/// "20 pairs", "1 pair".
pub fn pairs_text(pairs: u32) -> String {
    if pairs == 1 {
        "1 pair".to_string()
    } else {
        format!("{} pairs", grouped(pairs.into()))
    }
}

/// A comparison's sweep in a few words: "1 core, tiny, all levels",
/// "2 cores, tiny, c=50".
pub fn sweep_label(c: &Comparison) -> String {
    let level = c
        .concurrency
        .map_or_else(|| "all levels".to_string(), |l| format!("c={l}"));
    figures::labelled([
        figures::known_cores(c.cores),
        Some(c.workload.clone()),
        Some(level),
    ])
}

/// The stored per-level comparisons in reading order, one group per
/// workload and core count.
pub fn level_groups(run: &RunData) -> Vec<Vec<&Comparison>> {
    let mut out: Vec<Vec<&Comparison>> = Vec::new();
    for c in sorted(run).into_iter().filter(|c| c.concurrency.is_some()) {
        match out.last_mut() {
            Some(g) if g[0].workload == c.workload && g[0].cores == c.cores => g.push(c),
            _ => out.push(vec![c]),
        }
    }
    out
}

/// The stored comparisons in reading order: workloads as the run lists
/// them, fewer cores first, the pooled one before the levels, then the
/// pairs in server order.
pub fn sorted(run: &RunData) -> Vec<&Comparison> {
    let workloads = figures::workload_names(run);
    let servers = figures::server_names(run);
    let at = |v: &[String], x: &str| v.iter().position(|y| y == x).unwrap_or(usize::MAX);
    let mut v: Vec<&Comparison> = run.comparisons.iter().collect();
    v.sort_by_key(|c| {
        (
            at(&workloads, &c.workload),
            c.cores,
            c.concurrency.map_or(0, |l| u64::from(l) + 1),
            // A positive rate's bits order as the rate does.
            c.rate.map_or(0, |r| r.to_bits()),
            at(&servers, &c.a),
            at(&servers, &c.b),
        )
    });
    v
}

/// One server's pooled ratio against the baseline, with the syscall the
/// two differ in most.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioLine {
    /// B over the baseline.
    pub comparison: Comparison,
    pub gap: Option<SyscallGap>,
    /// How their CPU per request differs, from their profiles.
    pub cpu: Option<crate::where_cpu::CpuGap>,
    /// The two servers' measured steps behind the ratio whose verdicts are
    /// suspect, with the reasons: `None` when all are valid.
    pub suspect: Option<String>,
    /// Compared on bytes per second, as the lab pairs rounds of a large
    /// file, rather than on requests per second.
    pub bytes: bool,
}

impl RatioLine {
    /// "lighttpd: 1.62× nginx's requests per second (95% CI 1.57–1.67,
    /// 48 pairs) — higher", and the largest syscall difference after it.
    pub fn sentence(&self) -> String {
        let c = &self.comparison;
        let mut s = format!(
            "{}: {} {}'s {} {} — {}",
            c.b,
            ratio_text(c),
            c.a,
            if self.bytes {
                "MB/s"
            } else {
                "requests per second"
            },
            interval_aside(c),
            decision_words(c.decision)
        );
        if let Some(g) = &self.gap {
            s.push_str("; ");
            s.push_str(&g.sentence());
        }
        if let Some(g) = &self.cpu {
            s.push_str("; ");
            s.push_str(&g.sentence());
        }
        if let Some(w) = &self.suspect {
            s.push_str("; ");
            s.push_str(w);
        }
        s
    }
}

/// The ratio lines of one workload at one core count.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioGroup {
    pub workload: String,
    pub cores: u32,
    pub lines: Vec<RatioLine>,
}

impl RatioGroup {
    /// "tiny, 1 core".
    pub fn title(&self) -> String {
        figures::labelled([
            Some(self.workload.clone()),
            figures::known_cores(self.cores),
        ])
    }
}

/// Every other server's pooled ratio against the baseline, per workload
/// and core count; empty when the run stored no pooled comparison with the
/// baseline (runs from before paired rounds).
pub fn summary(run: &RunData, figs: &[StepFigures]) -> Vec<RatioGroup> {
    let Some(base) = baseline(run) else {
        return Vec::new();
    };
    let mut groups: Vec<RatioGroup> = Vec::new();
    for c in sorted(run).into_iter().filter(|c| c.concurrency.is_none()) {
        let other = if c.a == base { &c.b } else { &c.a };
        let Some(c) = oriented(c, &base, other) else {
            continue;
        };
        let gap = cost::biggest_gap(figs, &base, other, &c.workload, c.cores);
        let suspect = suspect_behind(figs, &[&base, other], &c.workload, c.cores);
        let bytes = figures::is_large(figs, &c.workload);
        let cpu = crate::where_cpu::cpu_gap(figs, &base, other, &c.workload, c.cores);
        let line = RatioLine {
            comparison: c,
            gap,
            cpu,
            suspect,
            bytes,
        };
        let c = &line.comparison;
        match groups.last_mut() {
            Some(g) if g.workload == c.workload && g.cores == c.cores => g.lines.push(line),
            _ => groups.push(RatioGroup {
                workload: c.workload.clone(),
                cores: c.cores,
                lines: vec![line],
            }),
        }
    }
    groups
}

/// "3 of 6 steps behind it suspect (server_starved 3): ...": a ratio's
/// interval covers the spread of its pairs, not a machine that was busy
/// for all of them, so a ratio measured on starved or client-bound steps
/// says so beside it. Two runs of one study, minutes apart, gave 0.29×
/// (0.28–0.31) and 0.50× (0.48–0.52), the second with every step starved
/// and nothing said.
fn suspect_behind(
    figs: &[StepFigures],
    servers: &[&str],
    workload: &str,
    cores: u32,
) -> Option<String> {
    let steps: Vec<&StepFigures> = figs
        .iter()
        .filter(|f| {
            servers.contains(&f.server.as_str())
                && f.workload == workload
                && f.cores == cores
                && f.status == throng_model::StepStatus::Ok
                && f.rounds > 0
        })
        .collect();
    // By name, so the list reads in the order the stored codes always
    // sorted in.
    let mut codes: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut suspect = 0;
    for f in &steps {
        if !f.verdict.is_valid() {
            suspect += 1;
        }
        for r in &f.verdict.reasons {
            *codes.entry(r.code.name()).or_default() += 1;
        }
    }
    if suspect == 0 {
        return None;
    }
    let list: Vec<String> = codes.iter().map(|(c, n)| format!("{c} {n}")).collect();
    Some(format!(
        "{suspect} of {} steps behind it suspect ({}): the interval covers its pairs' spread, \
         not the machine's share in it",
        steps.len(),
        list.join(", ")
    ))
}

/// What the ratio lines are, before them.
pub fn intro(baseline: &str) -> String {
    format!(
        "Each server's requests per second over {baseline}'s (the baseline), from rounds of the \
         two measured back to back, over the sweep's levels: the geometric mean of each level's \
         median per-pair ratio, with a 95% interval that resamples each level's pairs."
    )
}

/// What the per-level tables hold, before them.
pub const LEVELS_NOTE: &str = "The paired ratios at each level of the sweep, B over A as each \
    column names them: the median ratio with its 95% interval, the lab's decision, and the pairs \
    behind it.";

/// What the comparison tables hold, under them.
pub const TABLE_NOTE: &str = "B/A over the sweep: the geometric mean over its levels of the median \
    per-pair ratio of B's requests per second over A's, a pair being a round of each measured \
    back to back; 95% CI: a bootstrap that resamples each level's pairs within the level (at one \
    level: the distribution-free interval of its median). The decision is the lab's: higher or lower when the whole interval \
    lies beyond its noise threshold, equal within noise when it lies within, undecided when it \
    crosses the threshold (more pairs would tell).";

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(a: &str, b: &str, ratio: f64, lo: f64, hi: f64, d: Decision) -> Comparison {
        Comparison {
            a: a.into(),
            b: b.into(),
            workload: "tiny".into(),
            cores: 1,
            concurrency: None,
            rate: None,
            ratio,
            ci_low: lo,
            ci_high: hi,
            pairs: 48,
            decision: d,
            interval: throng_model::IntervalKind::OrderStatistic,
            launch_ratios: Vec::new(),
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        }
    }

    #[test]
    fn lines_read_like_hyperfine_in_every_decision() {
        let line = |c: Comparison| {
            RatioLine {
                comparison: c,
                gap: None,
                cpu: None,
                suspect: None,
                bytes: false,
            }
            .sentence()
        };
        assert_eq!(
            line(comparison(
                "nginx",
                "lighttpd",
                1.62,
                1.57,
                1.67,
                Decision::Higher
            )),
            "lighttpd: 1.62× nginx's requests per second (95% CI 1.57–1.67, 48 pairs) — higher"
        );
        assert_eq!(
            line(comparison("nginx", "h2o", 1.0, 0.99, 1.01, Decision::Equal)),
            "h2o: 1.00× nginx's requests per second (95% CI 0.99–1.01, 48 pairs) — equal within noise"
        );
        assert_eq!(
            line(comparison(
                "nginx",
                "h2o",
                0.98,
                0.95,
                1.01,
                Decision::Undecided
            )),
            "h2o: 0.98× nginx's requests per second (95% CI 0.95–1.01, 48 pairs) — undecided"
        );
    }

    #[test]
    fn a_tight_interval_gets_the_decimals_to_show_it() {
        let c = comparison("a", "b", 0.6, 0.5952, 0.6048, Decision::Lower);
        assert_eq!(
            (ratio_text(&c), interval_text(&c)),
            ("0.600×".into(), "0.595–0.605".into())
        );
        let c = comparison("a", "b", 1.0, 1.0, 1.0, Decision::Equal);
        assert_eq!(interval_text(&c), "1.0000–1.0000");
    }

    #[test]
    fn an_unbounded_ratio_says_why_instead_of_an_interval() {
        let mut c = comparison("nginx", "h2o", 1.1, 1.1, 1.1, Decision::Undecided);
        c.interval = throng_model::IntervalKind::Unbounded;
        c.pairs = 3;
        let line = RatioLine {
            comparison: c.clone(),
            gap: None,
            cpu: None,
            suspect: None,
            bytes: false,
        };
        assert_eq!(
            line.sentence(),
            "h2o: 1.10× nginx's requests per second (too few pairs to bound: 3) — undecided"
        );
        assert_eq!(interval_text(&c), "too few pairs to bound: 3");
        // Launches that differ too much for how few they are.
        c.pairs = 12;
        c.launch_ratios = vec![0.0123, 0.39];
        assert_eq!(
            interval_text(&c),
            "too few launches to bound: 2, whose own ratios ran 0.012–0.390"
        );
    }

    #[test]
    fn the_threshold_is_the_studys_precision() {
        let mut run = RunData::default();
        assert_eq!(threshold(&run), 0.02);
        run.run.study_toml = "name = \"q\"\n[rounds]\nmin = 3\nprecision = 0.05\n".into();
        assert_eq!(threshold(&run), 0.05);
        run.run.study_toml = "throng load http://h/ --save".into();
        assert_eq!(threshold(&run), 0.02);
        // The threshold the run decided with wins over its study file.
        run.run.study_toml = "name = \"q\"\n[rounds]\nmin = 3\nprecision = 0.05\n".into();
        run.run.threshold = Some(throng_model::Threshold::calibrated(12, 0.0, 0.031));
        assert_eq!(threshold(&run), 0.031);
    }

    #[test]
    fn a_comparison_stored_the_other_way_is_turned_around() {
        let c = comparison("lighttpd", "nginx", 1.25, 1.2, 1.25, Decision::Higher);
        let o = oriented(&c, "nginx", "lighttpd").unwrap();
        assert_eq!((o.a.as_str(), o.b.as_str()), ("nginx", "lighttpd"));
        assert_eq!((o.ratio, o.ci_low, o.ci_high), (0.8, 0.8, 1.0 / 1.2));
        assert_eq!(o.decision, Decision::Lower);
        assert_eq!(oriented(&c, "lighttpd", "nginx"), Some(c.clone()));
        assert_eq!(oriented(&c, "nginx", "h2o"), None);
    }
}
