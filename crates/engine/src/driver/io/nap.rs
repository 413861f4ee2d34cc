//! The ring's naps: a wait for a count of answers rather than for a time.
//!
//! A nap lets answers gather so that one look takes several, and the
//! server, answered in a batch, finds a batch of requests when it next
//! looks (docs/methodology.md, naps). On epoll a nap is a sleep on a
//! timer. On the ring it is a wait for as many answers as a nap's time
//! brings: on a virtual machine, every timer due sooner than the
//! scheduler's next tick is an exit to the hypervisor to arm and another
//! to cancel, which on this project's machine cost more client CPU than
//! the wake-ups the nap saved (docs/performance.md). A count needs no
//! timer: the ring defers the work of each arrival to the waiting thread,
//! and wakes it only once the count has come.
//!
//! A count can wait for answers that will not come (a server that stalls
//! some connections, a load that slows down), so a nap is also bounded in
//! time, by `NAP_BOUND_NS`, past the tick where a timer costs no extra
//! exit; and a nap that reaches its bound teaches the next ones to ask
//! for no more than it got.

use std::io;

use crate::driver::*;

/// The longest a nap waits for its count: past the scheduler's tick (4 ms
/// at 250 Hz), short enough that a load which slowed down mid-nap loses
/// little, and rarely, since the count then shrinks (`NapCount`).
pub(super) const NAP_BOUND_NS: u64 = 10_000_000;
/// Looks, after a nap came up short, before the count may grow again;
/// doubled each time it comes up short, so a load that cannot fill a
/// larger count pays for trying ever more rarely.
const PATIENCE_MIN: u32 = 64;
const PATIENCE_MAX: u32 = 1 << 20;

/// What the ring's naps have learnt of the load: how many answers one may
/// wait for.
pub(super) struct NapCount {
    /// At most this many: what came in the last nap that reached its
    /// bound, doubled after `patience` looks without another.
    cap: usize,
    calm: u32,
    patience: u32,
}

impl NapCount {
    pub(super) fn new() -> Self {
        NapCount {
            cap: usize::MAX,
            calm: 0,
            // Doubled by the first nap that comes up short.
            patience: PATIENCE_MIN / 2,
        }
    }

    /// The count for a nap meant to bring `per_nap` answers: 0 (no nap)
    /// when that is one or none, since a wait for one is no nap.
    pub(super) fn count(&self, per_nap: usize) -> usize {
        let n = per_nap.min(self.cap);
        if n > 1 {
            n
        } else {
            0
        }
    }

    /// A look took `answers` receives; `short`: it ended a nap that
    /// reached its bound before the count it asked for had come. The next
    /// count is then at most what came, and at most half what was asked:
    /// a receive is a completion to count here, but the kernel counted a
    /// connection's receives since the last look as one arrival, so what
    /// came can exceed what the kernel saw. Every look counts toward the
    /// patience, naps or not: a capped count of one takes no naps.
    pub(super) fn looked(&mut self, answers: usize, short: Option<usize>) {
        if let Some(asked) = short {
            self.cap = answers.min(asked / 2).max(1);
            self.calm = 0;
            self.patience = (self.patience * 2).min(PATIENCE_MAX);
        } else if self.cap != usize::MAX {
            self.calm += 1;
            if self.calm >= self.patience {
                self.cap = self.cap.saturating_mul(2);
                self.calm = 0;
            }
        }
    }
}

impl Worker<'_> {
    /// Submit the turn's work and wait for completions until `wake`; when
    /// the load is flowing, a nap first. In the closed model a thread's
    /// answers come at its requests in flight over the latency (Little's
    /// law), so a nap of 1/D of the latency is a wait for 1/D of the
    /// requests in flight. Unlike a sleep, it needs no cap in time (the
    /// epoll loop's 500 µs) to keep looking: it ends when they have come.
    /// Once nothing more may be sent (the end of a counted run) there is
    /// nothing to batch, and no nap. `paced`: `wake` is a schedule's next
    /// instant (ring.rs).
    pub(crate) fn uring_wait(&mut self, wake: u64, paced: bool) -> io::Result<()> {
        let flowing = self.io.uring_ref().is_some_and(|u| u.flowing);
        let naps = flowing && self.plan.spec.naps() && self.can_issue();
        let awaited = match (self.plan.tick_ns > 0, paced) {
            (true, true) => self.tick_awaited() as usize,
            // Brought up to date all the same, so that a paced wait after
            // counts only what ended since.
            (true, false) => {
                self.tick_awaited();
                0
            }
            _ => 0,
        };
        let Some(u) = self.io.uring() else {
            return Ok(());
        };
        let seen = self.stats.measured.completed + self.stats.warmup.completed;
        let per_nap = if naps && seen > 0 {
            let depth = self.plan.spec.pipeline.max(1);
            let in_flight = (self.conns.len() * depth) as u128;
            // A pipeline refills once half its depth is answered, so each
            // freed place waits for that already; a nap as many times
            // longer holds places about as long as a keep-alive nap does
            // (docs/performance.md, naps that count answers).
            let refill = (depth / 2).max(1) as u128;
            let (seen, d) = (seen as u128, self.plan.spec.nap_divisor.max(1) as u128);
            // The ring counts receives, and a receive can carry several
            // answers (a pipeline's, read together) or part of one (a
            // large body): the count is in receives, at the rate seen.
            let receives = (in_flight * refill * u.recvs as u128 + seen * d / 2) / (seen * d);
            // But the kernel wakes the thread by arrivals it has to hand
            // over, and a connection's receives since the last look are
            // one such arrival, however many there were: a count above
            // the connections could never come, and each nap would last
            // to its bound (a large body read on one connection, 16 KiB
            // at a time, asked for two receives a nap).
            receives.min(self.conns.len() as u128) as usize
        } else {
            0
        };
        // In ticks, no request goes out before the next tick, so no single
        // answer is worth a wake: the answers wait in the kernel, stamped
        // as they arrive, and the wait is for those still awaited of the
        // requests sent (a connection carries one at a time, so at most
        // one each), or the tick. Waiting for the tick alone, the thread
        // took the tick's answers as it started and sent the tick's
        // requests only after them, a tenth of a millisecond late at
        // 50,000 a second; taken once the burst is answered, the tick
        // finds only its sends to do. Asked only for the answers to the
        // last sends, a wait that came early for them (answers to the
        // sends before) would wake at each straggler after. Requests end
        // as answers or errors (`tick_awaited`).
        let answers = if self.plan.tick_ns > 0 {
            awaited
        } else {
            u.naps.count(per_nap)
        };
        // A nap's bound and a paced wait's limit run from now, so they read
        // the clock. A wait for one completion ends by the ring's alarm,
        // queued for the instant `wake` itself, which no reading changes:
        // the time the loop read as this pass began serves it, and the
        // pass reads the clock three times rather than four.
        let now = if paced || answers > 1 {
            now_ns()
        } else {
            self.now
        };
        let napped = u.enter(now, wake.saturating_sub(now), answers, paced)?;
        let spun = u.spun.take();
        if self.measuring {
            self.stats.naps += u64::from(napped);
            if let Some((ns, answered)) = spun {
                self.stats.spun(ns, answered);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nap_asks_for_what_its_time_brings_and_no_nap_for_one() {
        let n = NapCount::new();
        assert_eq!(n.count(0), 0);
        assert_eq!(n.count(1), 0);
        assert_eq!(n.count(2), 2);
        assert_eq!(n.count(25), 25);
    }

    #[test]
    fn a_short_nap_caps_the_count_until_the_load_has_shown_patience() {
        let mut n = NapCount::new();
        n.looked(25, None);
        assert_eq!(n.count(25), 25, "a nap that got its count changes nothing");
        // One connection of many still answers: the nap got 1 of 25.
        n.looked(1, Some(25));
        assert_eq!(n.count(25), 0, "no nap while one answer is all that comes");
        for _ in 0..PATIENCE_MIN - 1 {
            n.looked(1, None);
        }
        assert_eq!(n.count(25), 0);
        n.looked(1, None);
        assert_eq!(n.count(25), 2, "after 64 looks, the count may double");
        // Short again: twice the patience before the next try.
        n.looked(1, Some(2));
        for _ in 0..2 * PATIENCE_MIN - 1 {
            n.looked(1, None);
        }
        assert_eq!(n.count(25), 0);
        n.looked(1, None);
        assert_eq!(n.count(25), 2);
        // The load is back: the count grows to what a nap brings.
        for _ in 0..8 * 2 * PATIENCE_MIN {
            n.looked(2, None);
        }
        assert_eq!(n.count(25), 25);
    }

    #[test]
    fn a_short_nap_of_many_receives_still_halves_the_count() {
        // One connection streamed a large body: 40 receives came, but to
        // the kernel they were one arrival, and the nap for 3 timed out.
        let mut n = NapCount::new();
        n.looked(40, Some(3));
        assert_eq!(n.count(3), 0, "a count of one is no nap");
        let mut n = NapCount::new();
        n.looked(40, Some(8));
        assert_eq!(n.count(8), 4);
    }

    #[test]
    fn patience_is_bounded() {
        let mut n = NapCount::new();
        for _ in 0..64 {
            n.looked(0, Some(2));
        }
        assert_eq!(n.patience, PATIENCE_MAX);
        assert_eq!(n.count(25), 0);
    }
}
