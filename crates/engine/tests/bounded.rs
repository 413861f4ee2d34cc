//! A run ends on time whatever the server does, and says when it was cut
//! short. The servers here answer as fast as the client can read, which is
//! what used to hold the event loop: every read filled the buffer, so the
//! loop never got back to its clock.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use throng_engine::{run, Control, ErrorKind, LoadSpec, Stop, Target};

/// How far past its bound a run may end: a turn of the event loop, the
/// threads' exit. The promise is 100 ms, held by release builds
/// (`cargo test --release -p throng-engine --test bounded`); an unoptimised
/// build on a shared two-core machine gets 300 ms, still an order of
/// magnitude under the seconds the unbounded loop overran by.
const SLACK: Duration = Duration::from_millis(if cfg!(debug_assertions) { 300 } else { 100 });

/// A loopback server that plays `play` on every connection that sends a
/// request, until dropped.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    fn start(play: fn(&mut TcpStream, &AtomicBool)) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut workers = Vec::new();
            for stream in listener.incoming() {
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(mut s) = stream else { continue };
                let flag = flag.clone();
                workers.push(std::thread::spawn(move || {
                    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                    let mut req = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf) {
                            Ok(0) => return,
                            Ok(n) => req.extend_from_slice(&buf[..n]),
                            Err(_) if flag.load(Ordering::Relaxed) => return,
                            Err(_) => {}
                        }
                    }
                    play(&mut s, &flag);
                }));
            }
            for w in workers {
                w.join().unwrap();
            }
        });
        Server {
            addr,
            stop,
            accept: Some(accept),
        }
    }

    fn spec(&self) -> LoadSpec {
        let mut spec = LoadSpec::new(vec![Target {
            addr: self.addr,
            host_header: self.addr.to_string(),
            path: "/".into(),
            url: format!("http://{}/", self.addr),
        }]);
        spec.connections = 1;
        spec.threads = 1;
        spec
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

/// Interim responses, as fast as the client takes them.
fn flood(s: &mut TcpStream, stop: &AtomicBool) {
    let burst = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(4096);
    while !stop.load(Ordering::Relaxed) && s.write_all(&burst).is_ok() {}
}

/// Answers `answer` has sent, for a test to wait on.
static ANSWERED: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());

/// A 200 with Content-Length, again and again on one connection.
fn answer(s: &mut TcpStream, stop: &AtomicBool) {
    let mut buf = [0u8; 4096];
    loop {
        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
        *ANSWERED.0.lock().unwrap() += 1;
        ANSWERED.1.notify_all();
        // The next request, or the client's close.
        loop {
            match s.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => break,
                Err(_) if stop.load(Ordering::Relaxed) => return,
                Err(_) => {}
            }
        }
    }
}

#[test]
fn a_flood_cannot_hold_a_run_past_its_duration() {
    let server = Server::start(flood);
    let mut spec = server.spec();
    spec.stop = Stop::Duration(Duration::from_millis(600));
    spec.timeout = Duration::from_millis(250);
    spec.checksum = true;
    let started = Instant::now();
    let r = run(&spec, &Control::new()).unwrap();
    let took = started.elapsed();
    assert!(took <= Duration::from_millis(600) + SLACK, "took {took:?}");
    assert_eq!(r.duration_s, 0.6);
    assert!(!r.interrupted);
    // Timeouts at 0.25 and 0.5 s; the third request is in flight at 0.6 s.
    assert_eq!(r.counts.error(ErrorKind::Timeout), 2);
    assert_eq!(r.counts.errors_total(), 2);
    assert_eq!(r.counts.completed, 0);
    assert_eq!(r.counts.sent, 3);
    assert_eq!(r.in_flight_at_end, 1);
}

#[test]
fn a_flood_cannot_hold_a_request_past_its_timeout() {
    let server = Server::start(flood);
    let mut spec = server.spec();
    spec.connections = 2;
    spec.stop = Stop::Requests(2);
    spec.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let r = run(&spec, &Control::new()).unwrap();
    let took = started.elapsed();
    assert!(took <= Duration::from_millis(300) + SLACK, "took {took:?}");
    assert_eq!(r.counts.error(ErrorKind::Timeout), 2);
    assert_eq!((r.counts.sent, r.counts.completed), (2, 0));
    assert_eq!(r.in_flight_at_end, 0);
    assert!(!r.interrupted);
}

#[test]
fn a_stopped_run_ends_at_once_and_says_it_was_interrupted() {
    let server = Server::start(answer);
    let mut spec = server.spec();
    spec.stop = Stop::Duration(Duration::from_secs(30));
    let control = Control::new();
    let stopper = control.clone();
    let stopped_at = std::thread::spawn(move || {
        // Stop mid-run: once the server has answered 100 requests.
        let mut answered = ANSWERED.0.lock().unwrap();
        while *answered < 100 {
            answered = ANSWERED.1.wait(answered).unwrap();
        }
        stopper.stop();
        Instant::now()
    });
    let r = run(&spec, &control).unwrap();
    let ended = Instant::now();
    let stopped_at = stopped_at.join().unwrap();
    assert!(
        ended - stopped_at <= SLACK,
        "ended {:?} after the stop",
        ended - stopped_at
    );
    assert!(r.interrupted);
    assert!(r.duration_s < 30.0);
    assert!(r.counts.completed >= 99, "{}", r.counts.completed);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.counts.sent, r.counts.completed + r.in_flight_at_end);

    // A run that ends on its own is not interrupted, even if a stop comes
    // after.
    let mut spec = server.spec();
    spec.stop = Stop::Requests(50);
    let control = Control::new();
    let r = run(&spec, &control).unwrap();
    control.stop();
    assert!(!r.interrupted);
    assert_eq!((r.counts.sent, r.counts.completed), (50, 50));
}
