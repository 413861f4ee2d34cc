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
/// A slice started later than this after its instant on some host is
/// late. Two in a row: the gap is too short for the hosts (a debug build,
/// a busy machine), and the hosts would drift apart slice after slice.
/// The plan is cut after the slice under way and its rest sent again with
/// a gap twice as long, up to [`GAP_MOST`]. One alone is a wake-up
/// delayed on a busy machine, which a longer gap does not prevent: on
/// this 2-CPU machine one slice in twenty started 2–30 ms late whatever
/// the gap, 5 ms or 80, and doubling for each spaced out every slice of
/// a run after its first few such, 80 ms apart by its middle.
pub const LATE_LIMIT: Duration = Duration::from_millis(2);
/// The longest gap a plan is given: beyond it a slice might as well wait
/// for a start lead of its own.
pub const GAP_MOST: Duration = Duration::from_millis(80);
/// Slices in a row started on time, on every host, after which the gap
/// is halved again (down to [`SLICE_GAP`]): a host late once (a wake-up
/// delayed on a busy machine) does not space out every slice of the run
/// after it, each a share of the time the study could have measured in.
pub const ON_TIME_TO_SHORTEN: u32 = 16;

/// The gap between a plan's slices: as short as the hosts keep up with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    now: Duration,
    on_time: u32,
    /// The slice before was late.
    late_before: bool,
    /// How late the two slices before started, drains included: the one
    /// before first.
    lates: [Duration; 2],
}

impl Default for Gap {
    fn default() -> Self {
        Gap {
            now: SLICE_GAP,
            on_time: 0,
            late_before: false,
            lates: [Duration::ZERO; 2],
        }
    }
}

impl Gap {
    /// The gap the next plan is sent with.
    pub fn get(&self) -> Duration {
        self.now
    }

    /// A slice started `late` after its instant on its latest host,
    /// `drained` of it held for drains (a slow server's last answers,
    /// which every slice waits for at home too, and the lateness they gave
    /// the slices before it). True when this one and the one before were
    /// behind and the gap doubled: the plan under way is to be cut and its
    /// rest sent again. A slice is behind when it was too late for the
    /// hosts' pace, or late for drains that two slices' gaps did not take
    /// back by one gap: drains as long as the gap at most slices, whose
    /// lateness would stay or grow and each host drift by its own. One
    /// long drain (apache2-event's first slices at a level, 20–35 ms)
    /// doubles nothing and cuts nothing: the plan's gaps take its lateness
    /// back a slice at a time, where a plan sent again would wait for a
    /// lead. After [`ON_TIME_TO_SHORTEN`] slices not behind the gap is
    /// halved, for the next plan sent.
    pub fn started(&mut self, late: Duration, drained: Duration) -> bool {
        let two_back = self.lates[1];
        self.lates = [late, self.lates[0]];
        let kept = late > LATE_LIMIT && two_back > LATE_LIMIT && late + self.now > two_back;
        let behind = late.saturating_sub(drained) > LATE_LIMIT || kept;
        if behind {
            self.on_time = 0;
            if !std::mem::replace(&mut self.late_before, true) {
                return false;
            }
            // The slice already under way keeps the old gap: its own
            // lateness counts as a first again.
            self.late_before = false;
            if self.now < GAP_MOST {
                self.now = (self.now * 2).min(GAP_MOST);
                return true;
            }
            return false;
        }
        self.late_before = false;
        self.on_time += 1;
        if self.on_time >= ON_TIME_TO_SHORTEN && self.now > SLICE_GAP {
            self.now = (self.now / 2).max(SLICE_GAP);
            self.on_time = 0;
        }
        false
    }
}

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
    let mut at = first_ns;
    slices
        .iter()
        .map(|(key, warmup, seconds)| {
            let s = Slot {
                key: key.clone(),
                start_local_ns: at,
                warmup: *warmup,
                seconds: *seconds,
            };
            at = s.end_local_ns() + gap.as_nanos() as u64;
            s
        })
        .collect()
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

/// A plan under way on every host.
#[derive(Debug)]
pub struct Plan {
    /// Each host's request id, in host order.
    ids: Vec<u64>,
    slots: Vec<Slot>,
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
    /// How long a host held the slice's start for drains (the longest
    /// such wait of any host; [`SliceStamps::waited_ns`]): lateness that is
    /// the last servers' answers, not the hosts' pace.
    pub drained: Duration,
    /// Where `coordination` went, for the host whose figures came last;
    /// `None` from an agent that does not stamp its slices.
    pub parts: Option<throng_model::CoordinationParts>,
}

impl Plan {
    /// The slots not yet read, in order.
    pub fn remaining(&self) -> &[Slot] {
        if self.stopped {
            return &[];
        }
        &self.slots[self.next..]
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
        let first = crate::agent::unix_ns() + self.lead().as_nanos() as u64;
        let slots = schedule(first, slices, gap);
        let mut ids = Vec::with_capacity(self.links.len());
        for k in 0..self.links.len() {
            let slices = for_host(&slots, &self.links[k].offset);
            match self.links[k].send(Request::Plan { slices }) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    self.stop_all();
                    return Err(e);
                }
            }
        }
        Ok(Plan {
            ids,
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
        let Some(slot) = plan.remaining().first().cloned() else {
            return Err(RemoteError::Split("the plan has no slice left".into()));
        };
        let index = plan.next as u32;
        plan.next += 1;
        let bound = slot.warmup + slot.seconds + timeout + Duration::from_secs(60);
        let deadline = Fleet::deadline(slot.start_local_ns, bound);
        let mut replies: Vec<Option<Reply>> = vec![None; plan.ids.len()];
        // Per host: its stamps and when its figures arrived here.
        let mut stamped: Vec<Option<(SliceStamps, u64)>> = vec![None; plan.ids.len()];
        // Asleep on the fleet's bell between looks, so the slice's time
        // here is a few wake-ups rather than one each millisecond.
        let mut seen = self.bell.rung();
        while replies.iter().any(Option::is_none) {
            if !plan.stopped && interrupted() {
                plan.stopped = true;
                self.stop_all();
            }
            if Instant::now() > deadline {
                let k = replies.iter().position(Option::is_none).unwrap_or(0);
                let host = self.links[k].place.to_string();
                plan.stopped = true;
                self.stop_all();
                return Err(RemoteError::Timeout { host });
            }
            for (k, (reply, &id)) in replies.iter_mut().zip(&plan.ids).enumerate() {
                if reply.is_some() {
                    continue;
                }
                let got = self.links[k].poll(id);
                let failed = match got {
                    Ok(None) => continue,
                    Ok(Some(Reply::Slice {
                        index: i,
                        result: Some(result),
                        ports,
                        tcp,
                        error: None,
                        stamps,
                    })) if i == index => {
                        *reply = Some(Reply::Load { result, ports, tcp });
                        stamped[k] = stamps.map(|st| (st, self.links[k].arrived_ns));
                        continue;
                    }
                    Ok(Some(Reply::Slice {
                        index: i,
                        error: Some(message),
                        ..
                    })) if i == index => RemoteError::Agent {
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
            if replies.iter().any(Option::is_none) {
                seen = self.doze(seen, deadline);
            }
        }
        let done = crate::agent::unix_ns();
        let coordination = Duration::from_nanos(done.saturating_sub(slot.end_local_ns()));
        let parts = stamped
            .iter()
            .zip(&self.links)
            .filter_map(|(st, l)| st.map(|(st, arrived)| (st, arrived, l.offset)))
            .max_by_key(|&(_, arrived, _)| arrived)
            .map(|(st, arrived, offset)| coordination_parts(&slot, st, arrived, &offset, done));
        let drained = stamped
            .iter()
            .flatten()
            .map(|(st, _)| Duration::from_nanos(st.waited_ns))
            .max()
            .unwrap_or_default();
        let run = self.runs(replies.into_iter().flatten().collect())?;
        let late = run.late(slot.start_local_ns + slot.warmup.as_nanos() as u64);
        // Only a plan's first slice waits for a lead; the others wait for
        // the gap, whose own lateness the plan answers.
        if index == 0 {
            self.observe_start(&run, slot.start_local_ns, slot.warmup);
        }
        Ok(SliceRun {
            run,
            coordination,
            late,
            drained,
            parts,
        })
    }

    /// Runs no slice of `plan` after those a host may already have begun
    /// ([`cut_after`], by a lead from now: the time a request takes to
    /// reach every host): each runs on time and is read as usual. Returns
    /// how many slices the plan keeps. A host that cannot be told is left
    /// to the next read, which fails by name.
    pub fn cut(&mut self, plan: &mut Plan) -> usize {
        let reach = crate::agent::unix_ns() + self.lead().as_nanos() as u64;
        let after = cut_after(&plan.slots, plan.next, reach);
        for l in &mut self.links {
            let _ = l.send(Request::Cut {
                after: after as u32,
            });
        }
        plan.slots.truncate(after + 1);
        plan.slots.len()
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
        for (k, &id) in plan.ids.iter().enumerate() {
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

/// The last slice a cut reaching the hosts by `reach_ns` (this clock)
/// keeps: the one under way (`next`, the next to be read) and every one a
/// host may have begun by then. A host takes its next slice as the one
/// before ends its counted time, and checks the cut only then: a slice
/// begun before the cut arrived runs whole, and cut from the plan its
/// figures would be thrown away and its requests served to the server
/// between rounds, in no record (a coordinator whose reading of the
/// figures fell behind the hosts by two slices on a busy machine).
pub fn cut_after(slots: &[Slot], next: usize, reach_ns: u64) -> usize {
    let begun = slots
        .windows(2)
        .take_while(|w| w[0].end_local_ns() <= reach_ns)
        .count();
    next.max(begun).min(slots.len().saturating_sub(1))
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
    // Held for the drain before it, the slice ended that much later too.
    let drain_ms = stamps.waited_ns as f64 / 1e6;
    throng_model::CoordinationParts {
        drain_ms,
        finish_ms: ms(stamps.ended_unix_ns, end_there) - drain_ms,
        ports_ms: ms(stamps.ready_unix_ns, stamps.ended_unix_ns),
        travel_ms: ms(arrived_ns, ready_here),
        read_ms: ms(done, arrived_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_keeps_every_slice_a_host_may_have_begun_before_it_arrives() {
        let ms = Duration::from_millis;
        let slices: Vec<(String, Duration, Duration)> =
            (0..6).map(|i| (format!("s{i}"), ms(20), ms(100))).collect();
        // Slices of 120 ms, 5 ms apart: slice i starts at 125 i ms.
        let slots = schedule(1_000_000_000, &slices, ms(5));
        let at = |t_ms: u64| 1_000_000_000 + t_ms * 1_000_000;
        assert_eq!(slots[2].start_local_ns, at(250));
        // Read slice 0 in time, slice 1 under way, the cut reaching the
        // hosts before slice 1 ends (120 + 125): slice 1 is the last.
        assert_eq!(cut_after(&slots, 1, at(200)), 1);
        // The reading fell behind: by the time the cut arrives slice 1 has
        // ended (at 245 ms) and a host has taken slice 2, which is kept
        // and read; slice 3 is not begun until 370 ms.
        assert_eq!(cut_after(&slots, 1, at(245)), 2);
        assert_eq!(cut_after(&slots, 1, at(369)), 2);
        assert_eq!(cut_after(&slots, 1, at(370)), 3);
        // Never before the slice under way, never past the plan's end.
        assert_eq!(cut_after(&slots, 4, at(0)), 4);
        assert_eq!(cut_after(&slots, 1, at(10_000)), 5);
        assert_eq!(cut_after(&[], 0, at(0)), 0);
    }

    #[test]
    fn a_start_held_for_drains_neither_cuts_the_plan_nor_doubles_the_gap() {
        let ms = Duration::from_millis;
        let mut g = Gap::default();
        // 22 ms late, all of it the last server's drain, then the lateness
        // it carried into the next slices, a gap less each: taken back.
        for late in [22, 17, 12, 7, 2, 0] {
            assert!(!g.started(ms(late), ms(late)));
        }
        assert_eq!(g.get(), SLICE_GAP);
        // Drains 3 ms longer than the gap at every slice: the lateness
        // grows, behind from the third such slice, and the fourth doubles
        // the gap.
        assert!(!g.started(ms(3), ms(3)));
        assert!(!g.started(ms(6), ms(6)));
        assert!(!g.started(ms(9), ms(9)));
        assert!(g.started(ms(12), ms(12)));
        assert_eq!(g.get(), 2 * SLICE_GAP);
        // The plan sent again keeps up; long drains now and then, each
        // taken back, count as keeping pace toward the gap's halving.
        assert!(!g.started(ms(0), Duration::ZERO));
        assert!(!g.started(ms(0), Duration::ZERO));
        for k in 0..ON_TIME_TO_SHORTEN - 3 {
            let late = [30, 20, 10, 0, 0][k as usize % 5];
            assert!(!g.started(ms(late), ms(late)), "{k}");
        }
        assert_eq!(g.get(), 2 * SLICE_GAP, "not yet");
        assert!(!g.started(ms(0), Duration::ZERO));
        assert_eq!(g.get(), SLICE_GAP, "slices held by drains kept pace");
        // Late beyond its drains twice in a row: the hosts' pace, doubled.
        assert!(!g.started(ms(30), ms(10)));
        assert!(g.started(ms(25), ms(10)));
        assert_eq!(g.get(), 2 * SLICE_GAP);
        // Lateness for drains that the gaps never take back, up and down
        // about where it was (drains as long as the gap, and one server's
        // longer): behind too.
        assert!(!g.started(ms(0), Duration::ZERO));
        for late in [8, 6, 27] {
            assert!(!g.started(ms(late), ms(late)), "{late}");
        }
        assert!(g.started(ms(25), ms(25)));
        assert_eq!(g.get(), 4 * SLICE_GAP);
    }

    #[test]
    fn the_gap_doubles_for_two_late_starts_in_a_row_and_halves_again_after_slices_on_time() {
        let ms = Duration::from_millis;
        let mut g = Gap::default();
        assert_eq!(g.get(), SLICE_GAP);
        assert!(!g.started(ms(1), Duration::ZERO), "on time: nothing to cut");
        assert!(
            !g.started(ms(3), Duration::ZERO),
            "late once: a wake-up delayed, kept"
        );
        assert_eq!(g.get(), SLICE_GAP);
        assert!(!g.started(ms(0), Duration::ZERO));
        assert!(
            !g.started(ms(30), Duration::ZERO),
            "late once again, after one on time"
        );
        assert_eq!(g.get(), SLICE_GAP);
        assert!(
            g.started(ms(3), Duration::ZERO),
            "late twice in a row: doubled, the plan cut"
        );
        assert_eq!(g.get(), 2 * SLICE_GAP);
        // The slice under way kept the old gap: late again, it is a first.
        assert!(!g.started(ms(4), Duration::ZERO));
        assert!(g.started(ms(9), Duration::ZERO));
        assert_eq!(g.get(), 4 * SLICE_GAP);
        for _ in 0..ON_TIME_TO_SHORTEN - 1 {
            assert!(!g.started(ms(0), Duration::ZERO));
        }
        assert_eq!(g.get(), 4 * SLICE_GAP, "not yet");
        assert!(!g.started(ms(0), Duration::ZERO));
        assert_eq!(g.get(), 2 * SLICE_GAP, "halved for the next plan");
        // A late start on the way resets the count, and doubles nothing.
        for _ in 0..ON_TIME_TO_SHORTEN - 1 {
            g.started(ms(0), Duration::ZERO);
        }
        assert!(!g.started(ms(5), Duration::ZERO));
        for _ in 0..ON_TIME_TO_SHORTEN - 1 {
            g.started(ms(0), Duration::ZERO);
        }
        assert_eq!(g.get(), 2 * SLICE_GAP, "the count started again");
        // One slice in twenty late, never two in a row: the gap stays.
        let mut h = Gap::default();
        for k in 0..400 {
            assert!(!h.started(ms(if k % 20 == 19 { 30 } else { 0 }), Duration::ZERO));
        }
        assert_eq!(h.get(), SLICE_GAP);
        // Never past the most, nor below the least.
        for _ in 0..20 {
            g.started(ms(50), Duration::ZERO);
        }
        assert_eq!(g.get(), GAP_MOST);
        assert!(!g.started(ms(50), Duration::ZERO));
        assert!(
            !g.started(ms(50), Duration::ZERO),
            "at the most: no cut, nothing gained"
        );
        for _ in 0..20 * ON_TIME_TO_SHORTEN {
            g.started(ms(0), Duration::ZERO);
        }
        assert_eq!(g.get(), SLICE_GAP);
    }

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
        // Its start waited 1 ms for the drain of the slice before.
        let stamps = SliceStamps {
            ended_unix_ns: 10_008_000_000,
            ready_unix_ns: 10_009_000_000,
            waited_ns: 1_000_000,
        };
        let p = coordination_parts(&slot, stamps, 10_009_000_000, &offset, 10_010_000_000);
        assert_eq!(
            (p.drain_ms, p.finish_ms, p.ports_ms, p.travel_ms, p.read_ms),
            (1.0, 2.0, 1.0, 5.0, 1.0)
        );
        // Whatever the offset, the parts add up to the coordination.
        let off = Offset {
            offset_ns: -40_000_000,
            ..offset
        };
        let q = coordination_parts(&slot, stamps, 10_009_000_000, &off, 10_010_000_000);
        assert_eq!(
            q.drain_ms + q.finish_ms + q.ports_ms + q.travel_ms + q.read_ms,
            10.0
        );
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
}
