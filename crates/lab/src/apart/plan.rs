//! A level's slices apart at the cost of slices at home: the sweep's
//! forecast of its next slices (`Executor::plan`) is sent to the client
//! hosts once, as a plan of start instants, so only its first slice waits
//! for a synchronised start. The rounds the sweep then asks are read from
//! the plan, in order, while they are the slices it forecast; the server
//! host samples each over its window by the plan's instants.
//!
//! A host that starts a slice late is not keeping up with the gap between
//! slices: the plan is cut after the slice under way (which ends on time
//! and is read as usual) and the rest sent again, twice as far apart.
//!
//! A round asked otherwise (a step ended or failed, a round asked again
//! longer, a diagnostic round), or a slice that failed on any host, ends
//! the plan on every host: the slice under way stops, the rest are not
//! run, and each host's end is awaited, so every round's figures are those
//! of the slice it asked for. The next block sends a new plan of what is
//! still to measure.
//!
//! A duet's slice is both servers at once, each from the client hosts of
//! its own lane: each host is sent its lane's windows once, and a slice
//! is read as one round per lane.

use std::time::Duration;

use throng_remote::plan::{Part, Plan, Slot, GAP_MOST, LATE_LIMIT};

use super::{Apart, LabRequest};
use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::RoundLoad;

/// One round of a planned slice as the sweep will ask for it.
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

/// A slice of the plan: its rounds, one per lane (a duet's two servers,
/// or the one server every client host loads).
type Slice = Vec<Planned>;

/// The plan the client hosts are running, and the slices not read yet.
pub(super) struct LevelPlan {
    plan: Plan,
    slices: Vec<Slice>,
    next: usize,
    /// Slices cut from the plan for its pace, sent again once its last
    /// slice is read.
    rest: Vec<Slice>,
    /// The slice whose sampling windows were asked for a slice ahead.
    ahead: Option<usize>,
}

impl Apart<'_> {
    /// Whether `load` of `server` runs over connections kept for the level.
    pub(super) fn runs_kept(&self, server: ServerId, load: &RoundLoad) -> bool {
        load.requests.is_none()
            && self
                .kept
                .iter()
                .any(|&(s, c)| s == server && c == load.concurrency)
    }

    /// `upcoming` as the plan's slices, up to the first that cannot be
    /// planned: a round over connections not kept, or in a duet a pair
    /// that is not both servers, the first server's first.
    fn slices_of(&self, upcoming: &[(ServerId, RoundLoad)]) -> Vec<Slice> {
        let lanes = if self.duet.is_some() { 2 } else { 1 };
        upcoming
            .chunks_exact(lanes)
            .map_while(|pair| {
                let fits = pair.iter().enumerate().all(|(j, (id, load))| {
                    self.runs_kept(*id, load) && (lanes == 1 || id.index() == j)
                });
                fits.then(|| pair.iter().map(|(id, l)| Planned::of(*id, l)).collect())
            })
            .collect()
    }

    /// The client hosts of each lane: every host for one server's slices,
    /// each server's own in a duet.
    fn plan_lanes(&self) -> Option<Vec<Vec<usize>>> {
        match &self.duet {
            None => Some(vec![(0..self.clients.links.len()).collect()]),
            Some(d) => (0..2).map(|j| d.clients_of(self.cores, j)).collect(),
        }
    }

    /// Sends the client hosts a plan of `upcoming`'s slices, unless the one
    /// they run already agrees with it. Only slices over connections kept
    /// for the level are planned, up to the first that is not.
    pub(super) fn plan_slices(&mut self, upcoming: &[(ServerId, RoundLoad)]) {
        let wanted = self.slices_of(upcoming);
        if let Some(p) = &self.plan {
            let left: Vec<&Slice> = p.slices[p.next..].iter().chain(&p.rest).collect();
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
    fn send_plan(&mut self, wanted: Vec<Slice>) {
        if wanted.is_empty() {
            return;
        }
        let Some(lanes) = self.plan_lanes() else {
            return;
        };
        let mut slices: Vec<Vec<Part>> = Vec::with_capacity(wanted.len());
        for w in &wanted {
            let mut parts = Vec::with_capacity(w.len());
            for r in w {
                let Ok(name) = self.name(r.server) else {
                    return;
                };
                parts.push((
                    name,
                    Duration::from_secs_f64(r.warmup_s),
                    Duration::from_secs_f64(r.seconds),
                ));
            }
            slices.push(parts);
        }
        // A plan that cannot be sent leaves each round to run on its own,
        // where a lost host fails it by name.
        if let Ok(plan) = self.clients.plan_lanes(&lanes, &slices, self.gap) {
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
            // Windows asked for ahead of a slice no one will read.
            if let Some((i, w)) = p.ahead.and_then(|i| Some((i, p.slices.get(i)?))) {
                for r in w {
                    if let Ok(name) = self.name(r.server) {
                        let _ = self.call(LabRequest::WindowEnd {
                            server: name,
                            slice: Some(i as u32),
                        });
                    }
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
        let r = self.planned(&[(server, load)], kind)?;
        Some(r.and_then(|mut m| m.pop().ok_or(RoundError::NotRunning)))
    }

    /// The rounds asked at once (one per lane), read from the plan when
    /// they are its next slice; `None` when they are not (the plan is then
    /// ended).
    pub(super) fn planned(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
        kind: RoundKind,
    ) -> Option<Result<Vec<Measured>, RoundError>> {
        // A plan cut for its pace, read to its end: its rest goes again.
        if let Some(p) = &mut self.plan {
            if p.next == p.slices.len() && !p.rest.is_empty() {
                let rest = std::mem::take(&mut p.rest);
                self.end_plan();
                self.send_plan(rest);
            }
        }
        let p = self.plan.as_ref()?;
        let asked: Slice = loads.iter().map(|&(id, l)| Planned::of(id, l)).collect();
        let next = p.slices.get(p.next);
        let slots = p.plan.remaining().first().cloned();
        let (true, Some(slots)) = (kind == RoundKind::Slice && next == Some(&asked), slots) else {
            self.end_plan();
            return None;
        };
        match self.read_slice(loads, kind, &slots) {
            Ok((m, late)) => {
                // A host that started late is not keeping up with the gap:
                // the slices still to come are sent again, further apart,
                // before the hosts drift from one another.
                if late > LATE_LIMIT && self.gap < GAP_MOST {
                    self.gap = (self.gap * 2).min(GAP_MOST);
                    if let Some(p) = &mut self.plan {
                        if p.rest.is_empty() && p.next < p.slices.len() {
                            self.clients.cut(&mut p.plan);
                            p.rest = p.slices.split_off(p.next + 1);
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

    /// The plan's next slice, `slots` its lanes': each lane's round and
    /// how late the latest host started it.
    fn read_slice(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
        kind: RoundKind,
        slots: &[Slot],
    ) -> Result<(Vec<Measured>, Duration), RoundError> {
        let names = loads
            .iter()
            .map(|&(id, _)| self.name(id))
            .collect::<Result<Vec<_>, _>>()?;
        let (index, next) = {
            let p = self.plan.as_ref().expect("a plan is under way");
            let next: Option<Vec<ServerId>> = p
                .slices
                .get(p.next + 1)
                .map(|w| w.iter().map(|r| r.server).collect());
            let slots = p.plan.remaining().get(1).cloned();
            (p.next, next.zip(slots))
        };
        if kind.sampled() {
            if self.plan.as_ref().and_then(|p| p.ahead) != Some(index) {
                for (name, slot) in names.iter().zip(slots) {
                    self.begin_window(name, index, slot)?;
                }
            }
            // The next slice's windows are asked for now, a slice ahead, so
            // they begin on time however long this one's figures take.
            let mut ahead = None;
            if let Some((ids, next_slots)) = next {
                for (id, slot) in ids.into_iter().zip(&next_slots) {
                    let next_name = self.name(id)?;
                    self.begin_window(&next_name, index + 1, slot)?;
                }
                ahead = Some(index + 1);
            }
            if let Some(p) = self.plan.as_mut() {
                p.ahead = ahead;
            }
        }
        let interrupt = self.interrupt;
        let timeout = loads
            .iter()
            .map(|(_, l)| l.timeout)
            .max()
            .unwrap_or_default();
        let read = {
            let p = self.plan.as_mut().expect("a plan is under way");
            p.next += 1;
            self.clients
                .next_lanes(&mut p.plan, timeout, &|| interrupt.is_set())
        };
        let mut usages = Vec::with_capacity(names.len());
        for name in names {
            usages.push(self.window_usage(kind.sampled(), name, Some(index as u32))?);
        }
        let runs = read.map_err(RoundError::Clients)?;
        let late = runs.iter().map(|s| s.late).max().unwrap_or_default();
        let measured = runs
            .iter()
            .zip(usages)
            .map(|(s, usage)| {
                let mut m = super::measured(&s.run, usage, s.coordination);
                m.summary.coordination_parts = s.parts;
                m
            })
            .collect();
        Ok((measured, late))
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
            cpus: self.sampler_cpus(),
        })?;
        Ok(())
    }
}
