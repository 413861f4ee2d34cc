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
use std::time::Duration;

use throng_engine::tap::{Tap, Tick};

use crate::hdr_log::IntervalLog;
use crate::metrics::Board;

/// What a run's seconds go to.
#[derive(Default)]
pub struct Watchers {
    pub log: Option<IntervalLog>,
    pub board: Option<(Board, Arc<Mutex<String>>)>,
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
                if let Some((board, text)) = w.board.as_mut() {
                    board.tick(&tick);
                    let rendered = board.render();
                    *text.lock().unwrap_or_else(|e| e.into_inner()) = rendered;
                }
                if let (Some(log), None) = (w.log.as_mut(), &failed) {
                    // Received to the end either way: the threads never
                    // wait on this side.
                    failed = log.tick(tick).err();
                }
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
