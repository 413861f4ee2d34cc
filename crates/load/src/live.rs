//! A run watched while it goes. The engine's threads hand their seconds
//! over a channel; one thread of its own (never a load thread) gathers
//! them into what was asked for: an interval log, a metrics board. The
//! board's text is served by a small blocking HTTP responder on another
//! thread, which only ever reads the latest text.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use throng_engine::tap::{Tap, Tick};

use crate::hdr_log::IntervalLog;
use crate::metrics::Board;
use crate::remote_write::Receiver;

/// What a run's seconds go to.
#[derive(Default)]
pub struct Watchers {
    pub log: Option<IntervalLog>,
    /// The run's figures, for the endpoint's text and the pushes.
    pub board: Option<Board>,
    pub text: Option<Arc<Mutex<String>>>,
    pub push: Option<Push>,
}

/// Remote writes of the board: every `every`, and once when the run is over.
pub struct Push {
    to: Receiver,
    every: Duration,
    last: Option<Instant>,
    last_ms: i64,
    pub pushes: u64,
    pub failures: u64,
    pub first_failure: Option<String>,
}

impl Push {
    pub fn new(to: Receiver, every: Duration) -> Push {
        Push {
            to,
            every,
            last: None,
            last_ms: 0,
            pushes: 0,
            failures: 0,
            first_failure: None,
        }
    }

    fn due(&self) -> bool {
        self.last.is_none_or(|t| t.elapsed() >= self.every)
    }

    fn send(&mut self, board: &Board) {
        self.last = Some(Instant::now());
        // Strictly later than the last push: a receiver refuses a sample
        // older than its series' newest.
        let now_ms = (throng_model::unix_now() * 1000.0) as i64;
        self.last_ms = now_ms.max(self.last_ms + 1);
        self.pushes += 1;
        if let Err(e) = self.to.push(board.run(), &board.samples(), self.last_ms) {
            self.failures += 1;
            self.first_failure.get_or_insert(e.to_string());
        }
    }
}

/// The gathering thread: the sender goes to the engine; the handle gives
/// the watchers back once every thread's sender is gone (the run is over).
pub fn gather(mut w: Watchers) -> (Tap, JoinHandle<std::io::Result<Watchers>>) {
    let (tx, rx) = std::sync::mpsc::channel::<Tick>();
    let handle = std::thread::Builder::new()
        .name("throng-watch".into())
        .spawn(move || {
            let mut failed = None;
            while let Ok(tick) = rx.recv() {
                if let Some(board) = w.board.as_mut() {
                    board.tick(&tick);
                    if let Some(text) = &w.text {
                        let rendered = board.render();
                        *text.lock().unwrap_or_else(|e| e.into_inner()) = rendered;
                    }
                    if let Some(p) = w.push.as_mut().filter(|p| p.due()) {
                        p.send(board);
                    }
                }
                if let (Some(log), None) = (w.log.as_mut(), &failed) {
                    // Received to the end either way: the threads never
                    // wait on this side.
                    failed = log.tick(tick).err();
                }
            }
            // The final figures, whenever the last push was.
            if let (Some(board), Some(p)) = (&w.board, w.push.as_mut()) {
                p.send(board);
            }
            failed.map_or(Ok(w), Err)
        })
        .expect("spawning the watch thread");
    (tx, handle)
}

/// The metrics endpoint: `GET /metrics` (or `/`) answers the latest text.
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Serves `text` on `listener` (bound by the caller, at the edge).
    pub fn serve(listener: TcpListener, text: Arc<Mutex<String>>) -> std::io::Result<Endpoint> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("throng-metrics".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Ok(conn) = conn {
                        let _ = answer(conn, &text);
                    }
                }
            })?;
        Ok(Endpoint {
            addr,
            stop,
            handle: Some(handle),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving: the flag, then a connection of its own to wake the
    /// blocked accept.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.halt();
        }
    }
}

/// One request, one answer, then the connection is closed. Bounded: a
/// client that sends nothing is dropped after its read timeout.
fn answer(mut conn: TcpStream, text: &Mutex<String>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut head = [0u8; 8192];
    let mut len = 0;
    while len < head.len() && !head[..len].windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut head[len..])?;
        if n == 0 {
            break;
        }
        len += n;
    }
    let line = head[..len]
        .split(|&b| b == b'\r')
        .next()
        .unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, target) = (words.next(), words.next());
    let path = target.map(|t| t.split(|&b| b == b'?').next().unwrap_or_default());
    let reply = match (method, path) {
        (Some(b"GET"), Some(b"/metrics" | b"/")) => {
            let body = text.lock().unwrap_or_else(|e| e.into_inner()).clone();
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        }
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
    };
    conn.write_all(reply.as_bytes())
}
