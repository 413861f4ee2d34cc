//! The epoll loop's pacing: how long a thread naps before it looks for
//! more answers, from the latency it has seen, and how far apart its looks
//! are kept. (The ring's naps are counts of answers, not times: io/nap.rs.)

use crate::spec::LoadSpec;

/// Naps (see `Pace::nap_ns`) are at most this long, and at most this
/// fraction of the recent latency (`LoadSpec::nap_divisor`); shorter than
/// the floor, a nap is skipped.
pub(crate) const NAP_MAX_NS: u64 = 500_000;
pub(crate) const NAP_MIN_NS: u64 = 5_000;

/// `issued` requests took places a connection's answers had freed
/// (`freed` of them, arriving at `freed_at_sum` ns in all): the places
/// taken and the ns they stood empty until `now`, the client's hold. When
/// fewer were issued than were freed, each taken place is counted from
/// the freed places' mean arrival. Over TCP and QUIC alike.
pub(crate) fn take_freed(
    freed: &mut u64,
    freed_at_sum: &mut u64,
    issued: u64,
    now: u64,
) -> (u64, u64) {
    let k = issued.min(*freed);
    if k == 0 {
        return (0, 0);
    }
    let took = if k == *freed {
        *freed_at_sum
    } else {
        *freed_at_sum / *freed * k
    };
    *freed -= k;
    *freed_at_sum = if *freed == 0 { 0 } else { *freed_at_sum - took };
    (k, (now * k).saturating_sub(took))
}

/// What the loop's naps are measured against.
pub(crate) struct Pace {
    /// Smoothed response latency in ns, for the nap length.
    latency_avg_ns: u64,
    /// When the epoll loop last took what had arrived, for pacing its
    /// looks (the ring paces none: its naps are counts).
    last_look_ns: u64,
}

impl Pace {
    pub(crate) fn new() -> Self {
        Pace {
            latency_avg_ns: 0,
            last_look_ns: 0,
        }
    }

    /// A response took `took` ns.
    #[inline]
    pub(crate) fn answered(&mut self, took: u64) {
        self.latency_avg_ns = self.latency_avg_ns - self.latency_avg_ns / 16 + took / 16;
    }

    /// The smoothed latency the naps are a fraction of.
    #[cfg(test)]
    pub(crate) fn latency_avg_ns(&self) -> u64 {
        self.latency_avg_ns
    }

    /// The loop took what had arrived at `now`.
    pub(crate) fn looked(&mut self, now: u64) {
        self.last_look_ns = now;
    }

    /// Closed model, load flowing: how long to nap before looking for more
    /// responses, instead of blocking in epoll_wait at once.
    ///
    /// A thread blocked in epoll_wait is woken by the CPU that delivers the
    /// data, which is the server's: every response that finds the client
    /// asleep costs the server a wake-up, on a VM an inter-processor interrupt
    /// and an exit. A quick client sleeps between almost every two responses,
    /// so it slows the server it measures. A thread that naps on its own timer
    /// is not waiting on epoll: the server's sends wake nobody, and the client
    /// then takes the responses that arrived in one go, as a NIC's interrupt
    /// coalescing does. Latency is untouched, since responses carry the
    /// kernel's receive stamp; what a nap delays is the next request of the
    /// connections answered meanwhile, which the server then does not have:
    /// the client's hold (`Stats::hold_ns`) says how many on average. So a
    /// nap is kept to 1/128 of the recent latency by default. Longer naps
    /// cut the client's CPU further, but each halving of the divisor about
    /// doubles the connections held (docs/performance.md).
    pub(crate) fn nap_ns(&self, spec: &LoadSpec, now: u64, wake: u64) -> u64 {
        if !spec.naps() {
            return 0;
        }
        let nap = (self.latency_avg_ns / spec.nap_divisor.max(1))
            .min(NAP_MAX_NS)
            .min(wake.saturating_sub(now));
        if nap < NAP_MIN_NS {
            0
        } else {
            nap
        }
    }

    /// What is left of a nap of `nap` ns since the loop last took what had
    /// arrived, when worth sleeping (at least the shortest nap), else 0.
    /// Looks are paced a nap apart: a client whose turn is quicker than
    /// the gap between two answers would otherwise take them one at a
    /// time, a read and a write each, however many are in flight.
    pub(crate) fn paced_rest(&self, nap: u64, now: u64) -> u64 {
        let rest = nap.saturating_sub(now.saturating_sub(self.last_look_ns));
        if rest >= NAP_MIN_NS {
            rest
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::take_freed;

    #[test]
    fn a_taken_place_is_held_from_its_answer_or_the_freed_places_mean() {
        // Three places freed at 10, 20 and 30 ns; two taken at 100 ns, each
        // counted from the mean arrival (20 ns): 2 × 80 ns.
        let (mut freed, mut sum) = (3, 60);
        assert_eq!(take_freed(&mut freed, &mut sum, 2, 100), (2, 160));
        assert_eq!((freed, sum), (1, 20));
        // The last one, taken at 50 ns: held 30 ns, nothing left.
        assert_eq!(take_freed(&mut freed, &mut sum, 5, 50), (1, 30));
        assert_eq!((freed, sum), (0, 0));
        // None freed: nothing taken, nothing held.
        assert_eq!(take_freed(&mut freed, &mut sum, 4, 90), (0, 0));
    }
}
