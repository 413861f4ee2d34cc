//! Waiting on a condition a test cannot be told about, bounded by a
//! deadline: a short poll of the condition, never a sleep standing in for
//! a synchronisation.

use std::time::{Duration, Instant};

/// How long apart a condition is looked at: short enough not to slow a
/// test, long enough not to busy a shared machine.
const POLL: Duration = Duration::from_millis(10);

/// Whether `done` held before `deadline`, looked at once more at the
/// deadline itself.
pub fn wait_until(deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
    loop {
        if done() {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(POLL.min(left));
    }
}

/// [`wait_until`] a deadline `limit` from now.
pub fn wait_for(limit: Duration, done: impl FnMut() -> bool) -> bool {
    wait_until(Instant::now() + limit, done)
}

/// Polls `get` until it returns something, or `None` at `deadline`: for
/// a value that appears (a file, a line, a pid) rather than a flag.
pub fn poll_until<T>(deadline: Instant, mut get: impl FnMut() -> Option<T>) -> Option<T> {
    let mut out = None;
    wait_until(deadline, || {
        out = get();
        out.is_some()
    });
    out
}
