//! A duet's rounds apart: both servers' loads started at one instant,
//! each from the client hosts of its own lane ([`super::duet`]), the
//! server host sampling each server over the same window. Each lane's
//! hosts keep their server's connections for the level, and its slices
//! follow one plan ([`super::plan`]); a round off the plan, or asked of
//! one server alone (a warmup, a round asked again longer, a diagnostic
//! round), is started on its own, still from its own lane's hosts only.

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
            let kept = self
                .runs_kept(id, load)
                .then(|| self.name(id))
                .transpose()?;
            lanes.push(Lane {
                hosts,
                spec: self.spec(id, load)?,
                kept,
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
                    cpus: self.sampler_cpus(),
                    start_unix_ns: None,
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
        let r = self.lane_rounds(loads, kind);
        each(r, loads.len())
    }

    /// A duet's slice: read from the level's plan when it is the plan's
    /// next, else run on its own.
    pub(super) fn duet_slice(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
    ) -> Vec<Result<Measured, RoundError>> {
        match self.planned(loads, RoundKind::Slice) {
            Some(r) => each(r, loads.len()),
            None => self.lane_results(loads, RoundKind::Slice),
        }
    }

    /// Before a duet's level: each server's connections opened on its own
    /// lane's client hosts and kept there for the level's slices, when
    /// every lane's hosts have room for them and one more load beside
    /// (else each slice opens its own, as on one machine).
    pub(super) fn open_lanes(&mut self, loads: &[(ServerId, RoundLoad)]) {
        let Some(duet) = self.duet.clone() else {
            return;
        };
        let mut opening = Vec::with_capacity(loads.len());
        for &(id, ref load) in loads {
            let Some(hosts) = duet.clients_of(self.cores, id.index()) else {
                return;
            };
            let share = u64::from(load.concurrency).div_ceil(hosts.len().max(1) as u64);
            let room = hosts.iter().all(|&k| {
                self.clients.links.get(k).is_some_and(|l| {
                    let (soft, hard) = l.facts.environment.nofile;
                    2 * share + throng_model::SPARE_FDS <= soft.max(hard)
                })
            });
            if !room {
                return;
            }
            opening.push((id, load, hosts));
        }
        for (id, load, hosts) in opening {
            // A server whose connections cannot be opened is measured
            // with fresh ones each slice.
            let (Ok(spec), Ok(name)) = (self.spec(id, load), self.name(id)) else {
                continue;
            };
            if self.clients.open_on(&hosts, &name, &spec, true).is_ok() {
                self.kept.push((id, load.concurrency));
            }
        }
    }
}

/// One result per round of a slice asked at once: a failure of the whole
/// fails each.
fn each(r: Result<Vec<Measured>, RoundError>, rounds: usize) -> Vec<Result<Measured, RoundError>> {
    match r {
        Ok(m) => m.into_iter().map(Ok).collect(),
        Err(e) => (0..rounds).map(|_| Err(copy_of(&e))).collect(),
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
