//! A duet's rounds apart: both servers' loads started at one instant,
//! each from the client hosts of its own lane ([`super::duet`]), the
//! server host sampling each server over the same window. A round asked
//! of one server alone (a warmup, a round asked again longer, a
//! diagnostic round) still comes from its own lane's hosts only.

use std::time::Duration;

use throng_remote::lanes::Lane;

use super::{finish_round, Apart, LabRequest};
use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::RoundLoad;

impl Apart<'_> {
    /// The rounds of `loads` at once, each server loaded by its lane's
    /// client hosts, figures in the order asked.
    pub(super) fn lane_rounds(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
        kind: RoundKind,
    ) -> Result<Vec<Measured>, RoundError> {
        self.end_plan();
        let asked = throng_remote::agent::unix_ns();
        let Some(duet) = self.duet.clone() else {
            return Err(RoundError::ServerHost("no duet is placed".into()));
        };
        let mut lanes = Vec::with_capacity(loads.len());
        let mut names = Vec::with_capacity(loads.len());
        for &(id, load) in loads {
            let hosts = duet.clients_of(self.cores, id.index()).ok_or_else(|| {
                RoundError::ServerHost(format!(
                    "no client hosts load server {} of the duet at {} cores",
                    id.index() + 1,
                    self.cores
                ))
            })?;
            lanes.push(Lane {
                hosts,
                spec: self.spec(id, load)?,
            });
            names.push(self.name(id)?);
        }
        let lead = self.clients.lead();
        if kind.sampled() {
            // As for one round: each window's delay runs from its request's
            // arrival, and every request after it takes one more round trip
            // before the start is set.
            let rtt = self.server_rtt();
            for (i, (name, &(_, load))) in names.iter().zip(loads).enumerate() {
                let after = rtt * (names.len() - 1 - i) as u32;
                let delay = lead + rtt / 2 + after;
                self.call_in_round(LabRequest::WindowBegin {
                    server: name.clone(),
                    delay_s: delay.as_secs_f64() + load.warmup_s,
                    seconds: load.seconds,
                    slice: None,
                })?;
            }
        }
        let start = throng_remote::agent::unix_ns() + lead.as_nanos() as u64;
        let interrupt = self.interrupt;
        let runs = self
            .clients
            .load_lanes(&lanes, true, start, &|| interrupt.is_set());
        let mut usages = Vec::with_capacity(names.len());
        for name in names {
            usages.push(self.window_usage(kind.sampled(), name, None)?);
        }
        let runs = runs.map_err(RoundError::Clients)?;
        Ok(runs
            .iter()
            .zip(usages)
            .zip(loads)
            .map(|((run, usage), &(_, load))| {
                finish_round(
                    run,
                    usage,
                    load,
                    Duration::from_secs_f64(load.warmup_s),
                    asked,
                )
            })
            .collect())
    }

    /// [`Apart::lane_rounds`] as the executor answers a duet's slice: one
    /// result per round asked, a failure of the whole failing each.
    pub(super) fn lane_results(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
        kind: RoundKind,
    ) -> Vec<Result<Measured, RoundError>> {
        match self.lane_rounds(loads, kind) {
            Ok(m) => m.into_iter().map(Ok).collect(),
            Err(e) => loads.iter().map(|_| Err(copy_of(&e))).collect(),
        }
    }
}

/// The same failure again, for each round it failed.
fn copy_of(e: &RoundError) -> RoundError {
    match e {
        RoundError::NotRunning => RoundError::NotRunning,
        RoundError::Clients(r) => RoundError::Clients(r.clone()),
        RoundError::ServerHost(s) => RoundError::ServerHost(s.clone()),
        RoundError::Uncounted(s) => RoundError::Uncounted(s.clone()),
        RoundError::Engine(_) => RoundError::ServerHost(e.to_string()),
    }
}
