//! A kernel that refuses io_uring (disabled, or blocked in a container):
//! the load runs on epoll, counts the same, and says so once. Its own test
//! binary, as the refusal is asked for through the environment.

mod common;

use std::time::Duration;

use common::{answer, Server, Tally};
use throng_engine::{Control, IoBackend, Stop, Warning};

#[test]
fn a_refused_ring_falls_back_to_epoll_and_says_so_once() {
    std::env::set_var("THRONG_URING_REFUSE", "1");
    let server = Server::start(answer);
    let mut spec = server.spec();
    spec.io = IoBackend::Uring;
    spec.connections = 4;
    spec.threads = 2;
    spec.stop = Stop::Requests(500);
    spec.timeout = Duration::from_secs(5);
    let r = throng_engine::run(&spec, &Control::new()).unwrap();
    assert_eq!(r.counts.completed, 500);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(Tally::get(&server.tally.requests), 500);
    let said: Vec<_> = r
        .warnings
        .iter()
        .filter(|w| matches!(w, Warning::UringUnavailable { .. }))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", r.warnings);
}
