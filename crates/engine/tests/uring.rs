//! The io_uring backend on its own: exact counts in every shape of load it
//! drives, run on a ring (not on the epoll fallback), and the loads it does
//! not drive yet refused up front. The other suites run on it too, with
//! `THRONG_TEST_IO=uring`.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{answer, Peer, Server, Tally};
use throng_engine::{
    Control, HttpVersion, IoBackend, LoadResult, LoadSpec, SpecError, Stop, UringGap, Warning,
};

/// Whether this kernel gives a ring: where it does not (io_uring
/// disabled, a container's seccomp profile), the backend falls back to
/// epoll, which `uring_fallback.rs` tests, and these tests skip.
fn ring_available() -> bool {
    match io_uring::IoUring::new(8) {
        Ok(_) => true,
        Err(e) => {
            println!("skipped: the kernel gives no io_uring: {e}");
            false
        }
    }
}

fn on_uring(server: &Server, connections: usize, requests: u64) -> LoadSpec {
    let mut spec = server.spec();
    spec.io = IoBackend::Uring;
    spec.connections = connections;
    spec.stop = Stop::Requests(requests);
    spec.timeout = Duration::from_secs(5);
    spec
}

fn run(spec: &LoadSpec) -> LoadResult {
    let r = throng_engine::run(spec, &Control::new()).unwrap();
    assert!(
        !r.warnings
            .iter()
            .any(|w| matches!(w, Warning::UringUnavailable { .. })),
        "the load fell back to epoll: {:?}",
        r.warnings
    );
    assert!(!r.interrupted);
    r
}

/// Every request answered once, and nothing else sent or failed.
fn exact(r: &LoadResult, server: &Server, requests: u64) {
    assert_eq!(r.counts.completed, requests);
    assert_eq!(r.counts.sent, requests);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.in_flight_at_end, 0);
    assert_eq!(Tally::get(&server.tally.requests), requests);
}

#[test]
fn keep_alive_counts_every_response_once() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut spec = on_uring(&server, 8, 2_000);
    spec.threads = 2;
    let r = run(&spec);
    exact(&r, &server, 2_000);
    assert_eq!(r.connections_established, 8);
    assert_eq!(r.counts.connects, 8);
    assert_eq!(r.reconnects, 0);
    assert!(r.latency.len() == 2_000 && r.latency.min() >= 1);
}

#[test]
fn close_mode_opens_a_connection_per_request() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut spec = on_uring(&server, 4, 300);
    spec.keep_alive = false;
    let r = run(&spec);
    exact(&r, &server, 300);
    assert_eq!(r.counts.connects, 300);
    assert_eq!(Tally::get(&server.tally.used), 300);
}

#[test]
fn a_pipeline_goes_out_in_one_send_and_comes_back_whole() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut spec = on_uring(&server, 3, 1_200);
    spec.pipeline = 8;
    let r = run(&spec);
    exact(&r, &server, 1_200);
    assert_eq!(r.counts.connects, 3);
}

const BODY: usize = 200_000;

/// A body many receive buffers long, in pieces.
fn big(p: &mut Peer) {
    loop {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\n\r\n");
        if p.stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        let body = vec![b'x'; BODY];
        for piece in body.chunks(50_000) {
            if p.stream.write_all(piece).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if !p.request() {
            return;
        }
    }
}

#[test]
fn a_body_over_many_buffers_is_read_whole() {
    if !ring_available() {
        return;
    }
    let server = Server::start(big);
    let spec = on_uring(&server, 2, 40);
    let r = run(&spec);
    exact(&r, &server, 40);
    assert_eq!(r.counts.body_bytes, 40 * BODY as u64);
}

#[test]
fn the_open_model_keeps_its_schedule() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut spec = on_uring(&server, 4, 0);
    spec.stop = Stop::Duration(Duration::from_millis(500));
    spec.rate = Some(400.0);
    let r = run(&spec);
    assert_eq!(r.counts.sent, 200);
    assert_eq!(r.counts.completed, 200);
    assert_eq!(r.counts.errors_total(), 0);
}

#[test]
fn a_duration_run_ends_on_time() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut spec = on_uring(&server, 4, 0);
    spec.stop = Stop::Duration(Duration::from_millis(300));
    let r = run(&spec);
    assert!(r.counts.completed > 100, "{}", r.counts.completed);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.duration_s, 0.3);
    assert_eq!(r.counts.sent, r.counts.completed + r.in_flight_at_end);
}

/// A keep-alive request goes out in a send that posts no completion when
/// it goes out whole, and is counted written as it is queued: every
/// request sent is counted once, by its bytes, those still in flight when
/// a duration run ends (whose sends the end cancels by name) included.
#[test]
fn every_request_sent_quietly_is_counted_written_once() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut one = server.spec();
    one.io = IoBackend::Epoll;
    one.stop = Stop::Requests(1);
    let len = throng_engine::run(&one, &Control::new())
        .unwrap()
        .counts
        .bytes_written;
    // Measured on epoll, where a write says what it took.
    assert!(len > 0);
    let r = run(&on_uring(&server, 8, 2_000));
    assert_eq!(r.counts.completed, 2_000);
    assert_eq!(r.counts.bytes_written, 2_000 * len);
    assert_eq!(Tally::get(&server.tally.requests), 2_001);
    let mut spec = on_uring(&server, 4, 0);
    spec.stop = Stop::Duration(Duration::from_millis(300));
    let r = run(&spec);
    assert!(r.counts.completed > 100, "{}", r.counts.completed);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.counts.bytes_written, r.counts.sent * len);
}

#[test]
fn what_the_ring_does_not_drive_yet_is_refused() {
    if !ring_available() {
        return;
    }
    let server = Server::start(answer);
    let mut spec = on_uring(&server, 1, 1);
    spec.http.version = HttpVersion::Http2;
    assert_eq!(
        spec.validate(),
        Err(SpecError::UringUnsupported(UringGap::Http2))
    );
}
