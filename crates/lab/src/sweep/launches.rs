//! Launches: how many blocks a level gets in each start of the servers,
//! whether the group's servers are started again, and the comparisons
//! drawn over every launch so far. A timed group is launched the study's
//! `launches` times at least, then again while a level's comparison is not
//! yet narrow enough, up to its `max_launches`; a counted group is
//! launched exactly as its rounds divide, since a count, not an interval,
//! is what the study fixed.

use throng_model::{Comparison, Decision, StepRecord, StepStatus};

use super::level::LevelRun;
use super::pending::Pending;
use super::Sweep;
use crate::observer::Event;
use crate::pairs;
use crate::round::ServerId;

impl Sweep<'_, '_> {
    /// Blocks the level gets in the current launch; `None` when the study
    /// measures in one launch and its precision loop decides (see
    /// `rotation`).
    pub(super) fn quota(&self) -> Option<u32> {
        let p = &self.study.precision;
        match self.counted_rounds {
            Some(rounds) => Some(
                p.counted_shares(rounds)
                    .get(self.launch as usize)
                    .copied()
                    .unwrap_or(0),
            ),
            None if p.launched() => Some(p.per_launch()),
            None => None,
        }
    }

    /// Whether the group is started once only.
    pub(super) fn one_launch(&self) -> bool {
        self.launch_range().1 == 1
    }

    /// The launches a group gets at least, and at most.
    fn launch_range(&self) -> (u32, u32) {
        let p = &self.study.precision;
        match self.counted_rounds {
            Some(rounds) => {
                let n = p.counted_shares(rounds).len() as u32;
                (n, n)
            }
            None => (p.launches.max(1), p.launch_cap()),
        }
    }

    /// The level's comparisons over every launch so far, each no narrower
    /// than the machine's calibration says its servers' starts differ.
    pub(super) fn level_comparisons(&self, run: &LevelRun) -> Vec<Comparison> {
        let steps: Vec<&StepRecord> = run
            .pending
            .iter()
            .filter(|p| !p.step.rounds.is_empty())
            .map(|p| &p.step)
            .collect();
        let target = self.study.precision.target;
        let mut cs = pairs::compare_level(&steps, target);
        for c in &mut cs {
            self.ctx.earlier.bound(c, target);
        }
        cs
    }

    /// After a launch: whether to start the servers again. Each level's
    /// comparisons are drawn over the launches so far; another launch is
    /// due while the group has fewer than its least, or, up to its most,
    /// while a comparison is wider than the precision target (see
    /// [`Enough`] for a calibrated one).
    pub(super) fn another_launch(&mut self, runs: &mut [LevelRun]) -> bool {
        let (least, most) = self.launch_range();
        let done = self.launch + 1;
        for run in runs.iter_mut() {
            run.comparisons = self.level_comparisons(run);
        }
        let alive = self
            .up
            .iter()
            .filter(|id| self.down[id.index()].is_none())
            .count();
        if done >= most || alive == 0 {
            return false;
        }
        let target = self.study.precision.target;
        let enough = Enough {
            target,
            promise: self.study.precision_rule.before_calibration().max(target),
        };
        let wide = runs
            .iter()
            .filter(|r| !r.comparisons.iter().all(|c| enough.of(c)))
            .count();
        let mut why = if done < least {
            format!("launch {} of at least {least}", done + 1)
        } else if wide > 0 {
            let wider = if enough.promise > target {
                format!(
                    "±{:.1}% and undecided, or wider than ±{:.1}%",
                    target * 100.0,
                    enough.promise * 100.0
                )
            } else {
                format!("±{:.1}%", target * 100.0)
            };
            format!(
                "launch {} of at most {most}: {wide} of {} levels still have a comparison wider \
                 than {wider}",
                done + 1,
                runs.len(),
            )
        } else {
            return false;
        };
        why.push_str("; every server is started again");
        if done >= least {
            match focus(runs, enough) {
                Focus::All => {}
                Focus::Only(only) => why.push_str(&format!(
                    ", and measured again only where a comparison is wide: {only}"
                )),
                // The wide comparisons have lost a server: nothing left
                // that another launch could pair.
                Focus::Nothing => return false,
            }
        }
        let cores = match self.group.cores {
            1 => "1 core".to_string(),
            n => format!("{n} cores"),
        };
        self.ctx.observer.event(Event::Note(format!(
            "{} on {cores}: {why}",
            self.group.workload.kind.name()
        )));
        true
    }
}

/// Past the study's least launches, each level is measured again only by
/// the servers of its comparisons still wider than the target, and a level
/// whose comparisons are all narrow not at all: a launch then costs the
/// slices and warmups its wide comparisons need, and the time that frees
/// lets those get more launches. A comparison's interval is drawn over the
/// launches that measured both its servers, each launch's median as
/// before, so an unmeasured launch leaves it as it was. Sets each level's
/// focus and says what it measures.
fn focus(runs: &mut [LevelRun], enough: Enough) -> Focus {
    // What an earlier launch measured says nothing of the next.
    for run in runs.iter_mut() {
        run.focus = None;
    }
    let mut plans: Vec<Vec<ServerId>> = Vec::with_capacity(runs.len());
    let mut said = Vec::new();
    let mut left_out = false;
    for run in runs.iter() {
        let live: Vec<&Pending> = run
            .pending
            .iter()
            .filter(|p| p.step.status == StepStatus::Ok)
            .collect();
        // The live servers of a comparison still wide, in the study's order.
        let wide: Vec<&Comparison> = run.comparisons.iter().filter(|c| !enough.of(c)).collect();
        let mut only: Vec<&Pending> = live
            .iter()
            .copied()
            .filter(|p| {
                wide.iter()
                    .any(|c| c.a == p.step.server || c.b == p.step.server)
            })
            .collect();
        // A server alone measures no pair: one left by a wide comparison
        // whose partner is down is not measured either.
        if only.len() < 2 {
            only.clear();
        }
        left_out |= only.len() < live.len();
        let names: Vec<&str> = only.iter().map(|p| p.step.server.as_str()).collect();
        said.push(format!("at {} {}", level_words(run), and_list(&names)));
        plans.push(only.iter().map(|p| p.server).collect());
    }
    if plans.iter().all(Vec::is_empty) {
        return Focus::Nothing;
    }
    if !left_out {
        return Focus::All;
    }
    for (run, only) in runs.iter_mut().zip(plans) {
        run.focus = Some(only);
    }
    Focus::Only(said.join(", "))
}

/// When a comparison needs no more launches: within the decision
/// threshold (`target`), or decided and within the study's promise, the
/// fallback a study without calibration would aim at (quick's ±5%). A
/// calibrated threshold tighter than that promise is worth launches for
/// the comparisons it has not decided; one already decided with an
/// interval within the promise would only narrow an answer given.
/// Without calibration, or with a threshold no tighter, the two are one.
#[derive(Clone, Copy)]
struct Enough {
    target: f64,
    promise: f64,
}

impl Enough {
    fn of(&self, c: &Comparison) -> bool {
        pairs::narrow(c, self.target)
            || (c.decision != Decision::Undecided && pairs::narrow(c, self.promise))
    }
}

/// What the next launch measures.
enum Focus {
    /// Every server of every level.
    All,
    /// Only what this says: "at 50 connections apache2-event and h2o, at
    /// 100 connections none".
    Only(String),
    /// Nothing: no wide comparison has both its servers still up.
    Nothing,
}

/// "50 connections", or "2000 req/s at 50 connections".
fn level_words(run: &LevelRun) -> String {
    let c = run.level.concurrency;
    let conns = format!("{c} connection{}", if c == 1 { "" } else { "s" });
    match run.level.rate {
        Some(r) => format!("{r} req/s at {conns}"),
        None => conns,
    }
}

/// "none", "a", "a and b", "a, b and c".
fn and_list(names: &[&str]) -> String {
    match names {
        [] => "none".to_string(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::IntervalKind;

    /// A comparison over ten launches at `ratio`, ±`half` of it, decided
    /// against a ±2% band as the lab would.
    fn compared(ratio: f64, half: f64) -> Comparison {
        let (lo, hi) = (ratio * (1.0 - half), ratio * (1.0 + half));
        Comparison {
            a: "a".into(),
            b: "b".into(),
            workload: "tiny".into(),
            cores: 1,
            concurrency: Some(10),
            rate: None,
            ratio,
            ci_low: lo,
            ci_high: hi,
            pairs: 40,
            decision: Decision::of(lo, hi, 0.02),
            interval: IntervalKind::Launches,
            launch_ratios: vec![ratio; 10],
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        }
    }

    #[test]
    fn a_calibrated_threshold_launches_again_for_what_it_has_not_decided() {
        // The machine decides ±2%; without a calibration the study would
        // promise ±5%.
        let calibrated = Enough {
            target: 0.02,
            promise: 0.05,
        };
        // Within the threshold: enough, decided or not.
        assert!(calibrated.of(&compared(1.01, 0.015)));
        assert!(calibrated.of(&compared(0.5, 0.015)));
        // Decided (0.5 is far below 0.98) and within the promise: enough.
        assert!(calibrated.of(&compared(0.5, 0.04)));
        // Decided but wider than the promise: more launches.
        assert!(!calibrated.of(&compared(0.5, 0.06)));
        // Undecided (1.01 ± 4% crosses the band) and wider than the
        // threshold: more launches, though within the promise.
        let near = compared(1.01, 0.04);
        assert_eq!(near.decision, Decision::Undecided);
        assert!(!calibrated.of(&near));
        // Without calibration the two are one: ±5% is what is asked.
        let plain = Enough {
            target: 0.05,
            promise: 0.05,
        };
        assert!(plain.of(&compared(1.01, 0.04)) && plain.of(&compared(0.5, 0.049)));
        assert!(!plain.of(&compared(0.5, 0.06)));
    }
}
