//! A level's slices sent to the client hosts once, as a plan: each slice's
//! start instant on this machine's clock, translated into each host's by
//! its measured offset, so only the plan's first slice waits for a
//! synchronised start and the others follow back to back. Each host sends
//! a slice's figures as the slice ends, so a lost host or a failed slice is
//! seen within the slice, not at the plan's end.

use std::time::{Duration, Instant};

use crate::clock::Offset;
use crate::fleet::{Fleet, FleetRun};
use crate::protocol::{PlanSlice, Reply, Request, SliceStamps};
use crate::RemoteError;

/// Room between one slice's counted end and the next one's start, at
/// first: the host's window drains what is in flight and merges its
/// threads' counts (1–5 ms in a release build on a 2-CPU machine; its
/// figures are sent meanwhile by another thread).
pub const SLICE_GAP: Duration = Duration::from_millis(5);
/// A slice started later than this after its instant on some host: the
/// gap is too short for the hosts (a debug build, a busy machine), and
/// the hosts would drift apart slice after slice. The plan is cut after
/// the slice under way and its rest sent again with a gap twice as long,
/// up to [`GAP_MOST`].
pub const LATE_LIMIT: Duration = Duration::from_millis(2);
/// The longest gap a plan is given: beyond it a slice might as well wait
/// for a start lead of its own.
pub const GAP_MOST: Duration = Duration::from_millis(80);
/// Slices sent in one plan at most: a longer level is sent in several.
pub const PLAN_MAX: usize = 512;

/// One slice of a plan on this machine's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// The connections it runs over ([`Fleet::open`]'s key).
    pub key: String,
    /// Unix ns on this machine's clock.
    pub start_local_ns: u64,
    pub warmup: Duration,
    pub seconds: Duration,
}

impl Slot {
    /// When its counted time ends, on this machine's clock.
    pub fn end_local_ns(&self) -> u64 {
        self.start_local_ns + (self.warmup + self.seconds).as_nanos() as u64
    }
}

/// Slots back to back from `first_ns`: each starts `gap` after the one
/// before ends its counted time. `slices` are (key, warmup, seconds).
pub fn schedule(
    first_ns: u64,
    slices: &[(String, Duration, Duration)],
    gap: Duration,
) -> Vec<Slot> {
    let one: Vec<Vec<Part>> = slices.iter().map(|s| vec![s.clone()]).collect();
    schedule_lanes(first_ns, &one, gap)
        .into_iter()
        .flatten()
        .collect()
}

/// One lane's window in a slice: (key, warmup, seconds).
pub type Part = (String, Duration, Duration);

/// [`schedule`] of slices whose lanes run at once (a duet's two servers,
/// each from hosts of its own): `slices[i][j]` is lane `j`'s window in
/// slice `i`. Every lane of a slice starts at one instant, and the next
/// slice starts `gap` after the latest of them ends its counted time.
pub fn schedule_lanes(first_ns: u64, slices: &[Vec<Part>], gap: Duration) -> Vec<Vec<Slot>> {
    let mut at = first_ns;
    slices
        .iter()
        .map(|lanes| {
            let slots: Vec<Slot> = lanes
                .iter()
                .map(|(key, warmup, seconds)| Slot {
                    key: key.clone(),
                    start_local_ns: at,
                    warmup: *warmup,
                    seconds: *seconds,
                })
                .collect();
            let end = slots.iter().map(Slot::end_local_ns).max().unwrap_or(at);
            at = end + gap.as_nanos() as u64;
            slots
        })
        .collect()
}

/// Each host's `Plan` request, once for the whole plan: the hosts of lane
/// `j` (indices into the fleet, `lanes[j]`) get lane `j`'s slots of every
/// slice, on their own clocks (`offsets[host]`). A host in two lanes, or
/// beyond `offsets`, is refused: one agent runs one plan at a time.
pub fn lane_plans(
    lanes: &[Vec<usize>],
    slots: &[Vec<Slot>],
    offsets: &[Offset],
) -> Result<Vec<(usize, Request)>, RemoteError> {
    let mut out: Vec<(usize, Request)> = Vec::new();
    for (j, hosts) in lanes.iter().enumerate() {
        let mine: Vec<Slot> = slots
            .iter()
            .map(|s| {
                s.get(j).cloned().ok_or_else(|| {
                    RemoteError::Split(format!("a slice of the plan has no lane {}", j + 1))
                })
            })
            .collect::<Result<_, _>>()?;
        for &k in hosts {
            let Some(offset) = offsets.get(k) else {
                return Err(RemoteError::Split(format!(
                    "no client host {} among {}",
                    k + 1,
                    offsets.len()
                )));
            };
            if out.iter().any(|&(h, _)| h == k) {
                return Err(RemoteError::Split(format!(
                    "client host {} is in two lanes",
                    k + 1
                )));
            }
            let slices = for_host(&mine, offset);
            out.push((k, Request::Plan { slices }));
        }
    }
    Ok(out)
}

/// `slots` as a host whose clock is `offset` from this one's reads them.
pub fn for_host(slots: &[Slot], offset: &Offset) -> Vec<PlanSlice> {
    slots
        .iter()
        .map(|s| PlanSlice {
            key: s.key.clone(),
            start_unix_ns: offset.to_host_ns(s.start_local_ns),
            warmup_s: s.warmup.as_secs_f64(),
            seconds: s.seconds.as_secs_f64(),
        })
        .collect()
}

/// A plan under way on its hosts.
#[derive(Debug)]
pub struct Plan {
    /// Each host that runs it (an index into the fleet), its lane and its
    /// request id, in the order they were sent.
    hosts: Vec<(usize, usize, u64)>,
    /// Each lane's hosts.
    lanes: Vec<Vec<usize>>,
    /// Each slice's slots, one per lane.
    slots: Vec<Vec<Slot>>,
    /// The slice whose figures come next.
    next: usize,
    /// Every host told to stop (an interrupt, a failure): no slice follows.
    stopped: bool,
}

/// One slice's figures from every host, and how long the coordinator
/// waited for them beyond the slice's own time.
#[derive(Debug, Clone)]
pub struct SliceRun {
    pub run: FleetRun,
    /// From the slice's instant in the plan to its figures back here,
    /// less its warmup and counted time.
    pub coordination: Duration,
    /// How late the latest host started the slice's counted time after
    /// the plan's instant.
    pub late: Duration,
    /// How far the furthest host ran the slice's counted time from the
    /// plan's instants, at its start or its end ([`FleetRun::stray`]).
    pub stray: Duration,
    /// How long after the plan's end of the slice the latest host had its
    /// figures ready (its `ended` stamp, on this clock): the wake-up and
    /// the merge, a few milliseconds, or a host stalled in the slice (its
    /// counted time ends by its own clock whatever happened in it). Zero
    /// from an agent that does not stamp its slices.
    pub ended_late: Duration,
    /// Where `coordination` went, for the host whose figures came last;
    /// `None` from an agent that does not stamp its slices.
    pub parts: Option<throng_model::CoordinationParts>,
}

impl Plan {
    /// The slices not yet read, in order, each its lanes' slots.
    pub fn remaining(&self) -> &[Vec<Slot>] {
        if self.stopped {
            return &[];
        }
        &self.slots[self.next..]
    }

    /// The `Plan` requests it was sent as: one per host.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }
}

impl Fleet {
    /// Sends every host its share of `slices` (key, warmup, seconds), the
    /// first starting one lead ([`Fleet::lead`]) from now and the others
    /// back to back, `gap` apart. A host that cannot be sent it ends the
    /// plan on all.
    pub fn plan(
        &mut self,
        slices: &[(String, Duration, Duration)],
        gap: Duration,
    ) -> Result<Plan, RemoteError> {
        let all: Vec<usize> = (0..self.links.len()).collect();
        let one: Vec<Vec<Part>> = slices.iter().map(|s| vec![s.clone()]).collect();
        self.plan_lanes(&[all], &one, gap)
    }

    /// [`Fleet::plan`] of slices whose lanes run at once: the hosts of
    /// `lanes[j]` run lane `j`'s window of each slice over the connections
    /// they keep for it, every lane of a slice from one instant. Each host
    /// is sent its plan once.
    pub fn plan_lanes(
        &mut self,
        lanes: &[Vec<usize>],
        slices: &[Vec<Part>],
        gap: Duration,
    ) -> Result<Plan, RemoteError> {
        let first = crate::agent::unix_ns() + self.lead().as_nanos() as u64;
        let slots = schedule_lanes(first, slices, gap);
        let offsets: Vec<Offset> = self.links.iter().map(|l| l.offset).collect();
        let requests = lane_plans(lanes, &slots, &offsets)?;
        let mut hosts = Vec::with_capacity(requests.len());
        for (k, request) in requests {
            let lane = lanes.iter().position(|l| l.contains(&k)).unwrap_or(0);
            match self.links[k].send(request) {
                Ok(id) => hosts.push((k, lane, id)),
                Err(e) => {
                    self.stop_all();
                    return Err(e);
                }
            }
        }
        Ok(Plan {
            hosts,
            lanes: lanes.to_vec(),
            slots,
            next: 0,
            stopped: false,
        })
    }

    /// The next slice's figures from every host, merged as a load's are.
    /// `interrupted` is polled while the hosts run it; when it turns true
    /// every host stops the slice (its figures still come back) and the
    /// plan. A host lost, or a slice failed on a host, fails it by name.
    pub fn next_slice(
        &mut self,
        plan: &mut Plan,
        timeout: Duration,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<SliceRun, RemoteError> {
        self.next_lanes(plan, timeout, interrupted)?
            .into_iter()
            .next()
            .ok_or_else(|| RemoteError::Split("the plan has no lane".into()))
    }

    /// [`Fleet::next_slice`] of a plan of lanes: each lane's figures,
    /// merged from its own hosts alone, in lane order.
    pub fn next_lanes(
        &mut self,
        plan: &mut Plan,
        timeout: Duration,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Vec<SliceRun>, RemoteError> {
        let Some(slots) = plan.remaining().first().cloned() else {
            return Err(RemoteError::Split("the plan has no slice left".into()));
        };
        let index = plan.next as u32;
        plan.next += 1;
        let start = slots.iter().map(|s| s.start_local_ns).min().unwrap_or(0);
        let longest = slots.iter().map(|s| s.warmup + s.seconds).max();
        let bound = longest.unwrap_or_default() + timeout + Duration::from_secs(60);
        let deadline = Fleet::deadline(start, bound);
        let n = plan.hosts.len();
        let mut replies: Vec<Option<Reply>> = vec![None; n];
        // Per host: its stamps and when its figures arrived here.
        let mut stamped: Vec<Option<(SliceStamps, u64)>> = vec![None; n];
        while replies.iter().any(Option::is_none) {
            if !plan.stopped && interrupted() {
                plan.stopped = true;
                self.stop_all();
            }
            if Instant::now() > deadline {
                let i = replies.iter().position(Option::is_none).unwrap_or(0);
                let host = self.links[plan.hosts[i].0].place.to_string();
                plan.stopped = true;
                self.stop_all();
                return Err(RemoteError::Timeout { host });
            }
            for (i, reply) in replies.iter_mut().enumerate() {
                if reply.is_some() {
                    continue;
                }
                let (k, _, id) = plan.hosts[i];
                let got = self.links[k].poll(id, Duration::from_millis(1));
                let failed = match got {
                    Ok(None) => continue,
                    Ok(Some(Reply::Slice {
                        index: at,
                        result: Some(result),
                        ports,
                        tcp,
                        error: None,
                        stamps,
                    })) if at == index => {
                        *reply = Some(Reply::Load { result, ports, tcp });
                        stamped[i] = stamps.map(|st| (st, self.links[k].arrived_ns));
                        continue;
                    }
                    Ok(Some(Reply::Slice {
                        index: at,
                        error: Some(message),
                        ..
                    })) if at == index => RemoteError::Agent {
                        host: self.links[k].place.to_string(),
                        message,
                    },
                    Ok(Some(other)) => self.links[k].unexpected(&other),
                    Err(e) => e,
                };
                plan.stopped = true;
                self.stop_all();
                return Err(failed);
            }
        }
        let done = crate::agent::unix_ns();
        let mut replies: Vec<Option<Reply>> = replies;
        let mut runs = Vec::with_capacity(plan.lanes.len());
        for (j, slot) in slots.iter().enumerate() {
            let mine: Vec<usize> = (0..n).filter(|&i| plan.hosts[i].1 == j).collect();
            let of: Vec<usize> = mine.iter().map(|&i| plan.hosts[i].0).collect();
            let lane_replies: Vec<Reply> = mine.iter().filter_map(|&i| replies[i].take()).collect();
            let coordination = Duration::from_nanos(done.saturating_sub(slot.end_local_ns()));
            let parts = mine
                .iter()
                .filter_map(|&i| {
                    let offset = self.links[plan.hosts[i].0].offset;
                    stamped[i].map(|(st, arrived)| (st, arrived, offset))
                })
                .max_by_key(|&(_, arrived, _)| arrived)
                .map(|(st, arrived, offset)| coordination_parts(slot, st, arrived, &offset, done));
            let run = self.runs_of(&of, lane_replies)?;
            let counted = slot.start_local_ns + slot.warmup.as_nanos() as u64;
            let late = run.late(counted);
            let stray = run.stray(counted, slot.end_local_ns());
            let ended_late = mine
                .iter()
                .filter_map(|&i| {
                    let (st, _) = stamped[i]?;
                    let offset = self.links[plan.hosts[i].0].offset;
                    Some(ended_after(slot, st, &offset))
                })
                .max()
                .unwrap_or_default();
            runs.push(SliceRun {
                run,
                coordination,
                late,
                stray,
                ended_late,
                parts,
            });
        }
        // Only a plan's first slice waits for a lead; the others wait for
        // the gap, whose own lateness the plan answers. One start, however
        // many lanes: its latest host is what counts.
        if index == 0 {
            let late = runs.iter().map(|r| r.late).max().unwrap_or_default();
            self.observe_late(late);
        }
        Ok(runs)
    }

    /// Runs no slice of `plan` after the last one read: one the hosts have
    /// started since ends on time, unread, and [`Fleet::end_plan`] then
    /// waits for it rather than stopping it (a window stopped midway
    /// leaves its connections to open again).
    pub fn cut_read(&mut self, plan: &mut Plan) {
        let Some(after) = plan.next.checked_sub(1) else {
            return;
        };
        for &(k, _, _) in &plan.hosts {
            let _ = self.links[k].send(Request::Cut {
                after: after as u32,
            });
        }
        plan.slots.truncate(plan.next);
    }

    /// Runs no slice of `plan` after the next one to be read: the one
    /// running on the hosts ends on time and is read as usual. A host
    /// that cannot be told is left to the next read, which fails by name.
    pub fn cut(&mut self, plan: &mut Plan) {
        let after = plan.next as u32;
        for &(k, _, _) in &plan.hosts {
            let _ = self.links[k].send(Request::Cut { after });
        }
        plan.slots.truncate(plan.next + 1);
    }

    /// Ends `plan` on every host: the slice under way stops, the rest are
    /// not run, and each host's end is awaited (for a few seconds at most:
    /// a host lost meanwhile is not waited for), so the hosts are free for
    /// what follows.
    pub fn end_plan(&mut self, plan: Plan) {
        let everything_read = plan.next >= plan.slots.len();
        if !everything_read || plan.stopped {
            self.stop_all();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for &(k, _, id) in &plan.hosts {
            // Slice figures no one will read come first; the end follows.
            loop {
                match self.links[k].wait(id, deadline, &|| false) {
                    Ok(Some(Reply::PlanEnded { .. })) | Ok(None) | Err(_) => break,
                    Ok(Some(Reply::Failed { .. })) => break,
                    Ok(Some(_)) => {}
                }
            }
        }
    }
}

/// How long after `slot`'s planned end a host (its clock `offset` from
/// this one's) had the slice's figures ready, by its `ended` stamp.
pub fn ended_after(slot: &Slot, stamps: SliceStamps, offset: &Offset) -> Duration {
    let end_there = offset.to_host_ns(slot.end_local_ns());
    Duration::from_nanos(stamps.ended_unix_ns.saturating_sub(end_there))
}

/// Where the time from `slot`'s planned end to its figures read here
/// (`done`, this clock) went, from one host's stamps (its clock, `offset`
/// from this one) and its figures' arrival here. The clocks' offset
/// cancels in the sum, which is the slice's coordination exactly; only
/// the split between finishing there and travelling carries its error.
pub fn coordination_parts(
    slot: &Slot,
    stamps: SliceStamps,
    arrived_ns: u64,
    offset: &Offset,
    done: u64,
) -> throng_model::CoordinationParts {
    let ms = |a: u64, b: u64| (a as i128 - b as i128) as f64 / 1e6;
    let end_there = offset.to_host_ns(slot.end_local_ns());
    let ready_here = (stamps.ready_unix_ns as i128 - offset.offset_ns as i128).max(0) as u64;
    throng_model::CoordinationParts {
        finish_ms: ms(stamps.ended_unix_ns, end_there),
        ports_ms: ms(stamps.ready_unix_ns, stamps.ended_unix_ns),
        travel_ms: ms(arrived_ns, ready_here),
        read_ms: ms(done, arrived_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_slices_coordination_splits_into_parts_that_add_up_across_clocks() {
        // The host's clock runs 5 ms ahead of this one's; the slice's
        // counted time ends at 10 s here.
        let slot = Slot {
            key: "k".into(),
            start_local_ns: 9_000_000_000,
            warmup: ms(500),
            seconds: ms(500),
        };
        let offset = Offset {
            offset_ns: 5_000_000,
            uncertainty_ns: 100_000,
            rtt_ns: 200_000,
        };
        let stamps = SliceStamps {
            ended_unix_ns: 10_008_000_000,
            ready_unix_ns: 10_009_000_000,
        };
        let p = coordination_parts(&slot, stamps, 10_009_000_000, &offset, 10_010_000_000);
        assert_eq!(
            (p.finish_ms, p.ports_ms, p.travel_ms, p.read_ms),
            (3.0, 1.0, 5.0, 1.0)
        );
        // Its figures ready 3 ms after the end, on the host's clock.
        assert_eq!(ended_after(&slot, stamps, &offset), ms(3));
        // Whatever the offset, the parts add up to the coordination.
        let off = Offset {
            offset_ns: -40_000_000,
            ..offset
        };
        let q = coordination_parts(&slot, stamps, 10_009_000_000, &off, 10_010_000_000);
        assert_eq!(q.finish_ms + q.ports_ms + q.travel_ms + q.read_ms, 10.0);
    }

    #[test]
    fn slices_follow_one_another_by_their_length_and_the_gap() {
        let slots = schedule(
            1_000_000_000,
            &[
                ("a".into(), ms(20), ms(100)),
                ("b".into(), ms(20), ms(100)),
                ("a".into(), ms(0), ms(250)),
            ],
            ms(5),
        );
        let starts: Vec<u64> = slots.iter().map(|s| s.start_local_ns).collect();
        assert_eq!(starts, [1_000_000_000, 1_125_000_000, 1_250_000_000]);
        assert_eq!(slots[2].end_local_ns(), 1_500_000_000);
        assert_eq!(slots[1].key, "b");
    }

    #[test]
    fn each_host_reads_the_plan_on_its_own_clock() {
        let slots = schedule(
            5_000_000_000,
            &[("a".into(), ms(20), ms(100)), ("b".into(), ms(20), ms(100))],
            ms(2),
        );
        // One host 3.5 ms ahead of this machine, one 250 µs behind.
        let ahead = Offset {
            offset_ns: 3_500_000,
            uncertainty_ns: 40_000,
            rtt_ns: 80_000,
        };
        let behind = Offset {
            offset_ns: -250_000,
            ..ahead
        };
        let a = for_host(&slots, &ahead);
        let b = for_host(&slots, &behind);
        assert_eq!(
            a.iter().map(|s| s.start_unix_ns).collect::<Vec<_>>(),
            [5_003_500_000, 5_125_500_000]
        );
        assert_eq!(
            b.iter().map(|s| s.start_unix_ns).collect::<Vec<_>>(),
            [4_999_750_000, 5_121_750_000]
        );
        // The same instants of this machine's clock, whatever the host.
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.start_unix_ns - y.start_unix_ns, 3_750_000);
            assert_eq!((x.warmup_s, x.seconds), (0.02, 0.1));
        }
        assert_eq!(a[1].key, "b");
        // No offset: the plan as it is.
        assert_eq!(
            for_host(&slots, &Offset::ZERO)[0].start_unix_ns,
            5_000_000_000
        );
    }
    #[test]
    fn a_duets_plan_is_one_request_per_host_each_running_its_own_lanes_server() {
        // Three slices of a duet: both servers at once in each, the
        // second server's windows of the last slice 50 ms longer.
        let slices: Vec<Vec<Part>> = (0..3)
            .map(|i| {
                vec![
                    ("a".to_string(), ms(20), ms(100)),
                    ("b".to_string(), ms(20), ms(if i == 2 { 150 } else { 100 })),
                ]
            })
            .collect();
        let slots = schedule_lanes(5_000_000_000, &slices, ms(5));
        let starts: Vec<Vec<u64>> = slots
            .iter()
            .map(|s| s.iter().map(|x| x.start_local_ns).collect())
            .collect();
        assert_eq!(
            starts,
            [
                [5_000_000_000, 5_000_000_000],
                [5_125_000_000, 5_125_000_000],
                [5_250_000_000, 5_250_000_000],
            ]
        );
        assert_eq!(slots[2][1].end_local_ns(), 5_420_000_000);
        // Four client hosts, the first two for the first server; their
        // clocks 5 ms behind, on time, 3 ms ahead and 1 ms ahead.
        let offsets: Vec<Offset> = [-5_000_000, 0, 3_000_000, 1_000_000]
            .into_iter()
            .map(|offset_ns| Offset {
                offset_ns,
                uncertainty_ns: 20_000,
                rtt_ns: 40_000,
            })
            .collect();
        let lanes = [vec![0, 1], vec![2, 3]];
        let requests = lane_plans(&lanes, &slots, &offsets).unwrap();
        // One plan per host for the three slices, each host's windows over
        // its own lane's server, at the same instants in its own clock.
        let seen: Vec<(usize, Vec<(String, u64)>)> = requests
            .iter()
            .map(|(k, r)| match r {
                Request::Plan { slices } => (
                    *k,
                    slices
                        .iter()
                        .map(|s| (s.key.clone(), s.start_unix_ns))
                        .collect(),
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        let at = |key: &str, off: i64| -> Vec<(String, u64)> {
            [5_000_000_000u64, 5_125_000_000, 5_250_000_000]
                .iter()
                .map(|&t| (key.to_string(), (t as i64 + off) as u64))
                .collect()
        };
        assert_eq!(
            seen,
            [
                (0, at("a", -5_000_000)),
                (1, at("a", 0)),
                (2, at("b", 3_000_000)),
                (3, at("b", 1_000_000)),
            ]
        );
        // A host in both lanes, or one the fleet does not hold, is refused.
        let e = lane_plans(&[vec![0], vec![0]], &slots, &offsets).unwrap_err();
        assert_eq!(e.to_string(), "client host 1 is in two lanes");
        let e = lane_plans(&[vec![0], vec![4]], &slots, &offsets).unwrap_err();
        assert_eq!(e.to_string(), "no client host 5 among 4");
    }
}
