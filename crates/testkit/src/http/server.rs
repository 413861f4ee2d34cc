//! The listener and its threads: one accepting, one per connection, all
//! joined when the server is dropped.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::conn::{Conn, Request, POLL};
use super::script::Script;
use super::tally::Tally;

/// How the listener and its connections behave.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Accept this many connections, then never call accept() again (the
    /// listening socket stays open, so clients are not refused).
    pub accept_limit: Option<u64>,
    /// listen() backlog [default: the standard library's 128].
    pub backlog: Option<i32>,
    /// Nagle off on accepted connections, so each write is its own
    /// segment [default: on].
    pub nodelay: bool,
    /// A write blocked this long fails [default: 5 s]; `None` blocks
    /// until the client reads or goes.
    pub write_timeout: Option<Duration>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            accept_limit: None,
            backlog: None,
            nodelay: true,
            write_timeout: Some(Duration::from_secs(5)),
        }
    }
}

pub struct Server {
    pub addr: SocketAddr,
    pub tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
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

    /// A server that plays `script` on every connection.
    pub fn scripted(script: Script) -> Server {
        Server::start(move |c| script.play(c))
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

    /// A server that runs `play` on every connection once it has sent its
    /// first request, read and counted before `play` starts; connections
    /// that send none (a reachability check) are let go.
    pub fn on_request<F>(opts: Options, play: F) -> Server
    where
        F: Fn(&mut Conn) + Send + Sync + 'static,
    {
        Server::with(opts, move |mut c| {
            if c.request() {
                play(&mut c);
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
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Tally::default());
        let workers = Arc::new(Mutex::new(Vec::new()));
        let play = Arc::new(play);
        let accept = {
            let listener = listener.try_clone().unwrap();
            let (stop, tally, workers) = (stop.clone(), tally.clone(), workers.clone());
            std::thread::spawn(move || loop {
                if opts
                    .accept_limit
                    .is_some_and(|k| Tally::get(&tally.accepted) >= k)
                {
                    return;
                }
                let accepted = listener.accept();
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok((stream, _)) = accepted else { continue };
                tally.bump(&tally.accepted);
                stream.set_read_timeout(Some(POLL)).unwrap();
                stream.set_write_timeout(opts.write_timeout).unwrap();
                stream.set_nodelay(opts.nodelay).unwrap();
                let conn = Conn::new(stream, stop.clone(), tally.clone());
                let play = play.clone();
                let t = std::thread::spawn(move || play(conn));
                workers.lock().unwrap().push(t);
            })
        };
        Server {
            addr,
            tally,
            stop,
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
        Tally::get(&self.tally.accepted)
    }

    /// Request heads read so far.
    pub fn requests(&self) -> u64 {
        Tally::get(&self.tally.requests)
    }

    /// Connections that carried at least one request.
    pub fn conns_with_requests(&self) -> u64 {
        Tally::get(&self.tally.used)
    }

    /// The method of every request read, in arrival order.
    pub fn methods(&self) -> Vec<String> {
        self.tally.methods()
    }

    /// Wait until `n` requests have arrived in all; false if `limit`
    /// passed first.
    pub fn wait_requests(&self, n: u64, limit: Duration) -> bool {
        self.tally
            .wait_until(limit, |t| Tally::get(&t.requests) >= n)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
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
