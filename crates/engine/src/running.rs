//! A run's measured totals so far, for a watcher on another thread (a
//! front end that stops a run once a limit is crossed). Each load thread
//! publishes its own totals, in its own slot, when its timeline turns to
//! a new second: a store once a second, never one per request, and no
//! slot written by two threads.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One thread's slot, a cache line of its own so a thread's store never
/// invalidates another's line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot([AtomicU64; 3]);

/// Every thread's slot.
#[derive(Debug)]
pub struct Running {
    slots: Box<[Slot]>,
}

/// The measured phase's totals, as far as the threads have published
/// them (each up to the start of its latest second with an event).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub completed: u64,
    pub errors: u64,
    pub bytes_read: u64,
}

impl Running {
    pub(crate) fn new(threads: usize) -> Running {
        Running {
            slots: (0..threads.max(1)).map(|_| Slot::default()).collect(),
        }
    }

    /// Thread `thread`'s totals: completed, errors, bytes read.
    pub(crate) fn publish(&self, thread: usize, totals: [u64; 3]) {
        if let Some(s) = self.slots.get(thread) {
            for (a, v) in s.0.iter().zip(totals) {
                a.store(v, Relaxed);
            }
        }
    }

    /// Every thread's published totals, summed.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in self.slots.iter() {
            t.completed += s.0[0].load(Relaxed);
            t.errors += s.0[1].load(Relaxed);
            t.bytes_read += s.0[2].load(Relaxed);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_publishes_its_own_totals_and_they_are_summed() {
        let r = Running::new(2);
        r.publish(0, [10, 1, 700]);
        r.publish(1, [5, 0, 350]);
        r.publish(0, [12, 1, 840]);
        // A thread beyond the slots (none is made) is left out, not a panic.
        r.publish(7, [1, 1, 1]);
        assert_eq!(
            r.totals(),
            Totals {
                completed: 17,
                errors: 1,
                bytes_read: 1190
            }
        );
    }
}
