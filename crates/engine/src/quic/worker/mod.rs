//! A thread's QUIC loop: one non-blocking UDP socket and one quinn-proto
//! `Endpoint` for all the thread's connections (the server tells them
//! apart by connection id), driven the way the TCP loop is: read what
//! came, hand each connection its datagrams (each dealt with as of its
//! kernel receive stamp), let each connection say what it wants sent and
//! when its timers fall due (a connection that got nothing and has no
//! timer due is passed over), then sleep in poll(2) until the first of
//! the socket, those timers, the next timeout scan and the run's end, or,
//! while responses flow, nap (nap.rs). Every pass is bounded:
//! `DATAGRAMS_PER_TURN` reads and `TRANSMITS_PER_VISIT` sends per
//! connection.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, ConnectionError, DatagramEvent, Dir, Endpoint, Event, StreamEvent,
};

use crate::clock::{now_ns, realtime_ns, thread_cpu, thread_runqueue_wait};
use crate::driver::{Books, Job, Shared, Stats, ThreadResult, Window, STATUS_SLOTS};
use crate::h3::{self, H3Requests};
use crate::http1::Response;
use crate::result::ErrorKind;
use crate::spec::Order;

use super::conn::{H3Conn, Outcome, Req};
use super::schedule::Schedule;
use super::udp::{Batch, Udp, BATCH};
use super::{LossBook, Quic};

mod answers;
mod nap;

const DATAGRAMS_PER_TURN: usize = 1024;
const TRANSMITS_PER_VISIT: usize = 64;
/// Timeouts are scanned at least this often.
const SCAN_NS: u64 = 50_000_000;
/// Longest sleep in poll(2) before the stop flag is looked at again.
const TURN_NS: u64 = 10_000_000;
const NO_SLOT: usize = usize::MAX;
/// A connection closing after its slot moved on: in `closing`.
const CLOSING: usize = usize::MAX - 1;

pub(super) struct QuicWorker<'a> {
    plan: &'a Shared<'a>,
    quic: &'a Quic,
    requests: &'a H3Requests,
    job: Job,
    udp: Udp,
    endpoint: Endpoint,
    client: ClientConfig,
    conns: Vec<Option<H3Conn>>,
    /// Connections closed by the client, sending their close until drained.
    closing: Vec<H3Conn>,
    ever: Vec<bool>,
    /// Connection handle → slot.
    slot_of: Vec<usize>,
    stats: Stats,
    books: Books,
    losses: LossBook,
    window: Window,
    measuring: bool,
    now: u64,
    issued_measured: u64,
    done_measured: u64,
    seq: usize,
    rng: u64,
    /// A batch of receives' buffers, reused; each datagram is copied out
    /// of it to the size it came in, as quinn's own I/O does.
    recv: Batch,
    send: Vec<u8>,
    preface: Vec<u8>,
    /// The open model's intended send times, per slot.
    schedule: Option<Schedule>,
    /// The latest instant handed to quinn: a datagram's is its arrival,
    /// and quinn's clock must not run backwards.
    quinn_now: Instant,
    naps: nap::Naps,
    /// When the turn began to look at the socket, from which a nap counts.
    looked_ns: u64,
}

impl<'a> QuicWorker<'a> {
    pub(super) fn new(plan: &'a Shared<'a>, quic: &'a Quic, job: Job) -> std::io::Result<Self> {
        let spec = plan.spec;
        let target = spec.targets[0].addr;
        let bind: SocketAddr = if target.is_ipv4() {
            "0.0.0.0:0".parse().expect("an address")
        } else {
            "[::]:0".parse().expect("an address")
        };
        let sock = UdpSocket::bind(bind)?;
        sock.set_nonblocking(true)?;
        // Many streams' responses can arrive between two reads.
        super::receive_buffer(&sock, 8 << 20);
        let seq = (job.first_request % spec.targets.len().max(1) as u64) as usize;
        let rng = spec.seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(job.index as u64 + 1)) | 1;
        Ok(QuicWorker {
            plan,
            quic,
            requests: &quic.requests,
            conns: (0..job.conns).map(|_| None).collect(),
            closing: Vec::new(),
            ever: vec![false; job.conns],
            job,
            udp: Udp::new(sock, spec.http.udp_offload),
            endpoint: Endpoint::new(Arc::new(quic.endpoint.clone()), None, false, None),
            client: quic.client()?,
            slot_of: Vec::new(),
            stats: Stats::new(),
            books: Books::new(spec),
            losses: LossBook::default(),
            window: Window::default(),
            measuring: false,
            now: now_ns(),
            issued_measured: 0,
            done_measured: 0,
            seq,
            rng,
            recv: Batch::new(),
            send: Vec::with_capacity(64 * 1024),
            preface: h3::control_stream_preface(),
            schedule: None,
            quinn_now: Instant::now(),
            naps: nap::Naps::new(),
            looked_ns: 0,
        })
    }

    pub(super) fn run(mut self, window: Window) -> ThreadResult {
        if let Some(cpu) = self.job.cpu {
            let _ = crate::affinity::pin_current_thread(&[cpu]);
        }
        self.window = window;
        self.now = now_ns();
        let spec = self.plan.spec;
        self.schedule = self.plan.interval_ns.map(|interval| {
            Schedule::new(
                self.job.first_conn,
                self.job.conns,
                crate::tick::Ticks {
                    start: self.window.start_ns,
                    ns: self.plan.tick_ns,
                    end: self.window.end_ns.unwrap_or(u64::MAX),
                },
                interval,
                self.plan.stagger_ns,
                spec.connections,
                spec.ramp.as_ref(),
            )
        });
        self.measuring = self.now >= self.window.warmup_end_ns;
        if spec.naps() {
            // Naps are tens of µs; the default 50 µs timer slack would
            // stretch each one several times over.
            // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0) };
        }
        let mut cpu_mark = (thread_cpu(), thread_runqueue_wait());
        let mut next_scan = self.now + SCAN_NS.min(self.timeout_ns());
        let (end_ns, interrupted) = loop {
            self.now = now_ns();
            if !self.measuring && self.now >= self.window.warmup_end_ns {
                self.measuring = true;
                cpu_mark = (thread_cpu(), thread_runqueue_wait());
            }
            if let Some(end) = self.window.end_ns {
                if self.now >= end {
                    break (end, false);
                }
            }
            if let Some(q) = self.job.quota {
                if self.measuring && self.done_measured >= q {
                    break (self.now, false);
                }
            }
            if self.window.stop.load(Ordering::Relaxed) {
                break (self.now, true);
            }
            for i in 0..self.conns.len() {
                if self.conns[i].is_none() && self.can_issue() {
                    self.connect(i);
                }
            }
            self.looked_ns = self.now;
            self.receive();
            let instant = Instant::now();
            self.quinn_now = instant;
            for i in 0..self.conns.len() {
                self.visit(i, instant);
            }
            self.visit_closing(instant);
            if self.now >= next_scan {
                self.scan_timeouts();
                next_scan = self.now + SCAN_NS.min(self.timeout_ns());
            }
            self.sleep(next_scan);
        };
        // The measured phase's own, as on TCP: a count's warmup request
        // still unanswered is the warmup's.
        let in_flight = self
            .conns
            .iter()
            .flatten()
            .flat_map(|c| &c.reqs)
            .filter(|r| self.phase_of(r))
            .count() as u64;
        if let (Some(s), Some(end)) = (&self.schedule, self.window.end_ns) {
            let ramp = spec.ramp.as_ref();
            let (from, start) = (self.window.warmup_end_ns, self.window.start_ns);
            self.stats.unsent = s.unsent(from, end.min(end_ns), ramp, start);
        }
        let (cpu_end, wait_end) = (thread_cpu(), thread_runqueue_wait());
        let instant = Instant::now();
        for i in 0..self.conns.len() {
            if let Some(mut c) = self.conns[i].take() {
                c.q.close(instant, h3_code(h3::H3_NO_ERROR), bytes::Bytes::new());
                self.transmit(&mut c, instant);
                self.losses.book(&c);
            }
        }
        self.losses.gso = self.udp.gso();
        self.losses.gro = self.udp.gro();
        let mut stats = self.stats;
        stats.h3 = self
            .losses
            .into_report(self.quic, self.plan.spec.http.streams);
        ThreadResult {
            stats,
            cpu_user: cpu_end.0 - cpu_mark.0 .0,
            cpu_sys: cpu_end.1 - cpu_mark.0 .1,
            runqueue_wait: (wait_end - cpu_mark.1).max(0.0),
            established: self.ever.iter().filter(|&&e| e).count() as u64,
            in_flight_at_end: in_flight,
            end_ns,
            interrupted,
            fatal: None,
            expect: self.books.expect,
            sessions: None,
            io_fallback: None,
        }
    }

    fn timeout_ns(&self) -> u64 {
        self.plan.spec.timeout.as_nanos() as u64
    }

    fn can_issue(&self) -> bool {
        match self.job.quota {
            Some(q) => !self.measuring || self.issued_measured < q,
            None => self.window.end_ns.is_none_or(|end| self.now < end),
        }
    }

    fn phase_of(&self, r: &Req) -> bool {
        if self.job.quota.is_some() || self.schedule.is_some() {
            r.measured
        } else {
            self.measuring
        }
    }

    fn pick(&mut self) -> u32 {
        let n = self.requests.targets.len();
        let i = match self.plan.spec.order {
            Order::Sequential => {
                let i = self.seq % n;
                self.seq = self.seq.wrapping_add(1);
                i
            }
            Order::Random => {
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                (self.rng >> 33) as usize % n
            }
        };
        i as u32
    }

    /// A new request on connection `c`, counted as sent in its phase; in
    /// the open model, intended at `intended` (else now).
    fn issue(&mut self, c: &mut H3Conn, intended: u64) {
        let target = self.pick();
        // The open model's requests belong to the phase their schedule
        // put them in, as over TCP.
        let measured = if self.schedule.is_some() && self.job.quota.is_none() {
            self.measuring && intended >= self.window.warmup_end_ns
        } else {
            self.measuring
        };
        if self.schedule.is_some() && measured {
            let late = self.now.saturating_sub(intended);
            self.stats.lateness.saturating_record((late / 1000).max(1));
            if late > crate::driver::LATE_NS {
                self.stats.late_sends += 1;
            }
        }
        if measured && self.job.quota.is_some() {
            self.issued_measured += 1;
        }
        self.counters(measured).sent += 1;
        let reader = c.reader(self.plan.spec.checksum);
        c.reqs.push(Req {
            stream: None,
            target,
            issued_ns: self.now,
            intended_ns: intended,
            measured,
            written: 0,
            first_rx_ns: 0,
            reader,
        });
    }

    fn counters(&mut self, measured: bool) -> &mut crate::driver::Counters {
        if measured {
            &mut self.stats.measured
        } else {
            &mut self.stats.warmup
        }
    }

    /// Opens slot `i`'s connection, with one request queued on it: the
    /// handshake's failure fails it, as a connect's fails a TCP
    /// connection's first request.
    fn connect(&mut self, i: usize) {
        let t = &self.plan.spec.targets[0];
        let name = self.quic.server_name.as_str();
        let instant = Instant::now();
        let Ok((ch, q)) = self
            .endpoint
            .connect(instant, self.client.clone(), t.addr, name)
        else {
            return;
        };
        if self.slot_of.len() <= ch.0 {
            self.slot_of.resize(ch.0 + 1, NO_SLOT);
        }
        self.slot_of[ch.0] = i;
        let mut c = H3Conn::new(q, self.now, ch);
        if self.measuring {
            self.stats.measured.connects += 1;
            if self.ever[i] {
                self.stats.reconnects += 1;
            }
        }
        // Closed model: one request queued, which a failed handshake
        // fails; the open model's wait for their times.
        if self.schedule.is_none() {
            self.issue(&mut c, self.now);
        }
        self.conns[i] = Some(c);
    }

    /// Reads what came, bounded, and hands each datagram to its connection
    /// as of its arrival: what it completes ends then, however long the
    /// loop took to come to it (slept, busy, or napping). The turn's clock
    /// is then the last reading, so the requests it sends next start from
    /// there.
    fn receive(&mut self) {
        let mut datagrams = 0;
        while datagrams < DATAGRAMS_PER_TURN {
            let n = match self.udp.receive_many(&mut self.recv) {
                Ok(n) => n,
                Err(_) => break,
            };
            // Both clocks once a call bring its stamps onto the loop's.
            let clocks = (now_ns(), realtime_ns());
            let base = Instant::now();
            self.now = clocks.0;
            self.losses.receive_calls += 1;
            let phase = self.measuring;
            for i in 0..n {
                let (from, len, stride, stamp) = {
                    let r = &self.recv.got[i];
                    (r.from, r.len, r.stride, r.stamp)
                };
                let arrived = stamp.mono(clocks);
                let ago = Duration::from_nanos(clocks.0 - arrived);
                let instant = base.checked_sub(ago).unwrap_or(base).max(self.quinn_now);
                self.quinn_now = instant;
                self.counters(phase).bytes_read += len as u64;
                if phase {
                    self.tick(0, 0, len as u64);
                }
                // A coalesced receive (GRO) holds datagrams of `stride`
                // bytes end to end, the last perhaps shorter; each goes
                // to quinn in a buffer of its own size, as its own I/O
                // hands them.
                for at in (0..len).step_by(stride) {
                    let end = (at + stride).min(len);
                    datagrams += 1;
                    let data = BytesMut::from(&self.recv.bytes(i)[at..end]);
                    self.datagram(instant, arrived, from, data);
                }
            }
            if n < BATCH {
                break;
            }
        }
    }

    /// One datagram, come at `arrived`, to the endpoint, and on to its
    /// connection, which deals with what it brought at once: a response
    /// it ends is stamped with its arrival.
    fn datagram(&mut self, instant: Instant, arrived: u64, from: SocketAddr, data: BytesMut) {
        let mut response = Vec::new();
        match self
            .endpoint
            .handle(instant, from, None, None, data, &mut response)
        {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                let slot = self.slot_of.get(ch.0).copied().unwrap_or(NO_SLOT);
                if slot == CLOSING {
                    if let Some(c) = self.closing.iter_mut().find(|c| c.handle == ch) {
                        c.q.handle_event(ev);
                    }
                    return;
                }
                // The slot may hold a newer connection by now.
                let live = self.conns.get_mut(slot).and_then(Option::as_mut);
                let Some(c) = live.filter(|c| c.handle == ch) else {
                    return;
                };
                c.touched = true;
                if !c.answered {
                    c.answered = true;
                    if self.measuring {
                        let us = arrived.saturating_sub(c.start_ns) / 1000;
                        self.stats.connect.saturating_record(us.max(1));
                    }
                }
                c.q.handle_event(ev);
                let Some(mut c) = self.conns[slot].take() else {
                    return;
                };
                match self.events(slot, &mut c, arrived) {
                    Some(reason) => self.lost(c, reason),
                    None => self.conns[slot] = Some(c),
                }
            }
            Some(DatagramEvent::Response(t)) => {
                self.losses.send_calls +=
                    self.udp
                        .send(&response[..t.size], t.destination, t.segment_size);
            }
            _ => {}
        }
    }

    /// Everything slot `i`'s connection has to do this turn.
    fn visit(&mut self, i: usize, instant: Instant) {
        let Some(mut c) = self.conns[i].take() else {
            return;
        };
        let due = c.q.poll_timeout().is_some_and(|t| t <= instant);
        // The open model's sends come due on their own schedule.
        if !c.touched && !due && self.schedule.is_none() {
            self.conns[i] = Some(c);
            return;
        }
        c.touched = false;
        if due {
            c.q.handle_timeout(instant);
        }
        // The datagrams' events were dealt with as they came; these are
        // the timers'.
        if let Some(reason) = self.events(i, &mut c, self.now) {
            self.lost(c, reason);
            return;
        }
        if self.schedule.is_some() {
            self.fire_due(i, &mut c);
        }
        if c.connected {
            self.fill(&mut c);
        }
        self.transmit(&mut c, instant);
        if c.goaway.is_some() && c.reqs.is_empty() {
            self.retire(c);
            return;
        }
        if c.q.is_drained() {
            self.losses.book(&c);
            return;
        }
        self.conns[i] = Some(c);
    }

    /// What slot `i`'s connection `c` has to say, as of `at`: its endpoint
    /// events, then its own (handshake done, streams readable or opened or
    /// writable). Returns why it was lost, if it was. Bounded by the
    /// events the connection queued.
    fn events(&mut self, i: usize, c: &mut H3Conn, at: u64) -> Option<ConnectionError> {
        while let Some(ev) = c.q.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(c.handle, ev) {
                c.q.handle_event(back);
            }
        }
        let mut lost = None;
        while let Some(ev) = c.q.poll() {
            match ev {
                Event::Connected => self.connected(i, c, at),
                Event::ConnectionLost { reason } => lost = Some(reason),
                Event::Stream(StreamEvent::Readable { id }) => self.readable(c, id, at),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => c.accept_uni(),
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(k) = c.find(id) {
                        let t = c.reqs[k].target as usize;
                        c.write(k, &self.requests.targets[t]);
                    }
                }
                _ => {}
            }
        }
        lost
    }

    /// Closes connection `c` and frees its slot for a new one; the close
    /// is sent, and sent again, until the connection drains.
    fn retire(&mut self, mut c: H3Conn) {
        c.q.close(
            Instant::now(),
            h3_code(h3::H3_NO_ERROR),
            bytes::Bytes::new(),
        );
        self.park(c);
    }

    /// Connection `c`, closed either way, kept until it drains.
    fn park(&mut self, c: H3Conn) {
        self.losses.book(&c);
        if let Some(s) = self.slot_of.get_mut(c.handle.0) {
            *s = CLOSING;
        }
        self.closing.push(c);
    }

    fn visit_closing(&mut self, instant: Instant) {
        let mut k = 0;
        while k < self.closing.len() {
            let c = &mut self.closing[k];
            if c.q.poll_timeout().is_some_and(|t| t <= instant) {
                c.q.handle_timeout(instant);
            }
            while let Some(ev) = c.q.poll_endpoint_events() {
                if let Some(back) = self.endpoint.handle_event(c.handle, ev) {
                    c.q.handle_event(back);
                }
            }
            while c.q.poll().is_some() {}
            let mut c = self.closing.swap_remove(k);
            self.transmit(&mut c, instant);
            if !c.q.is_drained() {
                self.closing.push(c);
                let last = self.closing.len() - 1;
                self.closing.swap(k, last);
                k += 1;
            }
        }
    }

    /// Slot `i`'s handshake ended at `at`.
    fn connected(&mut self, i: usize, c: &mut H3Conn, at: u64) {
        c.connected = true;
        if !c.answered {
            c.answered = true;
        }
        self.ever[i] = true;
        if self.measuring {
            let us = at.saturating_sub(c.start_ns) / 1000;
            self.stats.handshake.saturating_record(us.max(1));
            self.stats.tls.handshakes += 1;
        }
        self.stats.tls.version = Some("TLSv1_3");
        self.stats.tls.alpn = Some("h3".into());
        self.losses.connections += 1;
        c.open_control(&self.preface);
    }

    /// Keeps connection `c` carrying its streams' worth of requests, while
    /// there is work and the server's MAX_STREAMS allows.
    fn fill(&mut self, c: &mut H3Conn) {
        let depth = self.plan.spec.http.streams;
        let mut issued = 0;
        // Bounded by the connection's depth.
        loop {
            // The queued request first, then new ones.
            if let Some(k) = c.reqs.iter().position(|r| r.stream.is_none()) {
                let t = c.reqs[k].target as usize;
                if !c.start(k, &self.requests.targets[t]) {
                    break;
                }
                continue;
            }
            if c.reqs.len() >= depth
                || c.goaway.is_some()
                || self.schedule.is_some()
                || !self.can_issue()
            {
                break;
            }
            self.issue(c, self.now);
            issued += 1;
        }
        self.hold_ends(c, issued);
    }

    /// Open model: every request of slot `i` whose time has come, while
    /// its connection has room; a connection still full when one's time
    /// comes sends it once it has room, and the lateness is charged to
    /// its latency.
    fn fire_due(&mut self, i: usize, c: &mut H3Conn) {
        let depth = self.plan.spec.http.streams;
        let (ramp, start) = (self.plan.spec.ramp.as_ref(), self.window.start_ns);
        // Bounded by the connection's depth.
        while c.reqs.len() < depth && c.goaway.is_none() && self.can_issue() {
            let Some(s) = self.schedule.as_mut() else {
                return;
            };
            let Some(intended) = s.take_due(i, self.now, ramp, start) else {
                return;
            };
            self.issue(c, intended);
        }
    }

    /// Stream `id` of `c` has bytes that came at `at`.
    fn readable(&mut self, c: &mut H3Conn, id: quinn_proto::StreamId, at: u64) {
        if id.dir() == Dir::Uni {
            if let Some(last) = c.read_uni(id) {
                self.goaway(c, last);
            }
            return;
        }
        let Some(k) = c.find(id) else {
            return;
        };
        let (out, _) = c.read(k, at);
        match out {
            None => {}
            Some(Outcome::Done(resp)) => {
                let r = c.reqs.swap_remove(k);
                if let Some(end) = self.complete(&r, resp, at) {
                    c.freed += 1;
                    c.freed_at_sum += end;
                }
                c.recycle(r);
            }
            Some(Outcome::Reset(code)) => {
                let r = c.reqs.swap_remove(k);
                *self
                    .losses
                    .stream_resets
                    .entry(h3::code_name(code))
                    .or_default() += 1;
                self.failed(&r, ErrorKind::StreamReset);
                c.recycle(r);
            }
            Some(Outcome::Broken(e)) => {
                c.cancel(k);
                let r = c.reqs.swap_remove(k);
                *self
                    .losses
                    .h3_errors
                    .entry(h3::code_name(e.code()))
                    .or_default() += 1;
                self.failed(&r, ErrorKind::Parse);
                c.recycle(r);
            }
        }
    }

    /// The server's GOAWAY: requests on streams at or above `last` were
    /// never processed and go out again on a fresh connection.
    fn goaway(&mut self, c: &mut H3Conn, last: u64) {
        self.losses.goaways += 1;
        c.goaway = Some(last);
        let mut k = 0;
        while k < c.reqs.len() {
            let above = c.reqs[k].stream.is_some_and(|s| u64::from(s) >= last);
            if !above {
                k += 1;
                continue;
            }
            c.cancel(k);
            let r = c.reqs.swap_remove(k);
            self.take_back(&r);
            self.losses.retried += 1;
            c.recycle(r);
        }
    }

    fn transmit(&mut self, c: &mut H3Conn, instant: Instant) {
        for _ in 0..TRANSMITS_PER_VISIT {
            self.send.clear();
            let most = self.udp.max_segments();
            let Some(t) = c.q.poll_transmit(instant, most, &mut self.send) else {
                return;
            };
            let phase = self.measuring;
            self.counters(phase).bytes_written += t.size as u64;
            self.losses.send_calls +=
                self.udp
                    .send(&self.send[..t.size], t.destination, t.segment_size);
        }
        // Cut short by the bound: the rest goes out on the next turn.
        c.touched = true;
    }

    /// Sleeps until the socket is readable or the first timer falls due;
    /// while responses flow, naps instead (nap.rs), on its own timer.
    fn sleep(&mut self, next_scan: u64) {
        let mut wake = next_scan;
        if let Some(end) = self.window.end_ns {
            wake = wake.min(end);
        }
        if !self.measuring {
            wake = wake.min(self.window.warmup_end_ns);
        }
        let instant = Instant::now();
        let now = now_ns();
        if let Some(s) = &self.schedule {
            let depth = self.plan.spec.http.streams;
            for (i, c) in self.conns.iter().enumerate() {
                // A full connection waits for an answer, not its time.
                if c.as_ref()
                    .is_some_and(|c| c.reqs.len() < depth && c.goaway.is_none())
                {
                    wake = wake.min(s.next(i));
                }
            }
        }
        for c in self.conns.iter_mut().flatten() {
            // Work left for the next visit (a cancel, a send cut short).
            if c.touched {
                wake = now;
            }
            if let Some(t) = c.q.poll_timeout() {
                let ns = t.saturating_duration_since(instant).as_nanos() as u64;
                wake = wake.min(now + ns);
            }
        }
        // Once nothing more may be sent there is nothing to batch.
        let nap = if self.plan.spec.naps() && self.can_issue() {
            self.naps.nap_ns(self.plan.spec, self.looked_ns, now, wake)
        } else {
            0
        };
        if nap > 0 {
            if self.measuring {
                self.stats.naps += 1;
            }
            std::thread::sleep(Duration::from_nanos(nap));
            return;
        }
        // To the nanosecond, so the open model's sends go out on time.
        let ns = wake.saturating_sub(now).min(TURN_NS);
        let ts = libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let mut fd = libc::pollfd {
            fd: self.udp.socket().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd and a timespec on the stack, for the
        // call's length; no signal mask is changed.
        unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
    }
}

fn h3_code(code: u64) -> quinn_proto::VarInt {
    quinn_proto::VarInt::from_u64(code).unwrap_or(quinn_proto::VarInt::from_u32(0))
}
