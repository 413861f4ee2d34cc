//! The epoll backend (through mio): sockets registered once,
//! edge-triggered, for both readable and writable, so epoll_ctl is only
//! called when a connection is (re)opened; a read budget per visit, and
//! the connections left with unread data visited again next turn, since
//! no new edge would report data that is already there; and the naps of
//! `Pace` between looks.
//!
//! A read() that returns less than the buffer is taken to mean the socket
//! is drained, because an edge-triggered epoll reports every new arrival
//! of data, so the read() that would return EAGAIN is skipped (not when
//! the event also reports the peer's FIN, which no later event would
//! report again).

use std::collections::VecDeque;
use std::io::{IoSlice, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use std::io;

use crate::driver::*;

use super::socket;

/// Events taken per poll.
const EVENTS: usize = 1024;
/// In ticks, looks a tick takes at most while answers are awaited: a
/// burst answered in a quarter of its tick costs one nap and the tick's
/// own wake, however many answers there were.
const TICK_LOOKS: u64 = 4;
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
fn socket_token(i: usize, epoch: u32) -> Token {
    let gen = (epoch as usize) & ((1 << TOKEN_HALF) - 1);
    Token(gen << TOKEN_HALF | i)
}

/// The connection a token names, if the socket it names is still its
/// socket.
pub(crate) fn token_conn(token: Token, conns: &[Conn]) -> Option<usize> {
    let i = token.0 & ((1 << TOKEN_HALF) - 1);
    let c = conns.get(i)?;
    (socket_token(i, c.epoch) == token).then_some(i)
}

pub(crate) struct Epoll {
    pub(crate) poll: Poll,
    /// The last poll's events: the load is flowing if it had any. Taken
    /// out while a turn handles them.
    events: Events,
    /// Wakes the loop for scheduled work (sends, thinks, arrivals) to the
    /// microsecond, where epoll_wait counts milliseconds.
    timer: Option<TimerFd>,
    /// One read buffer per thread, shared by its connections: a response
    /// is parsed as it arrives, so no connection needs a buffer of its own
    /// beyond the parser's header buffer.
    pub(crate) buf: Vec<u8>,
    /// Each connection's socket, while it has one.
    streams: Box<[Option<TcpStream>]>,
    /// Connections to visit as if an event had come, oldest first: unread
    /// data left by the read budget, or an event a turn had no time for.
    /// A queue, so that connections that always have more to read cannot
    /// keep the others from their turn.
    pub(crate) ready: VecDeque<usize>,
    /// Whether each connection is in `ready`.
    queued: Box<[bool]>,
    /// Why io_uring was asked for and epoll used instead.
    pub(crate) fallback: Option<String>,
}

impl Epoll {
    pub(crate) fn new(conns: usize, clocked: bool, fallback: Option<String>) -> io::Result<Self> {
        let poll = Poll::new()?;
        let timer = if clocked {
            let t = TimerFd::new()?;
            poll.registry()
                .register(&mut SourceFd(&t.raw()), TIMER, Interest::READABLE)?;
            Some(t)
        } else {
            None
        };
        Ok(Epoll {
            poll,
            events: Events::with_capacity(EVENTS),
            timer,
            buf: vec![0; READ_BUF],
            streams: (0..conns).map(|_| None).collect(),
            ready: VecDeque::with_capacity(conns),
            queued: vec![false; conns].into_boxed_slice(),
            fallback,
        })
    }

    /// Connection `i`'s socket, while it has one.
    #[inline]
    pub(crate) fn stream(&mut self, i: usize) -> Option<&mut TcpStream> {
        self.streams[i].as_mut()
    }

    /// Close connection `i`'s socket, which takes it out of epoll's set
    /// (it is never duplicated), so no epoll_ctl is spent on it: one
    /// syscall less per connection, which a load of new connections pays
    /// each time.
    pub(crate) fn close(&mut self, i: usize) {
        self.streams[i] = None;
        self.queued[i] = false;
    }

    pub(crate) fn close_all(&mut self) {
        for s in self.streams.iter_mut() {
            *s = None;
        }
    }
}

impl Worker<'_> {
    fn epoll(&mut self) -> Option<&mut Epoll> {
        match &mut self.io {
            Io::Epoll(e) => Some(e),
            Io::Uring(_) => None,
        }
    }

    /// Connection `i` is to be visited next turn without an event.
    pub(crate) fn mark_ready(&mut self, i: usize) {
        if let Io::Epoll(e) = &mut self.io {
            if !e.queued[i] {
                e.queued[i] = true;
                e.ready.push_back(i);
            }
        }
    }

    /// Visit what last turn left over, then this poll's events, until the
    /// turn's time is up; what is left then waits for the next turn.
    pub(crate) fn epoll_turn(&mut self, events: &Events, wake: u64) {
        let mut end = (self.now + TURN_NS).min(wake);
        if let Some(due) = self.next_clock_due() {
            end = end.min(due);
        }
        self.turn_end_ns = end;

        // Only what was queued before this turn: a connection visited now
        // and queued again waits behind the others.
        let queued = self.epoll().map_or(0, |e| e.ready.len());
        for _ in 0..queued {
            let Some(e) = self.epoll() else {
                return;
            };
            let Some(&i) = e.ready.front() else {
                break;
            };
            // Left in the queue by a connection closed since.
            if !e.queued[i] {
                e.ready.pop_front();
                continue;
            }
            if self.turn_over() {
                break;
            }
            let Some(e) = self.epoll() else {
                return;
            };
            e.ready.pop_front();
            e.queued[i] = false;
            let closed = self.conns[i].peer_closed;
            self.on_event(i, true, closed);
        }

        for ev in events.iter() {
            let token = ev.token();
            if token == TIMER {
                if let Some(t) = self.epoll().and_then(|e| e.timer.as_mut()) {
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

    /// One look of the loop: wait (or nap) until `wake`, or the clock's
    /// work `due`, then handle what came. Returns how the window ended,
    /// if it did.
    pub(crate) fn epoll_step(&mut self, wake: u64, due: Option<u64>) -> Option<Ended> {
        // In ticks, no request goes out before the next (`due`), so no
        // answer is worth a wake of its own: the kernel stamps it as it
        // arrives, and it can wait to be read. epoll cannot wait for a
        // count of answers as the ring does (nap.rs), so while answers of
        // the sends are awaited the thread naps a quarter of the tick at a
        // time, taking what came at each, and once none is awaited waits
        // for the tick alone. Answers taken as they came, the thread woke
        // for each at tens of thousands a second. A connection that owes
        // more of this tick's requests than it carries at once sends the
        // next as its answer comes, so then no nap.
        let tick_nap = match due {
            Some(due) if self.plan.tick_ns > 0 && self.tick_awaited() > 0 => {
                let now = now_ns();
                // Never past the loop's own wake either (the window's
                // end, the next timeout scan).
                let nap = (self.plan.tick_ns / TICK_LOOKS)
                    .min(due.saturating_sub(now))
                    .min(wake.saturating_sub(now));
                if nap >= crate::driver::pace::NAP_MIN_NS && !self.tick_owed(now) {
                    nap
                } else {
                    0
                }
            }
            _ => 0,
        };
        let Io::Epoll(ep) = &mut self.io else {
            return None;
        };
        if let (Some(timer), Some(due)) = (ep.timer.as_mut(), due) {
            if timer.armed_at().is_none_or(|a| due < a) {
                timer.arm(due);
            }
        }
        // Work left from the last turn is done before any wait.
        let busy = !ep.ready.is_empty();
        let mut events = std::mem::replace(&mut ep.events, Events::with_capacity(0));
        // `events` still holds the last batch: the load is flowing if it
        // had any, and only then is a nap worth taking.
        let nap = if busy || events.is_empty() {
            0
        } else {
            self.pace.nap_ns(self.plan.spec, self.now, wake)
        };
        let mut polled = Ok(());
        let mut ready = false;
        if tick_nap > 0 && !busy {
            if self.measuring {
                self.stats.naps += 1;
            }
            std::thread::sleep(Duration::from_nanos(tick_nap));
            polled = ep.poll.poll(&mut events, Some(Duration::ZERO));
            // A nap that found nothing still ends the look: the next
            // counts what is awaited again, and naps again or waits for
            // the tick.
            ready = true;
        } else if nap > 0 {
            // What is left of a nap since the last look is slept
            // first, whatever is waiting (see `paced_rest`); with no
            // such rest, a look that finds nothing ready naps whole.
            let mut sleep = self.pace.paced_rest(nap, self.now);
            if sleep == 0 {
                polled = ep.poll.poll(&mut events, Some(Duration::ZERO));
                ready = polled.is_err() || !events.is_empty();
                sleep = if ready { 0 } else { nap };
            }
            if sleep > 0 {
                if self.measuring {
                    self.stats.naps += 1;
                }
                std::thread::sleep(Duration::from_nanos(sleep));
                polled = ep.poll.poll(&mut events, Some(Duration::ZERO));
                ready = polled.is_err() || !events.is_empty();
            }
        }
        // A wait for an answer spun first (`LoadSpec::spin`, the ring's
        // spin.rs says why): epoll has no flag to watch, so each look is
        // a wait of no time.
        let spin = self.plan.spec.spin_ns();
        if !ready && !busy && spin > 0 {
            let start = now_ns();
            let end = start.saturating_add(spin.min(wake.saturating_sub(start)));
            let mut at = start;
            // Bounded: the clock is read at every look, and ends it at
            // `end`.
            while !ready && at < end {
                polled = ep.poll.poll(&mut events, Some(Duration::ZERO));
                ready = polled.is_err() || !events.is_empty();
                at = now_ns();
                std::hint::spin_loop();
            }
            if self.measuring {
                self.stats
                    .spun(at.saturating_sub(start), ready && polled.is_ok());
            }
        }
        if !ready {
            self.now = now_ns();
            // epoll_wait counts milliseconds; round up so we never spin.
            let timeout_ms = if busy {
                0
            } else {
                wake.saturating_sub(self.now).div_ceil(1_000_000)
            };
            polled = ep
                .poll
                .poll(&mut events, Some(Duration::from_millis(timeout_ms)));
        }
        let ended = match polled {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => Some((now_ns(), false, Some(e))),
            _ => {
                self.now = now_ns();
                self.pace.looked(self.now);
                // What arrived after the end belongs to no phase: it stays
                // in flight at the end rather than stretching the window.
                match self.window.end_ns {
                    Some(end) if self.now >= end => Some((end, false, None)),
                    _ => {
                        self.epoll_turn(&events, wake);
                        None
                    }
                }
            }
        };
        if let Some(ep) = self.epoll() {
            ep.events = events;
        }
        ended
    }

    /// Sessions: take what happened to the idle connections since the
    /// last window.
    pub(crate) fn epoll_sweep(&mut self) {
        let Some(ep) = self.epoll() else {
            return;
        };
        let mut events = std::mem::replace(&mut ep.events, Events::with_capacity(0));
        if ep.poll.poll(&mut events, Some(Duration::ZERO)).is_ok() {
            self.now = now_ns();
            let wake = self.next_scan_ns;
            self.epoll_turn(&events, wake);
        }
        if let Some(ep) = self.epoll() {
            ep.events = events;
        }
    }

    /// Open connection `i`'s socket, connecting to `addr`.
    pub(crate) fn epoll_connect(&mut self, i: usize, addr: SocketAddr) {
        let from = self.next_source_index().map(|k| self.plan.spec.sources[k]);
        let nodelay = !self.dial.one_write;
        let token = socket_token(i, self.conns[i].epoch);
        let Io::Epoll(ep) = &mut self.io else {
            return;
        };
        match socket::connect(addr, from, self.plan.spec.linger_zero) {
            Ok(mut s) => {
                // A connection that carries one request in one write has
                // nothing for Nagle to hold back: the setsockopt is saved.
                if nodelay {
                    let _ = s.set_nodelay(true);
                }
                rx::enable_stamps(s.as_raw_fd());
                if let Err(e) = ep.poll.registry().register(
                    &mut s,
                    token,
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.fail(i, classify_connect(&e));
                    return;
                }
                ep.streams[i] = Some(s);
                self.conns[i].state = State::Connecting;
            }
            Err(e) => self.fail(i, classify_connect(&e)),
        }
    }

    /// Write connection `i`'s requests not yet written, in cleartext
    /// HTTP/1.1, as many as the socket takes.
    pub(crate) fn epoll_write(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            if c.written >= c.len || c.peer_closed || c.unwritable.is_some() {
                return;
            }
            let (head, written, write_off, pending) =
                (c.head, c.written, c.write_off, c.len - c.written);
            let Io::Epoll(ep) = &mut self.io else {
                return;
            };
            let Some(stream) = ep.streams[i].as_mut() else {
                return;
            };
            let ring = &c.ring;
            let req_at = |k: usize| {
                let f = &ring[wrap(head + written + k, ring.len())];
                self.plan.requests.get(f.target, f.last)
            };
            let res = if pending == 1 {
                stream.write(&req_at(0)[write_off..])
            } else {
                let mut slices = [IoSlice::new(&[]); WRITEV_MAX];
                let n = pending.min(WRITEV_MAX);
                for (k, slot) in slices.iter_mut().enumerate().take(n) {
                    let req = req_at(k);
                    *slot = IoSlice::new(if k == 0 { &req[write_off..] } else { req });
                }
                stream.write_vectored(&slices[..n])
            };
            match res {
                Ok(n) => {
                    let measuring = self.measuring;
                    self.counters(measuring).bytes_written += n as u64;
                    self.wrote(i, n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.write_failed(i, &e);
                    return;
                }
            }
        }
    }

    /// Write what connection `i`'s protocol layers queued (TLS's records,
    /// or HTTP/2's frames in cleartext) to its socket, until they have
    /// nothing left or the socket is full.
    pub(crate) fn epoll_send_out(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            if c.unwritable.is_some() {
                return;
            }
            let Io::Epoll(ep) = &mut self.io else {
                return;
            };
            let Some(stream) = ep.streams[i].as_mut() else {
                return;
            };
            let Some(res) = c.proto.write_out(stream) else {
                return;
            };
            match res {
                Ok(0) => return,
                Ok(n) => {
                    let measuring = self.measuring;
                    self.counters(measuring).bytes_written += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.write_failed(i, &e);
                    return;
                }
            }
        }
    }

    pub(crate) fn on_event(&mut self, i: usize, readable: bool, closed: bool) {
        if i >= self.conns.len() {
            return;
        }
        match self.conns[i].state {
            State::Down => {}
            State::Connecting => {
                let Some(stream) = self.epoll().and_then(|e| e.stream(i)) else {
                    return;
                };
                match stream.take_error() {
                    Ok(Some(e)) | Err(e) => self.fail(i, classify_connect(&e)),
                    Ok(None) => match stream.peer_addr() {
                        Ok(_) => {
                            self.on_connected(i);
                            if closed {
                                self.conns[i].peer_closed = true;
                            }
                            if readable && self.conns[i].state == State::Open {
                                self.read(i);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                        Err(e) => self.fail(i, classify_connect(&e)),
                    },
                }
            }
            State::Handshaking | State::Open => {
                if closed {
                    self.conns[i].peer_closed = true;
                }
                self.writable(i);
                if readable && self.conns[i].state != State::Down {
                    self.read(i);
                }
            }
        }
    }

    /// Read what connection `i` has, up to `READS_PER_VISIT` reads and the
    /// end of the turn; a connection that may have more is visited again
    /// next turn. Once the peer's FIN was reported (`peer_closed`), reading
    /// goes on to the end of the stream, over as many visits as it takes:
    /// no later edge would report it.
    pub(crate) fn read(&mut self, i: usize) {
        let closed = self.conns[i].peer_closed;
        let Some(ep) = self.epoll() else {
            return;
        };
        let mut buf = std::mem::take(&mut ep.buf);
        let epoch = self.conns[i].epoch;
        let mut reads = 0;
        while let Some(fd) = self
            .epoll()
            .and_then(|e| e.stream(i))
            .map(|s| s.as_raw_fd())
        {
            if reads == READS_PER_VISIT || self.now >= self.turn_end_ns {
                self.mark_ready(i);
                break;
            }
            reads += 1;
            match rx::recv_stamped(fd, &mut buf) {
                Ok((0, _)) => {
                    // A FIN carries no stamp: it arrived by now, which is
                    // the latest it can have and so never shortens anything.
                    self.now = now_ns();
                    let at = self.now;
                    self.on_eof(i, at);
                    break;
                }
                Ok((n, stamp)) => {
                    self.conns[i].stale = false;
                    let arrived = self.arrival(stamp);
                    let measuring = self.read_phase(i);
                    self.counters(measuring).bytes_read += n as u64;
                    if measuring {
                        self.tick_timeline(0, 0, n as u64);
                    }
                    if !self.input(i, &buf[..n], epoch, arrived) {
                        break;
                    }
                    // After a failed write, the socket is read to its
                    // end, whose error or EOF ends the connection.
                    if n < buf.len() && !closed && self.conns[i].unwritable.is_none() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Some(kind) = self.conns[i].unwritable {
                        self.fail(i, kind);
                    }
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(i, classify_io(&e, ErrorKind::Read));
                    break;
                }
            }
        }
        if let Some(ep) = self.epoll() {
            ep.buf = buf;
        }
    }
}
