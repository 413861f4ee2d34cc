//! The driver's I/O backends: epoll (through mio) and io_uring, behind
//! one enum that the loop matches once per turn (to wait, then to take
//! what came) and once per connect, send or close, never per byte. Each
//! backend owns its own state: epoll its `Poll`, events, timer, read
//! buffer, sockets and ready queue; the ring its table of sockets, its
//! provided buffers and its sends in flight. What both hand the loop is
//! the same: a connection connected, bytes read (with their kernel
//! stamp), bytes written, a close or an error, each handled by the
//! protocol layers above.

use std::io;
use std::net::SocketAddr;

use crate::spec::IoBackend;

use crate::clock::{now_ns, realtime_ns};

use super::{Ended, Job, Shared, Worker};

mod alarm;
pub(crate) mod epoll;
mod nap;
mod ring;
pub(crate) mod socket;
mod spin;
mod uring;

pub(crate) use epoll::Epoll;
pub(crate) use ring::Uring;

/// A thread's I/O backend.
pub(crate) enum Io {
    Epoll(Epoll),
    Uring(Box<Uring>),
}

impl Io {
    /// The backend `plan` asks for; epoll when a ring was asked for and
    /// the kernel refused it (`fallback` says why). `clocked`: the loop
    /// wakes for scheduled work (sends, thinks, arrivals), which on epoll
    /// needs a timer.
    pub(crate) fn new(plan: &Shared<'_>, job: &Job, clocked: bool) -> io::Result<Io> {
        let spec = plan.spec;
        let fallback = match plan.io {
            IoBackend::Uring => match Uring::new(
                job.conns,
                spec.pipeline,
                &spec.targets.iter().map(|t| t.addr).collect::<Vec<_>>(),
                &spec.sources,
            ) {
                Ok(u) => return Ok(Io::Uring(Box::new(u))),
                Err(e) => Some(e.to_string()),
            },
            IoBackend::Epoll | IoBackend::Auto => None,
        };
        Ok(Io::Epoll(Epoll::new(job.conns, clocked, fallback)?))
    }

    /// The ring, when the thread's I/O goes through one.
    #[inline]
    pub(crate) fn uring(&mut self) -> Option<&mut Uring> {
        match self {
            Io::Uring(u) => Some(u),
            Io::Epoll(_) => None,
        }
    }

    #[inline]
    pub(crate) fn uring_ref(&self) -> Option<&Uring> {
        match self {
            Io::Uring(u) => Some(u),
            Io::Epoll(_) => None,
        }
    }

    /// Why io_uring was asked for and epoll used instead.
    pub(crate) fn fallback(&self) -> Option<String> {
        match self {
            Io::Epoll(e) => e.fallback.clone(),
            Io::Uring(_) => None,
        }
    }
}

/// What the loop asks of its backend, matched here and only here: a
/// backend added is an arm in each.
impl Worker<'_> {
    /// One look: wait (or nap) until `wake`, or the clock's work `due`,
    /// then handle what came. Returns how the window ended, if it did.
    pub(crate) fn io_step(&mut self, wake: u64, due: Option<u64>) -> Option<Ended> {
        match self.io {
            Io::Uring(_) => self.uring_step(wake, due),
            Io::Epoll(_) => self.epoll_step(wake, due),
        }
    }

    /// Sessions: take what happened to the idle connections since the
    /// last window, without waiting.
    pub(crate) fn io_sweep(&mut self) {
        match self.io {
            Io::Uring(_) => self.uring_sweep(),
            Io::Epoll(_) => self.epoll_sweep(),
        }
    }

    /// Open connection `i`'s socket and connect it to `addr`.
    pub(crate) fn io_connect(&mut self, i: usize, addr: SocketAddr) {
        match self.io {
            Io::Uring(_) => self.uring_connect(i, addr),
            Io::Epoll(_) => self.epoll_connect(i, addr),
        }
    }

    /// Write connection `i`'s cleartext HTTP/1.1 requests not yet written,
    /// straight from the prepared bytes, which outlive the run: no layer
    /// copies them.
    #[inline]
    pub(crate) fn io_write_requests(&mut self, i: usize) {
        match self.io {
            Io::Epoll(_) => self.epoll_write(i),
            Io::Uring(_) => self.uring_flush(i),
        }
    }

    /// Send what connection `i`'s protocol layers queued for the wire
    /// (TLS's records, HTTP/2's frames): the backend writes, no layer does.
    #[inline]
    pub(crate) fn io_send_out(&mut self, i: usize) {
        match self.io {
            Io::Epoll(_) => self.epoll_send_out(i),
            // The ring drives neither TLS nor HTTP/2 yet: the spec refuses
            // them there (`UringGap`).
            Io::Uring(_) => {}
        }
    }

    /// Close connection `i`'s socket.
    #[inline]
    pub(crate) fn io_close(&mut self, i: usize) {
        match &mut self.io {
            Io::Uring(_) => self.uring_shut(i),
            Io::Epoll(e) => e.close(i),
        }
    }

    /// A whole run's end: what the last sends wrote is counted, and the
    /// sockets are closed.
    pub(crate) fn io_finish(&mut self) {
        match &mut self.io {
            Io::Uring(_) => self.uring_count_last_sends(),
            Io::Epoll(e) => e.close_all(),
        }
    }

    /// When the data of the read just made reached the socket, on the
    /// monotonic clock; refreshes `now`.
    ///
    /// The stamp is carried over to the monotonic clock by the two
    /// clocks' offset, never bounded by a reading from before the read
    /// (the loop's wake-up): a read made late, while more of the response
    /// kept arriving, is stamped with its last segment. A stamp ahead of
    /// the wall clock (a step back) counts as arriving now.
    pub(crate) fn arrival(&mut self, stamp: Option<u64>) -> u64 {
        let mono = now_ns();
        self.now = mono;
        match stamp {
            Some(s) => mono.saturating_sub(realtime_ns().saturating_sub(s)),
            None => mono,
        }
    }

    /// [`Worker::arrival`] with the wall clock's `lead` on the monotonic
    /// one read earlier (`Lead`), for a ring's turn: no clock read for a
    /// stamp at or before `now`. A ring whose work waits for the thread's
    /// enters hands a receive's completion over only then, so what a turn
    /// reaps arrived before the look that ended its wait: its stamps are
    /// at or before the time read then. The two clocks are slewed alike, so
    /// the lead moves only when the wall clock is stepped, and a stamp
    /// converted with it is the same instant as one whose age is taken now.
    /// A stamp after `now` (the wall clock stepped forward since the lead
    /// was read) reads the clock and counts as arriving then at the latest,
    /// as in `arrival`; so does a read without a stamp.
    pub(crate) fn arrival_led(&mut self, stamp: Option<u64>, lead: u64) -> u64 {
        if let Some(at) = stamp.map(|s| s.saturating_sub(lead)) {
            if at <= self.now {
                return at;
            }
            self.now = now_ns();
            return at.min(self.now);
        }
        self.now = now_ns();
        self.now
    }
}
