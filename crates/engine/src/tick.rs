//! The open model's schedule in ticks: the requests that fall due within
//! a tick go out together as it starts.
//!
//! A schedule kept request by request sends each at its own instant, and
//! at tens of thousands a second those instants are a few microseconds
//! apart: shorter than what one sleep costs a thread on a virtual
//! machine, so the client spins or sleeps between every two sends and is
//! busy nearly all the time, whatever it sends. wrk2 keeps its schedule
//! in milliseconds and sends what fell due in each together. A tick
//! makes that choice explicit and exact: the schedule's instants are the
//! ticks', each request is intended at the start of the tick its even
//! spacing falls in, and its latency runs from there. The server sees
//! bursts of the rate times the tick; the rate over any whole number of
//! ticks is the one asked. A window's last tick may start before its end
//! and reach past it: only the requests spaced before the end go out with
//! it, so a window sends the rate times its length whatever the tick.

/// The ticks of one window: `ns` long, the first starting at `start`,
/// the requests spaced before `end` sent in them. `ns` 0: no ticks, each
/// request at its own instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticks {
    pub start: u64,
    pub ns: u64,
    /// The window's end (`u64::MAX` for a count, which has none).
    pub end: u64,
}

impl Ticks {
    /// The instant a request whose even spacing puts it at `at` is sent
    /// and timed from: the start of the tick `at` falls in; `u64::MAX`,
    /// never, for one spaced past the window's end.
    #[inline]
    pub(crate) fn send_at(self, at: u64) -> u64 {
        if self.ns == 0 || at < self.start {
            return at;
        }
        if at >= self.end {
            return u64::MAX;
        }
        at - (at - self.start) % self.ns
    }

    /// The even-spacing bound of the requests sent before `t`: a request
    /// at `at` is sent before `t` exactly when `at` is before this, the
    /// start of the first tick that does not begin before `t`, or the
    /// window's end.
    pub(crate) fn bound(self, t: u64) -> u64 {
        if self.ns == 0 || t <= self.start {
            return t;
        }
        self.start
            .saturating_add((t - self.start).div_ceil(self.ns).saturating_mul(self.ns))
            .min(self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::Ticks;

    fn ticks(start: u64, ns: u64, end: u64) -> Ticks {
        Ticks { start, ns, end }
    }

    #[test]
    fn a_request_goes_out_as_its_tick_starts() {
        let t = ticks(1_000, 100, 1_250);
        assert_eq!(t.send_at(1_000), 1_000);
        assert_eq!(t.send_at(1_099), 1_000);
        assert_eq!(t.send_at(1_100), 1_100);
        assert_eq!(t.send_at(1_249), 1_200);
        // Spaced past the end: its tick starts before it, but the window
        // owes it nothing.
        assert_eq!(t.send_at(1_250), u64::MAX);
        // No ticks: each at its own instant.
        let none = ticks(1_000, 0, 1_250);
        assert_eq!(none.send_at(1_234), 1_234);
        assert_eq!(none.bound(1_234), 1_234);
    }

    /// `bound` is what `send_at` makes of a window's end: for every
    /// instant and every end, sent before the end exactly when the
    /// instant is before the bound. Checked over every pair in a span of
    /// several ticks, ends on and off the ticks.
    #[test]
    fn the_bound_counts_exactly_the_requests_sent_before_an_end() {
        for ns in [1, 3, 7, 10] {
            for window_end in [97, 100, u64::MAX] {
                let t = ticks(50, ns, window_end);
                for end in 0..120 {
                    for at in 50..120 {
                        assert_eq!(
                            t.send_at(at) < end,
                            at < t.bound(end),
                            "tick {ns}, window's end {window_end}, at {at}, end {end}"
                        );
                    }
                }
            }
        }
    }
}
