//! The kit's own promises: each scripted behaviour on the wire, exactly,
//! and waits that end by their deadline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use throng_testkit::http::{ok, Script, Server, Tally, OK};
use throng_testkit::wait::{poll_until, wait_for};

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

fn client(server: &Server) -> TcpStream {
    let c = TcpStream::connect(server.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// Everything the server sends until it closes.
fn read_to_close(c: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    out
}

/// Exactly `n` bytes.
fn read_n(c: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut out = vec![0; n];
    c.read_exact(&mut out).unwrap();
    out
}

#[test]
fn close_after_answers_that_many_then_closes() {
    let s = Server::scripted(Script::answering(ok(b"hi")).close_after(2));
    let mut c = client(&s);
    c.write_all(&GET.repeat(3)).unwrap();
    assert_eq!(read_to_close(&mut c), ok(b"hi").repeat(2));
}

#[test]
fn a_batch_is_answered_in_one_write_once_whole() {
    let s = Server::scripted(Script::answering(OK.to_vec()).batch(2));
    let mut c = client(&s);
    c.write_all(GET).unwrap();
    assert!(s.wait_requests(1, Duration::from_secs(5)));
    c.write_all(GET).unwrap();
    assert_eq!(read_n(&mut c, 2 * OK.len()), OK.repeat(2));
    assert_eq!(s.requests(), 2);
}

#[test]
fn a_delayed_answer_is_late_by_the_delay_and_a_dripped_one_whole() {
    let delay = Duration::from_millis(50);
    let s = Server::scripted(
        Script::answering(ok(b"late"))
            .delay(delay)
            .drip(3, Duration::from_millis(1)),
    );
    let mut c = client(&s);
    let sent = Instant::now();
    c.write_all(GET).unwrap();
    assert_eq!(read_n(&mut c, ok(b"late").len()), ok(b"late"));
    assert!(sent.elapsed() >= delay);
}

#[test]
fn a_body_is_skipped_unless_asked_for() {
    let s = Server::start(|mut c| {
        while let Some(r) = c.next_request() {
            let body = if r.path == "/echo" {
                c.body().unwrap()
            } else {
                Vec::new()
            };
            c.send(&ok(&body));
        }
    });
    let mut c = client(&s);
    c.write_all(b"POST /skip HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcPOST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nxy")
        .unwrap();
    let want = [ok(b""), ok(b"xy")].concat();
    assert_eq!(read_n(&mut c, want.len()), want);
    assert_eq!(s.methods(), ["POST", "POST"]);
}

#[test]
fn close_idle_closes_connections_waiting_for_a_request() {
    let s = Server::scripted(Script::answering(OK.to_vec()));
    let mut c = client(&s);
    c.write_all(GET).unwrap();
    assert_eq!(read_n(&mut c, OK.len()), OK);
    s.tally.bump(&s.tally.close_idle);
    assert!(s
        .tally
        .wait_until(Duration::from_secs(5), |t| Tally::get(&t.closed_idle) == 1));
    assert_eq!(read_to_close(&mut c), b"");
    assert_eq!((s.accepted(), s.conns_with_requests()), (1, 1));
}

#[test]
fn waits_end_by_their_deadline() {
    let started = Instant::now();
    assert!(!wait_for(Duration::from_millis(30), || false));
    assert!(started.elapsed() >= Duration::from_millis(30));
    assert!(started.elapsed() < Duration::from_secs(1));
    let mut n = 0;
    assert_eq!(
        poll_until(Instant::now() + Duration::from_secs(5), || {
            n += 1;
            (n == 3).then_some(n)
        }),
        Some(3)
    );
}

#[test]
fn the_certificate_is_a_pem_leaf_and_its_key() {
    let pair = throng_testkit::cert::localhost();
    assert!(pair.cert_pem.starts_with(b"-----BEGIN CERTIFICATE-----"));
    assert!(pair.key_pem.starts_with(b"-----BEGIN PRIVATE KEY-----"));
}

#[test]
fn a_built_round_is_two_seconds_at_its_rate() {
    let r = throng_testkit::model::round(1, 1_000.0, 10, 500, 2_000, 1 << 20);
    assert_eq!(r.summary.completed, 2_000);
    assert_eq!(r.summary.body_bytes, 20_000);
    assert_eq!(r.summary.latency_us.p99, 2_000);
}
