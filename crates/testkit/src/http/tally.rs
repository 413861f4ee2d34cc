//! What a scripted server saw, in counts a test can wait on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Tally {
    pub accepted: AtomicU64,
    /// Connections that sent a request (a load generator's reachability
    /// check connects and closes without one).
    pub used: AtomicU64,
    /// Request heads read whole.
    pub requests: AtomicU64,
    /// Answers written by [`answer`](super::answer).
    pub answered: AtomicU64,
    /// Connections the client closed with a FIN.
    pub client_closed: AtomicU64,
    /// Connections closed by the server while idle, after `close_idle`.
    pub closed_idle: AtomicU64,
    /// Bumping it closes every connection waiting for a request, as a
    /// server's keep-alive timeout would.
    pub close_idle: AtomicU64,
    pub(crate) first_request: OnceLock<Instant>,
    methods: Mutex<Vec<String>>,
    changed: (Mutex<()>, Condvar),
}

impl Tally {
    pub fn get(n: &AtomicU64) -> u64 {
        n.load(Ordering::SeqCst)
    }

    /// Adds one to `n` and wakes the waiters; what `n` was.
    pub fn bump(&self, n: &AtomicU64) -> u64 {
        let was = n.fetch_add(1, Ordering::SeqCst);
        let _guard = self.changed.0.lock().unwrap();
        self.changed.1.notify_all();
        was
    }

    /// Counts a request with `method`, the method kept first so that a
    /// test that saw the count sees the method too; its sequence number
    /// over the whole server.
    pub(crate) fn arrived(&self, method: &str) -> u64 {
        self.first_request.get_or_init(Instant::now);
        self.methods.lock().unwrap().push(method.to_string());
        self.bump(&self.requests)
    }

    /// The method of every request read, in arrival order.
    pub fn methods(&self) -> Vec<String> {
        self.methods.lock().unwrap().clone()
    }

    /// Waits for `done` to hold, for at most `limit`; whether it held.
    pub fn wait_until(&self, limit: Duration, done: impl Fn(&Tally) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let mut guard = self.changed.0.lock().unwrap();
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            guard = self.changed.1.wait_timeout(guard, left).unwrap().0;
        }
        true
    }
}
