//! The open model's connections are opened before its schedule starts: a
//! handshake made once the window had started held the first sends back,
//! and the wait was charged to their latency (counted from the instant
//! each was due). Here every TLS handshake takes the server 300 ms, so a
//! first send that waited for one would show 300 ms of latency.

use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use throng_engine::{run, Control, LoadResult, Stop};
use throng_testkit::http::{self, Conn};
use throng_testkit::wait::wait_for;

mod common;

/// How long the server waits before it reads a connection's ClientHello.
const HANDSHAKE: Duration = Duration::from_millis(300);

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A slow handshake, then every request answered at once until the client
/// closes or the test ends.
fn serve(cfg: Arc<rustls::ServerConfig>, c: Conn) {
    let (tcp, stop) = (c.stream, c.stop);
    // The slow server's own pace, cut short only when the test ends.
    wait_for(HANDSHAKE, || stop.load(Ordering::Relaxed));
    tcp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let conn = rustls::ServerConnection::new(cfg).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !stop.load(Ordering::Relaxed) {
        match tls.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            Ok(_) => return,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        }
        if head.ends_with(b"\r\n\r\n") {
            head.clear();
            if tls.write_all(ANSWER).and_then(|_| tls.flush()).is_err() {
                return;
            }
        }
    }
}

/// An open-model run of `requests` at 200 a second over `connections`,
/// against a fresh slow-handshake server, after `warmup`.
fn load(connections: usize, requests: u64, warmup: Duration) -> LoadResult {
    let cfg = common::tls_server_config();
    let server = http::Server::start(move |c| serve(cfg.clone(), c));
    let mut spec = common::https_spec(server.addr, Stop::Requests(requests));
    spec.connections = connections;
    spec.rate = Some(200.0);
    spec.warmup = warmup;
    run(&spec, &Control::new()).unwrap()
}

#[test]
fn the_open_models_first_sends_do_not_wait_for_a_handshake() {
    // 4 connections, 200 requests a second, 40 requests: the first four
    // are due in the window's first 20 ms.
    let r = load(4, 40, Duration::ZERO);
    assert_eq!(r.counts.completed, 40, "{:?}", r.counts.errors);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.counts.sent, 40);
    assert_eq!(r.connections_established, 4);
    // The handshakes were made, and counted with the run: four connects.
    assert_eq!(r.connect_time.len(), 4);
    let tls = r
        .tls
        .as_ref()
        .expect("an https load says how its handshakes went");
    assert_eq!(tls.handshakes, 4, "{tls:?}");
    // The client's handshake time starts when it sees its connection
    // made, which a busy machine can let fall after the server accepted
    // it and began its wait: a margin, well short of the wait itself.
    let margin = Duration::from_millis(50);
    assert!(
        tls.handshake_time.min() >= (HANDSHAKE - margin).as_micros() as u64,
        "{tls:?}"
    );
    // Had a first send waited for its handshake, its latency (from the
    // instant it was due) would be 300 ms or more.
    let worst = Duration::from_micros(r.latency.max());
    assert!(worst < HANDSHAKE, "slowest answer {worst:?}");
    assert_eq!(r.latency.len(), 40);
}

#[test]
fn handshakes_made_ahead_of_a_warmup_are_the_warmups() {
    // Made before the window, they belong to its first phase, as when
    // they were made in it: a warmup's, not the measured phase's.
    let r = load(2, 20, Duration::from_millis(50));
    assert_eq!(r.counts.completed, 20, "{:?}", r.counts.errors);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.connections_established, 2);
    assert_eq!(r.connect_time.len(), 0);
    assert_eq!(r.tls.as_ref().map(|t| t.handshakes), Some(0));
    let worst = Duration::from_micros(r.latency.max());
    assert!(worst < HANDSHAKE, "slowest answer {worst:?}");
}
