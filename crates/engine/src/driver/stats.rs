//! A thread's counters and histograms: what the hot path counts, flat and
//! allocated once, and reset rather than replaced between a session's
//! windows.

use hdrhistogram::Histogram;

use crate::result::ErrorKind;

use super::proto::{H2Stats, TlsStats};
use super::STATUS_SLOTS;

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
    /// HTTP/1.x responses complete, and their bytes that were not body.
    pub head_replies: u64,
    pub head_bytes: u64,
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
            head_replies: 0,
            head_bytes: 0,
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
        self.head_replies += o.head_replies;
        self.head_bytes += o.head_bytes;
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
        self.head_replies = 0;
        self.head_bytes = 0;
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

/// A thread's counts and histograms for one window; a session's threads
/// reset and reuse them, so a window allocates nothing.
pub(crate) struct Stats {
    pub(crate) measured: Counters,
    pub(crate) warmup: Counters,
    pub(crate) latency: Histogram<u64>,
    pub(crate) uncorrected: Histogram<u64>,
    /// From a request's send to its response's first byte.
    pub(crate) first_byte: Histogram<u64>,
    /// Closed model: the responses whose first byte and last reached the
    /// socket in the same microsecond (an answer in one segment, as most
    /// small ones are), recorded once here for both `latency` and
    /// `first_byte`, to which `run` adds it. A second record of the same
    /// value was some 60 instructions a response, 3% of the client's own.
    pub(crate) whole: Histogram<u64>,
    pub(crate) connect: Histogram<u64>,
    /// A connection's life, from its connect's start to its close, for
    /// those opened and closed in the measured phase (httperf's connection
    /// time).
    pub(crate) conn_life: Histogram<u64>,
    pub(crate) lateness: Histogram<u64>,
    pub(crate) late_sends: u64,
    /// Open model: requests due in the measured phase, never sent.
    pub(crate) unsent: u64,
    pub(crate) naps: u64,
    /// Waits spun rather than slept (for an answer, `LoadSpec::spin`, or
    /// for a schedule's next instant closer than a sleep costs), how many
    /// of them an answer ended, and the time they spun, all in the
    /// measured phase.
    pub(crate) spins: u64,
    pub(crate) spins_answered: u64,
    pub(crate) spun_ns: u64,
    /// What a timed sleep cost the thread's CPU, measured as it settled
    /// (the ring's `calibrate_spin`): its paced waits shorter than this
    /// were spun. 0 where it was not measured. Read from the ring as a
    /// window ends, with the lateness below.
    pub(crate) sleep_cost_ns: u64,
    /// How late such a sleep ended, measured with it and then learnt from
    /// the thread's paced sleeps, the last figure: they ended that much
    /// before their instants, and spun the rest.
    pub(crate) sleep_late_ns: u64,
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
    pub(crate) tls: TlsStats,
    pub(crate) h2: H2Stats,
    pub(crate) h3: throng_model::Http3Report,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
            measured: Counters::new(),
            warmup: Counters::new(),
            latency: histogram(),
            uncorrected: histogram(),
            first_byte: histogram(),
            whole: histogram(),
            connect: histogram(),
            conn_life: histogram(),
            lateness: histogram(),
            late_sends: 0,
            unsent: 0,
            naps: 0,
            spins: 0,
            spins_answered: 0,
            spun_ns: 0,
            sleep_cost_ns: 0,
            sleep_late_ns: 0,
            hold_ns: 0,
            holds: 0,
            timeline: Vec::new(),
            reconnects: 0,
            handshake: histogram(),
            tls: Default::default(),
            h2: Default::default(),
            h3: Default::default(),
        }
    }

    pub(crate) fn reset(&mut self) {
        self.measured.reset();
        self.warmup.reset();
        self.latency.reset();
        self.uncorrected.reset();
        self.first_byte.reset();
        self.whole.reset();
        self.connect.reset();
        self.conn_life.reset();
        self.lateness.reset();
        self.late_sends = 0;
        self.unsent = 0;
        self.naps = 0;
        self.spins = 0;
        self.spins_answered = 0;
        self.spun_ns = 0;
        self.hold_ns = 0;
        self.holds = 0;
        self.timeline.clear();
        self.reconnects = 0;
        self.handshake.reset();
        self.tls = Default::default();
        self.h2 = Default::default();
        self.h3 = Default::default();
    }

    /// A wait that spun for `ns` before an answer came (`answered`), or
    /// before it slept or its instant came.
    pub(crate) fn spun(&mut self, ns: u64, answered: bool) {
        self.spins += 1;
        self.spins_answered += u64::from(answered);
        self.spun_ns += ns;
    }

    /// Adds `counts` (completed, errors, bytes read) to second `sec` of
    /// the timeline. At a new second, so at most once a second (not a
    /// per-request allocation, nor a per-request store), this thread's
    /// totals so far are published for whoever watches the run.
    pub(crate) fn tick_timeline(
        &mut self,
        sec: usize,
        watched: Option<(&crate::running::Running, usize)>,
        counts: [u64; 3],
    ) {
        let t = &mut self.timeline;
        if t.len() <= sec {
            if let Some((r, thread)) = watched {
                let mut sum = [0; 3];
                for s in t.iter() {
                    sum = [sum[0] + s[0], sum[1] + s[1], sum[2] + s[2]];
                }
                r.publish(thread, sum);
            }
            t.resize(sec + 1, [0; 3]);
        }
        for (a, v) in t[sec].iter_mut().zip(counts) {
            *a += v;
        }
    }
}
