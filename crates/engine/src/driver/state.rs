//! What all threads read (the plan), what one thread is given (its job)
//! and what it hands back.

use std::io;

use super::*;

/// Per-URL expectations: the first accepted response a thread sees for a
/// URL sets them (unless the user fixed the size), as ab and http_load do.
/// Each thread learns its own, so nothing is shared; `run` compares what the
/// threads learnt and warns when they disagree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Expect {
    pub size: Option<u64>,
    pub checksum: Option<u64>,
}

/// What all threads read and nobody writes, the same for every window.
pub(crate) struct Shared<'a> {
    pub spec: &'a LoadSpec,
    pub requests: &'a Prepared,
    /// Open model: nanoseconds between two sends of one connection.
    pub interval_ns: Option<u64>,
    /// Open model: nanoseconds between the first sends of two connections.
    pub stagger_ns: u64,
    /// Open model: the schedule's tick in nanoseconds, 0 for none (tick.rs).
    pub tick_ns: u64,
    /// Per target, the name its TLS certificate must carry (and the SNI);
    /// empty without TLS.
    pub server_names: Vec<rustls::pki_types::ServerName<'static>>,
    /// How the threads do their socket I/O (`Auto` resolved).
    pub io: IoBackend,
}

/// The times of one measured window (a whole run, or one window of a
/// session), and the flag that cuts it short.
#[derive(Clone, Default)]
pub(crate) struct Window {
    pub start_ns: u64,
    pub warmup_end_ns: u64,
    /// Duration mode: when the measured phase ends.
    pub end_ns: Option<u64>,
    pub stop: Arc<AtomicBool>,
    /// Where the thread publishes its totals once a second, when watched.
    pub running: Option<Arc<crate::running::Running>>,
}

pub(crate) struct Job {
    pub index: usize,
    /// Global index of this thread's first connection (staggers the schedule).
    pub first_conn: usize,
    pub conns: usize,
    /// Requests mode: requests this thread completes in the measured phase.
    pub quota: Option<u64>,
    /// Where this thread's requests start in the run's sequence: the
    /// quotas of the threads before it (a duration: its first connection),
    /// so that `Order::Sequential` goes on across threads where the one
    /// before stops, rather than every thread starting at the first URL
    /// (3 URLs, 30 requests, 2 threads: 11, 10 and 9 each).
    pub first_request: u64,
    pub cpu: Option<usize>,
}

pub(crate) struct ThreadResult {
    pub stats: Stats,
    pub cpu_user: f64,
    pub cpu_sys: f64,
    pub runqueue_wait: f64,
    /// Connection slots connected at least once, since the thread began.
    pub established: u64,
    pub in_flight_at_end: u64,
    /// When this thread's measured phase ended (requests mode).
    pub end_ns: u64,
    /// The stop flag ended this thread's loop before the run's own end.
    pub interrupted: bool,
    /// Set when the OS refused something the thread needed (socket, epoll).
    pub fatal: Option<io::Error>,
    /// What this thread learnt about each URL.
    pub expect: Vec<Expect>,
    /// Users who think: their sessions' figures.
    pub sessions: Option<SessionStats>,
    /// io_uring was asked for, and this thread could not set up a ring.
    pub io_fallback: Option<String>,
}
