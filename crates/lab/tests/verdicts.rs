//! Verdicts on real load: a loopback server misbehaves on purpose, the
//! engine measures it, and the rule for that misbehaviour fires (and only
//! that one). The same server behaving well gives a valid verdict.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use throng_engine::{run, Control, LoadSpec, Stop, Target};
use throng_model::{ReasonCode, Verdict};
use throng_trust::verdict::{
    round_verdict, round_verdict_with, PortUse, RoundContext, CLIENT_BUSY, CLIENT_STARVED,
};

/// One test at a time: the starved-client test busy-loops on a core, which
/// would make every other test's client late too.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy)]
enum Behaviour {
    /// Headers and body in one write(): what a well-behaved server does.
    Plain,
    /// Headers and body in two write() calls, Nagle left on: the body waits
    /// for the ACK of the headers, which the client delays.
    SplitNagle,
    /// The same two writes with TCP_NODELAY: nothing waits.
    SplitNoDelay,
    /// 100-byte bodies, then 120-byte ones from this request number on.
    GrowsAt(u64),
    /// 503 for every request whose number is a multiple of this.
    Unavailable(u64),
    /// Request number `at` stops the whole server for `ms` milliseconds:
    /// no connection is answered until it ends (a stop-the-world pause).
    StallAt { at: u64, ms: u64 },
    /// Bodies of this many bytes, one write each.
    Large(usize),
}

struct TestServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    /// Requests answered, all connections together.
    served: Arc<AtomicU64>,
}

/// Held by a stalling request; every response passes through it.
type Gate = Arc<Mutex<()>>;

impl TestServer {
    /// `cpu`: pin every server thread there, away from the client.
    fn start(behaviour: Behaviour, cpu: Option<usize>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let (st, sv) = (stop.clone(), served.clone());
        let gate: Gate = Arc::new(Mutex::new(()));
        let accept = std::thread::spawn(move || {
            pin(cpu);
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (sv, gate) = (sv.clone(), gate.clone());
                std::thread::spawn(move || {
                    pin(cpu);
                    serve(conn, behaviour, &sv, &gate);
                });
            }
        });
        TestServer {
            addr,
            stop,
            accept: Some(accept),
            served,
        }
    }

    fn target(&self) -> Target {
        Target::http(self.addr, "/")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept() so the thread sees the flag and ends.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn pin(cpu: Option<usize>) {
    if let Some(c) = cpu {
        let mut set = CpuSet::new();
        set.set(c).unwrap();
        sched_setaffinity(Pid::from_raw(0), &set).unwrap();
    }
}

fn serve(mut conn: TcpStream, behaviour: Behaviour, served: &AtomicU64, gate: &Mutex<()>) {
    // Bounds a connection the client forgot; the engine closes its own.
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.set_nodelay(matches!(behaviour, Behaviour::SplitNoDelay))
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let close = String::from_utf8_lossy(&buf[..end])
            .to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n");
        buf.drain(..end);
        let n = served.fetch_add(1, Ordering::SeqCst) + 1;
        match behaviour {
            Behaviour::StallAt { at, ms } if n == at => {
                let _held = gate.lock().unwrap_or_else(|e| e.into_inner());
                // The pause itself, not a synchronisation: every other
                // connection waits on the gate meanwhile.
                std::thread::sleep(Duration::from_millis(ms));
            }
            _ => drop(gate.lock().unwrap_or_else(|e| e.into_inner())),
        }
        let (status, body_len) = match behaviour {
            Behaviour::GrowsAt(at) if n >= at => ("200 OK", 120),
            Behaviour::Unavailable(every) if n.checked_rem(every) == Some(0) => {
                ("503 Service Unavailable", 100)
            }
            Behaviour::Large(len) => ("200 OK", len),
            _ => ("200 OK", 100),
        };
        let connection = if close { "Connection: close\r\n" } else { "" };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {body_len}\r\nContent-Type: text/plain\r\n\
             {connection}\r\n"
        );
        let body = vec![b'x'; body_len];
        let ok = match behaviour {
            Behaviour::SplitNagle | Behaviour::SplitNoDelay => {
                conn.write_all(head.as_bytes()).is_ok() && conn.write_all(&body).is_ok()
            }
            _ => conn.write_all(&[head.as_bytes(), &body].concat()).is_ok(),
        };
        if !ok || close {
            return;
        }
    }
}

fn spec(server: &TestServer, connections: usize, requests: u64) -> LoadSpec {
    let mut s = LoadSpec::new(vec![server.target()]);
    s.connections = connections;
    s.threads = 1;
    s.stop = Stop::Requests(requests);
    s.timeout = Duration::from_secs(5);
    s
}

fn ctx() -> RoundContext {
    RoundContext {
        server: None,
        server_cores: None,
        client_threads: 1,
        shared_cores: false,
        close_mode: false,
        links: Vec::new(),
    }
}

/// Closed-model runs against an in-process server as fast as the client
/// keep the client thread busy, so whether `client_bound` fires depends on
/// the neighbours of the moment; it has its own tests below.
fn judged(mut v: Verdict) -> Verdict {
    v.reasons.retain(|x| x.code != ReasonCode::ClientBound);
    v
}

fn codes(v: &Verdict) -> Vec<&str> {
    v.reasons.iter().map(|r| r.code.name()).collect()
}

#[test]
fn nagle_split_write_is_delayed_ack() {
    let _serial = serial();
    let server = TestServer::start(Behaviour::SplitNagle, None);
    let r = run(&spec(&server, 4, 200), &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    assert_eq!(summary.completed, 200);
    assert_eq!(summary.errors_total, 0);
    let v = round_verdict(&summary, Some(&r.latency), &ctx());
    assert_eq!(codes(&v), vec!["delayed_ack"], "{v:#?}");
    assert!(v.reasons[0].message.contains("took 38–52 ms"), "{v:#?}");
}

#[test]
fn nodelay_split_write_is_valid() {
    let _serial = serial();
    let server = TestServer::start(Behaviour::SplitNoDelay, None);
    let r = run(&spec(&server, 4, 2000), &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    assert_eq!(summary.completed, 2000);
    assert_eq!(summary.errors_total, 0);
    assert_eq!(summary.connections.established, 4);
    let v = judged(round_verdict(&summary, Some(&r.latency), &ctx()));
    assert!(v.is_valid(), "{v:#?}");
    assert_eq!(r.latency.count_between(38_000, 52_000), 0);
}

#[test]
fn body_that_grows_mid_run_is_drift() {
    let _serial = serial();
    let server = TestServer::start(Behaviour::GrowsAt(51), None);
    let r = run(&spec(&server, 1, 200), &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    assert_eq!(summary.completed, 200);
    // Requests 51 to 200 came back 20 bytes longer than the first ones.
    assert_eq!(summary.errors.get("size_mismatch"), Some(&150));
    let v = judged(round_verdict(&summary, Some(&r.latency), &ctx()));
    assert_eq!(codes(&v), vec!["drift"], "{v:#?}");
    assert!(
        v.reasons[0].message.starts_with(
            "responses changed during load (150 of another size, 0 with another checksum, \
             of 200 completed)"
        ),
        "{v:#?}"
    );
    assert_eq!(server.served.load(Ordering::SeqCst), 200);
}

#[test]
fn unexpected_statuses_are_errors() {
    let _serial = serial();
    let server = TestServer::start(Behaviour::Unavailable(10), None);
    let r = run(&spec(&server, 1, 100), &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    assert_eq!(summary.completed, 100);
    assert_eq!(summary.status.get(&503), Some(&10));
    let v = judged(round_verdict(&summary, Some(&r.latency), &ctx()));
    assert_eq!(codes(&v), vec!["errors"], "{v:#?}");
    let m = &v.reasons[0].message;
    assert!(
        m.starts_with("10 errors (status 10); statuses 503×10:"),
        "{m}"
    );
}

/// Busy-loops on `cpu` until dropped: a neighbour that takes the client's core.
struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Hog {
    fn start(cpu: usize, threads: usize) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    pin(Some(cpu));
                    // Bounded even if the test panics before dropping us.
                    let deadline = Instant::now() + Duration::from_secs(60);
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Hog { stop, threads }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[test]
fn client_starved_of_cpu_is_client_bound() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server_cpu = if cpus > 1 { Some(1) } else { None };
    let server = TestServer::start(Behaviour::SplitNoDelay, server_cpu);
    // Three busy loops share the client's core with it: it gets a third of
    // the core in scheduler slices of several milliseconds, so sends
    // scheduled inside another thread's slice go out late.
    let _hog = Hog::start(0, 3);
    let mut s = spec(&server, 10, 1);
    s.cpus = vec![0];
    s.rate = Some(2000.0);
    s.stop = Stop::Duration(Duration::from_secs(2));
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    let rate = summary.rate.as_ref().unwrap();
    assert!(
        rate.late_sends * 100 > summary.sent,
        "{} late of {}",
        rate.late_sends,
        summary.sent
    );
    let v = round_verdict(&summary, Some(&r.latency), &ctx());
    assert_eq!(codes(&v), vec!["client_bound"], "{v:#?}");
    assert!(
        v.reasons[0].message.contains("left more than 1 ms late"),
        "{v:#?}"
    );
}

#[test]
fn client_starved_in_the_closed_model_is_client_bound() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server_cpu = if cpus > 1 { Some(1) } else { None };
    let server = TestServer::start(Behaviour::SplitNoDelay, server_cpu);
    // Three busy loops on the client's core: the client gets about a quarter
    // of it and waits the rest in the run queue. Its own CPU time looks
    // modest; the wait is what shows.
    let _hog = Hog::start(0, 3);
    let mut s = spec(&server, 10, 1);
    s.cpus = vec![0];
    s.stop = Stop::Duration(Duration::from_secs(2));
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    let wait = summary.client_cpu_s.runqueue / summary.duration_s;
    assert!(wait > 0.3, "waited only {wait:.2} of the run");
    let v = round_verdict(&summary, Some(&r.latency), &ctx());
    assert!(codes(&v).contains(&"client_bound"), "{v:#?}");
    let m = &v
        .reasons
        .iter()
        .find(|r| r.code == ReasonCode::ClientBound)
        .unwrap()
        .message;
    assert!(m.contains("of the run for a CPU"), "{m}");
}

#[test]
fn connection_per_request_on_loopback_keeps_its_ports() {
    let _serial = serial();
    let server = TestServer::start(Behaviour::Plain, None);
    let mut s = spec(&server, 4, 3000);
    s.keep_alive = false;
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    let ports = PortUse::read();
    assert_eq!(summary.completed, 3000);
    assert_eq!(summary.errors_total, 0);
    assert_eq!(summary.connections.reconnects, 2996);
    let mut c = ctx();
    c.close_mode = true;
    let range = ports.range.unwrap();
    let held = ports.time_wait.unwrap();
    // Loopback connects are cheap: thousands per second, which the old
    // prediction (rate × 60 s of TIME_WAIT against the range) flagged on
    // every such run...
    let predicted = summary.connections.per_sec * 60.0;
    assert!(predicted > range as f64 / 2.0, "{predicted} of {range}");
    // ...but the server closes first, so the TIME_WAITs sit on its port and
    // the client's ports are free again at once: far from half the range.
    assert!(held < range / 10, "{held} of {range} ports held");
    let v = judged(round_verdict_with(&summary, Some(&r.latency), &c, ports));
    assert!(v.is_valid(), "{v:#?}");
    // What the callers do: `round_verdict` reads the same as the round ends.
    let v = judged(round_verdict(&summary, Some(&r.latency), &c));
    assert!(v.is_valid(), "{v:#?}");
    // Crafted from this run: had the ports been held, it would say so.
    let full = PortUse {
        range: Some(range),
        time_wait: Some(range * 3 / 4),
        host: None,
    };
    let v = judged(round_verdict_with(&summary, Some(&r.latency), &c, full));
    assert_eq!(codes(&v), vec!["ports"], "{v:#?}");
    assert!(
        v.reasons[0].message.starts_with(&format!(
            "{} of the {range} ephemeral ports (75%)",
            range * 3 / 4
        )),
        "{v:#?}"
    );
}

/// The client's own figures over a run, per thread: (busy, waiting for a CPU).
fn client_load(s: &throng_model::Summary) -> (f64, f64) {
    let span = s.duration_s * s.threads as f64;
    (
        (s.client_cpu_s.user + s.client_cpu_s.sys) / span,
        s.client_cpu_s.runqueue / span,
    )
}

#[test]
fn server_stall_under_rate_is_not_client_bound() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server_cpu = if cpus > 1 { Some(1) } else { None };
    // About half a second into a 2 s run at 1000 req/s, the server stops
    // answering for 0.5 s: every connection's next send waits for it.
    let server = TestServer::start(Behaviour::StallAt { at: 500, ms: 500 }, server_cpu);
    let mut s = spec(&server, 10, 1);
    s.cpus = vec![0];
    s.rate = Some(1000.0);
    s.stop = Stop::Duration(Duration::from_secs(2));
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    let rate = summary.rate.as_ref().unwrap();
    // The schedule was not kept: far more than 1% of sends left late...
    assert!(
        rate.late_sends * 10 > summary.sent,
        "{} late of {}",
        rate.late_sends,
        summary.sent
    );
    // ...and the stall is in the latency, measured from the schedule.
    assert!(
        summary.latency_us.max >= 450_000,
        "{:?}",
        summary.latency_us
    );
    // Yet the client itself was idle: the server held the sends up.
    let (busy, waited) = client_load(&summary);
    assert!(
        busy < CLIENT_BUSY / 2.0 && waited < CLIENT_STARVED,
        "the client was {:.0}% busy and waited {:.0}% for a CPU: this machine's other work \
         starved it, so this run cannot show a stall alone",
        busy * 100.0,
        waited * 100.0
    );
    let v = round_verdict(&summary, Some(&r.latency), &ctx());
    assert!(!v.has(ReasonCode::ClientBound), "{v:#?}");
    assert!(v.is_valid(), "{v:#?}");
}

#[test]
fn client_saturated_under_rate_is_client_bound() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server_cpu = if cpus > 1 { Some(1) } else { None };
    // 1 MiB bodies, each hashed by the client (FNV-1a, a byte at a time)
    // while the server only copies them into its socket: one client thread
    // cannot take 2000 of them per second.
    let server = TestServer::start(Behaviour::Large(1 << 20), server_cpu);
    let mut s = spec(&server, 8, 1);
    s.cpus = vec![0];
    s.checksum = true;
    s.rate = Some(2000.0);
    s.stop = Stop::Duration(Duration::from_secs(2));
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    assert_eq!(summary.errors_total, 0);
    let (busy, waited) = client_load(&summary);
    assert!(
        busy + waited >= CLIENT_BUSY,
        "busy {busy:.2}, waited {waited:.2}"
    );
    let rate = summary.rate.as_ref().unwrap();
    assert!(rate.late_sends * 100 > summary.sent);
    let v = round_verdict(&summary, Some(&r.latency), &ctx());
    assert_eq!(codes(&v), vec!["client_bound"], "{v:#?}");
    let m = &v.reasons[0].message;
    assert!(m.starts_with("the load generator's "), "{m}");
    assert!(m.contains("(server CPU unknown), and "), "{m}");
    assert!(m.contains("sends ("), "{m}");
    assert!(m.contains("left more than 1 ms late:"), "{m}");
}

#[test]
fn full_accept_queue_leaves_connections_unestablished() {
    let _serial = serial();
    // A listener that never accepts, with the smallest backlog: the kernel
    // completes one handshake into the queue and drops every other SYN.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    nix::sys::socket::listen(&listener, nix::sys::socket::Backlog::new(0).unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut s = LoadSpec::new(vec![Target::http(addr, "/")]);
    s.connections = 8;
    s.threads = 1;
    s.timeout = Duration::from_millis(500);
    s.stop = Stop::Duration(Duration::from_secs(1));
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    let c = &summary.connections;
    // The engine's reachability handshake takes the one queue slot.
    assert_eq!((c.requested, c.established), (8, 0));
    assert_eq!(summary.completed, 0);
    let v = round_verdict(&summary, Some(&r.latency), &ctx());
    assert_eq!(codes(&v), vec!["errors", "connections"], "{v:#?}");
    assert!(v.reasons[1]
        .message
        .starts_with("0 of 8 requested connections were established"));
    drop(listener);
}

#[test]
fn sends_a_stall_carries_past_the_warmup_stay_the_warmups() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server_cpu = if cpus > 1 { Some(1) } else { None };
    // At 1000 req/s with a 0.3 s warmup, the server stops answering at its
    // 200th request for 0.3 s: the sends the warmup's schedule owed go out
    // only after the warmup has ended.
    let server = TestServer::start(Behaviour::StallAt { at: 200, ms: 300 }, server_cpu);
    let mut s = spec(&server, 10, 1);
    s.cpus = vec![0];
    s.rate = Some(1000.0);
    s.warmup = Duration::from_millis(300);
    s.stop = Stop::Duration(Duration::from_secs(1));
    let r = run(&s, &Control::new()).unwrap();
    let summary = throng_load::record::summarize(&r);
    // The measured window offered 1000 × its length; it never completes
    // more (give or take a send per connection at its edges), however many
    // of the warmup's sends landed in it.
    let offered = 1000.0 * summary.duration_s;
    assert!(
        (summary.completed as f64) <= offered + 10.0,
        "{} completed of {offered:.0} offered",
        summary.completed
    );
    // Those sends are the warmup's: it completed about its 300, not the
    // 200 answered before the stall.
    let warm = summary.warmup.as_ref().unwrap();
    assert!(warm.completed >= 290, "{warm:?}");
}
