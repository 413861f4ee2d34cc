//! Launches: how many blocks a level gets in each start of the servers,
//! whether the group's servers are started again, and the comparisons
//! drawn over every launch so far. A timed group is launched the study's
//! `launches` times at least, then again while a level's comparison is not
//! yet narrow enough, up to its `max_launches`; a counted group is
//! launched exactly as its rounds divide, since a count, not an interval,
//! is what the study fixed.

use throng_model::{Comparison, StepRecord};

use super::level::LevelRun;
use super::Sweep;
use crate::observer::Event;
use crate::pairs;

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
    /// while a comparison is wider than the precision target.
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
        let wide = runs
            .iter()
            .filter(|r| !pairs::all_narrow(&r.comparisons, target))
            .count();
        let why = if done < least {
            format!("launch {} of at least {least}", done + 1)
        } else if wide > 0 {
            format!(
                "launch {} of at most {most}: {wide} of {} levels still have a comparison wider \
                 than ±{:.1}%",
                done + 1,
                runs.len(),
                target * 100.0
            )
        } else {
            return false;
        };
        let cores = match self.group.cores {
            1 => "1 core".to_string(),
            n => format!("{n} cores"),
        };
        self.ctx.observer.event(Event::Note(format!(
            "{} on {cores}: {why}; every server is started again",
            self.group.workload.kind.name()
        )));
        true
    }
}
