//! What follows a group's levels: every pair compared over the whole
//! sweep, each server's max-users search, and the verdicts that need a
//! server's whole sweep, or the whole group's launches.

use throng_model::{ReasonCode, StepRecord, StepStatus, Verdict};

use super::Sweep;
use crate::maxusers::{self, Search};
use crate::observer::Event;
use crate::pairs;
use crate::round::ServerId;

impl Sweep<'_, '_> {
    /// Every pair over the whole sweep: all levels' pairs pooled.
    pub(super) fn pool_comparisons(&mut self) -> anyhow::Result<()> {
        if self.compared.is_empty() {
            return Ok(());
        }
        let sweeps: Vec<Vec<&StepRecord>> = self
            .study
            .comparison_order()
            .iter()
            .map(|&i| {
                let name = &self.study.servers[i].name;
                self.steps
                    .iter()
                    .filter(|s| &s.server == name && !s.rounds.is_empty())
                    .collect()
            })
            .collect();
        let mut pooled = pairs::compare_sweep(&sweeps, self.study.precision.target);
        self.ctx
            .earlier
            .widen(&mut pooled, self.study.precision.target);
        self.ctx.sink.comparisons(&pooled)?;
        self.ctx.observer.event(Event::Compared(&pooled));
        Ok(())
    }

    /// Each server's max-users search, from its sweep on.
    pub(super) fn search_max_users(&mut self) -> anyhow::Result<()> {
        if self.study.max_users_cap.is_none() {
            return Ok(());
        }
        for index in 0..self.study.servers.len() {
            if self.interrupted() {
                break;
            }
            let Some(cap) = self.study.users_cap(&self.study.servers[index]) else {
                continue;
            };
            let id = ServerId(index);
            let name = self.name(id);
            let sweep = self.sweep_of(name);
            let m = maxusers::search(
                &mut *self.exec,
                &Search {
                    study: self.study,
                    group: &self.group.for_server(index),
                    server: id,
                    alive: self.up.contains(&id) && self.down[index].is_none(),
                    sweep: &sweep,
                    cap,
                    pace: self.paces.of(id),
                },
                self.ctx.interrupt,
            );
            if self.interrupted() {
                break;
            }
            self.ctx.sink.max_users(name, &m)?;
        }
        Ok(())
    }

    /// Sweep-level verdicts need the whole sweep of each server; a step
    /// whose verdict they change is stored again and told.
    pub(super) fn revise_verdicts(&mut self) -> anyhow::Result<()> {
        let threshold = self.study.precision.target;
        let split = throng_stats::launches::split(&self.steps, threshold);
        // Every server's rate moving together between launches, where it
        // moved beyond what the run decides at: a machine that moved.
        let machine = throng_stats::launches::machine(&self.steps)
            .map(|m| m.spread)
            .filter(|&m| m > threshold);
        for s in &self.study.servers {
            let mut sweep = self.sweep_of(&s.name);
            let before: Vec<Verdict> = sweep.iter().map(|x| x.verdict.clone()).collect();
            throng_trust::verdict::sweep_verdicts(&mut sweep);
            let differs = split
                .iter()
                .find(|x| x.server == s.name)
                .and_then(|x| x.split.as_ref())
                .filter(|x| x.differs);
            if let Some(d) = differs {
                let factors: Vec<f64> = d.launches.iter().map(|l| l.factor).collect();
                let why = throng_trust::verdict::launches_differ(
                    d.spread,
                    &factors,
                    d.slice_sd,
                    &self.switch_prices(),
                    machine,
                );
                for st in sweep
                    .iter_mut()
                    .filter(|x| x.status == StepStatus::Ok && !x.rounds.is_empty())
                {
                    st.verdict.push(ReasonCode::LaunchesDiffer, why.clone());
                }
            }
            for (st, b) in sweep.iter().zip(before) {
                if st.verdict != b {
                    self.ctx.sink.verdict(st)?;
                    self.ctx.observer.event(Event::Revised(st));
                }
            }
        }
        Ok(())
    }

    /// The context switch's price read before each of the group's
    /// launches; empty unless every launch was read.
    fn switch_prices(&self) -> Vec<f64> {
        let read: Vec<f64> = self.prices.iter().map(|p| p.switch_ns).collect();
        if read.len() as u32 == self.launch + 1 {
            read
        } else {
            Vec::new()
        }
    }

    /// A server's steps in this group, as stored.
    fn sweep_of(&self, server: &str) -> Vec<StepRecord> {
        self.steps
            .iter()
            .filter(|x| x.server == server)
            .cloned()
            .collect()
    }
}
