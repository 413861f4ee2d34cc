//! The server side of one accepted connection: reading requests, and the
//! ways of answering them that a test scripts.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::tally::Tally;

/// How long a blocked read waits before it looks at the stop flag again.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// 0-based, over all connections, in arrival order.
    pub seq: u64,
    /// 0-based, on this connection.
    pub nth: u64,
    /// The `Authorization` field's value, when there was one.
    pub authorization: Option<String>,
    /// It asked for `Connection: close`.
    pub asked_close: bool,
}

/// One accepted connection, as a play sees it. The stream is a test's to
/// write raw bytes on; reads go through [`Conn::next_request`].
pub struct Conn {
    pub stream: TcpStream,
    /// Set when the server stops: a play that loops on its own looks at it.
    pub stop: Arc<AtomicBool>,
    pub tally: Arc<Tally>,
    /// Among connections that sent a request, this one's rank (from 0),
    /// known once its first request is read.
    pub index: u64,
    /// The request last read asked for `Connection: close`.
    pub asked_close: bool,
    /// The target of the request last read (`/a.txt`).
    pub path: String,
    buf: Vec<u8>,
    /// Body bytes of the request last read not yet skipped: a request is
    /// counted at its head, so an upload the server refuses is seen.
    body_left: usize,
    nth: u64,
    close_idle_seen: u64,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, stop: Arc<AtomicBool>, tally: Arc<Tally>) -> Conn {
        let close_idle_seen = Tally::get(&tally.close_idle);
        Conn {
            stream,
            stop,
            tally,
            index: 0,
            asked_close: false,
            path: String::new(),
            buf: Vec::new(),
            body_left: 0,
            nth: 0,
            close_idle_seen,
        }
    }

    /// The next request's head, its body skipped as it arrives; `None`
    /// once the client has closed the connection, the server stops, or a
    /// `close_idle` found the connection waiting.
    pub fn next_request(&mut self) -> Option<Request> {
        loop {
            if let Some(req) = self.buffered() {
                return Some(req);
            }
            if !self.read_more() {
                return None;
            }
        }
    }

    /// Every whole request the next read brought (at least one: reads that
    /// complete none are read on from), as a pipelining client's batches
    /// reach the server; `None` once the client has closed the connection
    /// or the server stops.
    pub fn next_batch(&mut self) -> Option<Vec<Request>> {
        loop {
            let batch: Vec<Request> = std::iter::from_fn(|| self.buffered()).collect();
            if !batch.is_empty() {
                return Some(batch);
            }
            if !self.read_more() {
                return None;
            }
        }
    }

    /// The next request already read whole, past the body of the last.
    fn buffered(&mut self) -> Option<Request> {
        let skip = self.body_left.min(self.buf.len());
        self.buf.drain(..skip);
        self.body_left -= skip;
        if self.body_left > 0 {
            return None;
        }
        self.take_buffered()
    }

    /// The body of the request last read, read whole; `None` when the
    /// client closes or the server stops first.
    pub fn body(&mut self) -> Option<Vec<u8>> {
        while self.buf.len() < self.body_left {
            if !self.read_more() {
                return None;
            }
        }
        let body = self.buf.drain(..self.body_left).collect();
        self.body_left = 0;
        Some(body)
    }

    /// [`Conn::next_request`], for a play that needs only whether one came.
    pub fn request(&mut self) -> bool {
        self.next_request().is_some()
    }

    fn read_more(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.tally.bump(&self.tally.client_closed);
                    return false;
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    let gen = Tally::get(&self.tally.close_idle);
                    if self.buf.is_empty() && self.body_left == 0 && gen != self.close_idle_seen {
                        let _ = self.stream.shutdown(Shutdown::Both);
                        self.tally.bump(&self.tally.closed_idle);
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    fn take_buffered(&mut self) -> Option<Request> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        let head_len = match req.parse(&self.buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return None,
            Err(e) => panic!(
                "the load generator sent a malformed request ({e}): {:?}",
                String::from_utf8_lossy(&self.buf)
            ),
        };
        let field = |name: &str| {
            req.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).into_owned())
        };
        let body_len: usize = field("content-length")
            .map(|v| v.trim().parse().expect("a numeric Content-Length"))
            .unwrap_or(0);
        let authorization = field("authorization");
        let asked_close = field("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let method = req.method.unwrap_or_default().to_string();
        let path = req.path.unwrap_or_default().to_string();
        self.buf.drain(..head_len);
        self.body_left = body_len;
        if self.nth == 0 {
            self.index = self.tally.bump(&self.tally.used);
        }
        let seq = self.tally.arrived(&method);
        let nth = self.nth;
        self.nth += 1;
        self.asked_close = asked_close;
        self.path.clone_from(&path);
        Some(Request {
            method,
            path,
            seq,
            nth,
            authorization,
            asked_close,
        })
    }

    /// Write all of `bytes`; false when the client is gone.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// Write `bytes` `step` at a time with `pause` between writes (with
    /// Nagle off, each write leaves as its own segment).
    pub fn drip(&mut self, bytes: &[u8], step: usize, pause: Duration) -> bool {
        for piece in bytes.chunks(step) {
            if !self.send(piece) {
                return false;
            }
            std::thread::sleep(pause);
        }
        true
    }

    /// Send `bytes` and close, the FIN riding in the same segment as the
    /// last data (the socket is corked until close), as a busy server's
    /// last response and its close often arrive together.
    pub fn send_then_close(self, bytes: &[u8]) {
        set_int_option(&self.stream, libc::IPPROTO_TCP, libc::TCP_CORK, 1);
        let mut stream = self.stream;
        let _ = stream.write_all(bytes);
    }

    /// Abort the connection: with a zero linger time, close() sends RST
    /// instead of FIN.
    pub fn reset(self) {
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket descriptor and a correctly sized option value.
        let rc = unsafe {
            libc::setsockopt(
                self.stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "SO_LINGER: {}", io::Error::last_os_error());
        drop(self.stream);
    }

    /// Waits `pause`, or less if the server stops first; false then.
    pub fn pause(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(POLL.min(left));
        }
    }

    /// Write `bytes` one at a time, `pause` apart (a slowloris server),
    /// until done, the client is gone or the server stops; false when the
    /// client is gone.
    pub fn trickle(&mut self, bytes: &[u8], pause: Duration) -> bool {
        for b in bytes {
            if !self.send(std::slice::from_ref(b)) || !self.pause(pause) {
                return false;
            }
        }
        true
    }

    /// Write `bytes` over and over, as fast as the client takes them,
    /// until the client is gone or the server stops.
    pub fn flood(&mut self, bytes: &[u8]) {
        while !self.stop.load(Ordering::Relaxed) {
            if !self.send(bytes) {
                return;
            }
        }
    }

    /// Keep the connection open without answering, reading and dropping
    /// what comes, until the client closes it or the server stops.
    pub fn hold(mut self) {
        while self.read_more() {
            self.buf.clear();
        }
    }

    /// Keep the connection open and read no more from it until the server
    /// stops: an upload larger than both ends' socket buffers stalls
    /// part-way through its body.
    pub fn stall(&mut self) {
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::park_timeout(POLL);
        }
    }

    /// When the first request of the whole server arrived.
    pub fn first_request_at(&self) -> Instant {
        *self
            .tally
            .first_request
            .get()
            .expect("asked after a request was read")
    }
}

fn set_int_option(stream: &TcpStream, level: libc::c_int, name: libc::c_int, value: libc::c_int) {
    // SAFETY: a valid socket descriptor and a correctly sized option value.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt: {}", io::Error::last_os_error());
}
