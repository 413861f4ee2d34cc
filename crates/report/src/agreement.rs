//! Whether two runs check each other: for every pair of servers both runs
//! compared (per workload and core count, pooled over the sweep), does each
//! run's paired ratio lie inside the other run's 95% interval? Two runs of
//! the same study on the same machine should agree; when they do not, one
//! of them measured the machine as much as the servers, whatever its own
//! interval says.
//!
//! Lines here are plain text; each format escapes them whole, since server
//! and workload names come from the study.

use serde::Serialize;

use throng_model::{Comparison, RunData};

use crate::charts::NamedChart;
use crate::figures;
use crate::forest::{self, Forest, Row};
use crate::forests;
use crate::ratios;

/// Pairs behind a ratio below which its stored interval is no 95% interval:
/// a distribution-free interval of a median needs six values, and the lab
/// stores min–max below that, covering less.
pub const MIN_PAIRS: u32 = 6;

/// What the two runs say of one pair of servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accord {
    /// Each run's ratio lies inside the other's interval.
    Agree,
    /// One ratio, or both, lies outside the other run's interval.
    Disagree,
    /// Both runs measured the pair, but one has no interval to judge by.
    NoInterval,
    /// Only the first run measured the pair.
    FirstOnly,
    /// Only the second run measured the pair.
    SecondOnly,
}

/// One pair of servers at one workload and core count, as B over A, in
/// both runs' figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairCheck {
    pub a: String,
    pub b: String,
    pub workload: String,
    pub cores: u32,
    /// The first run's ratio of B over A, turned round when stored A over B.
    pub first: Option<Comparison>,
    /// The second run's, turned to the same B over A.
    pub second: Option<Comparison>,
    pub accord: Accord,
}

/// Every pair of servers either run compared, the first run's first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// The two runs' ids, first then second.
    pub runs: [i64; 2],
    pub pairs: Vec<PairCheck>,
}

/// Whether `c` has an interval a 95% claim can rest on: one the lab
/// bounded, from enough pairs (runs stored before the lab said which it
/// could not bound kept min–max there).
pub fn has_interval(c: &Comparison) -> bool {
    c.bounded()
        && c.pairs >= MIN_PAIRS
        && c.ci_low.is_finite()
        && c.ci_high.is_finite()
        && c.ci_low <= c.ci_high
}

/// Whether `x`, another run's ratio, is where `c` said it would be: in
/// the range `c` gave the next run when it gave one (drawn over launches:
/// it counts the spread of both runs), else inside its interval.
fn inside(x: f64, c: &Comparison) -> bool {
    let [lo, hi] = c.next_run.unwrap_or([c.ci_low, c.ci_high]);
    lo <= x && x <= hi
}

/// The judgement on two figures of the same B over A.
pub fn accord(first: &Comparison, second: &Comparison) -> Accord {
    if !has_interval(first) || !has_interval(second) {
        Accord::NoInterval
    } else if inside(first.ratio, second) && inside(second.ratio, first) {
        Accord::Agree
    } else {
        Accord::Disagree
    }
}

/// Whether `c` compares the same servers as `other`, either way round, at
/// the same workload and core count.
fn same_pair(c: &Comparison, other: &Comparison) -> bool {
    c.workload == other.workload
        && c.cores == other.cores
        && ((c.a == other.a && c.b == other.b) || (c.a == other.b && c.b == other.a))
}

/// The two runs' pooled comparisons checked against each other, each list
/// in its reading order; the second run's figures turned to the first's
/// B over A.
pub fn check(runs: [i64; 2], first: &[&Comparison], second: &[&Comparison]) -> Agreement {
    let pooled = |v: &[&Comparison]| -> Vec<Comparison> {
        v.iter()
            .filter(|c| c.concurrency.is_none())
            .map(|c| (*c).clone())
            .collect()
    };
    let (first, second) = (pooled(first), pooled(second));
    let mut pairs = Vec::new();
    for c in &first {
        let theirs = second
            .iter()
            .find(|o| same_pair(c, o))
            .and_then(|o| ratios::oriented(o, &c.a, &c.b));
        let accord = match &theirs {
            Some(o) => accord(c, o),
            None => Accord::FirstOnly,
        };
        pairs.push(PairCheck {
            a: c.a.clone(),
            b: c.b.clone(),
            workload: c.workload.clone(),
            cores: c.cores,
            first: Some(c.clone()),
            second: theirs,
            accord,
        });
    }
    for c in second
        .iter()
        .filter(|c| !first.iter().any(|f| same_pair(c, f)))
    {
        pairs.push(PairCheck {
            a: c.a.clone(),
            b: c.b.clone(),
            workload: c.workload.clone(),
            cores: c.cores,
            first: None,
            second: Some(c.clone()),
            accord: Accord::SecondOnly,
        });
    }
    Agreement { runs, pairs }
}

/// The check of two stored runs; `None` unless both stored paired ratios.
pub fn between(first: &RunData, second: &RunData) -> Option<Agreement> {
    if first.comparisons.is_empty() || second.comparisons.is_empty() {
        return None;
    }
    Some(check(
        [first.run.id, second.run.id],
        &ratios::sorted(first),
        &ratios::sorted(second),
    ))
}

/// "0.239 (0.232–0.246)", or the ratio with why it has no interval.
pub fn figure(c: &Comparison) -> String {
    if let (true, Some([lo, hi])) = (has_interval(c), c.next_run) {
        let over = match c.next_run_runs {
            Some(n) if n > 1 => format!(" over {n} runs"),
            _ => String::new(),
        };
        format!(
            "{:.3} ({:.3}–{:.3}, next run {lo:.3}–{hi:.3}{over})",
            c.ratio, c.ci_low, c.ci_high
        )
    } else if has_interval(c) {
        format!("{:.3} ({:.3}–{:.3})", c.ratio, c.ci_low, c.ci_high)
    } else {
        format!("{:.3} ({})", c.ratio, c.unbounded_words())
    }
}

impl PairCheck {
    /// "apache2-event/nginx (tiny, 1 core)": B over A.
    pub fn label(&self) -> String {
        format!(
            "{}/{} ({})",
            self.b,
            self.a,
            figures::labelled([
                Some(self.workload.clone()),
                figures::known_cores(self.cores)
            ])
        )
    }

    /// The pair's line: both runs' figures and what they say together.
    pub fn line(&self, runs: [i64; 2]) -> String {
        let [one, two] = runs;
        let both = |f: &Comparison, s: &Comparison, end: String| {
            format!(
                "{}: {} in run {one}, {} in run {two}: {end}",
                self.label(),
                figure(f),
                figure(s)
            )
        };
        match (&self.first, &self.second, self.accord) {
            (Some(f), Some(s), Accord::Agree) => {
                both(f, s, "the runs agree within their intervals".into())
            }
            (Some(f), Some(s), Accord::Disagree) => {
                both(f, s, "the runs disagree beyond their intervals".into())
            }
            (Some(f), Some(s), _) => both(f, s, "not judged, for want of an interval".into()),
            (_, None, _) => format!("{}: measured in run {one} only", self.label()),
            (None, _, _) => format!("{}: measured in run {two} only", self.label()),
        }
    }
}

impl Agreement {
    /// One line a pair, in order.
    pub fn lines(&self) -> Vec<String> {
        self.pairs.iter().map(|p| p.line(self.runs)).collect()
    }

    /// The pairs whose runs disagree beyond their intervals.
    pub fn disagreements(&self) -> Vec<&PairCheck> {
        self.pairs
            .iter()
            .filter(|p| p.accord == Accord::Disagree)
            .collect()
    }

    fn count(&self, accord: Accord) -> usize {
        self.pairs.iter().filter(|p| p.accord == accord).count()
    }

    /// "4 of 6 pairs agree": of the pairs both runs measured, with those
    /// that could not be judged said apart.
    pub fn tally(&self) -> String {
        let both = self.count(Accord::Agree) + self.count(Accord::Disagree);
        let unjudged = self.count(Accord::NoInterval);
        let all = both + unjudged;
        if all == 0 {
            return "No pair of servers was measured in both runs.".to_string();
        }
        let agree = self.count(Accord::Agree);
        let mut s = if all == 1 {
            format!("{agree} of 1 pair agrees")
        } else {
            format!("{agree} of {all} pairs agree")
        };
        if unjudged > 0 {
            s.push_str(&format!(", {unjudged} not judged for want of an interval"));
        }
        s
    }

    /// Each pair's two ratios drawn as a forest plot, run by run, on one
    /// log axis with the decision band of `threshold`, a pair the runs
    /// disagree on marked; `None` when no pair was measured.
    pub fn chart(&self, threshold: Option<f64>) -> Option<NamedChart> {
        if self.pairs.is_empty() {
            return None;
        }
        let [one, two] = self.runs;
        let rows = self
            .pairs
            .iter()
            .map(|p| {
                let marks = [(&p.first, one, 0), (&p.second, two, 1)]
                    .into_iter()
                    .filter_map(|(c, run, color)| {
                        let mut c = c.as_ref()?.clone();
                        // Drawn as judged: min–max from too few pairs is
                        // no interval here either.
                        if !has_interval(&c) {
                            c.interval = throng_model::IntervalKind::Unbounded;
                        }
                        Some(forests::mark(&c, format!("run {run}"), color))
                    })
                    .collect();
                Row {
                    label: format!("{} / {}", p.b, p.a),
                    detail: figures::labelled([
                        Some(p.workload.clone()),
                        figures::known_cores(p.cores),
                        Some("all levels".into()),
                    ]),
                    marks,
                    flag: match p.accord {
                        Accord::Disagree => Some("disagree".into()),
                        Accord::NoInterval => Some("not judged".into()),
                        _ => None,
                    },
                }
            })
            .collect();
        let title = format!("Paired ratios in run {one} and run {two}, with their 95% intervals");
        Some(NamedChart {
            id: "agreement".into(),
            caption: format!(
                "Each pair of servers as B over A, run {one}'s ratio over run {two}'s, on a log \
                 axis; the runs agree on a pair when each ratio lies inside the other's interval, \
                 and a pair they disagree on is marked. Circles are each launch's own ratio."
            ),
            svg: forest::render(&Forest {
                title: title.clone(),
                rows,
                band: threshold,
            }),
            title,
            data: None,
        })
    }

    /// The line over the pairs.
    pub fn title(&self) -> String {
        let [one, two] = self.runs;
        format!(
            "Paired ratios in run {one} and run {two} (B/A, pooled over each sweep, 95% intervals): \
             the runs agree on a pair when each one's ratio lies inside the other's interval."
        )
    }
}

#[cfg(test)]
mod next_run_tests {
    use super::*;

    #[test]
    fn runs_over_launches_are_judged_by_where_each_said_the_next_would_land() {
        let c = |ratio: f64, lo: f64, hi: f64, next: Option<[f64; 2]>| Comparison {
            interval: throng_model::IntervalKind::Launches,
            launch_ratios: vec![ratio; 3],
            next_run: next,
            ..throng_testkit::model::comparison(
                "nginx",
                "lighttpd",
                None,
                [ratio, lo, hi],
                96,
                throng_model::Decision::Higher,
            )
        };
        // 1.408 is outside 1.374–1.406, the first run's interval of the
        // true ratio, but where it said the next run would land.
        let first = c(1.390, 1.374, 1.406, Some([1.368, 1.412]));
        let second = c(1.408, 1.377, 1.440, Some([1.364, 1.453]));
        assert_eq!(accord(&first, &second), Accord::Agree);
        assert_eq!(figure(&first), "1.390 (1.374–1.406, next run 1.368–1.412)");
        // A range drawn over earlier runs of the study says over how many.
        let over = Comparison {
            next_run_runs: Some(4),
            ..second.clone()
        };
        assert_eq!(
            figure(&over),
            "1.408 (1.377–1.440, next run 1.364–1.453 over 4 runs)"
        );
        // Without the next run's range, the intervals themselves judge.
        let (mut f, mut s) = (first.clone(), second.clone());
        f.next_run = None;
        s.next_run = None;
        assert_eq!(accord(&f, &s), Accord::Disagree);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::Decision;

    fn c(a: &str, b: &str, ratio: f64, lo: f64, hi: f64, pairs: u32) -> Comparison {
        throng_testkit::model::comparison(a, b, None, [ratio, lo, hi], pairs, Decision::Lower)
    }

    fn lines(first: &[Comparison], second: &[Comparison]) -> (Vec<String>, String) {
        let f: Vec<&Comparison> = first.iter().collect();
        let s: Vec<&Comparison> = second.iter().collect();
        let a = check([1, 2], &f, &s);
        (a.lines(), a.tally())
    }

    #[test]
    fn each_ratio_inside_the_other_interval_agrees() {
        let (l, t) = lines(
            &[c("nginx", "apache2-event", 0.239, 0.232, 0.246, 20)],
            &[c("nginx", "apache2-event", 0.243, 0.236, 0.251, 20)],
        );
        assert_eq!(
            l,
            [
                "apache2-event/nginx (tiny, 1 core): 0.239 (0.232–0.246) in run 1, \
              0.243 (0.236–0.251) in run 2: the runs agree within their intervals"
            ]
        );
        assert_eq!(t, "1 of 1 pair agrees");
    }

    #[test]
    fn the_second_ratio_outside_the_first_interval_disagrees() {
        let (l, t) = lines(
            &[c("nginx", "apache2-event", 0.239, 0.232, 0.246, 20)],
            &[c("nginx", "apache2-event", 0.268, 0.256, 0.281, 20)],
        );
        assert_eq!(
            l,
            [
                "apache2-event/nginx (tiny, 1 core): 0.239 (0.232–0.246) in run 1, \
              0.268 (0.256–0.281) in run 2: the runs disagree beyond their intervals"
            ]
        );
        assert_eq!(t, "0 of 1 pair agrees");
    }

    #[test]
    fn the_first_ratio_outside_a_narrow_second_interval_disagrees() {
        // Run 2's ratio lies inside run 1's wide interval, but not the
        // other way round: one way is not enough.
        let (l, _) = lines(
            &[c("nginx", "lighttpd", 1.46, 1.30, 1.60, 20)],
            &[c("nginx", "lighttpd", 1.55, 1.54, 1.56, 20)],
        );
        assert_eq!(
            l,
            [
                "lighttpd/nginx (tiny, 1 core): 1.460 (1.300–1.600) in run 1, \
              1.550 (1.540–1.560) in run 2: the runs disagree beyond their intervals"
            ]
        );
    }

    #[test]
    fn a_pair_stored_the_other_way_is_turned_to_the_first_runs_order() {
        // Run 2 stored nginx over lighttpd: 1/1.25 = 0.8, and its interval
        // 1/1.30–1/1.20.
        let (l, t) = lines(
            &[c("nginx", "lighttpd", 0.81, 0.78, 0.84, 20)],
            &[c("lighttpd", "nginx", 1.25, 1.20, 1.30, 20)],
        );
        assert_eq!(
            l,
            [
                "lighttpd/nginx (tiny, 1 core): 0.810 (0.780–0.840) in run 1, \
              0.800 (0.769–0.833) in run 2: the runs agree within their intervals"
            ]
        );
        assert_eq!(t, "1 of 1 pair agrees");
    }

    #[test]
    fn a_missing_interval_is_said_instead_of_judged() {
        let (l, t) = lines(
            &[
                c("nginx", "lighttpd", 0.81, 0.78, 0.84, 20),
                c("nginx", "caddy", 0.5, 0.4, 0.6, 20),
            ],
            &[
                c("nginx", "lighttpd", 0.95, 0.70, 1.10, 3),
                c("nginx", "caddy", 0.7, 0.65, 0.75, 20),
            ],
        );
        assert_eq!(
            l,
            [
                "lighttpd/nginx (tiny, 1 core): 0.810 (0.780–0.840) in run 1, \
                 0.950 (too few pairs to bound: 3) in run 2: not judged, for want of an interval",
                "caddy/nginx (tiny, 1 core): 0.500 (0.400–0.600) in run 1, \
                 0.700 (0.650–0.750) in run 2: the runs disagree beyond their intervals",
            ]
        );
        assert_eq!(
            t,
            "0 of 2 pairs agree, 1 not judged for want of an interval"
        );
    }

    #[test]
    fn a_pair_one_run_measured_is_listed_with_its_run() {
        let mut two_cores = c("nginx", "lighttpd", 0.8, 0.7, 0.9, 20);
        two_cores.cores = 2;
        let mut level = c("nginx", "caddy", 0.8, 0.7, 0.9, 20);
        level.concurrency = Some(50);
        let (l, t) = lines(
            &[
                c("nginx", "lighttpd", 0.8, 0.7, 0.9, 20),
                c("nginx", "caddy", 0.5, 0.4, 0.6, 20),
            ],
            &[c("lighttpd", "nginx", 1.25, 1.2, 1.3, 20), two_cores, level],
        );
        assert_eq!(
            l,
            [
                "lighttpd/nginx (tiny, 1 core): 0.800 (0.700–0.900) in run 1, \
                 0.800 (0.769–0.833) in run 2: the runs agree within their intervals",
                "caddy/nginx (tiny, 1 core): measured in run 1 only",
                "lighttpd/nginx (tiny, 2 cores): measured in run 2 only",
            ]
        );
        assert_eq!(t, "1 of 1 pair agrees");
        let (_, t) = lines(&[c("nginx", "caddy", 0.5, 0.4, 0.6, 20)], &[]);
        assert_eq!(t, "No pair of servers was measured in both runs.");
    }

    #[test]
    fn the_chart_draws_both_runs_per_pair_and_marks_a_disagreement() {
        let mut unbounded = c("nginx", "h2o", 1.1, 1.1, 1.1, 3);
        unbounded.interval = throng_model::IntervalKind::Unbounded;
        let mut launched = c("nginx", "apache2-event", 0.239, 0.232, 0.246, 20);
        launched.launch_ratios = vec![0.235, 0.243];
        let f = [
            launched,
            c("nginx", "lighttpd", 0.8, 0.7, 0.9, 20),
            c("nginx", "h2o", 1.0, 0.98, 1.02, 20),
        ];
        let s = [
            c("nginx", "apache2-event", 0.268, 0.256, 0.281, 20),
            c("lighttpd", "nginx", 1.25, 1.2, 1.3, 20),
            unbounded,
        ];
        let (f, s): (Vec<&Comparison>, Vec<&Comparison>) = (f.iter().collect(), s.iter().collect());
        let svg = check([1, 2], &f, &s).chart(Some(0.02)).unwrap().svg;
        assert_eq!(svg.matches("<g class=\"row\">").count(), 3);
        // Two marks a row: five bounded, one hollow.
        assert_eq!(svg.matches("class=\"ratio\"").count(), 5);
        assert_eq!(svg.matches("class=\"ratio unbounded\"").count(), 1);
        assert_eq!(svg.matches("class=\"launch\"").count(), 2);
        assert_eq!(svg.matches("class=\"flagged\"").count(), 2);
        assert!(svg.contains(">disagree</text>"));
        assert!(svg.contains(">not judged</text>"));
        assert!(svg.contains(">run 2: 1.10×</text>"));
        assert!(svg.contains(">too few pairs to bound: 3</text>"));
        assert!(svg.contains(">run 1: 0.24× [0.23–0.25]</text>"));
        assert!(svg.contains(">apache2-event / nginx</text>"));
        assert_eq!(svg.matches("class=\"band\"").count(), 1);
    }

    #[test]
    fn only_disagreeing_pairs_fail_a_gate() {
        let f = [
            c("nginx", "lighttpd", 0.8, 0.7, 0.9, 20),
            c("nginx", "caddy", 0.5, 0.4, 0.6, 20),
        ];
        let s = [
            c("nginx", "lighttpd", 0.85, 0.8, 0.9, 20),
            c("nginx", "caddy", 0.7, 0.65, 0.75, 2),
        ];
        let (f, s): (Vec<&Comparison>, Vec<&Comparison>) = (f.iter().collect(), s.iter().collect());
        assert!(check([1, 2], &f, &s).disagreements().is_empty());
        let s = [c("nginx", "lighttpd", 0.95, 0.92, 0.98, 20)];
        let s: Vec<&Comparison> = s.iter().collect();
        let a = check([1, 2], &f, &s);
        assert_eq!(a.disagreements().len(), 1);
        assert_eq!(a.disagreements()[0].b, "lighttpd");
    }
}
