//! A level's blocks: each gives every server still measured one slice, in
//! a shuffled order (or, in a duet, both at once), and the slices of a
//! block are paired. Over launches, or for a request count, each launch
//! gives the level its share of blocks (see `launches`). In one launch,
//! the precision loop ends the level's steps together, when every paired
//! comparison is narrow enough or the rounds or time run out; a server
//! left alone is judged by its own interval, slice by slice.

use super::level::LevelRun;
use super::pending::Slice;
use super::Sweep;
use crate::pairs;

impl Sweep<'_, '_> {
    /// One block of the level's slices.
    pub(super) fn block(&mut self, run: &mut LevelRun) -> anyhow::Result<()> {
        // Slices of different servers are paired only while two or more
        // are still measured; a server left alone is judged by its own
        // interval, as a study of one server is.
        let live: Vec<usize> = (0..run.pending.len())
            .filter(|&k| !run.pending[k].done)
            .collect();
        let paired = live.len() >= 2;
        let block = run.block;
        let launch = self.study.precision.launched().then_some(self.launch);
        // A duet measures its two servers at once; otherwise each gets a
        // slice in turn, in a shuffled order.
        let mut turn: Vec<usize> = Vec::new();
        if self.study.duet && live.len() == 2 {
            let slice = Slice {
                seed: run.seed ^ (u64::from(block) << 8),
                block: Some(block),
                launch,
            };
            let [a, b] = run
                .pending
                .get_disjoint_mut([live[0], live[1]])
                .expect("two distinct steps");
            self.measure_together([a, b], slice)?;
        } else {
            if !self.counted && run.level.rate.is_none() {
                let upcoming = self.forecast(run);
                self.exec.plan(&upcoming);
            }
            turn.extend(0..run.pending.len());
            run.shuffle.shuffle(&mut turn);
        }
        for k in turn {
            let p = &mut run.pending[k];
            if p.done || self.interrupted() {
                continue;
            }
            let slice = Slice {
                seed: run.seed ^ (u64::from(block) << 8) ^ k as u64,
                block: paired.then_some(block),
                launch,
            };
            self.measure_round(p, slice)?;
        }
        run.block += 1;
        run.launch_blocks += 1;
        if let Some(quota) = self.quota() {
            for x in run.pending.iter_mut().filter(|x| !x.done) {
                x.done = run.launch_blocks >= quota;
            }
        } else if paired {
            self.judge_pairs(run);
        }
        Ok(())
    }

    /// After a paired block: the level's comparisons, and which steps are
    /// done.
    fn judge_pairs(&self, run: &mut LevelRun) {
        let p = &self.study.precision;
        run.comparisons = self.level_comparisons(run);
        let narrow = pairs::all_narrow(&run.comparisons, p.target);
        // The rounds a step has, not the blocks it was given: a block cut
        // short (an interrupt, a round asked again) measured nothing for
        // it, and a step could end "done" without one.
        for x in run.pending.iter_mut().filter(|x| !x.done) {
            let spent = x.spent.as_secs_f64();
            x.done = x.step.rounds.len() >= p.min_rounds as usize
                && (narrow || run.block >= p.max_rounds || spent >= p.max_step_s);
        }
    }
}
