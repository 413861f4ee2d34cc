//! Time to first byte, apart from latency: a server that sends its headers
//! at once and its body later has a first byte as quick as its headers and
//! a latency as long as its body.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{Peer, Server};
use throng_engine::{Control, Stop};

/// How long the body waits after the headers.
const BODY_AFTER: Duration = Duration::from_millis(150);

fn headers_then_body(p: &mut Peer) {
    loop {
        if p.stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
            .is_err()
        {
            break;
        }
        // The body's delay is what the test measures, not a wait for
        // anything to happen.
        std::thread::sleep(BODY_AFTER);
        if p.stream.write_all(b"hello").is_err() || !p.request() {
            break;
        }
    }
}

#[test]
fn the_first_byte_is_the_headers_and_the_latency_the_body() {
    let server = Server::start(headers_then_body);
    let mut spec = server.spec();
    spec.connections = 1;
    spec.stop = Stop::Requests(4);
    let r = throng_engine::run(&spec, &Control::new()).unwrap();
    assert_eq!(r.counts.completed, 4);
    let first = r.first_byte.expect("every run has first bytes");
    assert_eq!(first.len(), 4);
    let body_us = BODY_AFTER.as_micros() as u64;
    // The headers leave at once: their first byte is well before the body.
    assert!(first.max() < body_us / 2, "first byte max {}", first.max());
    assert!(
        r.latency.min() >= body_us,
        "latency min {}",
        r.latency.min()
    );
}
