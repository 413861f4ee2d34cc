//! The slices a level will ask for next, known before its block starts:
//! the block orders come from a copy of the level's shuffle and each
//! slice's load is sized as its round will be, so an executor that must
//! arrange every start ahead (client hosts apart) can schedule them all at
//! once. It is a forecast only: a block cut short, a step ended or failed,
//! a round asked again longer, each makes the rounds asked differ from it,
//! and the executor runs those on their own (see `Executor::plan`).

use super::level::LevelRun;
use super::pending::Slice;
use super::Sweep;
use crate::round::ServerId;
use crate::spec::RoundLoad;

/// Slices forecast at most: whole blocks up to this many.
const MOST: usize = 512;

impl Sweep<'_, '_> {
    /// The measured slices of the level's remaining blocks, in the order
    /// `block` will ask for them if each is measured and none ends the
    /// level early.
    pub(super) fn forecast(&self, run: &LevelRun) -> Vec<(ServerId, RoundLoad)> {
        let live: Vec<usize> = (0..run.pending.len())
            .filter(|&k| !run.pending[k].done)
            .collect();
        if live.is_empty() || self.study.duet {
            return Vec::new();
        }
        let paired = live.len() >= 2;
        let p = &self.study.precision;
        let blocks = match self.quota() {
            Some(quota) => quota.saturating_sub(run.launch_blocks),
            None if paired => p.max_rounds.max(p.min_rounds).saturating_sub(run.block),
            // A lone step ends by its own interval, at its cap at the latest.
            None => {
                let rounds = run.pending[live[0]].step.rounds.len() as u32;
                p.max_rounds.saturating_sub(rounds)
            }
        };
        let launch = p.launched().then_some(self.launch);
        let mut shuffle = run.shuffle.clone();
        let mut out = Vec::new();
        for b in 0..blocks {
            if out.len() + live.len() > MOST {
                break;
            }
            let block = run.block + b;
            let mut turn: Vec<usize> = (0..run.pending.len()).collect();
            shuffle.shuffle(&mut turn);
            for k in turn {
                let p = &run.pending[k];
                if p.done {
                    continue;
                }
                let slice = Slice {
                    seed: run.seed ^ (u64::from(block) << 8) ^ k as u64,
                    block: paired.then_some(block),
                    launch,
                };
                out.push((p.server, self.slice_load(p, slice)));
            }
        }
        out
    }
}
