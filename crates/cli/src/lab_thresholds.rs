//! A study's `[thresholds]` as `throng lab` shows them: each step judged
//! by its worst round when it ends, its crossed thresholds printed under
//! its line, and with `--junit` one test case per step and threshold.

use throng_load::junit::Case;
use throng_load::thresholds::Threshold;
use throng_model::{StepRecord, StepStatus};

/// The study's thresholds and what the steps so far made of them.
pub struct StepGates {
    thresholds: Vec<Threshold>,
    class: String,
    cases: Vec<Case>,
    /// Steps that crossed one at least.
    pub crossed_steps: usize,
}

impl StepGates {
    pub fn new(study: &throng_lab::Study) -> StepGates {
        StepGates {
            thresholds: study.thresholds.clone(),
            class: format!("throng.lab.{}", study.name),
            cases: Vec::new(),
            crossed_steps: 0,
        }
    }

    /// A step as stored: the lines that say what it crossed (none when
    /// it crossed nothing), its cases kept for the report.
    pub fn step(&mut self, s: &StepRecord) -> Vec<String> {
        if self.thresholds.is_empty() || !matches!(s.status, StepStatus::Ok | StepStatus::Failed) {
            return Vec::new();
        }
        let name = step_name(s);
        let mut lines = Vec::new();
        for t in &self.thresholds {
            let failure = if s.status == StepStatus::Failed {
                Some(format!("the step failed: {}", s.failure_head()))
            } else {
                let c = t.judge_worst(s.rounds.iter().map(|r| &r.summary));
                (!c.passed).then(|| crate::load_thresholds::crossed_line(t, &c))
            };
            if let (Some(f), StepStatus::Ok) = (&failure, s.status) {
                lines.push(format!("  {name}: {f}"));
            }
            self.cases.push(Case {
                class: self.class.clone(),
                name: format!("{name}: {}", t.expression),
                failure,
            });
        }
        if !lines.is_empty() {
            self.crossed_steps += 1;
        }
        lines
    }

    /// The JUnit report of every step judged.
    pub fn write(&self, file: &std::path::Path, suite: &str, time_s: f64) -> anyhow::Result<()> {
        crate::load_thresholds::write_junit(file, suite, &self.cases, time_s)
    }
}

/// "nginx 1 core tiny c=10", a step by its server, cores, workload and level.
fn step_name(s: &StepRecord) -> String {
    let level = match s.rate {
        Some(r) => format!("c={} at {r} req/s", s.concurrency),
        None => format!("c={}", s.concurrency),
    };
    format!(
        "{} {} {} {level}",
        s.server,
        throng_report::figures::cores_label(s.cores),
        s.workload
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Latency, RoundRecord, Summary};

    fn round(p99_us: u64) -> RoundRecord {
        RoundRecord {
            summary: Summary {
                completed: 10,
                latency_us: Latency {
                    count: 10,
                    p99: p99_us,
                    ..Latency::default()
                },
                ..Summary::default()
            },
            ..RoundRecord::default()
        }
    }

    #[test]
    fn a_step_is_named_with_what_it_crossed_by_its_worst_round() {
        let mut g = StepGates {
            thresholds: vec![
                Threshold::parse("p99<50ms").unwrap(),
                Threshold::parse("completed>=10").unwrap(),
            ],
            class: "throng.lab.t".into(),
            cases: Vec::new(),
            crossed_steps: 0,
        };
        let mut s = StepRecord::new("nginx", 1, "tiny", 4);
        s.rounds = vec![round(40_000), round(61_500)];
        assert_eq!(
            g.step(&s),
            ["  nginx 1 core tiny c=4: threshold p99<50ms crossed: p99 was 61.5 ms"]
        );
        s.rounds = vec![round(40_000)];
        assert!(g.step(&s).is_empty());
        assert_eq!(g.crossed_steps, 1);
        let names: Vec<(&str, bool)> = g
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.failure.is_some()))
            .collect();
        assert_eq!(
            names,
            [
                ("nginx 1 core tiny c=4: p99<50ms", true),
                ("nginx 1 core tiny c=4: completed>=10", false),
                ("nginx 1 core tiny c=4: p99<50ms", false),
                ("nginx 1 core tiny c=4: completed>=10", false),
            ]
        );
    }
}
