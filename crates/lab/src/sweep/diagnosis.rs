//! What a level's rounds show of each server beyond its figures: whether
//! it kept the connections it was loaded on, and a diagnostic round per
//! step (its syscalls and context switches counted, its stacks sampled:
//! `crate::profile`), stored apart from the measured rounds, with the
//! settings it confirms.

use throng_model::{Diagnosis, StepStatus};

use super::level::LevelRun;
use super::{Sweep, DIAGNOSE_S};
use crate::live::{live_keep_alive, live_parity};
use crate::spec::RoundLoad;

impl Sweep<'_, '_> {
    /// A server that dropped the keep-alive connections it was loaded on
    /// was not spoken to as the others: its protocol row says so.
    pub(super) fn keep_alive_parity(&mut self, run: &LevelRun) -> anyhow::Result<()> {
        for p in run
            .pending
            .iter()
            .filter(|p| p.step.status == StepStatus::Ok && !p.step.rounds.is_empty())
        {
            let s = &self.study.servers[p.server.index()];
            if let Some(e) = live_keep_alive(&p.step.rounds, s.protocol.description()) {
                self.ctx.sink.parity(&s.name, &[e])?;
            }
        }
        Ok(())
    }

    /// The diagnostic rounds come after the measured ones, on the same
    /// connections, and are stored apart from them.
    pub(super) fn diagnose_level(&mut self, run: &mut LevelRun) -> anyhow::Result<()> {
        let study = self.study;
        if !study.diagnose || self.interrupted() {
            return Ok(());
        }
        for k in 0..run.pending.len() {
            let p = &run.pending[k];
            if p.step.status != StepStatus::Ok || p.step.rounds.is_empty() {
                continue;
            }
            if self.interrupted() {
                break;
            }
            let measured = RoundLoad {
                warmup_s: 0.0,
                ..run.load_of(self, p.server)
            };
            // A counted level's diagnosis is one more round of its count;
            // its counts are per request either way.
            let load = if self.counted {
                measured
            } else {
                measured.timed(p.round_s.unwrap_or(study.round_s).max(DIAGNOSE_S))
            };
            let server = p.server;
            let d = self
                .exec
                .diagnose(server, &load)
                .unwrap_or_else(|e| Diagnosis {
                    unavailable: Some(e.to_string()),
                    ..Default::default()
                });
            let name = self.name(server);
            let configured = self
                .ctx
                .access_logs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str());
            self.ctx.sink.parity(name, &live_parity(&d, configured))?;
            run.pending[k].step.diagnosis = Some(d);
        }
        Ok(())
    }
}
