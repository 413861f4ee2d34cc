//! A connection slot: its state, its protocol layers, and the ring of
//! requests it has in flight, in issue order; and how a socket's errors
//! are told apart.

use std::io;

use crate::result::ErrorKind;

use super::proto::Layers;

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

/// A connection's places for requests in flight, as many as its pipeline
/// (or its HTTP/2 streams) may hold. The first is kept in the connection
/// itself: without a pipeline it is the only one, and a response then
/// reads no cache line beyond its connection's (docs/performance.md,
/// "A connection's state in four cache lines").
pub(crate) struct Places {
    first: InFlight,
    rest: Box<[InFlight]>,
}

impl Places {
    pub(crate) fn new(depth: usize) -> Places {
        Places {
            first: InFlight::default(),
            rest: vec![InFlight::default(); depth.max(1) - 1].into_boxed_slice(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rest.len() + 1
    }
}

impl std::ops::Index<usize> for Places {
    type Output = InFlight;
    #[inline]
    fn index(&self, k: usize) -> &InFlight {
        if k == 0 {
            &self.first
        } else {
            &self.rest[k - 1]
        }
    }
}

impl std::ops::IndexMut<usize> for Places {
    #[inline]
    fn index_mut(&mut self, k: usize) -> &mut InFlight {
        if k == 0 {
            &mut self.first
        } else {
            &mut self.rest[k - 1]
        }
    }
}

/// A connection slot, whatever its backend: its socket is the backend's
/// (`Io`), its protocol layers and its requests in flight are here.
///
/// Laid out by hand, and on a cache line of its own: what every
/// keep-alive response reads and writes comes first (this struct's first
/// fields, then its layers' own first ones), and what only a connect, a
/// close or the open model touches last (but for a few small ones, the
/// connected target and three flags, which fill what would be padding
/// among the first), so that a response touches four lines of it rather
/// than the five or six the compiler's order spread it over. With a hundred connections their slots alone fill the first
/// level cache, and a line that must come from further is paid for on
/// every response.
#[repr(C, align(64))]
pub(crate) struct Conn {
    /// Bumped on every close, so a loop that handed control away can tell
    /// that the connection it was reading is gone. 32 bits, as the ring's
    /// completions carry it: a slot would have to close four billion
    /// times between a completion's submission and its reaping to be
    /// mistaken.
    pub(crate) epoch: u32,
    /// The target whose address (and TLS name) the connection was opened to.
    pub(crate) target_of_connect: u32,
    /// Requests issued on this connection since it was opened, against
    /// the spec's limit; back to 0 when it closes.
    pub(crate) carried: u64,
    /// Closed model: places answered in the measured phase and not yet
    /// taken by a new request, and the sum of their answers' arrival
    /// times, for the client's hold.
    pub(crate) freed: u64,
    pub(crate) freed_at_sum: u64,
    pub(crate) head: usize,
    pub(crate) len: usize,
    pub(crate) written: usize,
    /// Bytes of the first unwritten request already written.
    pub(crate) write_off: usize,
    /// Issued requests in order; `written` of them are fully on the wire.
    pub(crate) ring: Places,
    pub(crate) state: State,
    /// The server's FIN has arrived: requests issued from now on wait for
    /// the next connection instead of being written to one that is gone.
    pub(crate) peer_closed: bool,
    /// Closed model: queued to send its next request after this batch.
    pub(crate) deferred: bool,
    /// Kept open, idle, from one session window to the next, and nothing
    /// read on it since: the server may have closed it at any moment of
    /// that wait, even as the window's first request went out.
    pub(crate) stale: bool,
    /// A write failed with this: what the server sent before it went is
    /// read out, nothing more is written, and the connection fails with it
    /// once the socket is drained (`Worker::write_failed`).
    pub(crate) unwritable: Option<ErrorKind>,
    pub(crate) in_heap: bool,
    /// Its connect started in the measured phase: only then is its life,
    /// counted at its close, wholly the measured phase's.
    pub(crate) connect_measured: bool,
    pub(crate) ever_connected: bool,
    /// Its protocol layers' state.
    pub(crate) proto: Layers,
    pub(crate) connect_start_ns: u64,
    /// Open model.
    pub(crate) next_intended_ns: u64,
    /// Open model with a ramp: the run's index of the connection's next
    /// request, which its intended time is computed from.
    pub(crate) next_k: u64,
}

impl Conn {
    pub(crate) fn front(&self) -> InFlight {
        self.ring[self.head]
    }
    /// Ring index of the `i`-th request in flight.
    pub(crate) fn slot(&self, i: usize) -> usize {
        wrap(self.head + i, self.ring.len())
    }
    pub(crate) fn push(&mut self, f: InFlight) {
        let idx = wrap(self.head + self.len, self.ring.len());
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
        self.head = wrap(self.head + 1, self.ring.len());
        self.len -= 1;
        f
    }
}

/// Position `at` of a ring of `n` places, `at` being a place's index plus
/// at most `n`: every index into a connection's ring is its head plus an
/// offset no greater than the ring, so one subtraction stands for the
/// remainder, whose division a response would otherwise pay several times
/// over (the ring's length is the pipeline's depth, rarely a power of two
/// the compiler could fold).
#[inline]
pub(crate) fn wrap(at: usize, n: usize) -> usize {
    debug_assert!(at < 2 * n);
    if at >= n {
        at - n
    } else {
        at
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

#[cfg(test)]
mod tests {
    use std::mem::{align_of, offset_of, size_of};

    use super::*;

    /// The layout `Conn` promises: a slot starts a cache line, and what a
    /// plain keep-alive response reads and writes of it (its own first
    /// fields, its layers' first ones) lies in its first four lines.
    #[test]
    fn what_a_keep_alive_response_touches_lies_in_its_first_four_lines() {
        assert_eq!(align_of::<Conn>(), 64);
        let hot = [
            offset_of!(Conn, epoch),
            offset_of!(Conn, carried),
            offset_of!(Conn, freed_at_sum),
            offset_of!(Conn, head),
            offset_of!(Conn, write_off),
            offset_of!(Conn, ring) + size_of::<Places>() - 1,
            offset_of!(Conn, state),
            offset_of!(Conn, stale),
            offset_of!(Conn, unwritable),
            offset_of!(Conn, proto) + Layers::HOT_END - 1,
        ];
        for at in hot {
            assert!(at < 4 * 64, "a hot field at byte {at}");
        }
        // The rest: what a connect, a close and the open model read.
        assert!(offset_of!(Conn, connect_start_ns) >= 4 * 64);
        assert_eq!(size_of::<Conn>(), 5 * 64);
    }

    /// Without a pipeline a connection's one place is its own; with one,
    /// the places after the first are apart, and each index is its own.
    #[test]
    fn places_index_the_first_inline_and_the_rest_apart() {
        let mut one = Places::new(1);
        assert_eq!(one.len(), 1);
        one[0].target = 7;
        assert_eq!(one[0].target, 7);
        let mut four = Places::new(4);
        assert_eq!(four.len(), 4);
        for k in 0..4 {
            four[k].target = k as u32 + 10;
        }
        let got: Vec<u32> = (0..4).map(|k| four[k].target).collect();
        assert_eq!(got, [10, 11, 12, 13]);
        assert_eq!(Places::new(0).len(), 1);
    }
}
