//! A mix of URLs reaches the server as asked, even when the server ends
//! connections with requests still unanswered on them. Those requests
//! go out again on a fresh connection; given the next URLs of the order
//! instead of their own, the URLs that happened to be in flight at each
//! close were served less often than asked, and the others more.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

mod common;

use common::{Peer, Server, OK};
use throng_engine::{Control, LoadSpec, Stop, Target};

/// What the server answered, by path.
static SERVED: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// Answers three requests of each connection, the third with
/// `Connection: close`, and closes it with whatever else was pipelined
/// on it unanswered: a server with a keep-alive limit of three.
fn three_then_close(p: &mut Peer) {
    for n in 1..=3 {
        let answer: &[u8] = if n == 3 {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        } else {
            OK
        };
        if std::io::Write::write_all(&mut p.stream, answer).is_err() {
            return;
        }
        *SERVED.lock().unwrap().entry(p.path.clone()).or_default() += 1;
        if n < 3 && !p.request() {
            return;
        }
    }
}

#[test]
fn each_url_is_served_as_often_as_asked_across_closes() {
    let server = Server::start(three_then_close);
    let paths = ["/a", "/b", "/c", "/d"];
    let mut spec: LoadSpec = server.spec();
    spec.targets = paths.iter().map(|p| Target::http(server.addr, p)).collect();
    spec.connections = 2;
    spec.pipeline = 4;
    spec.stop = Stop::Requests(400);
    spec.timeout = Duration::from_secs(5);
    let r = throng_engine::run(&spec, &Control::new()).unwrap();
    assert_eq!(
        (r.counts.completed, r.counts.errors_total()),
        (400, 0),
        "{:?}",
        r.counts.errors
    );
    // A connection carries 3 answers: 134 connections for 400, each
    // leaving its pipelined fourth request to go out again.
    assert!(r.counts.resent > 0, "no request was taken back");
    let served = SERVED.lock().unwrap().clone();
    let want: BTreeMap<String, u64> = paths.iter().map(|p| (p.to_string(), 100)).collect();
    assert_eq!(served, want, "{} resent", r.counts.resent);
}
