//! The QUIC loop's naps: a short sleep on the thread's own timer, in place
//! of a wait on the socket, while responses are flowing.
//!
//! A loop that waits on its socket is woken by the first datagram of each
//! burst the server sends, and at about two responses a wake, the wakes
//! were most of what the client spent (docs/performance.md). Asleep on its
//! own timer, it is woken by no datagram, and takes what came meanwhile in
//! one go. The latency is untouched, since each datagram carries the
//! kernel's receive stamp (udp.rs) and what it completes ends then; what a
//! nap delays is the next request of the streams answered meanwhile, as
//! over TCP (docs/methodology.md, naps). So a nap is the TCP loop's: at
//! most 1/`nap_divisor` of the recent latency and `NAP_MAX_NS`, counted
//! from the turn's look, and never past the loop's next deadline (the
//! run's end or warmup's, quinn's timers, the timeout scan), so no timer
//! and no due send waits for it.

use crate::driver::Pace;
use crate::spec::LoadSpec;

/// What the loop's naps are measured against: the TCP loop's `Pace` (its
/// smoothed latency, its nap and what is left of it since the look), and
/// whether anything is flowing.
pub(super) struct Naps {
    pace: Pace,
    /// Responses ended since the last nap was judged: a turn that ended
    /// none has nothing flowing to batch, and waits on the socket.
    answered: u64,
}

impl Naps {
    pub(super) fn new() -> Naps {
        Naps {
            pace: Pace::new(),
            answered: 0,
        }
    }

    /// A response took `took` ns.
    pub(super) fn answered(&mut self, took: u64) {
        self.pace.answered(took);
        self.answered += 1;
    }

    /// How long to nap at `now`, the turn having looked at the socket at
    /// `looked`, with its next deadline at `wake`: 0 for no nap, when the
    /// turn answered nothing, or what is left of the nap is under the
    /// floor. Counted from the look, so a turn slower than the nap takes
    /// none, and the look after a nap comes a nap after the last.
    pub(super) fn nap_ns(&mut self, spec: &LoadSpec, looked: u64, now: u64, wake: u64) -> u64 {
        if std::mem::take(&mut self.answered) == 0 {
            return 0;
        }
        self.pace.looked(looked);
        match self.pace.nap_ns(spec, now, wake) {
            0 => 0,
            nap => self.pace.paced_rest(nap, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::NAP_MAX_NS;

    /// A closed load napping at 1/`d` of the latency.
    fn at(d: u64) -> LoadSpec {
        let mut spec = LoadSpec::new(Vec::new());
        spec.nap_divisor = d;
        spec
    }

    /// Naps that have seen `n` responses of `took` ns each.
    fn seen(n: u32, took: u64) -> Naps {
        let mut naps = Naps::new();
        for _ in 0..n {
            naps.answered(took);
        }
        naps
    }

    #[test]
    fn a_nap_is_a_fraction_of_the_latency_from_the_look() {
        // 200 responses of 2 ms: the average has come to it.
        let mut naps = seen(200, 2_000_000);
        assert_eq!(naps.pace.latency_avg_ns(), 2_000_000);
        // 1/16 of it, less the 30 µs the turn took since its look.
        assert_eq!(naps.nap_ns(&at(16), 1_000_000, 1_030_000, u64::MAX), 95_000);
        // Judged once: the next turn answered nothing, and waits.
        assert_eq!(naps.nap_ns(&at(16), 1_000_000, 1_030_000, u64::MAX), 0);
    }

    #[test]
    fn a_nap_never_passes_the_next_deadline_nor_its_cap() {
        let mut naps = seen(200, 2_000_000);
        assert_eq!(naps.nap_ns(&at(16), 0, 0, 40_000), 40_000);
        naps.answered(2_000_000);
        assert_eq!(naps.nap_ns(&at(2), 0, 0, u64::MAX), NAP_MAX_NS);
        // A deadline closer than the floor: no nap, the socket's wait.
        naps.answered(2_000_000);
        assert_eq!(naps.nap_ns(&at(16), 0, 0, 4_000), 0);
    }

    #[test]
    fn a_turn_slower_than_its_nap_takes_none() {
        let mut naps = seen(200, 2_000_000);
        assert_eq!(naps.nap_ns(&at(128), 0, 15_625, u64::MAX), 0);
        naps.answered(2_000_000);
        // 1/128 of 2 ms is 15,625 ns: 10 µs into the turn, 5,625 are
        // left; 11 µs in, what is left is under the floor.
        assert_eq!(naps.nap_ns(&at(128), 0, 10_000, u64::MAX), 5_625);
        naps.answered(2_000_000);
        assert_eq!(naps.nap_ns(&at(128), 0, 11_000, u64::MAX), 0);
    }
}
