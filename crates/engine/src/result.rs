//! What a load run measured, as typed counts and histograms.
//!
//! Nothing here is worded for a person or shaped as a document: the lab
//! turns a [`LoadResult`] into the stored and printed summary at one place,
//! and the CLI words the [`Warning`]s and [`crate::EngineError`]s.

use hdrhistogram::Histogram;
pub use throng_model::ErrorKind;

/// Requests answered and failed, per cause and per status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Responses received (including those counted as status, size or
    /// checksum errors).
    pub completed: u64,
    pub sent: u64,
    /// Bytes read from sockets (headers and bodies).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
    /// Successful connects.
    pub connects: u64,
    /// Indexed by [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::COUNT],
    /// Status code and count, ascending, codes seen only.
    pub status: Vec<(u16, u64)>,
}

impl Counts {
    pub fn error(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()]
    }
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }
}

/// Open-model (`rate`) scheduling honesty.
#[derive(Debug, Clone)]
pub struct RateOutcome {
    /// Requests per second asked for.
    pub target: f64,
    /// Sends issued more than 1 ms after their intended time.
    pub late_sends: u64,
    /// How late every send was, in microseconds.
    pub lateness: Histogram<u64>,
}

/// The warmup, counted apart and never mixed into the results.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WarmupCounts {
    pub duration_s: f64,
    pub completed: u64,
    pub errors: u64,
}

/// One second of the measured phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Second {
    /// Start of the second, Unix time in seconds.
    pub t_unix: f64,
    pub completed: u64,
    pub errors: u64,
    pub bytes_read: u64,
}

/// Something the reader must know before believing the numbers. The
/// engine only names the condition; callers word it.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// Threads saw different first responses for one URL, so each held the
    /// later responses to its own.
    ResponseChanged { url: String, sizes: Vec<u64> },
    /// Fewer connections than asked for could be opened.
    FewerConnections { established: u64, requested: u64 },
    /// Open model: sends that went out more than 1 ms late.
    LateSends { late: u64, sent: u64 },
}

/// Whether sends follow responses or a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadModel {
    /// Each connection sends when its last response is complete.
    Closed,
    /// Sends on a schedule (`rate`).
    Open,
}

/// Everything one run measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    pub model: LoadModel,
    pub urls: u64,
    pub threads: u64,
    pub pipeline: u64,
    pub keep_alive: bool,
    /// Client threads napped before waiting (closed model only).
    pub coalesce: bool,
    /// Unix time the measured phase started.
    pub started_unix_s: f64,
    /// Length of the measured phase.
    pub duration_s: f64,
    pub counts: Counts,
    /// Connections asked for.
    pub connections_requested: u64,
    /// Connection slots connected at least once.
    pub connections_established: u64,
    /// Connects after a slot's first one.
    pub reconnects: u64,
    /// Microseconds from connect() to writable, measured phase.
    pub connect_time: Histogram<u64>,
    /// Requests sent but not answered when the run ended.
    pub in_flight_at_end: u64,
    /// CPU seconds of the load threads.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Seconds the load threads were runnable but waiting for a CPU.
    pub runqueue_s: f64,
    pub naps: u64,
    pub rate: Option<RateOutcome>,
    pub warmup: Option<WarmupCounts>,
    /// Filled when the spec asks for a timeline.
    pub timeline: Vec<Second>,
    pub warnings: Vec<Warning>,
    /// Microseconds; from the intended send time in the open model.
    pub latency: Histogram<u64>,
    /// Open model only: from the actual send time.
    pub latency_uncorrected: Option<Histogram<u64>>,
    /// The run's [`crate::Control`] was stopped before the run's own end
    /// (its duration, or its requests): the figures cover only the part
    /// that ran.
    pub interrupted: bool,
}

impl LoadResult {
    pub fn per_sec(&self, x: u64) -> f64 {
        if self.duration_s > 0.0 {
            x as f64 / self.duration_s
        } else {
            0.0
        }
    }
    pub fn requests_per_sec(&self) -> f64 {
        self.per_sec(self.counts.completed)
    }
}

/// What the drain after a session's window found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drain {
    /// Responses read after the window's end: counted in no window.
    pub responses: u64,
    /// Requests on the wire still unanswered at the drain's bound, whose
    /// connections were closed.
    pub abandoned: u64,
}
