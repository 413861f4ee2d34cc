//! A run ends on time whatever the server does, and says when it was cut
//! short. The servers here answer as fast as the client can read, which is
//! what used to hold the event loop: every read filled the buffer, so the
//! loop never got back to its clock.

mod common;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{answer, Peer, Server, Tally};
use throng_engine::{run, Control, ErrorKind, Stop};

/// How far past its bound a run may end: a turn of the event loop, the
/// threads' exit. The promise is 100 ms, held by release builds
/// (`cargo test --release -p throng-engine --test bounded`); an unoptimised
/// build on a shared two-core machine gets 300 ms, still an order of
/// magnitude under the seconds the unbounded loop overran by.
const SLACK: Duration = Duration::from_millis(if cfg!(debug_assertions) { 300 } else { 100 });

/// Interim responses, as fast as the client takes them.
fn flood(p: &mut Peer) {
    let burst = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(4096);
    while !p.stop.load(Ordering::Relaxed) && p.stream.write_all(&burst).is_ok() {}
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
fn an_upload_the_server_stops_reading_times_out_and_counts_as_a_timeout() {
    // Part of each request reached the server, so each timeout is an
    // error: taken back unissued, as a request never written is, these
    // would go out again and again with none ever counted.
    let server = Server::start(Peer::stall);
    let mut spec = server.spec();
    spec.connections = 2;
    spec.stop = Stop::Requests(4);
    spec.timeout = Duration::from_millis(300);
    spec.method = "POST".into();
    spec.body = Some(vec![b'x'; 32 << 20]);
    let started = Instant::now();
    let r = run(&spec, &Control::new()).unwrap();
    let took = started.elapsed();
    // Two timeouts one after the other, each within its slack (the run's
    // start, which copies the upload into the request, is in it too).
    assert!(
        took <= Duration::from_millis(600) + 2 * SLACK,
        "took {took:?}"
    );
    assert_eq!(r.counts.error(ErrorKind::Timeout), 4);
    assert_eq!(r.counts.errors_total(), 4);
    assert_eq!((r.counts.sent, r.counts.completed), (4, 0));
    assert_eq!(r.in_flight_at_end, 0);
    assert_eq!(server.tally.requests.load(Ordering::Relaxed), 4);
}

#[test]
fn a_stopped_run_ends_at_once_and_says_it_was_interrupted() {
    let server = Server::start(answer);
    let mut spec = server.spec();
    spec.stop = Stop::Duration(Duration::from_secs(30));
    let control = Control::new();
    let stopper = control.clone();
    let tally = server.tally.clone();
    let stopped_at = std::thread::spawn(move || {
        // Stop mid-run: once the server has answered 100 requests.
        let answered =
            tally.wait_until(Duration::from_secs(10), |t| Tally::get(&t.answered) >= 100);
        stopper.stop();
        assert!(answered, "the server answered too few requests");
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
