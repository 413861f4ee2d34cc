//! The epoll loop's pacing: how long a thread naps before it looks for
//! more answers, from the latency it has seen, and how far apart its looks
//! are kept. (The ring's naps are counts of answers, not times: io/nap.rs.)

use crate::spec::LoadSpec;

/// Naps (see `Pace::nap_ns`) are at most this long, and at most this
/// fraction of the recent latency (`LoadSpec::nap_divisor`); shorter than
/// the floor, a nap is skipped.
const NAP_MAX_NS: u64 = 500_000;
const NAP_MIN_NS: u64 = 5_000;

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
