//! The event-loop driver: one per thread, owning its connections,
//! counters and histograms. Nothing in here is shared with other threads
//! except read-only request bytes and the stop flag, which is read once per
//! loop iteration.
//!
//! Every loop iteration is bounded, whatever a server does, so that the end
//! of a run, timeouts and the stop flag are always seen in time: a
//! connection is read at most `READS_PER_VISIT` times per visit, and a turn
//! (what one look of the backend brought, and the connections left over
//! from the last turn) stops at the first of `TURN_NS`, the next timeout
//! scan, the next scheduled send and the end of the run.
//!
//! The `Worker` is the loop (window.rs: the turn, the deadlines, the
//! phases) and the connections; what it drives is grouped by idea, each
//! owning its state: the I/O backend (io/: epoll or io_uring, matched once
//! per turn; the only code that touches a socket), the protocol layers
//! (proto/: TLS, HTTP/1.x, HTTP/2, which take bytes and hand back what
//! happened, and never see the ring or the counters), what a connection's
//! bytes read come to (input.rs: the layers' outcomes mapped onto the ring
//! and the counters, in one place), HTTP/2's streams on the ring
//! (streams.rs), the target queue and the issue of requests (issue.rs),
//! when the next ones go out (schedule.rs), the epoll loop's naps
//! (pace.rs), the books beside the counters (books.rs), how connections
//! are dialled and written (send.rs), answers and failures (respond.rs),
//! and users who think (users.rs).
//!
//! Syscall budget per request in the closed model, on epoll: one write()
//! and one read() (io/epoll.rs); on the ring, a share of the one enter per
//! turn (io/uring.rs).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock::{now_ns, thread_cpu, thread_runqueue_wait, TimerFd};
use crate::http1::{ParserConfig, Response};
use crate::request::Prepared;
use crate::result::{Drain, ErrorKind};
use crate::rx;
use crate::spec::{IoBackend, LoadSpec, Order};

mod books;
mod conn;
mod input;
mod io;
mod issue;
mod pace;
mod proto;
mod respond;
mod schedule;
mod send;
mod state;
mod stats;
mod streams;
mod tap;
mod users;
mod window;

pub(crate) use books::Books;
pub(crate) use conn::*;
pub(crate) use io::socket;
use io::Io;
use issue::Targets;
pub(crate) use pace::take_freed;
pub(crate) use pace::Pace;
#[cfg(test)]
pub(crate) use pace::NAP_MAX_NS;
use proto::{Layers, TlsClient};
use schedule::Schedule;
use send::Dial;
pub(crate) use state::*;
pub(crate) use stats::*;
pub(crate) use tap::ThreadTap;
pub(crate) use users::SessionStats;
use users::UserState;

/// One read buffer per thread, shared by its connections: a response is
/// parsed as it arrives, so no connection needs a buffer of its own beyond
/// the parser's header buffer.
const READ_BUF: usize = 64 * 1024;
/// A send this much after its intended time counts as late (open model).
pub(crate) const LATE_NS: u64 = 1_000_000;
/// Timeouts are scanned at least this often (or once per timeout, if
/// shorter), and again when the earliest one a scan saw falls due, so a
/// timeout fires within a turn of its time.
const SCAN_NS: u64 = 50_000_000;
/// Reads of one connection per visit (a quarter of a MiB): a server that
/// sends faster than the client parses cannot hold the loop.
const READS_PER_VISIT: usize = 4;
/// Longest turn before the loop looks at the clock-driven work again (and
/// at the stop flag); the run's end and timeout scans cut a turn shorter.
const TURN_NS: u64 = 2_000_000;
/// Status codes are three digits; a flat array avoids any map on the hot path.
pub(crate) const STATUS_SLOTS: usize = 1000;
const WRITEV_MAX: usize = 16;

/// How a window's loop ended: when its measured phase ended, whether the
/// stop flag ended it, and the fatal error.
type Ended = (u64, bool, Option<std::io::Error>);

pub(crate) struct Worker<'a> {
    plan: &'a Shared<'a>,
    job: Job,
    conns: Vec<Conn>,
    stats: Stats,
    books: Books,
    /// The thread's I/O backend: epoll, or an io_uring ring.
    io: Io,
    /// The current turn does no more work after this.
    turn_end_ns: u64,
    /// When the next timeout scan falls due.
    next_scan_ns: u64,
    targets: Targets,
    schedule: Schedule,
    dial: Dial,
    /// In the measured phase (of the window, or of the clock).
    measuring: bool,
    /// The loop's clock, refreshed as it goes.
    now: u64,
    /// `now` was read as the ring's turn ended, and nothing since but the
    /// deferred sends' queueing has run: the next pass of the loop begins
    /// with it rather than with a reading of its own (window.rs, `spin`).
    turn_timed: bool,
    pace: Pace,
    window: Window,
    /// A session between windows (opening, draining): nothing is issued or
    /// written, and nothing counts toward a window.
    between_windows: bool,
    /// Sessions of users who think, when the spec has them.
    users: Option<UserState>,
    /// The thread's own TLS client, for `https://`.
    tls: Option<TlsClient>,
    /// Where the thread hands over its seconds, when a caller watches.
    tap: Option<ThreadTap>,
}

impl<'a> Worker<'a> {
    pub(crate) fn new(plan: &'a Shared<'a>, job: Job) -> std::io::Result<Self> {
        let spec = plan.spec;
        let cfg = ParserConfig {
            checksum: spec.checksum,
            head: spec.is_head(),
            ..ParserConfig::default()
        };
        let depth = spec.pipeline.max(spec.http.streams).max(1);
        let conns: Vec<Conn> = (0..job.conns)
            .map(|_| Conn {
                proto: Layers::new(cfg),
                target_of_connect: 0,
                state: State::Down,
                ring: Places::new(depth),
                head: 0,
                len: 0,
                written: 0,
                write_off: 0,
                connect_start_ns: 0,
                connect_measured: false,
                ever_connected: false,
                carried: 0,
                epoch: 0,
                next_intended_ns: 0,
                next_k: 0,
                in_heap: false,
                deferred: false,
                peer_closed: false,
                unwritable: None,
                stale: false,
                freed: 0,
                freed_at_sum: 0,
            })
            .collect();
        let places: usize = conns.iter().map(|c: &Conn| c.ring.len()).sum();
        let threads = spec.threads.clamp(1, spec.connections.max(1));
        let users = spec.users.as_ref().map(|u| {
            // As `run::jobs` spreads whole users: no more threads than users.
            let staged = spec
                .users_ramp
                .is_some()
                .then(|| spec.threads.clamp(1, u.slots(spec.connections).max(1)));
            UserState::new(u, staged, &job, threads, job.quota)
        });
        // Users count sessions, not requests: the request quota is theirs.
        let first_conn = job.first_conn;
        let seq = (job.first_request % plan.requests.targets().max(1) as u64) as usize;
        let job = if users.is_some() {
            Job { quota: None, ..job }
        } else {
            job
        };
        // The ring's wait has its own timeout, to the nanosecond.
        let io = Io::new(plan, &job, plan.interval_ns.is_some() || users.is_some())?;
        let tls = match &spec.tls {
            Some(t) => Some(TlsClient::new(t)?),
            None => None,
        };
        let rng = spec.seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(job.index as u64 + 1)) | 1;
        Ok(Worker {
            plan,
            schedule: Schedule::new(job.conns),
            job,
            conns,
            stats: Stats::new(),
            books: Books::new(spec),
            window: Window::default(),
            between_windows: false,
            io,
            turn_end_ns: 0,
            next_scan_ns: 0,
            targets: Targets::new(rng, seq, places),
            dial: Dial::new(spec, first_conn),
            measuring: false,
            now: now_ns(),
            turn_timed: false,
            pace: Pace::new(),
            users,
            tls,
            tap: None,
        })
    }

    /// Refreshes `now`; true once the turn has had its time.
    fn turn_over(&mut self) -> bool {
        self.now = now_ns();
        self.now >= self.turn_end_ns
    }

    fn counters(&mut self, measured: bool) -> &mut Counters {
        if measured {
            &mut self.stats.measured
        } else {
            &mut self.stats.warmup
        }
    }

    /// Which phase an event of a request belongs to: by issue in requests
    /// mode (so exactly N are counted), by its intended send time in the
    /// open model (see `issue`), by time otherwise.
    fn phase_of(&self, f: &InFlight) -> bool {
        // A session's requests belong to the phase it started in.
        if self.job.quota.is_some() || self.plan.interval_ns.is_some() || self.users.is_some() {
            f.measured
        } else {
            self.measuring
        }
    }

    /// The phase whose `bytes_read` what connection `i` reads now counts
    /// in: its oldest request's, as for the answer itself. An open-model
    /// warmup request answered after measuring began is a warmup answer,
    /// and its bytes were counted as measured: 197 answers and 200 answers'
    /// bytes. Nothing on the wire: the phase of the clock.
    fn read_phase(&self, i: usize) -> bool {
        let c = &self.conns[i];
        if c.len > 0 {
            self.phase_of(&c.front())
        } else {
            self.measuring
        }
    }

    /// The earliest clock-driven work: a scheduled send, a think's end or
    /// an arrival.
    fn next_clock_due(&self) -> Option<u64> {
        let sched = self.schedule.next_due();
        let users = self.users.as_ref().and_then(UserState::next_due);
        match (sched, users) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests;
