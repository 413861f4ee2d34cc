//! A loopback server for the engine's tests: a thread per connection, each
//! playing a test's part once the connection has sent its first request,
//! and a tally of what it saw that a test can wait on.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use throng_engine::{IoBackend, LoadSpec, Target};

pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// What the server saw, in counts a test can wait on.
#[derive(Default)]
pub struct Tally {
    pub accepted: AtomicU64,
    /// Connections that sent a request (the engine's reachability check
    /// connects and closes without one).
    pub used: AtomicU64,
    /// Requests read whole.
    pub requests: AtomicU64,
    pub answered: AtomicU64,
    /// Connections the client closed.
    pub client_closed: AtomicU64,
    /// Connections closed by the server while idle, after `close_idle`.
    pub closed_idle: AtomicU64,
    /// Bumping it closes every connection waiting for a request, as a
    /// server's keep-alive timeout would.
    pub close_idle: AtomicU64,
    changed: (Mutex<()>, Condvar),
}

impl Tally {
    pub fn get(n: &AtomicU64) -> u64 {
        n.load(Ordering::SeqCst)
    }

    fn bump(&self, n: &AtomicU64) -> u64 {
        let was = n.fetch_add(1, Ordering::SeqCst);
        let _guard = self.changed.0.lock().unwrap();
        self.changed.1.notify_all();
        was
    }

    /// Waits for `done` to hold, for at most `limit`; whether it held.
    pub fn wait_until(&self, limit: Duration, done: impl Fn(&Tally) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let mut guard = self.changed.0.lock().unwrap();
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            guard = self.changed.1.wait_timeout(guard, left).unwrap().0;
        }
        true
    }
}

/// One accepted connection, as a play sees it.
pub struct Peer {
    pub stream: TcpStream,
    pub stop: Arc<AtomicBool>,
    pub tally: Arc<Tally>,
    /// Among connections that sent a request, this one's rank (from 0).
    pub index: u64,
    /// The request last read asked for `Connection: close`.
    pub asked_close: bool,
    /// The target of the request last read (`/a.txt`).
    pub path: String,
    buf: Vec<u8>,
    close_idle_seen: u64,
}

impl Peer {
    /// Keeps the connection open and reads no more from it until the
    /// server stops: an upload larger than both ends' socket buffers
    /// stalls part-way through its body.
    pub fn hold(&mut self) {
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::park_timeout(Duration::from_millis(20));
        }
    }

    /// Reads the next request whole. False when the client closed, the
    /// server stops, or a `close_idle` found the connection waiting.
    pub fn request(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end + 2]).to_ascii_lowercase();
                self.asked_close = head.contains("\r\nconnection: close\r\n");
                self.path = String::from_utf8_lossy(&self.buf[..end])
                    .split(' ')
                    .nth(1)
                    .unwrap_or_default()
                    .to_string();
                self.buf.drain(..end + 4);
                self.tally.bump(&self.tally.requests);
                return true;
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.tally.bump(&self.tally.client_closed);
                    return false;
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) if self.stop.load(Ordering::Relaxed) => return false,
                Err(_) => {
                    let gen = Tally::get(&self.tally.close_idle);
                    if self.buf.is_empty() && gen != self.close_idle_seen {
                        let _ = self.stream.shutdown(Shutdown::Both);
                        self.tally.bump(&self.tally.closed_idle);
                        return false;
                    }
                }
            }
        }
    }
}

/// A 200 with Content-Length to every request, on one connection.
pub fn answer(p: &mut Peer) {
    loop {
        if p.stream.write_all(OK).is_err() {
            return;
        }
        p.tally.bump(&p.tally.answered);
        if !p.request() {
            return;
        }
    }
}

/// A loopback server that plays `play` on every connection that sends a
/// request, until dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(play: fn(&mut Peer)) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Tally::default());
        let (flag, counts) = (stop.clone(), tally.clone());
        let accept = std::thread::spawn(move || {
            let mut workers = Vec::new();
            for stream in listener.incoming() {
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(s) = stream else { continue };
                counts.bump(&counts.accepted);
                let (stop, tally) = (flag.clone(), counts.clone());
                workers.push(std::thread::spawn(move || {
                    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                    let close_idle_seen = Tally::get(&tally.close_idle);
                    let mut peer = Peer {
                        stream: s,
                        stop,
                        tally,
                        index: 0,
                        asked_close: false,
                        path: String::new(),
                        buf: Vec::new(),
                        close_idle_seen,
                    };
                    if peer.request() {
                        peer.index = peer.tally.bump(&peer.tally.used);
                        play(&mut peer);
                    }
                }));
            }
            for w in workers {
                w.join().unwrap();
            }
        });
        Server {
            addr,
            tally,
            stop,
            accept: Some(accept),
        }
    }

    /// A closed-model spec of one connection on one thread.
    pub fn spec(&self) -> LoadSpec {
        spec_to(self.addr)
    }
}

/// A closed-model spec of `GET /` from `addr`, on one connection and one
/// thread, on the backend `THRONG_TEST_IO` names.
pub fn spec_to(addr: SocketAddr) -> LoadSpec {
    let mut spec = LoadSpec::new(vec![Target::http(addr, "/")]);
    spec.connections = 1;
    spec.threads = 1;
    spec.io = io_from_env();
    spec
}

/// The I/O backend the tests run on: epoll, or io_uring with
/// `THRONG_TEST_IO=uring`, so one suite checks both.
pub fn io_from_env() -> IoBackend {
    match std::env::var("THRONG_TEST_IO").as_deref() {
        Ok("uring") => IoBackend::Uring,
        _ => IoBackend::Epoll,
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            a.join().unwrap();
        }
    }
}
