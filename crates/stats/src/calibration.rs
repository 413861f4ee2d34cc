//! A/A calibration: one server measured against itself, as two entries of
//! one study, so every difference their comparisons find is the machine's
//! noise. How often an A/A interval excludes 1.00 says whether the
//! intervals cover as they claim (about 5% of them may); how far the A/A
//! intervals reach from 1.00 is the smallest difference this machine can
//! decide with the study's budget, which the lab takes as the decision
//! threshold of later runs. The lab (choosing a threshold) and the report
//! (showing a calibration run) both compute it here, so the figure a run
//! was decided with is the figure its calibration run's report shows.

use throng_model::{Comparison, ReasonCode, RunData, ServerRecord, Setting};

/// How the lab spoke to `s` (its parity row), the same for every server
/// of a run stored before the row said more.
fn protocol(s: &ServerRecord) -> &str {
    s.parity
        .iter()
        .find(|p| p.setting == Setting::Protocol)
        .map_or("", |p| p.value.as_str())
}

/// Two entries of one setup: the same recipe, profile and protocol. A
/// study over several profiles or protocols runs one recipe as several
/// servers that are meant to differ; only the same setup twice is A/A.
pub fn twins(a: &ServerRecord, b: &ServerRecord) -> bool {
    a.name != b.name && a.recipe == b.recipe && a.profile == b.profile && protocol(a) == protocol(b)
}

/// Whether a run is a calibration run: every server has a twin. The rule
/// reads the run's own servers rather than its study's name, so a study
/// file of one's own (other servers, other levels) calibrates as well as
/// the built-in `calibrate`, and a renamed copy of `quick` never does.
pub fn is_calibration(servers: &[ServerRecord]) -> bool {
    servers.len() >= 2 && servers.iter().all(|a| servers.iter().any(|b| twins(a, b)))
}

/// What the comparisons of one A/A pair say: each level's and the pooled
/// one, of every core count and workload.
#[derive(Debug, Clone, PartialEq)]
pub struct PairSpread {
    pub a: String,
    pub b: String,
    /// Comparisons with a bounded 95% interval.
    pub intervals: u32,
    /// Of them, those whose interval lies wholly above or below 1.00.
    pub excluding: u32,
    /// Comparisons whose pairs were too few for any interval; they say
    /// nothing about the spread and are left out of every figure.
    pub unbounded: u32,
    /// The largest |ratio − 1|.
    pub largest_shift: f64,
    /// The largest half-width of an interval, (high − low) / 2.
    pub largest_half_width: f64,
    /// The farthest an interval reaches from 1.00: max |bound − 1|.
    pub reach: f64,
    /// A twin's launches differed beyond its slices (its steps say
    /// `launches_differ`): the spread is that server's own, how it happens
    /// to start, not the machine's, and it does not set the threshold
    /// while a steadier pair can.
    pub unsteady: bool,
}

impl PairSpread {
    /// The share of intervals that exclude 1.00 (0 when there are none).
    pub fn share_excluding(&self) -> f64 {
        if self.intervals == 0 {
            0.0
        } else {
            f64::from(self.excluding) / f64::from(self.intervals)
        }
    }
}

/// A calibration run's A/A pairs, in the order their first comparison
/// was stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub pairs: Vec<PairSpread>,
}

impl Calibration {
    /// The calibration of `run`, or `None` when it is not a calibration
    /// run. Comparisons between servers that are not twins (nginx against
    /// apache2 in the built-in study, whose format compares every pair) are
    /// differences between servers, not noise, and are left out.
    pub fn of(run: &RunData) -> Option<Calibration> {
        if !is_calibration(&run.servers) {
            return None;
        }
        let server = |name: &str| run.servers.iter().find(|s| s.name == name);
        let mut pairs: Vec<PairSpread> = Vec::new();
        for c in &run.comparisons {
            let (Some(a), Some(b)) = (server(&c.a), server(&c.b)) else {
                continue;
            };
            if !twins(a, b) {
                continue;
            }
            let i = match pairs.iter().position(|p| p.a == c.a && p.b == c.b) {
                Some(i) => i,
                None => {
                    pairs.push(PairSpread {
                        a: c.a.clone(),
                        b: c.b.clone(),
                        intervals: 0,
                        excluding: 0,
                        unbounded: 0,
                        largest_shift: 0.0,
                        largest_half_width: 0.0,
                        reach: 0.0,
                        unsteady: [&c.a, &c.b].iter().any(|name| {
                            run.steps.iter().any(|st| {
                                &&st.server == name && st.verdict.has(ReasonCode::LaunchesDiffer)
                            })
                        }),
                    });
                    pairs.len() - 1
                }
            };
            add(&mut pairs[i], c);
        }
        Some(Calibration { pairs })
    }

    /// Bounded A/A intervals over every pair.
    pub fn intervals(&self) -> u32 {
        self.pairs.iter().map(|p| p.intervals).sum()
    }

    /// Of them, those that exclude 1.00.
    pub fn excluding(&self) -> u32 {
        self.pairs.iter().map(|p| p.excluding).sum()
    }

    /// The smallest difference this machine can decide: the farthest any
    /// A/A interval reached from 1.00. At this threshold every A/A
    /// comparison of the run would have been decided "equal", never higher,
    /// lower or undecided, so a difference decided at it is larger than
    /// any the machine made between a server and itself. It is at least
    /// every interval's half-width and every |ratio − 1|. Taken over the
    /// steady pairs (no twin named `launches_differ`); when none is steady,
    /// the steadiest pair's. `None` when no A/A comparison has a bounded
    /// interval.
    pub fn smallest_decidable(&self) -> Option<f64> {
        let bounded = || self.pairs.iter().filter(|p| p.intervals > 0);
        // A server whose starts differ is named in every run it is in, and
        // a later run draws its pairs with its launch spread (the lab's
        // `launch_prior`); the machine's own noise is what the steady twins
        // show. Where every pair's launches differed (at a calibration's
        // ±0.5%, a steady server's may), the steadiest pair is the
        // machine's: a bimodal server's 40% would otherwise blunt every
        // decision of every later run.
        bounded()
            .filter(|p| !p.unsteady)
            .map(|p| p.reach)
            .reduce(f64::max)
            .or_else(|| bounded().map(|p| p.reach).reduce(f64::min))
    }
}

fn add(p: &mut PairSpread, c: &Comparison) {
    if !c.bounded() {
        p.unbounded += 1;
        return;
    }
    p.intervals += 1;
    if c.ci_low > 1.0 || c.ci_high < 1.0 {
        p.excluding += 1;
    }
    p.largest_shift = p.largest_shift.max((c.ratio - 1.0).abs());
    p.largest_half_width = p.largest_half_width.max((c.ci_high - c.ci_low) / 2.0);
    p.reach = p
        .reach
        .max((c.ci_low - 1.0).abs())
        .max((c.ci_high - 1.0).abs());
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Decision, IntervalKind, ParityEntry, Profile, Source};

    fn server(name: &str, recipe: &str) -> ServerRecord {
        ServerRecord {
            name: name.into(),
            recipe: recipe.into(),
            ..ServerRecord::default()
        }
    }

    fn cmp(a: &str, b: &str, level: Option<u32>, ratio: f64, lo: f64, hi: f64) -> Comparison {
        let decision = Decision::of(lo, hi, 0.05);
        throng_testkit::model::comparison(a, b, level, [ratio, lo, hi], 40, decision)
    }

    fn calibrate_run(comparisons: Vec<Comparison>) -> RunData {
        RunData {
            servers: vec![
                server("nginx", "nginx"),
                server("nginx-again", "nginx"),
                server("apache2-event", "apache2-event"),
                server("apache2-event-again", "apache2-event"),
            ],
            comparisons,
            ..RunData::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn twins_are_one_recipe_profile_and_protocol_under_two_names() {
        let a = server("nginx", "nginx");
        assert!(twins(&a, &server("nginx-again", "nginx")));
        assert!(!twins(&a, &a));
        assert!(!twins(&a, &server("h2o", "h2o")));
        let tuned = ServerRecord {
            profile: Profile::Tuned,
            ..server("nginx-tuned", "nginx")
        };
        assert!(!twins(&a, &tuned));
        let h2 = ServerRecord {
            parity: vec![ParityEntry {
                setting: Setting::Protocol,
                value: "HTTP/2 over TLS".into(),
                source: Source::Lab,
                detail: String::new(),
            }],
            ..server("nginx-h2", "nginx")
        };
        assert!(!twins(&a, &h2));
        assert!(is_calibration(&calibrate_run(Vec::new()).servers));
        // quick: four servers, none twice.
        let quick = ["nginx", "lighttpd", "apache2-event", "h2o"].map(|n| server(n, n));
        assert!(!is_calibration(&quick));
        // One twin pair beside a server without one is a study that
        // measures a difference, not a calibration.
        let mixed = [
            a.clone(),
            server("nginx-again", "nginx"),
            server("h2o", "h2o"),
        ];
        assert!(!is_calibration(&mixed));
        assert!(!is_calibration(&[a]));
        assert_eq!(Calibration::of(&RunData::default()), None);
    }

    #[test]
    fn each_pair_counts_intervals_that_exclude_one_and_how_far_they_reach() {
        let run = calibrate_run(vec![
            cmp("nginx", "nginx-again", Some(10), 1.01, 0.98, 1.03),
            // Excludes 1.00 from above; reaches 4% out.
            cmp("nginx", "nginx-again", Some(50), 1.025, 1.01, 1.04),
            cmp("nginx", "nginx-again", None, 1.005, 0.995, 1.015),
            // Across recipes: a real difference, not noise.
            cmp("nginx", "apache2-event", Some(10), 0.6, 0.55, 0.65),
            cmp(
                "apache2-event",
                "apache2-event-again",
                Some(10),
                0.97,
                0.93,
                1.02,
            ),
            cmp(
                "apache2-event",
                "apache2-event-again",
                None,
                0.99,
                0.96,
                1.01,
            ),
            // Too few pairs for an interval: counted apart.
            Comparison {
                interval: IntervalKind::Unbounded,
                ..cmp(
                    "apache2-event",
                    "apache2-event-again",
                    Some(50),
                    1.3,
                    1.3,
                    1.3,
                )
            },
        ]);
        let c = Calibration::of(&run).unwrap();
        assert_eq!(c.pairs.len(), 2);
        let n = &c.pairs[0];
        assert_eq!(
            (
                n.a.as_str(),
                n.b.as_str(),
                n.intervals,
                n.excluding,
                n.unbounded
            ),
            ("nginx", "nginx-again", 3, 1, 0)
        );
        assert!(close(n.largest_shift, 0.025), "{n:?}");
        assert!(close(n.largest_half_width, 0.025), "{n:?}");
        assert!(close(n.reach, 0.04), "{n:?}");
        assert!(close(n.share_excluding(), 1.0 / 3.0));
        let a = &c.pairs[1];
        assert_eq!((a.intervals, a.excluding, a.unbounded), (2, 0, 1));
        assert!(close(a.largest_shift, 0.03), "{a:?}");
        assert!(close(a.largest_half_width, 0.045), "{a:?}");
        assert!(close(a.reach, 0.07), "{a:?}");
        assert_eq!((c.intervals(), c.excluding()), (5, 1));
        assert!(close(c.smallest_decidable().unwrap(), 0.07));
    }

    #[test]
    fn a_server_whose_starts_differ_does_not_set_the_machines_threshold() {
        // nginx's twins reach 3% from 1.00; Apache's 40%, in a run whose
        // steps name an Apache twin's launches as differing.
        let mut run = calibrate_run(vec![
            cmp("nginx", "nginx-again", None, 1.0, 0.97, 1.03),
            cmp("apache2-event", "apache2-event-again", None, 1.1, 0.85, 1.4),
        ]);
        let steady = Calibration::of(&run).unwrap();
        assert!(close(steady.smallest_decidable().unwrap(), 0.4));
        let mut step = throng_model::StepRecord::new("apache2-event-again", 1, "tiny", 10);
        step.verdict
            .push(ReasonCode::LaunchesDiffer, "its launches differed by 40%");
        run.steps.push(step);
        let c = Calibration::of(&run).unwrap();
        assert_eq!(
            c.pairs.iter().map(|p| p.unsteady).collect::<Vec<_>>(),
            [false, true]
        );
        assert!(close(c.smallest_decidable().unwrap(), 0.03));
        // Every pair unsteady: the steadiest pair is the machine's noise;
        // Apache's starts are its own pairs' to carry.
        let mut nginx = throng_model::StepRecord::new("nginx", 1, "tiny", 10);
        nginx.verdict.push(ReasonCode::LaunchesDiffer, "differed");
        run.steps.push(nginx);
        assert!(close(
            Calibration::of(&run).unwrap().smallest_decidable().unwrap(),
            0.03
        ));
    }

    #[test]
    fn a_calibration_without_a_bounded_interval_decides_nothing() {
        let run = calibrate_run(vec![Comparison {
            interval: IntervalKind::Unbounded,
            ..cmp("nginx", "nginx-again", Some(10), 1.0, 1.0, 1.0)
        }]);
        let c = Calibration::of(&run).unwrap();
        assert_eq!((c.intervals(), c.pairs[0].unbounded), (0, 1));
        assert_eq!(c.smallest_decidable(), None);
        assert_eq!(c.pairs[0].share_excluding(), 0.0);
    }
}
