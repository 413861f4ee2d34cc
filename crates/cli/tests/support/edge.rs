//! A scripted HTTP/1.1 server on loopback, for what real servers will not
//! do on demand: resets, stalls, malformed or truncated responses, interim
//! responses, bodies that change mid-run, a listener that stops accepting.
//!
//! Each test hands it a function that plays one connection; a thread per
//! accepted connection runs it. Dropping the server stops everything: blocked
//! reads wake up every few milliseconds to look at the stop flag, and every
//! thread is joined, so no test leaves a thread or a socket behind.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a blocked read waits before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(20);

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    accepted: AtomicU64,
    requests: AtomicU64,
    /// Connections on which at least one request arrived (the load generator
    /// also makes a bare handshake first, to check the server is there).
    conns_with_requests: AtomicU64,
    first_request: OnceLock<Instant>,
    methods: Mutex<Vec<String>>,
    /// Signalled with `methods` whenever a request arrives.
    arrived: Condvar,
}

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
}

/// The server side of one accepted connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    nth: u64,
    shared: Arc<Shared>,
}

impl Conn {
    /// The next complete request, or `None` once the client has closed the
    /// connection (or the server is stopping).
    pub fn next_request(&mut self) -> Option<Request> {
        loop {
            if let Some(req) = self.take_buffered() {
                return Some(req);
            }
            if !self.read_more() {
                return None;
            }
        }
    }

    fn read_more(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                return false;
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
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
                    ) => {}
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
        let body_len: usize = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .map(|h| {
                std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .expect("a numeric Content-Length")
            })
            .unwrap_or(0);
        if self.buf.len() < head_len + body_len {
            return None;
        }
        let method = req.method.unwrap_or_default().to_string();
        let path = req.path.unwrap_or_default().to_string();
        let authorization = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("authorization"))
            .map(|h| String::from_utf8_lossy(h.value).into_owned());
        self.buf.drain(..head_len + body_len);
        let seq = self.shared.requests.fetch_add(1, Ordering::SeqCst);
        if self.nth == 0 {
            self.shared
                .conns_with_requests
                .fetch_add(1, Ordering::SeqCst);
        }
        self.shared.first_request.get_or_init(Instant::now);
        self.shared.methods.lock().unwrap().push(method.clone());
        self.shared.arrived.notify_all();
        let nth = self.nth;
        self.nth += 1;
        Some(Request {
            method,
            path,
            seq,
            nth,
            authorization,
        })
    }

    /// Write all of `bytes`; false when the client is gone.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// Write `bytes` `step` at a time with `pause` between writes (Nagle is
    /// off, so each write leaves as its own segment).
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

    /// Write `bytes` one at a time, `pause` apart (a slowloris server),
    /// until done, the client is gone or the server stops; false when the
    /// client is gone.
    pub fn trickle(&mut self, bytes: &[u8], pause: Duration) -> bool {
        for b in bytes {
            if !self.send(std::slice::from_ref(b)) {
                return false;
            }
            let until = Instant::now() + pause;
            while Instant::now() < until {
                if self.shared.stop.load(Ordering::Relaxed) {
                    return false;
                }
                std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
            }
        }
        true
    }

    /// Write `bytes` over and over, as fast as the client takes them,
    /// until the client is gone or the server stops.
    pub fn flood(&mut self, bytes: &[u8]) {
        while !self.shared.stop.load(Ordering::Relaxed) {
            if !self.send(bytes) {
                return;
            }
        }
    }

    /// Keep the connection open without answering, until the client closes
    /// it or the server stops.
    pub fn hold(mut self) {
        while self.read_more() {
            self.buf.clear();
        }
    }

    /// When the first request of the whole server arrived.
    pub fn first_request_at(&self) -> Instant {
        *self
            .shared
            .first_request
            .get()
            .expect("asked after a request was read")
    }
}

/// How the listener behaves.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Accept this many connections, then never call accept() again (the
    /// listening socket stays open, so clients are not refused).
    pub accept_limit: Option<u64>,
    /// listen() backlog [default: the standard library's 128].
    pub backlog: Option<i32>,
}

pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    // Held so the port keeps listening after the accept thread gives up.
    _listener: TcpListener,
    accept: Option<JoinHandle<()>>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Server {
    /// A server that accepts every connection and runs `play` on each.
    pub fn start<F>(play: F) -> Server
    where
        F: Fn(Conn) + Send + Sync + 'static,
    {
        Server::with(Options::default(), play)
    }

    /// A server that answers every request on every connection with
    /// `answer(request)`, keeping connections open.
    pub fn answering<F>(answer: F) -> Server
    where
        F: Fn(&Request) -> Vec<u8> + Send + Sync + 'static,
    {
        Server::start(move |mut conn| {
            while let Some(req) = conn.next_request() {
                if !conn.send(&answer(&req)) {
                    return;
                }
            }
        })
    }

    pub fn with<F>(opts: Options, play: F) -> Server
    where
        F: Fn(Conn) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        if let Some(backlog) = opts.backlog {
            // std has already called listen(128); Linux lets a second
            // listen() change the backlog of a listening socket.
            // SAFETY: a valid listening socket descriptor.
            let rc = unsafe { libc::listen(listener.as_raw_fd(), backlog) };
            assert_eq!(rc, 0, "listen: {}", io::Error::last_os_error());
        }
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let workers = Arc::new(Mutex::new(Vec::new()));
        let play = Arc::new(play);
        let accept = {
            let listener = listener.try_clone().unwrap();
            let shared = shared.clone();
            let workers = workers.clone();
            std::thread::spawn(move || loop {
                if opts
                    .accept_limit
                    .is_some_and(|k| shared.accepted.load(Ordering::SeqCst) >= k)
                {
                    return;
                }
                let accepted = listener.accept();
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok((stream, _)) = accepted else { continue };
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                stream.set_read_timeout(Some(POLL)).unwrap();
                stream
                    .set_write_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                stream.set_nodelay(true).unwrap();
                let conn = Conn {
                    stream,
                    buf: Vec::new(),
                    nth: 0,
                    shared: shared.clone(),
                };
                let play = play.clone();
                let t = std::thread::spawn(move || play(conn));
                workers.lock().unwrap().push(t);
            })
        };
        Server {
            addr,
            shared,
            _listener: listener,
            accept: Some(accept),
            workers,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Complete requests read so far.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Connections that carried at least one request.
    pub fn conns_with_requests(&self) -> u64 {
        self.shared.conns_with_requests.load(Ordering::SeqCst)
    }

    /// The method of every request read, in arrival order.
    pub fn methods(&self) -> Vec<String> {
        self.shared.methods.lock().unwrap().clone()
    }

    /// Wait until `n` requests have arrived in all; false if `limit`
    /// passed first.
    pub fn wait_requests(&self, n: u64, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut seen = self.shared.methods.lock().unwrap();
        while (seen.len() as u64) < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            seen = self.shared.arrived.wait_timeout(seen, left).unwrap().0;
        }
        true
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            if !accept.is_finished() {
                // Wake the blocked accept() with a connection of our own.
                let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
            }
            let _ = accept.join();
        }
        let workers = std::mem::take(&mut *self.workers.lock().unwrap());
        let mut panicked = 0;
        for w in workers {
            if w.join().is_err() {
                panicked += 1;
            }
        }
        if panicked > 0 && !std::thread::panicking() {
            panic!("{panicked} server connection thread(s) panicked");
        }
    }
}

/// A 200 response with a Content-Length.
pub fn ok(body: &[u8]) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    r.extend_from_slice(body);
    r
}

/// A 200 response with a chunked body made of `chunks`, then `trailers`.
pub fn chunked(chunks: &[&[u8]], trailers: &[(&str, &str)]) -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for c in chunks {
        r.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        r.extend_from_slice(c);
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(b"0\r\n");
    for (name, value) in trailers {
        r.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    r
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
