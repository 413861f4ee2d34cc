//! One wake-up for every host of a fleet.
//!
//! Each link reads its agent's lines on a thread of its own into a
//! channel of its own, and a channel can only be waited on alone. A
//! coordinator waiting for several hosts' figures would otherwise look at
//! each channel in turn every millisecond or so: a thousand wake-ups a
//! second for the whole of every slice, on a machine that may be running
//! a share of the load. The links' readers ring one bell instead, after
//! every line and as their transport ends, and the coordinator sleeps on
//! it between looks.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a wait on the bell lasts at most: the coordinator looks at
/// its interrupt and its deadline this often, as [`crate::Link::wait`] does.
pub(crate) const DOZE: Duration = Duration::from_millis(50);

/// A count of lines arrived on any link sharing it, and a way to sleep
/// until it moves.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bell(Arc<(Mutex<u64>, Condvar)>);

impl Bell {
    /// Counts an arrival and wakes whoever sleeps on the bell.
    pub(crate) fn ring(&self) {
        let (count, moved) = &*self.0;
        *count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        moved.notify_all();
    }

    /// The arrivals counted so far: taken before looking at the links, so
    /// that a line arriving after the look ends the sleep that follows.
    pub(crate) fn rung(&self) -> u64 {
        *self.0 .0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps until the count passes `seen`, or for `limit`; returns the
    /// count then.
    pub(crate) fn wait_past(&self, seen: u64, limit: Duration) -> u64 {
        let (count, moved) = &*self.0;
        let until = Instant::now() + limit;
        let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
        while *n <= seen {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            n = moved
                .wait_timeout(n, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_after_the_look_ends_the_sleep_that_follows_it() {
        let bell = Bell::default();
        let seen = bell.rung();
        bell.ring();
        // Rung between the look and the sleep: not lost, no sleep at all.
        let t = Instant::now();
        assert_eq!(bell.wait_past(seen, Duration::from_secs(30)), seen + 1);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_ring_from_a_reader_wakes_the_sleeper_before_its_limit() {
        let bell = Bell::default();
        let seen = bell.rung();
        let (started, start) = std::sync::mpsc::channel();
        let sleeper = {
            let bell = bell.clone();
            std::thread::spawn(move || {
                started.send(()).unwrap();
                let t = Instant::now();
                (bell.wait_past(seen, Duration::from_secs(30)), t.elapsed())
            })
        };
        start.recv().unwrap();
        bell.ring();
        let (n, slept) = sleeper.join().unwrap();
        assert_eq!(n, seen + 1);
        assert!(slept < Duration::from_secs(10), "{slept:?}");
    }

    #[test]
    fn without_a_ring_the_sleep_lasts_its_limit_and_counts_nothing() {
        let bell = Bell::default();
        bell.ring();
        let seen = bell.rung();
        let t = Instant::now();
        assert_eq!(bell.wait_past(seen, Duration::from_millis(30)), seen);
        assert!(t.elapsed() >= Duration::from_millis(30));
    }
}
