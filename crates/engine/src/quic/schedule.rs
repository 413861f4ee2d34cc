//! The open model over HTTP/3: each connection slot's intended send
//! times, as the TCP loop's schedule keeps them (a rate's even spacing
//! staggered over the connections, or a ramp's stages), whatever
//! connection carries the slot at the time.

use crate::ramp::Ramp;
use crate::tick::Ticks;

pub(super) struct Schedule {
    /// Per slot, the intended time of its next request, and its index in
    /// the run's sequence (a ramp's).
    next: Vec<u64>,
    k: Vec<u64>,
    interval: u64,
    /// The whole run's connections: a slot's sends are one in every this many.
    step: u64,
    /// The window's ticks: a request goes out as the tick its even
    /// spacing falls in starts (tick.rs).
    ticks: Ticks,
}

impl Schedule {
    /// The schedule of slots `first..first + slots` of a window starting
    /// at `ticks.start`, kept in `ticks` (of no length: none).
    pub(super) fn new(
        first: usize,
        slots: usize,
        ticks: Ticks,
        interval: u64,
        stagger: u64,
        step: usize,
        ramp: Option<&Ramp>,
    ) -> Schedule {
        let start_ns = ticks.start;
        let k: Vec<u64> = (0..slots).map(|i| (first + i) as u64).collect();
        let next = k
            .iter()
            .map(|&k| match ramp {
                Some(r) => start_ns.saturating_add(r.due_ns(k)),
                None => start_ns + k * stagger,
            })
            .collect();
        Schedule {
            next,
            k,
            interval,
            step: step as u64,
            ticks,
        }
    }

    /// Slot `i`'s next intended time, when it has come by `now`: taken,
    /// and the slot's next one set.
    pub(super) fn take_due(
        &mut self,
        i: usize,
        now: u64,
        ramp: Option<&Ramp>,
        start: u64,
    ) -> Option<u64> {
        let spaced = self.next[i];
        let due = self.ticks.send_at(spaced);
        if due > now {
            return None;
        }
        self.next[i] = match ramp {
            Some(r) => {
                self.k[i] += self.step;
                start.saturating_add(r.due_ns(self.k[i]))
            }
            None => spaced + self.interval,
        };
        Some(due)
    }

    pub(super) fn next(&self, i: usize) -> u64 {
        self.ticks.send_at(self.next[i])
    }

    /// Requests whose intended times fell in `[from, end)` but were never
    /// sent, their slots having been busy (as the TCP loop counts them).
    pub(super) fn unsent(&self, from: u64, end: u64, ramp: Option<&Ramp>, start: u64) -> u64 {
        // Counted on the even spacing, to the bounds the ticks make of
        // the window's (tick.rs).
        let (from, end) = (self.ticks.bound(from), self.ticks.bound(end));
        if let Some(r) = ramp {
            let due = r.due_by(end.saturating_sub(start) as f64 / 1e9);
            let due = (due - 1e-6).ceil().max(0.0) as u64;
            return self
                .k
                .iter()
                .map(|&k| due.saturating_sub(k).div_ceil(self.step))
                .sum();
        }
        let interval = self.interval.max(1);
        let due_before = |next: u64, t: u64| match t.checked_sub(next) {
            Some(d) if d > 0 => (d - 1) / interval + 1,
            _ => 0,
        };
        self.next
            .iter()
            .map(|&n| due_before(n, end).saturating_sub(due_before(n, from)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::{Schedule, Ticks};

    fn window(start: u64, ns: u64, end: u64) -> Ticks {
        Ticks { start, ns, end }
    }

    #[test]
    fn slots_are_staggered_and_keep_their_interval() {
        // Slots 2 and 3 of a run of 4 at 1,000 ns a slot, staggered 250 ns.
        let mut s = Schedule::new(2, 2, window(10_000, 0, u64::MAX), 1_000, 250, 4, None);
        assert_eq!((s.next(0), s.next(1)), (10_500, 10_750));
        assert_eq!(s.take_due(0, 10_499, None, 10_000), None);
        assert_eq!(s.take_due(0, 10_600, None, 10_000), Some(10_500));
        assert_eq!(s.next(0), 11_500);
        // Slot 1 never sent: due at 10,750, 11,750 and 12,750 before
        // 13,000; slot 0 at 11,500 and 12,500.
        assert_eq!(s.unsent(10_000, 13_000, None, 10_000), 5);
        assert_eq!(s.unsent(12_000, 13_000, None, 10_000), 2);
    }

    #[test]
    fn in_ticks_a_slot_sends_as_its_tick_starts_and_keeps_its_spacing() {
        // One slot of one at 300 ns a request, in ticks of 1,000 ns from
        // 10,000: spaced at 10,000, 10,300, 10,600, 10,900, 11,200, …, so
        // four go out at 10,000 and the fifth at 11,000.
        let mut s = Schedule::new(0, 1, window(10_000, 1_000, 12_500), 300, 300, 1, None);
        for spaced in [10_000, 10_300, 10_600, 10_900] {
            assert_eq!(s.next(0), 10_000, "spaced at {spaced}");
            assert_eq!(s.take_due(0, 10_000, None, 10_000), Some(10_000));
        }
        assert_eq!(s.next(0), 11_000);
        assert_eq!(s.take_due(0, 10_999, None, 10_000), None);
        // Nothing sent from here: spaced at 11,200, 11,500 and 11,800 go
        // out at 11,000, 12,100 and 12,400 at 12,000; 12,700 is past the
        // window's end at 12,500 and owed nothing, though its tick starts
        // before it.
        assert_eq!(s.unsent(10_000, 12_500, None, 10_000), 5);
        // Ending on a tick's start: only the tick before it.
        assert_eq!(s.unsent(10_000, 12_000, None, 10_000), 3);
    }
}
