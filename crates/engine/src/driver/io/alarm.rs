//! The ring's one timer: a timeout queued on the ring for an absolute
//! instant, kept across waits, rather than a time limit on each wait.
//!
//! A wait for the next completion that must end by some instant (the next
//! timeout scan, the window's end) could pass that limit to the enter
//! itself (`IORING_ENTER_EXT_ARG`); the kernel then arms a timer each time
//! the wait sleeps and cancels it when an answer wakes the thread first,
//! as one nearly always does under load: about one timer a response in
//! eight for nothing. A timeout on the ring stays armed until it fires, so
//! the waits after it need no timer of their own while it falls due no
//! later than they must end: it is queued about once a timeout scan
//! instead of once a sleep.
//!
//! That pays only while one instant serves many waits. A schedule's next
//! instant (the open model's next send) is every wait's last: a timeout
//! queued for it would be armed at once and fire, the thread asleep or
//! not, so such a wait keeps its limit on the enter, or is spun (ring.rs,
//! spin.rs).
//!
//! Such a wait is for one completion, and the timeout's is one: whether it
//! fires during the wait or fired before the wait began (its completion
//! is then posted as the wait begins), the wait ends. A nap waits for a
//! count of answers, which a timeout that fired before it began would not
//! end, so a nap keeps its own limit on the enter (ring.rs).
//!
//! A wait that must end sooner than the armed timeout queues another, and
//! the earlier one fires later for nothing: one wake. Only the newest
//! timeout's completion says that none is armed, so `at` is only ever
//! cleared too early (another timeout queued), never left set when none
//! will come, and no wait can outlast its limit.

use io_uring::types::{TimeoutFlags, Timespec};
use io_uring::{opcode, squeue};

pub(super) struct Alarm {
    /// The instant (monotonic ns) of the newest timeout queued, while it
    /// has not fired.
    at: Option<u64>,
    /// Which timeout is the newest: its name on the ring.
    generation: u32,
    /// What the newest timeout was queued with: the kernel reads it as
    /// the entry is submitted, in the enter that also waits.
    ts: Timespec,
}

impl Alarm {
    pub(super) fn new() -> Self {
        Alarm {
            at: None,
            generation: 0,
            ts: Timespec::new(),
        }
    }

    /// The entry to queue so that the ring wakes no later than `by`
    /// (monotonic ns), and its generation, which its completion must
    /// name (`rang`); none while a timeout already falls due by then.
    /// The entry points at `self`: it must be submitted before `self`
    /// moves or queues another.
    pub(super) fn by(&mut self, by: u64) -> Option<(squeue::Entry, u32)> {
        if self.at.is_some_and(|at| at <= by) {
            return None;
        }
        self.generation = self.generation.wrapping_add(1);
        self.at = Some(by);
        self.ts = Timespec::new()
            .sec(by / 1_000_000_000)
            .nsec((by % 1_000_000_000) as u32);
        let sqe = opcode::Timeout::new(&self.ts)
            .flags(TimeoutFlags::ABS)
            .build();
        Some((sqe, self.generation))
    }

    /// A timeout of `generation` completed (it fired, or the ring was
    /// cancelled): if it was the newest, none is armed now.
    pub(super) fn rang(&mut self, generation: u32) {
        if generation == self.generation {
            self.at = None;
        }
    }

    #[cfg(test)]
    pub(super) fn armed(&self) -> Option<u64> {
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_timeout_serves_every_wait_that_may_end_later() {
        let mut a = Alarm::new();
        assert!(a.by(10_000).is_some(), "nothing armed: one is queued");
        assert!(a.by(10_000).is_none());
        assert!(
            a.by(50_000).is_none(),
            "the armed one wakes the wait sooner"
        );
        assert_eq!(a.armed(), Some(10_000));
    }

    #[test]
    fn a_wait_that_must_end_sooner_queues_another_and_only_the_newest_clears() {
        let mut a = Alarm::new();
        let old = a.by(10_000).unwrap().1;
        let new = a.by(4_000).expect("sooner: a new one").1;
        assert_ne!(old, new);
        assert_eq!(a.armed(), Some(4_000));
        a.rang(old);
        assert_eq!(
            a.armed(),
            Some(4_000),
            "the older one fired: the newer still stands"
        );
        a.rang(new);
        assert_eq!(a.armed(), None);
        assert!(
            a.by(50_000).is_some(),
            "none armed: the next wait queues one"
        );
    }
}
