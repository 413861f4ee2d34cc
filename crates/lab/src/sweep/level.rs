//! One level of the sweep: a step per server still measured, its blocks of
//! slices run over connections kept open between them (see `rotation`) in
//! each launch, its diagnostic rounds in the first, then, once every launch
//! is done, each step closed: its verdict, paired with the level's
//! comparisons, and whether its server kept up with the rate.

use throng_model::{Comparison, StepStatus};

use super::pending::{level_step, Pending};
use super::Sweep;
use crate::observer::Event;
use crate::pairs::Shuffle;
use crate::round::ServerId;
use crate::spec::RoundLoad;
use crate::study::Level;

/// A level in progress.
pub struct LevelRun {
    pub level: Level,
    /// What every round's load of the level is seeded from.
    pub seed: u64,
    /// The level's steps, in the study's comparison order, so that each
    /// pair is (earlier, later).
    pub pending: Vec<Pending>,
    pub shuffle: Shuffle,
    /// Blocks run so far, over every launch: a block's number is unique
    /// within its level.
    pub block: u32,
    /// Blocks run in the current launch.
    pub launch_blocks: u32,
    /// The level's paired comparisons, as its last block left them.
    pub comparisons: Vec<Comparison>,
    /// The servers the current launch measures at this level, when not
    /// every one: after the study's least launches, those of a comparison
    /// still wider than the target (none, when every one is narrow).
    pub focus: Option<Vec<ServerId>>,
}

impl LevelRun {
    /// Whether the current launch measures `server` at this level.
    pub fn measures(&self, server: ServerId) -> bool {
        self.focus.as_ref().is_none_or(|f| f.contains(&server))
    }

    /// The load of a round of `server` at this level, on its client CPUs.
    pub fn load_of(&self, sweep: &Sweep, server: ServerId) -> RoundLoad {
        RoundLoad {
            client_cpus: sweep.group.client_cpus_of(server.index()).to_vec(),
            ..sweep.study.round_load(sweep.group, self.level, self.seed)
        }
    }
}

impl Sweep<'_, '_> {
    /// The level's blocks of the current launch, with its diagnostic rounds
    /// in the first.
    pub(super) fn level(&mut self, run: &mut LevelRun) -> anyhow::Result<()> {
        let lv = run.level;
        run.launch_blocks = 0;
        let measured: Vec<bool> = run.pending.iter().map(|p| run.measures(p.server)).collect();
        for (p, measured) in run.pending.iter_mut().zip(measured) {
            // A server that failed since this level was last measured fails
            // its step here, with what it measured before.
            if let Some(down) = &self.down[p.server.index()] {
                if p.step.status == StepStatus::Ok {
                    p.step.status = StepStatus::Failed;
                    p.step.failure = Some(down.to_string());
                }
            }
            p.done = p.step.status != StepStatus::Ok || !measured;
        }
        // A later launch that has nothing to measure here (every
        // comparison of the level narrow) opens no connections.
        if self.launch > 0 && run.pending.iter().all(|p| p.done) {
            return Ok(());
        }
        // Connections kept between slices run timed windows of the closed
        // model only; a counted or rate round opens its own.
        let live: Vec<(ServerId, RoundLoad)> = run
            .pending
            .iter()
            .filter(|p| !p.done)
            .map(|p| (p.server, run.load_of(self, p.server)))
            .collect();
        if live.len() >= 2 && !self.counted && lv.rate.is_none() {
            self.exec.open_level(&live);
        }
        while run.pending.iter().any(|p| !p.done) && !self.interrupted() {
            self.block(run)?;
        }
        if self.launch == 0 {
            self.diagnose_level(run)?;
        }
        self.exec.close_level();
        if self.launch == 0 && lv.rate.is_some() {
            self.note_saturated(run);
        }
        Ok(())
    }

    /// Once every launch is done: the level's comparisons stored and each
    /// step closed with them.
    pub(super) fn close_level(&mut self, mut run: LevelRun) -> anyhow::Result<()> {
        let lv = run.level;
        if self.study.precision.launched() || self.counted {
            run.comparisons = self.level_comparisons(&run);
        }
        self.keep_alive_parity(&run)?;
        if !run.comparisons.is_empty() {
            self.ctx.sink.comparisons(&run.comparisons)?;
            self.ctx.observer.event(Event::Compared(&run.comparisons));
        }
        let comparisons = std::mem::take(&mut run.comparisons);
        for p in run.pending {
            self.close_step(p, lv, &comparisons)?;
        }
        self.compared.extend(comparisons);
        Ok(())
    }

    /// A server that did not keep up with a rate in the first launch is
    /// offered no higher one, in this launch or the next.
    fn note_saturated(&mut self, run: &LevelRun) {
        for p in &run.pending {
            if p.step.status == StepStatus::Ok
                && throng_trust::verdict::saturation(&p.step).is_some()
            {
                if let Some(r) = run.level.rate {
                    self.saturated[p.server.index()] =
                        Some(format!("the server did not keep up at {r} req/s"));
                }
            }
        }
    }

    /// A server that did not keep up with a lower rate is offered no
    /// higher one: its step is stored skipped, saying so.
    pub(super) fn skip_saturated(&mut self, lv: Level) -> anyhow::Result<()> {
        for id in self.up.clone() {
            if let Some(why) = self.saturated[id.index()].clone() {
                let mut st = level_step(&self.group.for_server(id.index()), self.name(id), lv);
                st.status = StepStatus::Skipped;
                st.failure = Some(why);
                self.record(st)?;
            }
        }
        Ok(())
    }

    /// The level's steps, one per server up and not saturated; a server
    /// already down has its step failed at once.
    pub(super) fn begin_level(&self, index: usize, lv: Level) -> LevelRun {
        let group = self.group;
        let mut pending: Vec<Pending> = self
            .up
            .iter()
            .filter(|id| self.saturated[id.index()].is_none())
            .map(|&id| {
                let mut p = Pending::new(
                    id,
                    level_step(&group.for_server(id.index()), self.name(id), lv),
                );
                if let Some(down) = &self.down[id.index()] {
                    p.step.status = StepStatus::Failed;
                    p.step.failure = Some(down.to_string());
                    p.done = true;
                }
                p
            })
            .collect();
        let order = self.study.comparison_order();
        pending.sort_by_key(|p| order.iter().position(|&i| i == p.server.index()));
        let seed = ((group.cores as u64) << 48) ^ ((index as u64) << 32) ^ 0x7468_726f;
        LevelRun {
            level: lv,
            seed,
            pending,
            shuffle: Shuffle::new(seed),
            block: 0,
            launch_blocks: 0,
            comparisons: Vec::new(),
            focus: None,
        }
    }

    /// A step at the level's end: stored with its verdict, skipped when
    /// the run was interrupted before it was done.
    fn close_step(
        &mut self,
        mut p: Pending,
        lv: Level,
        comparisons: &[Comparison],
    ) -> anyhow::Result<()> {
        if !p.done {
            // Interrupted: keep the rounds measured, say why it is short.
            p.step.status = StepStatus::Skipped;
            p.step.failure = Some(format!("interrupted after {} rounds", p.step.rounds.len()));
        }
        p.step.throughput = throng_stats::estimate(&p.rps);
        if !p.step.rounds.is_empty() {
            let target = self.study.precision.target;
            p.step.verdict = if comparisons.is_empty() {
                throng_trust::verdict::step_verdict(&p.step, &p.verdicts, target)
            } else {
                throng_trust::verdict::step_verdict_paired(
                    &p.step,
                    &p.verdicts,
                    target,
                    comparisons,
                )
            };
        }
        if p.step.status == StepStatus::Ok {
            if let Some(why) = throng_trust::verdict::saturation(&p.step) {
                p.step
                    .verdict
                    .push(throng_model::ReasonCode::Saturated, why);
                if let Some(r) = lv.rate {
                    self.saturated[p.server.index()] =
                        Some(format!("the server did not keep up at {r} req/s"));
                }
            }
        }
        if p.step.status == StepStatus::Failed && p.step.log_tail.is_none() {
            p.step.log_tail = Some(self.exec.log_tail(p.server));
        }
        self.record(p.step)
    }
}
