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
//! A slice whose hosts ran its counted time out of step with the plan (a
//! host that started it late, or whose threads ran on past its end: a
//! stalled machine) was not sampled on the server host over its own time,
//! which follows the plan's instants: its figures are set aside, and the
//! slice is measured again at the head of a new plan of the slices still
//! to come, a few times at most.
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

/// Times a slice run out of step with its plan is measured again before
/// its figures are kept as they are.
const AGAIN_MOST: u32 = 3;

/// How far a slice's hosts may run its counted time from the plan's
/// instants (at its start or its end), or the server host's window fall
/// short of it, and its figures still be read with the server host's
/// sample of those instants: a tenth of that time, at least
/// [`LATE_LIMIT`].
fn in_step(slot: &Slot) -> Duration {
    (slot.seconds / 10).max(LATE_LIMIT)
}

/// What says whether one lane of a slice ran in step with its plan.
#[derive(Debug, Clone, Copy, Default)]
struct Step {
    /// How far its furthest host ran the counted time from the plan's
    /// instants ([`throng_remote::plan::SliceRun::stray`]).
    stray: Duration,
    /// How long after the plan's end its latest host had its figures
    /// ready ([`throng_remote::plan::SliceRun::ended_late`]).
    ended_late: Duration,
    /// The server host's window over it, seconds, when it was sampled.
    sampled_s: Option<f64>,
}

/// Whether a slice read from the plan ran out of step with it, in some
/// lane (`steps[j]` for `slots[j]`): a host ran its counted time further
/// from the slot's instants than [`in_step`] allows; or had its figures
/// ready more than that, and than the longest gap a plan gives, after the
/// slot's end (a host stalled in the slice: its engine ends the counted
/// time by its own clock, whatever it could not do meanwhile); or the
/// server host's window over it fell short of it by more than
/// [`in_step`] (its sampler began late).
fn out_of_step(slots: &[Slot], steps: &[Step]) -> bool {
    slots.iter().zip(steps).any(|(slot, step)| {
        let allowed = in_step(slot);
        let short = step
            .sampled_s
            .is_some_and(|s| s < (slot.seconds.saturating_sub(allowed)).as_secs_f64());
        step.stray > allowed || step.ended_late > allowed.max(GAP_MOST) || short
    })
}

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
        let asked: Slice = loads.iter().map(|&(id, l)| Planned::of(id, l)).collect();
        let mut again = 0;
        loop {
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
            let slots = p.plan.remaining().first().cloned();
            let (true, Some(slots)) = (kind == RoundKind::Slice && next == Some(&asked), slots)
            else {
                self.end_plan();
                return None;
            };
            let (mut m, late, steps) = match self.read_slice(loads, kind, &slots) {
                Ok(read) => read,
                Err(e) => {
                    self.end_plan();
                    return Some(Err(e));
                }
            };
            // Figures of a time the server host did not sample are not the
            // slice's: it is measured again, from a plan of its own start.
            if out_of_step(&slots, &steps) && again < AGAIN_MOST && !self.interrupt.is_set() {
                again += 1;
                self.measure_again(asked.clone());
                continue;
            }
            for x in &mut m {
                x.summary.out_of_step = (again > 0).then_some(again);
            }
            // A host that started late is not keeping up with the gap: the
            // slices still to come are sent again, further apart, before
            // the hosts drift from one another.
            if late > LATE_LIMIT && self.gap < GAP_MOST {
                self.gap = (self.gap * 2).min(GAP_MOST);
                if let Some(p) = &mut self.plan {
                    if p.rest.is_empty() && p.next < p.slices.len() {
                        self.clients.cut(&mut p.plan);
                        p.rest = p.slices.split_off(p.next + 1);
                    }
                }
            }
            return Some(Ok(m));
        }
    }

    /// Ends the plan and sends a new one: `slice` (just read out of step)
    /// first, then the slices the plan still held, the gap twice as long
    /// (a stall that put the hosts out of step may come from a gap too
    /// short for them). A slice the hosts have started meanwhile ends on
    /// time, unread, over the connections the level keeps.
    fn measure_again(&mut self, slice: Slice) {
        let Some(p) = &mut self.plan else {
            return;
        };
        let wanted: Vec<Slice> = std::iter::once(slice)
            .chain(p.slices[p.next..].iter().cloned())
            .chain(p.rest.iter().cloned())
            .collect();
        self.clients.cut_read(&mut p.plan);
        self.gap = (self.gap * 2).min(GAP_MOST);
        self.end_plan();
        self.send_plan(wanted);
    }

    /// The plan's next slice, `slots` its lanes': each lane's round, how
    /// late the latest host started it, and whether each lane ran in step
    /// with the plan.
    fn read_slice(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
        kind: RoundKind,
        slots: &[Slot],
    ) -> Result<(Vec<Measured>, Duration, Vec<Step>), RoundError> {
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
        let steps = runs
            .iter()
            .zip(&usages)
            .map(|(s, usage)| Step {
                stray: s.stray,
                ended_late: s.ended_late,
                sampled_s: kind.sampled().then_some(usage.wall_s),
            })
            .collect();
        let measured = runs
            .iter()
            .zip(usages)
            .map(|(s, usage)| {
                let mut m = super::measured(&s.run, usage, s.coordination);
                m.summary.coordination_parts = s.parts;
                m
            })
            .collect();
        Ok((measured, late, steps))
    }

    /// Asks the server host to sample `name` over `slot`'s counted time by
    /// the plan's instants, as slice `index`: from the counted time's
    /// instant on the server host's clock, so a request read there late
    /// (a stalled agent) still ends the window at the slice's end, and
    /// what had gone by is left out (and seen: the window's wall time
    /// falls short of the slice's).
    fn begin_window(&self, name: &str, index: usize, slot: &Slot) -> Result<(), RoundError> {
        let now = throng_remote::agent::unix_ns();
        let counted = slot.start_local_ns + slot.warmup.as_nanos() as u64;
        self.call_in_round(LabRequest::WindowBegin {
            server: name.to_string(),
            delay_s: counted.saturating_sub(now) as f64 / 1e9,
            seconds: slot.seconds.as_secs_f64(),
            slice: Some(index as u32),
            cpus: self.sampler_cpus(),
            start_unix_ns: Some(self.server_offset().to_host_ns(counted)),
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn slot(key: &str, seconds: Duration) -> Slot {
        Slot {
            key: key.into(),
            start_local_ns: 5_000_000_000,
            warmup: ms(20),
            seconds,
        }
    }

    fn strayed(d: Duration) -> Step {
        Step {
            stray: d,
            ended_late: ms(5),
            sampled_s: None,
        }
    }

    #[test]
    fn a_slice_whose_hosts_strayed_from_the_plan_is_out_of_step() {
        let one = [slot("a", ms(100))];
        // Hosts a few milliseconds late, as a busy machine's are: read.
        assert!(!out_of_step(&one, &[strayed(ms(4))]));
        assert!(!out_of_step(&one, &[strayed(ms(10))]));
        // A host 168 ms late (the slice's whole counted time, and more):
        // the server host sampled 0.1 s in which it sent nothing.
        assert!(out_of_step(&one, &[strayed(ms(168))]));
        assert!(out_of_step(&one, &[strayed(ms(11))]));
        // A second's slice allows a tenth of it; a very short one, the
        // late limit.
        assert!(!out_of_step(&[slot("a", ms(1000))], &[strayed(ms(100))]));
        assert!(out_of_step(&[slot("a", ms(5))], &[strayed(ms(3))]));
        // A duet: either lane out of step puts the slice out of step.
        let two = [slot("a", ms(100)), slot("b", ms(100))];
        assert!(!out_of_step(&two, &[strayed(ms(1)), strayed(ms(2))]));
        assert!(out_of_step(&two, &[strayed(ms(1)), strayed(ms(600))]));
    }

    #[test]
    fn a_host_stalled_in_a_slice_or_a_sampler_begun_late_puts_it_out_of_step() {
        let one = [slot("a", ms(100))];
        let on_time = Step {
            sampled_s: Some(0.1),
            ..strayed(ms(1))
        };
        // Started on time, its counted time ended by its clock, but its
        // figures ready 724 ms after the end: the host stalled in it.
        let stalled = Step {
            ended_late: ms(724),
            ..on_time
        };
        assert!(out_of_step(&one, &[stalled]));
        // A debug build's merge on a busy machine, tens of milliseconds:
        // within the longest gap, read.
        let merged = Step {
            ended_late: ms(26),
            ..on_time
        };
        assert!(!out_of_step(&one, &[merged]));
        // The server host's window began 30 ms late: it sampled 70 ms of
        // the slice's 100.
        let short = Step {
            sampled_s: Some(0.07),
            ..on_time
        };
        assert!(out_of_step(&one, &[short]));
        // Its last reading a few ms past the end; a round not sampled.
        for sampled_s in [Some(0.104), Some(0.095), None] {
            assert!(!out_of_step(
                &one,
                &[Step {
                    sampled_s,
                    ..on_time
                }]
            ));
        }
    }
}
