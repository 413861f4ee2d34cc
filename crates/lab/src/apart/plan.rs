//! A level's slices apart at the cost of slices at home: the sweep's
//! forecast of its next slices (`Executor::plan`) is sent to the client
//! hosts once, as a plan of start instants, so only its first slice waits
//! for a synchronised start. The rounds the sweep then asks are read from
//! the plan, in order, while they are the slices it forecast; the server
//! host samples each over its window by the plan's instants.
//!
//! A host that starts a slice late is not keeping up with the gap between
//! slices: the plan is cut after the slice under way and any a host may
//! have begun by the time the cut reaches it (each ends on time and is
//! read as usual) and the rest sent again, twice as far apart; once
//! the hosts have started enough slices in a row on time, the next plan
//! is sent with the gap halved again (`Gap`).
//!
//! A round asked otherwise (a step ended or failed, a round asked again
//! longer, a diagnostic round), or a slice that failed on any host, ends
//! the plan on every host: the slice under way stops, the rest are not
//! run, and each host's end is awaited, so every round's figures are those
//! of the slice it asked for. The next block sends a new plan of what is
//! still to measure.

use std::time::Duration;

use throng_remote::plan::{Plan, Slot};

use super::{Apart, LabRequest};
use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::RoundLoad;

/// One slice of the plan as the sweep will ask for it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Planned {
    server: ServerId,
    concurrency: u32,
    warmup_s: f64,
    seconds: f64,
}

impl Planned {
    fn of(server: ServerId, load: &RoundLoad) -> Planned {
        Planned {
            server,
            concurrency: load.concurrency,
            warmup_s: load.warmup_s,
            seconds: load.seconds,
        }
    }
}

/// The plan the client hosts are running, and the slices not read yet.
pub(super) struct LevelPlan {
    plan: Plan,
    slices: Vec<Planned>,
    next: usize,
    /// Slices cut from the plan for its pace, sent again once its last
    /// slice is read.
    rest: Vec<Planned>,
    /// The slice whose sampling window was asked for a slice ahead.
    ahead: Option<usize>,
}

impl Apart<'_> {
    /// Sends the client hosts a plan of `upcoming`'s slices, unless the one
    /// they run already agrees with it. Only slices over connections kept
    /// for the level are planned, up to the first that is not.
    pub(super) fn plan_slices(&mut self, upcoming: &[(ServerId, RoundLoad)]) {
        let wanted: Vec<Planned> = upcoming
            .iter()
            .map_while(|(id, load)| {
                let kept = self
                    .kept
                    .iter()
                    .any(|&(s, c)| s == *id && c == load.concurrency);
                (kept && load.requests.is_none()).then(|| Planned::of(*id, load))
            })
            .collect();
        if let Some(p) = &self.plan {
            let left: Vec<&Planned> = p.slices[p.next..].iter().chain(&p.rest).collect();
            let n = left.len().min(wanted.len());
            let agree = left.iter().zip(&wanted).all(|(a, b)| *a == b);
            let running = p.plan.remaining().len() == p.slices.len() - p.next;
            if n > 0 && agree && running && p.next < p.slices.len() {
                return;
            }
        }
        self.end_plan();
        self.send_plan(wanted);
    }

    /// Sends the client hosts a plan of `wanted`, the slices the gap of
    /// the hosts' pace apart.
    fn send_plan(&mut self, wanted: Vec<Planned>) {
        if wanted.is_empty() {
            return;
        }
        let mut slices = Vec::with_capacity(wanted.len());
        for w in &wanted {
            let Ok(name) = self.name(w.server) else {
                return;
            };
            slices.push((
                name,
                Duration::from_secs_f64(w.warmup_s),
                Duration::from_secs_f64(w.seconds),
            ));
        }
        // A plan that cannot be sent leaves each round to run on its own,
        // where a lost host fails it by name.
        if let Ok(plan) = self.clients.plan(&slices, self.gap.get()) {
            self.plan = Some(LevelPlan {
                plan,
                slices: wanted,
                next: 0,
                rest: Vec::new(),
                ahead: None,
            });
        }
    }

    /// Ends the plan under way, if any, on every client host.
    pub(super) fn end_plan(&mut self) {
        if let Some(p) = self.plan.take() {
            self.clients.end_plan(p.plan);
            // A window asked for ahead of a slice no one will read.
            if let Some((i, w)) = p.ahead.and_then(|i| Some((i, p.slices.get(i)?))) {
                if let Ok(name) = self.name(w.server) {
                    let _ = self.call(LabRequest::WindowEnd {
                        server: name,
                        slice: Some(i as u32),
                    });
                }
            }
        }
    }

    /// The round asked, read from the plan when it is the plan's next
    /// slice; `None` when it is not (the plan is then ended).
    pub(super) fn planned_round(
        &mut self,
        server: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
    ) -> Option<Result<Measured, RoundError>> {
        // A plan cut for its pace, read to its end: its rest goes again.
        if let Some(p) = &mut self.plan {
            if p.next == p.slices.len() && !p.rest.is_empty() {
                let rest = std::mem::take(&mut p.rest);
                self.end_plan();
                self.send_plan(rest);
            }
        }
        let p = self.plan.as_ref()?;
        let next = p.slices.get(p.next);
        let slot = p.plan.remaining().first().cloned();
        let (true, Some(slot)) = (
            kind == RoundKind::Slice && next == Some(&Planned::of(server, load)),
            slot,
        ) else {
            self.end_plan();
            return None;
        };
        match self.read_slice(server, load, kind, &slot) {
            Ok((m, late, drained)) => {
                // A host that started late is not keeping up with the gap:
                // the slices still to come are sent again, further apart,
                // before the hosts drift from one another; lateness that
                // was the last slices' drains is not the hosts' pace.
                if self.gap.started(late, drained) {
                    if let Some(p) = &mut self.plan {
                        if p.rest.is_empty() && p.next < p.slices.len() {
                            let kept = self.clients.cut(&mut p.plan);
                            p.rest = p.slices.split_off(kept);
                        }
                    }
                }
                Some(Ok(m))
            }
            Err(e) => {
                self.end_plan();
                Some(Err(e))
            }
        }
    }

    fn read_slice(
        &mut self,
        server: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
        slot: &Slot,
    ) -> Result<(Measured, Duration, Duration), RoundError> {
        let name = self.name(server)?;
        let (index, next) = {
            let p = self.plan.as_ref().expect("a plan is under way");
            let next = p.slices.get(p.next + 1).map(|w| w.server);
            let slot = p.plan.remaining().get(1).cloned();
            (p.next, next.zip(slot))
        };
        if kind.sampled() {
            if self.plan.as_ref().and_then(|p| p.ahead) != Some(index) {
                self.begin_window(&name, index, slot)?;
            }
            // The next slice's window is asked for now, a slice ahead, so
            // it begins on time however long this one's figures take.
            let mut ahead = None;
            if let Some((id, next_slot)) = next {
                let next_name = self.name(id)?;
                self.begin_window(&next_name, index + 1, &next_slot)?;
                ahead = Some(index + 1);
            }
            if let Some(p) = self.plan.as_mut() {
                p.ahead = ahead;
            }
        }
        let interrupt = self.interrupt;
        let timeout = load.timeout;
        let read = {
            let p = self.plan.as_mut().expect("a plan is under way");
            p.next += 1;
            self.clients
                .next_slice(&mut p.plan, timeout, &|| interrupt.is_set())
        };
        let usage = self.window_usage(kind.sampled(), name, Some(index as u32))?;
        let s = read.map_err(RoundError::Clients)?;
        let mut m = super::measured(&s.run, usage, s.coordination);
        m.summary.coordination_parts = s.parts;
        Ok((m, s.late, s.drained))
    }

    /// Asks the server host to sample `name` over `slot`'s counted time by
    /// the plan's instants, less any part already gone, as slice `index`.
    fn begin_window(&self, name: &str, index: usize, slot: &Slot) -> Result<(), RoundError> {
        let now = throng_remote::agent::unix_ns();
        let counted = slot.start_local_ns + slot.warmup.as_nanos() as u64;
        let end = slot.end_local_ns();
        let from = now.max(counted);
        self.call_in_round(LabRequest::WindowBegin {
            server: name.to_string(),
            delay_s: counted.saturating_sub(now) as f64 / 1e9,
            seconds: (end.saturating_sub(from) as f64 / 1e9).max(1e-3),
            slice: Some(index as u32),
        })?;
        Ok(())
    }
}
