//! The driver's hot path, driven a step at a time against a loopback
//! server that the test plays itself, so the order of events is the test's
//! and not the scheduler's.

use super::io::epoll::{token_conn, Epoll};
use super::*;
use crate::request::Prepared;
use crate::spec::{Stop, Target};
use mio::Events;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream as StdStream};
use std::time::{Duration, Instant};

fn spec_for(addr: std::net::SocketAddr) -> LoadSpec {
    let mut spec = LoadSpec::new(vec![Target::http(addr, "/")]);
    spec.connections = 1;
    spec.stop = Stop::Requests(1);
    spec
}

/// Reads one request head (and nothing after it: requests here have no body
/// and are never pipelined) and returns it.
fn read_request(server: &mut StdStream) -> String {
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = server.read(&mut buf).unwrap();
        assert!(n > 0, "the client closed before its request was complete");
        req.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(req).unwrap()
}

impl Worker<'_> {
    /// The epoll backend these tests drive by hand.
    fn ep(&mut self) -> &mut Epoll {
        match &mut self.io {
            Io::Epoll(e) => e,
            Io::Uring(_) => panic!("these tests drive epoll"),
        }
    }
}

/// One iteration of the event loop's I/O half: poll (without waiting when
/// work is left from the last turn), then a turn. Returns the events seen.
fn step(w: &mut Worker<'_>, events: &mut Events) -> usize {
    let wait = if w.ep().ready.is_empty() { 100 } else { 0 };
    w.ep()
        .poll
        .poll(events, Some(Duration::from_millis(wait)))
        .unwrap();
    w.now = now_ns();
    w.epoll_turn(events, u64::MAX);
    w.send_deferred();
    events.iter().count()
}

/// Step until `done` holds, for at most 5 s.
fn drive(w: &mut Worker<'_>, events: &mut Events, done: impl Fn(&Worker<'_>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done(w) {
        assert!(Instant::now() < deadline, "the worker made no progress");
        step(w, events);
    }
}

/// One thread's share: one connection, one request.
fn one_conn_job() -> Job {
    Job {
        index: 0,
        first_conn: 0,
        conns: 1,
        quota: Some(1),
        cpu: None,
        first_request: 0,
    }
}

struct Rig {
    listener: TcpListener,
    spec: LoadSpec,
    requests: Prepared,
}

impl Rig {
    fn new() -> Rig {
        Rig::with(|_| {})
    }

    fn with(tune: impl FnOnce(&mut LoadSpec)) -> Rig {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut spec = spec_for(listener.local_addr().unwrap());
        tune(&mut spec);
        let requests = Prepared::new(&spec);
        Rig {
            listener,
            spec,
            requests,
        }
    }

    fn plan(&self) -> Shared<'_> {
        Shared {
            spec: &self.spec,
            requests: &self.requests,
            interval_ns: None,
            stagger_ns: 0,
            tick_ns: 0,
            server_names: Vec::new(),
            io: crate::spec::IoBackend::Epoll,
        }
    }

    /// A worker of one connection whose one request the server has read.
    fn connected<'a>(&self, plan: &'a Shared<'a>, events: &mut Events) -> (Worker<'a>, StdStream) {
        let mut w = Worker::new(plan, one_conn_job()).unwrap();
        w.now = now_ns();
        w.measuring = true;
        w.fill(0);
        let (mut server, _) = self.listener.accept().unwrap();
        server.set_nodelay(true).unwrap();
        drive(&mut w, events, |w| {
            w.conns[0].state == State::Open && w.conns[0].written == 1
        });
        read_request(&mut server);
        (w, server)
    }
}

/// A connection is read a few times per visit, so a fast server cannot
/// hold the loop; what it leaves unread is already in the socket, where
/// edge-triggered epoll reports nothing new, so it must be visited again
/// without an event.
#[test]
fn unread_data_is_read_on_later_turns_without_an_event() {
    let rig = Rig::new();
    let plan = rig.plan();
    let mut events = Events::with_capacity(8);
    let (mut w, mut server) = rig.connected(&plan, &mut events);
    // Reads of 16 bytes: a visit takes 64 of the response's 1,041 bytes.
    w.ep().buf = vec![0; 16];
    let body = vec![b'z'; 1000];
    let mut resp =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    resp.extend_from_slice(&body);
    assert_eq!(resp.len(), 1041);
    server.write_all(&resp).unwrap();
    let mut turns = 0;
    let mut quiet = 0;
    while w.stats.measured.completed == 0 {
        let seen = step(&mut w, &mut events);
        turns += 1;
        if turns > 1 && seen == 0 {
            quiet += 1;
        }
        assert!(turns <= 100, "the response never completed");
    }
    // 1,041 bytes at 64 a visit: 17 visits, all but the first on turns
    // with no event at all.
    assert_eq!(turns, 17);
    assert_eq!(quiet, 16);
    assert_eq!(w.stats.measured.bytes_read, 1041);
    assert_eq!(w.stats.measured.body_bytes, 1000);
    assert!(w.ep().ready.is_empty());
}

/// The event loop wakes when the first part of a response arrives, then is
/// kept from reading it (a starved client, or other connections served
/// first) while the rest arrives. The response ended when its last byte
/// arrived, not when the loop woke up: the loop's clock at wake-up is no
/// bound on the stamp of a read made later.
#[test]
fn a_late_read_is_stamped_with_its_last_byte() {
    const LATE: Duration = Duration::from_millis(30);
    let rig = Rig::new();
    let plan = rig.plan();
    let mut events = Events::with_capacity(8);
    let (mut w, mut server) = rig.connected(&plan, &mut events);
    let asked = Instant::now();

    let mut body = vec![b'a'; 2000];
    body.extend_from_slice(&[b'b'; 2000]);
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
    server.write_all(head.as_bytes()).unwrap();
    server.write_all(&body[..2000]).unwrap();
    // The loop wakes for the first part...
    w.ep()
        .poll
        .poll(&mut events, Some(Duration::from_secs(5)))
        .unwrap();
    assert!(!events.is_empty());
    w.now = now_ns();
    // ...but reads only after the rest has arrived: the thread lost its CPU
    // between the turn's last look at the clock and the read.
    w.turn_end_ns = u64::MAX;
    std::thread::sleep(LATE);
    let last = Instant::now();
    server.write_all(&body[2000..]).unwrap();
    for ev in events.iter() {
        let closed = ev.is_read_closed() || ev.is_error();
        let i = token_conn(ev.token(), &w.conns).unwrap();
        w.on_event(i, ev.is_readable() || closed, closed);
    }

    assert_eq!(w.stats.measured.completed, 1);
    assert_eq!(w.stats.measured.body_bytes, 4000);
    let floor = (last - asked).as_micros() as u64;
    // Read in one go, the answer's first byte has its last's stamp: its
    // latency is kept with the answers that came whole (stats.rs).
    let measured = w.stats.latency.max().max(w.stats.whole.max());
    assert!(
        measured >= floor,
        "latency {measured} µs, but the last byte was sent {floor} µs after the request arrived"
    );
}

/// A server may close an idle keep-alive connection just as the client
/// writes to it, too late for the client to know. On a connection kept
/// idle across a session's windows, that request was never seen: it goes
/// out again on a fresh connection, and nothing counts as an error.
#[test]
fn a_stale_connection_closed_under_a_request_retries_it_quietly() {
    let rig = Rig::new();
    let plan = rig.plan();
    let mut events = Events::with_capacity(8);
    let job = Job {
        index: 0,
        first_conn: 0,
        conns: 1,
        quota: None,
        cpu: None,
        first_request: 0,
    };
    let mut w = Worker::new(&plan, job).unwrap();
    w.now = now_ns();
    w.measuring = true;
    w.fill(0);
    let (mut server, _) = rig.listener.accept().unwrap();
    drive(&mut w, &mut events, |w| w.conns[0].written == 1);
    read_request(&mut server);
    // The window ends: its response comes, and nothing more is issued.
    w.between_windows = true;
    server
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    drive(&mut w, &mut events, |w| w.stats.measured.completed == 1);
    assert_eq!(w.conns[0].len, 0);

    // The next window writes before it has polled: the close is unknown.
    w.between_windows = false;
    w.conns[0].stale = true;
    drop(server);
    w.now = now_ns();
    w.fill(0);
    assert_eq!(w.stats.measured.sent, 2);
    drive(&mut w, &mut events, |w| w.stats.reconnects == 1);
    let (mut server, _) = rig.listener.accept().unwrap();
    drive(&mut w, &mut events, |w| {
        w.conns[0].state == State::Open && w.conns[0].written == 1
    });
    read_request(&mut server);
    assert_eq!(w.stats.measured.errors, [0; ErrorKind::COUNT]);
    // The lost request was taken back and issued again.
    assert_eq!(w.stats.measured.sent, 2);
    assert!(!w.conns[0].stale);
}

/// A connection carries at most `requests_per_connection` requests: the
/// last goes out with `Connection: close`, nothing follows it on that
/// connection, and once it is answered the client closes the connection
/// itself, even from a server that ignored the header, and opens the next.
#[test]
fn a_connection_closes_after_its_last_request() {
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let rig = Rig::with(|spec| {
        spec.requests_per_connection = Some(2);
        spec.stop = Stop::Requests(3);
    });
    let plan = rig.plan();
    let mut events = Events::with_capacity(8);
    let job = Job {
        index: 0,
        first_conn: 0,
        conns: 1,
        quota: Some(3),
        cpu: None,
        first_request: 0,
    };
    let mut w = Worker::new(&plan, job).unwrap();
    w.now = now_ns();
    w.measuring = true;
    w.fill(0);
    let (mut first, _) = rig.listener.accept().unwrap();
    drive(&mut w, &mut events, |w| w.conns[0].written == 1);
    assert!(!read_request(&mut first).contains("Connection: close"));
    first.write_all(OK).unwrap();
    drive(&mut w, &mut events, |w| {
        w.conns[0].written == 1 && w.stats.measured.completed == 1
    });
    assert!(read_request(&mut first).contains("\r\nConnection: close\r\n"));
    // The last request is on the wire; the quota would allow a third, but
    // not on this connection.
    w.fill(0);
    assert_eq!((w.conns[0].len, w.stats.measured.sent), (1, 2));

    // Answered without `Connection: close`, as if the server ignored it.
    first.write_all(OK).unwrap();
    drive(&mut w, &mut events, |w| w.stats.reconnects == 1);
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        first.read(&mut [0u8; 16]).unwrap(),
        0,
        "the client closed it"
    );
    let (mut second, _) = rig.listener.accept().unwrap();
    drive(&mut w, &mut events, |w| {
        w.conns[0].state == State::Open && w.conns[0].written == 1
    });
    // The count starts again: the new connection's first is no last one.
    assert!(!read_request(&mut second).contains("Connection: close"));
    second.write_all(OK).unwrap();
    drive(&mut w, &mut events, |w| w.stats.measured.completed == 3);
    assert_eq!(w.stats.measured.connects, 2);
    assert_eq!(w.stats.measured.errors, [0; ErrorKind::COUNT]);
    assert_eq!(w.conns[0].carried, 1);
}

/// A connection taken from the ready queue is answered, closed and opened
/// again, while the batch of events the turn is about to handle still
/// holds the old socket's hang-up. That event is the old socket's: the
/// new connection is not marked closed by its peer, and its request goes
/// out (marked closed, it would write nothing and wait for its timeout).
#[test]
fn an_event_of_a_socket_closed_in_the_same_turn_does_not_reach_its_replacement() {
    let rig = Rig::with(|s| s.stop = Stop::Requests(2));
    let plan = rig.plan();
    let mut events = Events::with_capacity(8);
    let (mut w, mut server) = rig.connected(&plan, &mut events);
    w.job.quota = Some(2);
    server
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    drop(server);
    let old = w.conns[0].epoch;
    w.ep()
        .poll
        .poll(&mut events, Some(Duration::from_secs(5)))
        .unwrap();
    assert!(events.iter().any(|e| e.is_read_closed()));
    // The ready queue's visit comes first in a turn: here it reads the
    // answer, and the connection closes and opens again for request 2.
    w.now = now_ns();
    w.turn_end_ns = u64::MAX;
    w.on_event(0, true, false);
    assert_eq!(w.stats.measured.completed, 1);
    assert_eq!(w.conns[0].epoch, old + 1);
    assert_eq!(w.conns[0].len, 1);
    w.epoll_turn(&events, u64::MAX);
    assert!(!w.conns[0].peer_closed);
    let (mut second, _) = rig.listener.accept().unwrap();
    drive(&mut w, &mut events, |w| w.conns[0].written == 1);
    assert!(read_request(&mut second).starts_with("GET / HTTP/1.1\r\n"));
}

/// A ring's turn takes a receive's stamp as its time without reading the
/// clock when it is at or before the turn's look, the common case; a stamp
/// after it (the wall clock stepped forward since its lead on the
/// monotonic one was read) reads the clock and counts as arriving then, as
/// does a read without a stamp.
#[test]
fn a_turns_stamp_before_its_look_is_taken_as_is_and_one_after_it_is_bounded_by_the_clock() {
    let rig = Rig::new();
    let plan = rig.plan();
    let mut w = Worker::new(&plan, one_conn_job()).unwrap();
    let lead = 1_700_000_000_000_000_000;
    let look = now_ns();
    w.now = look;
    assert_eq!(
        w.arrival_led(Some(lead + look - 2_000_000), lead),
        look - 2_000_000
    );
    assert_eq!(w.arrival_led(Some(lead + look), lead), look);
    assert_eq!(w.now, look, "a stamp at or before the look reads no clock");

    let hour = 3_600_000_000_000;
    let before = now_ns();
    let at = w.arrival_led(Some(lead + before + hour), lead);
    let after = now_ns();
    assert_eq!(at, w.now);
    assert!((before..=after).contains(&at), "{before} {at} {after}");

    let before = now_ns();
    let at = w.arrival_led(None, lead);
    assert_eq!(at, w.now);
    assert!(at >= before);
}
