//! A count's measured phase owns only its own requests: a warmup request a
//! server still holds when the count has been answered is the warmup's.
//! Counted in flight at the end, it showed a run of 10 sent requests with
//! 10 answers and 1 in flight (node did it to a scaled-down ladder study
//! of ab's article, 20 answered and 3 "in flight").

mod common;

use std::time::Duration;

use common::{answer, Peer, Server};
use throng_engine::{run, Control, Stop};

/// The second connection to send a request is never answered; the first
/// answers every request at once.
fn second_holds(p: &mut Peer) {
    if p.index == 1 {
        p.stall();
    } else {
        answer(p);
    }
}

#[test]
fn a_warmup_request_still_held_when_the_count_is_answered_is_the_warmups() {
    let server = Server::start(second_holds);
    let mut spec = server.spec();
    spec.connections = 2;
    spec.stop = Stop::Requests(10);
    spec.warmup = Duration::from_millis(100);
    // Far past the run: the held request neither fails nor is answered.
    spec.timeout = Duration::from_secs(20);
    let r = run(&spec, &Control::new()).unwrap();
    assert_eq!(r.counts.completed, 10, "{:?}", r.counts.errors);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.counts.sent, 10);
    assert_eq!(r.in_flight_at_end, 0);
    assert!(!r.interrupted);
    // Both connections sent a request: the held one was the warmup's.
    assert_eq!(server.conns_with_requests(), 2);
}
