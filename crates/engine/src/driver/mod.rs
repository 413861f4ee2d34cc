//! The mio event-loop driver: one per thread, owning its connections,
//! counters and histograms. Nothing in here is shared with other threads
//! except read-only request bytes and the stop flag, which is read once per
//! loop iteration.
//!
//! Every loop iteration is bounded, whatever a server does, so that the end
//! of a run, timeouts and the stop flag are always seen in time: a
//! connection is read at most `READS_PER_VISIT` times per visit, and a turn
//! (the events of one poll, and the connections left over from the last
//! turn) stops at the first of `TURN_NS`, the next timeout scan, the next
//! scheduled send and the end of the run. A connection left with unread
//! data is queued to be visited again next turn: with edge-triggered epoll,
//! no new event would come for data that is already there.
//!
//! Syscall budget per request in the closed model: one write() and one
//! read(). Sockets are registered once, edge-triggered, for both readable and
//! writable, so epoll_ctl is only called when a connection is (re)opened;
//! and a read() that returns less than the buffer is taken to mean the socket
//! is drained, because an edge-triggered epoll reports every new arrival of
//! data, so the read() that would return EAGAIN is skipped (not when the event
//! also reports the peer's FIN, which no later event would report again).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, IoSlice, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::clock::{now_ns, realtime_ns, thread_cpu, thread_runqueue_wait, TimerFd};
use crate::exchange::{Exchange, Fault};
use crate::http1::{ParserConfig, Response};
use crate::request::Prepared;
use crate::result::{Drain, ErrorKind};
use crate::rx;
use crate::spec::{IoBackend, LoadSpec, Order};

mod h2;
mod nap;
mod receive;
mod respond;
mod send;
pub(crate) mod socket;
mod state;
mod tls;
mod uring;
mod users;
mod window;

pub(crate) use state::*;
pub(crate) use users::SessionStats;
use users::UserState;
pub(crate) use window::events;

const TIMER: Token = Token(usize::MAX - 1);

/// Half a token: the low half names the connection, the high half which
/// of its sockets (its epoch, wrapped).
const TOKEN_HALF: u32 = usize::BITS / 2;

/// The epoll token of connection `i`'s socket of `epoch`. A batch of
/// events can hold one of a socket closed earlier in the same turn (a
/// connection taken from the ready queue, answered, closed and opened
/// again); named by the connection alone, that event would reach the
/// socket that replaced it, and a hang-up it reports would mark the fresh
/// connection as closed by its peer before it wrote anything.
fn socket_token(i: usize, epoch: u64) -> Token {
    let gen = (epoch as usize) & ((1 << TOKEN_HALF) - 1);
    Token(gen << TOKEN_HALF | i)
}

/// The connection a token names, if the socket it names is still its
/// socket.
fn token_conn(token: Token, conns: &[Conn]) -> Option<usize> {
    let i = token.0 & ((1 << TOKEN_HALF) - 1);
    let c = conns.get(i)?;
    (socket_token(i, c.epoch) == token).then_some(i)
}
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
/// Naps (see `Worker::nap_ns`) are at most this long, and at most this
/// fraction of the recent latency (`LoadSpec::nap_divisor`); shorter than
/// the floor, a nap is skipped.
const NAP_MAX_NS: u64 = 500_000;
const NAP_MIN_NS: u64 = 5_000;

pub(crate) struct Worker<'a> {
    plan: &'a Shared<'a>,
    job: Job,
    conns: Vec<Conn>,
    stats: Stats,
    poll: Poll,
    timer: Option<TimerFd>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    buf: Vec<u8>,
    /// Connections whose next request waits for the end of the event batch.
    deferred: Vec<usize>,
    /// Connections to visit as if an event had come, oldest first: unread
    /// data left by the read budget, or an event a turn had no time for.
    /// A queue, so that connections that always have more to read cannot
    /// keep the others from their turn.
    ready: VecDeque<usize>,
    /// The current turn does no more work after this.
    turn_end_ns: u64,
    next_scan_ns: u64,
    expect: Vec<Expect>,
    rng: u64,
    seq: usize,
    /// The targets of requests taken back unanswered (a server that closed
    /// or sent a GOAWAY with them in flight), which the next requests
    /// issued carry before the order goes on: given the order's next
    /// targets instead, the targets in flight at each close were served
    /// less often than asked. At most every place of every connection, so
    /// allocated once.
    taken_back: VecDeque<u32>,
    /// Turns through `spec.sources`, one connect after another.
    source_seq: usize,
    /// Every connection carries one request, written at once, in cleartext.
    one_write: bool,
    /// Most requests a connection carries (`u64::MAX`: no limit), so the
    /// hot path compares two integers and never looks at an `Option`.
    limit: u64,
    issued_measured: u64,
    done_measured: u64,
    measuring: bool,
    now: u64,
    /// Smoothed response latency in ns, for the nap length.
    latency_avg_ns: u64,
    /// When the epoll loop last took what had arrived, for pacing its
    /// looks (the ring paces none: its naps are counts).
    last_look_ns: u64,
    window: Window,
    /// Slots connected at least once: counted over the thread's life, as a
    /// session's connections outlive its windows.
    established: u64,
    /// A session between windows (opening, draining): nothing is issued or
    /// written, and nothing counts toward a window.
    between_windows: bool,
    /// CPU time and run-queue wait when the measured phase began.
    cpu_mark: ((f64, f64), f64),
    /// Sessions of users who think, when the spec has them.
    users: Option<UserState>,
    /// The thread's own TLS client (and session cache), for `https://`.
    tls_config: Option<Arc<rustls::ClientConfig>>,
    /// Plaintext out of TLS records, on its way to the parser.
    plain: Vec<u8>,
    /// The thread's ring, when its I/O goes through io_uring.
    uring: Option<Box<uring::Uring>>,
    /// Why io_uring was asked for and epoll used instead.
    io_fallback: Option<String>,
}

impl<'a> Worker<'a> {
    pub(crate) fn new(plan: &'a Shared<'a>, job: Job) -> io::Result<Self> {
        let spec = plan.spec;
        let cfg = ParserConfig {
            checksum: spec.checksum,
            head: spec.is_head(),
            ..ParserConfig::default()
        };
        let depth = spec.pipeline.max(spec.http.streams).max(1);
        let conns: Vec<Conn> = (0..job.conns)
            .map(|_| Conn {
                stream: None,
                tls: None,
                h2: None,
                h2_on: false,
                handshake_start_ns: 0,
                target_of_connect: 0,
                state: State::Down,
                exchange: Exchange::new(cfg),
                ring: vec![InFlight::default(); depth].into_boxed_slice(),
                head: 0,
                len: 0,
                written: 0,
                write_off: 0,
                connect_start_ns: 0,
                ever_connected: false,
                carried: 0,
                epoch: 0,
                next_intended_ns: 0,
                in_heap: false,
                deferred: false,
                peer_closed: false,
                unwritable: None,
                ready: false,
                first_rx_ns: 0,
                stale: false,
                freed: 0,
                freed_at_sum: 0,
            })
            .collect();
        let conns_len = job.conns;
        let places: usize = conns.iter().map(|c: &Conn| c.ring.len()).sum();
        let poll = Poll::new()?;
        let threads = spec.threads.clamp(1, spec.connections.max(1));
        let users = spec
            .users
            .as_ref()
            .map(|u| UserState::new(u, &job, threads, job.quota));
        // Users count sessions, not requests: the request quota is theirs.
        let first_conn = job.first_conn;
        let seq = (job.first_request % plan.requests.targets().max(1) as u64) as usize;
        let job = if users.is_some() {
            Job { quota: None, ..job }
        } else {
            job
        };
        let (uring, io_fallback) = match plan.io {
            IoBackend::Uring => match uring::Uring::new(
                job.conns,
                spec.pipeline,
                &spec.targets.iter().map(|t| t.addr).collect::<Vec<_>>(),
                &spec.sources,
            ) {
                Ok(u) => (Some(Box::new(u)), None),
                Err(e) => (None, Some(e.to_string())),
            },
            IoBackend::Epoll | IoBackend::Auto => (None, None),
        };
        // The ring's wait has its own timeout, to the nanosecond.
        let timer = if uring.is_none() && (plan.interval_ns.is_some() || users.is_some()) {
            let t = TimerFd::new()?;
            poll.registry()
                .register(&mut SourceFd(&t.raw()), TIMER, Interest::READABLE)?;
            Some(t)
        } else {
            None
        };
        let tls_config = match &spec.tls {
            Some(t) => Some(t.client_config().map_err(io::Error::other)?),
            None => None,
        };
        let rng = spec.seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(job.index as u64 + 1)) | 1;
        Ok(Worker {
            plan,
            heap: BinaryHeap::with_capacity(job.conns),
            job,
            conns,
            stats: Stats::new(),
            window: Window::default(),
            established: 0,
            between_windows: false,
            cpu_mark: ((0.0, 0.0), 0.0),
            poll,
            timer,
            buf: vec![0; READ_BUF],
            deferred: Vec::with_capacity(conns_len),
            ready: VecDeque::with_capacity(conns_len),
            turn_end_ns: 0,
            next_scan_ns: 0,
            expect: spec
                .targets
                .iter()
                .map(|t| match t.expect_body {
                    Some((size, sum)) => Expect {
                        size: Some(size),
                        checksum: spec.checksum.then_some(sum),
                    },
                    None => Expect {
                        size: spec.expect_size,
                        checksum: None,
                    },
                })
                .collect(),
            rng,
            seq,
            taken_back: VecDeque::with_capacity(places),
            limit: spec.connection_limit().unwrap_or(u64::MAX),
            source_seq: first_conn,
            one_write: spec.connection_limit() == Some(1)
                && spec.tls.is_none()
                && spec.users.is_none(),
            issued_measured: 0,
            done_measured: 0,
            measuring: false,
            now: now_ns(),
            latency_avg_ns: 0,
            last_look_ns: 0,
            users,
            plain: if tls_config.is_some() {
                vec![0; READ_BUF]
            } else {
                Vec::new()
            },
            tls_config,
            uring,
            io_fallback,
        })
    }

    /// Visit what last turn left over, then this poll's events, until the
    /// turn's time is up; what is left then waits for the next turn.
    fn turn(&mut self, events: &Events, wake: u64) {
        let mut end = (self.now + TURN_NS).min(wake);
        if let Some(due) = self.next_clock_due() {
            end = end.min(due);
        }
        self.turn_end_ns = end;

        // Only what was queued before this turn: a connection visited now
        // and queued again waits behind the others.
        for _ in 0..self.ready.len() {
            let Some(&i) = self.ready.front() else {
                break;
            };
            // Left in the queue by a connection closed since.
            if !self.conns[i].ready {
                self.ready.pop_front();
                continue;
            }
            if self.turn_over() {
                break;
            }
            self.ready.pop_front();
            self.conns[i].ready = false;
            let closed = self.conns[i].peer_closed;
            self.on_event(i, true, closed);
        }

        for ev in events.iter() {
            let token = ev.token();
            if token == TIMER {
                if let Some(t) = self.timer.as_mut() {
                    t.clear();
                }
                continue;
            }
            let Some(i) = token_conn(token, &self.conns) else {
                continue;
            };
            let closed = ev.is_read_closed() || ev.is_error();
            if !self.turn_over() {
                self.on_event(i, ev.is_readable() || closed, closed);
            } else if self.conns[i].state != State::Down {
                // Edge-triggered: this event will not come again.
                if closed {
                    self.conns[i].peer_closed = true;
                }
                self.mark_ready(i);
            }
        }
    }

    /// Refreshes `now`; true once the turn has had its time.
    fn turn_over(&mut self) -> bool {
        self.now = now_ns();
        self.now >= self.turn_end_ns
    }

    fn mark_ready(&mut self, i: usize) {
        if !self.conns[i].ready {
            self.conns[i].ready = true;
            self.ready.push_back(i);
        }
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

    /// The stop flag is not read here: the loop reads it once per
    /// iteration and leaves before anything else is issued.
    fn can_issue(&self) -> bool {
        match self.job.quota {
            Some(q) => !self.measuring || self.issued_measured < q,
            None => !self.between_windows && self.window.end_ns.is_none_or(|end| self.now < end),
        }
    }

    /// xorshift64*: cheap, and seeded per thread for repeatable runs.
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick_target(&mut self) -> u32 {
        if let Some(t) = self.taken_back.pop_front() {
            return t;
        }
        let n = self.plan.requests.targets();
        if n == 1 {
            return 0;
        }
        let i = match self.plan.spec.order {
            Order::Sequential => {
                let i = self.seq;
                self.seq = if i + 1 == n { 0 } else { i + 1 };
                i
            }
            Order::Random => (self.next_random() >> 33) as usize % n,
        };
        i as u32
    }

    /// The earliest clock-driven work: a scheduled send, a think's end or
    /// an arrival.
    fn next_clock_due(&self) -> Option<u64> {
        let sched = self.heap.peek().map(|Reverse((due, _))| *due);
        let users = self.users.as_ref().and_then(UserState::next_due);
        match (sched, users) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn issue(&mut self, i: usize, intended_ns: u64) {
        let target = self.pick_target();
        // The open model's requests belong to the phase their schedule put
        // them in: sends the warmup owed and a stall delayed past its end
        // are the warmup's, or a measured window would count more requests
        // than its rate offered and hide a server that fell behind.
        let measured = if self.plan.interval_ns.is_some() && self.job.quota.is_none() {
            self.measuring && intended_ns >= self.window.warmup_end_ns
        } else {
            self.measuring
        };
        if measured && self.job.quota.is_some() {
            self.issued_measured += 1;
        }
        self.push_request(i, target, intended_ns, measured);
    }

    /// Put request `target` on connection `i`'s ring, counted as sent in
    /// its phase.
    fn push_request(&mut self, i: usize, target: u32, intended_ns: u64, measured: bool) {
        self.counters(measured).sent += 1;
        let now = self.now;
        let limit = self.limit;
        let c = &mut self.conns[i];
        c.carried += 1;
        c.push(InFlight {
            target,
            issued_ns: now,
            intended_ns,
            measured,
            last: c.carried >= limit,
            stream: 0,
        });
        if self.plan.interval_ns.is_some() {
            let late = now.saturating_sub(intended_ns);
            if measured {
                self.stats.lateness.saturating_record((late / 1000).max(1));
                if late > LATE_NS {
                    self.stats.late_sends += 1;
                }
            }
        }
    }

    /// Closed model: keep the connection's pipeline full while there is
    /// work and the connection may carry more; once its last request is
    /// issued, the next ones wait for the connection that replaces it.
    fn fill(&mut self, i: usize) {
        if self.users.is_some() {
            self.fill_user(i);
            return;
        }
        let depth = self.depth_of(i);
        // A pipelined HTTP/1.1 connection is refilled once half its depth
        // has been answered, in one write, rather than a request per
        // response: the server then reads a batch and answers it in a
        // burst the client takes in one read, where topping up each answer
        // settles into a write, a read and a server wake-up per response.
        let c = &self.conns[i];
        if depth > 1 && !c.h2_on && c.state == State::Open && c.len > depth / 2 {
            self.send(i);
            return;
        }
        let before = self.conns[i].len;
        while self.conns[i].len < depth && self.conns[i].carried < self.limit && self.can_issue() {
            let now = self.now;
            self.issue(i, now);
        }
        self.hold_ends(i, self.conns[i].len - before);
        self.send(i);
    }

    /// Closed model, load flowing: how long to nap before looking for more
    /// responses, instead of blocking in epoll_wait at once.
    ///
    /// A thread blocked in epoll_wait is woken by the CPU that delivers the
    /// data, which is the server's: every response that finds the client
    /// asleep costs the server a wake-up, on a VM an inter-processor interrupt
    /// and an exit. A quick client sleeps between almost every two responses,
    /// so it slows the server it measures. A thread that naps on its own timer
    /// is not waiting on epoll: the server's sends wake nobody, and the client
    /// then takes the responses that arrived in one go, as a NIC's interrupt
    /// coalescing does. Latency is untouched, since responses carry the
    /// kernel's receive stamp; what a nap delays is the next request of the
    /// connections answered meanwhile, which the server then does not have:
    /// the client's hold (`Stats::hold_ns`) says how many on average. So a
    /// nap is kept to 1/128 of the recent latency by default. Longer naps
    /// cut the client's CPU further, but each halving of the divisor about
    /// doubles the connections held (docs/performance.md).
    fn nap_ns(&self, wake: u64) -> u64 {
        if !self.plan.spec.naps() {
            return 0;
        }
        let nap = (self.latency_avg_ns / self.plan.spec.nap_divisor.max(1))
            .min(NAP_MAX_NS)
            .min(wake.saturating_sub(self.now));
        if nap < NAP_MIN_NS {
            0
        } else {
            nap
        }
    }

    /// What is left of a nap of `nap` ns since the loop last took what had
    /// arrived, when worth sleeping (at least the shortest nap), else 0.
    /// Looks are paced a nap apart: a client whose turn is quicker than
    /// the gap between two answers would otherwise take them one at a
    /// time, a read and a write each, however many are in flight.
    fn paced_rest(&self, nap: u64, now: u64) -> u64 {
        let rest = nap.saturating_sub(now.saturating_sub(self.last_look_ns));
        if rest >= NAP_MIN_NS {
            rest
        } else {
            0
        }
    }

    /// Closed model: the next requests of the connections answered in this
    /// batch go out together after it, as wrk's do, rather than one by one
    /// between reads. The server then finds several requests per wake-up
    /// instead of being woken for each, and a pipelined connection answered
    /// several times in one read tops up with one writev.
    fn send_deferred(&mut self) {
        let mut list = std::mem::take(&mut self.deferred);
        for &i in &list {
            self.conns[i].deferred = false;
            self.fill(i);
        }
        list.clear();
        self.deferred = list;
    }

    /// Open model: queue an idle connection for its next intended send.
    fn schedule(&mut self, i: usize) {
        let depth = self.depth_of(i);
        let c = &mut self.conns[i];
        if c.in_heap || c.len >= depth {
            return;
        }
        c.in_heap = true;
        self.heap.push(Reverse((c.next_intended_ns, i)));
    }

    /// Open model: send every request whose intended time has come. A
    /// connection still busy when its time comes sends as soon as it is
    /// free, and that lateness is charged to the request's latency.
    fn fire_due(&mut self) {
        let interval = self.plan.interval_ns.unwrap_or(0);
        while let Some(&Reverse((due, i))) = self.heap.peek() {
            if due > self.now {
                break;
            }
            self.heap.pop();
            self.conns[i].in_heap = false;
            if !self.can_issue() {
                continue;
            }
            let intended = self.conns[i].next_intended_ns;
            self.conns[i].next_intended_ns = intended + interval;
            self.issue(i, intended);
            self.send(i);
            // A connection that may carry more (HTTP/2 streams, a
            // pipeline) takes its next send on time too, not once this one
            // is answered: one at a time, 8 streams did the work of one
            // and the schedule's lag was charged to the server.
            self.schedule(i);
        }
    }
}

#[cfg(test)]
mod tests;
