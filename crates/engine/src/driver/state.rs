//! The driver's per-thread state: what all threads read (the plan), what
//! one thread is given (its job) and hands back, its counters, and its
//! connections with the ring of requests each has in flight.

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

/// A thread's counts on the hot path. The same figures as the result's
/// `Counts`, but statuses in a flat array indexed by code (no map, no
/// search per response); `run` compacts them into `Counts` once.
#[derive(Clone)]
pub(crate) struct Counters {
    pub completed: u64,
    pub sent: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub body_bytes: u64,
    pub connects: u64,
    /// Requests taken back from the wire unanswered and sent again.
    pub resent: u64,
    pub errors: [u64; ErrorKind::COUNT],
    pub status: Box<[u64; STATUS_SLOTS]>,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            completed: 0,
            sent: 0,
            bytes_read: 0,
            bytes_written: 0,
            body_bytes: 0,
            connects: 0,
            resent: 0,
            errors: [0; ErrorKind::COUNT],
            status: Box::new([0; STATUS_SLOTS]),
        }
    }

    pub fn add(&mut self, o: &Counters) {
        self.completed += o.completed;
        self.sent += o.sent;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.body_bytes += o.body_bytes;
        self.connects += o.connects;
        self.resent += o.resent;
        for (a, b) in self.errors.iter_mut().zip(o.errors.iter()) {
            *a += b;
        }
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn reset(&mut self) {
        self.completed = 0;
        self.sent = 0;
        self.bytes_read = 0;
        self.bytes_written = 0;
        self.body_bytes = 0;
        self.connects = 0;
        self.resent = 0;
        self.errors = [0; ErrorKind::COUNT];
        self.status.fill(0);
    }
}

pub(crate) fn histogram() -> Histogram<u64> {
    // 1 µs to 1 hour at 3 significant digits: fixed size, never resized.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
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
    /// Sessions: what the drain after the window found.
    pub drain: Drain,
    /// Users who think: their sessions' figures.
    pub sessions: Option<SessionStats>,
    /// io_uring was asked for, and this thread could not set up a ring.
    pub io_fallback: Option<String>,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct InFlight {
    pub(crate) target: u32,
    /// Set when issued, and again when a queued request finally goes out on
    /// a fresh connection: connect time is reported apart from latency.
    pub(crate) issued_ns: u64,
    /// Open model: when the schedule wanted it sent.
    pub(crate) intended_ns: u64,
    /// Requests mode: issued in the measured phase (counts toward the quota).
    pub(crate) measured: bool,
    /// The connection's last request: sent with `Connection: close`, and
    /// the connection is closed once it is answered.
    pub(crate) last: bool,
    /// HTTP/2: the stream that carries it, once its HEADERS are queued.
    pub(crate) stream: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Down,
    Connecting,
    /// TCP is up, the TLS handshake is not done.
    Handshaking,
    Open,
}

/// A connection slot, whatever its backend: its socket is the backend's
/// (`Io`), its protocol layers and its requests in flight are here.
pub(crate) struct Conn {
    /// The TLS layer of an `https://` connection.
    pub(crate) tls: Option<Box<rustls::ClientConnection>>,
    /// The HTTP/2 layer, kept from one connection to the next of this
    /// slot; `h2_on` when the current connection speaks it.
    pub(crate) h2: Option<Box<crate::h2::H2>>,
    pub(crate) h2_on: bool,
    pub(crate) handshake_start_ns: u64,
    /// The target whose address (and TLS name) the connection was opened to.
    pub(crate) target_of_connect: u32,
    pub(crate) state: State,
    pub(crate) exchange: Exchange,
    /// Issued requests in order; `written` of them are fully on the wire.
    pub(crate) ring: Box<[InFlight]>,
    pub(crate) head: usize,
    pub(crate) len: usize,
    pub(crate) written: usize,
    /// Bytes of the first unwritten request already written.
    pub(crate) write_off: usize,
    pub(crate) connect_start_ns: u64,
    pub(crate) ever_connected: bool,
    /// Requests issued on this connection since it was opened, against
    /// the spec's limit; back to 0 when it closes.
    pub(crate) carried: u64,
    /// Bumped on every close, so a loop that handed control away can tell
    /// that the connection it was reading is gone.
    pub(crate) epoch: u64,
    /// Open model.
    pub(crate) next_intended_ns: u64,
    pub(crate) in_heap: bool,
    /// The server's FIN has arrived: requests issued from now on wait for
    /// the next connection instead of being written to one that is gone.
    pub(crate) peer_closed: bool,
    /// A write failed with this: what the server sent before it went is
    /// read out, nothing more is written, and the connection fails with it
    /// once the socket is drained (`Worker::write_failed`).
    pub(crate) unwritable: Option<ErrorKind>,
    /// Closed model: queued to send its next request after this batch.
    pub(crate) deferred: bool,
    /// When the read that brought the first byte of the response being
    /// read reached the socket: that response cannot have ended earlier.
    pub(crate) first_rx_ns: u64,
    /// Kept open, idle, from one session window to the next, and nothing
    /// read on it since: the server may have closed it at any moment of
    /// that wait, even as the window's first request went out.
    pub(crate) stale: bool,
    /// Closed model: places answered in the measured phase and not yet
    /// taken by a new request, and the sum of their answers' arrival
    /// times, for the client's hold.
    pub(crate) freed: u64,
    pub(crate) freed_at_sum: u64,
}

impl Conn {
    pub(crate) fn front(&self) -> InFlight {
        self.ring[self.head]
    }
    /// Ring index of the `i`-th request in flight.
    pub(crate) fn slot(&self, i: usize) -> usize {
        (self.head + i) % self.ring.len()
    }
    pub(crate) fn push(&mut self, f: InFlight) {
        let idx = (self.head + self.len) % self.ring.len();
        self.ring[idx] = f;
        self.len += 1;
    }
    /// A request has reached the wire, whole or in part, and is not yet
    /// answered: only then can a byte read be part of a response. (A server
    /// may answer a request before reading all of it, an error to a large
    /// upload for instance.)
    pub(crate) fn awaiting(&self) -> bool {
        self.written > 0 || (self.len > 0 && self.write_off > 0)
    }
    pub(crate) fn pop(&mut self) -> InFlight {
        let f = self.ring[self.head];
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        f
    }
}

/// A thread's counts and histograms for one window; a session's threads
/// reset and reuse them, so a window allocates nothing.
pub(crate) struct Stats {
    pub(crate) measured: Counters,
    pub(crate) warmup: Counters,
    pub(crate) latency: Histogram<u64>,
    pub(crate) uncorrected: Histogram<u64>,
    /// From a request's send to its response's first byte.
    pub(crate) first_byte: Histogram<u64>,
    pub(crate) connect: Histogram<u64>,
    pub(crate) lateness: Histogram<u64>,
    pub(crate) late_sends: u64,
    /// Open model: requests due in the measured phase, never sent.
    pub(crate) unsent: u64,
    pub(crate) naps: u64,
    /// Closed model: how long places answered in the measured phase stood
    /// empty on the client before a new request took them, in total, and
    /// how many did.
    pub(crate) hold_ns: u64,
    pub(crate) holds: u64,
    /// Per second of the measured phase: completed, errors, bytes read.
    pub(crate) timeline: Vec<[u64; 3]>,
    /// Connects after a slot's first one.
    pub(crate) reconnects: u64,
    /// TLS handshakes, microseconds from the TCP connect to the end of
    /// the handshake, measured phase.
    pub(crate) handshake: Histogram<u64>,
    pub(crate) tls: super::proto::TlsStats,
    pub(crate) h2: super::proto::H2Stats,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
            measured: Counters::new(),
            warmup: Counters::new(),
            latency: histogram(),
            uncorrected: histogram(),
            first_byte: histogram(),
            connect: histogram(),
            lateness: histogram(),
            late_sends: 0,
            unsent: 0,
            naps: 0,
            hold_ns: 0,
            holds: 0,
            timeline: Vec::new(),
            reconnects: 0,
            handshake: histogram(),
            tls: Default::default(),
            h2: Default::default(),
        }
    }

    pub(crate) fn reset(&mut self) {
        self.measured.reset();
        self.warmup.reset();
        self.latency.reset();
        self.uncorrected.reset();
        self.first_byte.reset();
        self.connect.reset();
        self.lateness.reset();
        self.late_sends = 0;
        self.unsent = 0;
        self.naps = 0;
        self.hold_ns = 0;
        self.holds = 0;
        self.timeline.clear();
        self.reconnects = 0;
        self.handshake.reset();
        self.tls = Default::default();
        self.h2 = Default::default();
    }
}

pub(crate) fn classify_connect(e: &io::Error) -> ErrorKind {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ErrorKind::ConnectRefused,
        Some(libc::EADDRNOTAVAIL) => ErrorKind::AddrUnavailable,
        Some(libc::ETIMEDOUT) => ErrorKind::ConnectTimeout,
        Some(libc::ECONNRESET) => ErrorKind::Reset,
        _ => ErrorKind::ConnectOther,
    }
}

pub(crate) fn classify_io(e: &io::Error, default: ErrorKind) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => default,
    }
}
