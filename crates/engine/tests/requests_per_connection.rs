//! A limit on the requests one connection carries, as servers set with
//! nginx's `keepalive_requests`: each connection's last request asks for
//! `Connection: close`, the client opens the next connection once it is
//! answered, and the count of connections follows from the limit exactly.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use common::{answer, Peer, Server, Tally, OK};
use throng_engine::{Control, LoadResult, LoadSpec, Session, Stop};
use throng_testkit::wait::wait_for;

/// Per connection, in the order they ended: for each request it carried,
/// whether it asked for `Connection: close`. Keyed by the server's
/// address, as the tests of this binary run at once.
static SEEN: Mutex<Vec<(SocketAddr, Vec<bool>)>> = Mutex::new(Vec::new());

fn serve(p: &mut Peer, honour_close: bool) {
    let mut asked = vec![p.asked_close];
    loop {
        if p.stream.write_all(OK).is_err() {
            break;
        }
        // Honoured, as RFC 9112 §9.6 says: nothing more is read.
        if honour_close && p.asked_close {
            break;
        }
        if !p.request() {
            break;
        }
        asked.push(p.asked_close);
    }
    let addr = p.stream.local_addr().unwrap();
    SEEN.lock().unwrap().push((addr, asked));
}

fn honour_close(p: &mut Peer) {
    serve(p, true);
}

/// Answers every request and keeps the connection open whatever it asked.
fn ignore_close(p: &mut Peer) {
    serve(p, false);
}

/// What `server`'s connections carried, once every connection that sent a
/// request has ended (run's end closes the client's side).
fn seen(server: &Server) -> Vec<Vec<bool>> {
    let mine = || -> Vec<Vec<bool>> {
        SEEN.lock()
            .unwrap()
            .iter()
            .filter(|(a, _)| *a == server.addr)
            .map(|(_, v)| v.clone())
            .collect()
    };
    wait_for(Duration::from_secs(5), || {
        mine().len() as u64 == Tally::get(&server.tally.used)
    });
    mine()
}

/// Runs `spec`, stopping it after a bound so a connection left with nothing
/// it may send fails the test instead of hanging it.
fn run(spec: &LoadSpec) -> LoadResult {
    let control = Control::new();
    let watchdog = control.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(20));
        watchdog.stop();
    });
    let r = throng_engine::run(spec, &control).unwrap();
    assert!(!r.interrupted, "the run did not end on its own");
    r
}

fn limited(server: &Server, requests: u64, per_connection: u64) -> LoadSpec {
    let mut spec = server.spec();
    spec.stop = Stop::Requests(requests);
    spec.requests_per_connection = Some(per_connection);
    spec
}

/// Each connection as the server saw it: `n` requests, only the last of
/// which asked for close.
fn full(n: usize) -> Vec<bool> {
    let mut v = vec![false; n];
    v[n - 1] = true;
    v
}

#[test]
fn every_connection_carries_the_limit_and_asks_to_close_on_its_last() {
    let server = Server::start(honour_close);
    let r = run(&limited(&server, 100, 10));
    assert_eq!(r.counts.completed, 100);
    assert_eq!(r.counts.errors_total(), 0);
    // 100 requests, 10 a connection: 10 connections, the first a connect,
    // the other 9 reconnects.
    assert_eq!(r.connections_established, 1);
    assert_eq!(r.reconnects, 9);
    assert_eq!(r.counts.connects, 10);
    assert!(r.keep_alive);
    let conns = seen(&server);
    assert_eq!(conns.len(), 10);
    assert!(conns.iter().all(|c| *c == full(10)), "{conns:?}");
}

/// Requests mode splits the count over threads, one connection each here:
/// 50 a connection slot, 7 a connection: 7 full connections and one
/// carrying the 50th alone, which the run's end closes, never asking to.
#[test]
fn a_limit_that_does_not_divide_the_count() {
    let server = Server::start(honour_close);
    let mut spec = limited(&server, 100, 7);
    spec.connections = 2;
    spec.threads = 2;
    let r = run(&spec);
    assert_eq!(r.counts.completed, 100);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.connections_established, 2);
    assert_eq!(r.reconnects, 14);
    let mut conns = seen(&server);
    conns.sort_by_key(Vec::len);
    assert_eq!(conns.len(), 16);
    assert_eq!(conns[..2], [vec![false], vec![false]]);
    assert!(conns[2..].iter().all(|c| *c == full(7)), "{conns:?}");
}

/// A server that ignores `Connection: close` does not hold the client,
/// which closes the connection itself once the last request is answered.
#[test]
fn the_client_closes_even_when_the_server_does_not() {
    let server = Server::start(ignore_close);
    let r = run(&limited(&server, 20, 5));
    assert_eq!(r.counts.completed, 20);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.reconnects, 3);
    let conns = seen(&server);
    assert_eq!(conns.len(), 4);
    assert!(conns.iter().all(|c| *c == full(5)), "{conns:?}");
}

/// A limit of one is `keep_alive = false`: the same requests on the wire,
/// the same connections.
#[test]
fn one_request_per_connection_is_close_mode() {
    let server = Server::start(honour_close);
    let rpc = run(&limited(&server, 20, 1));
    let mut spec = server.spec();
    spec.stop = Stop::Requests(20);
    spec.keep_alive = false;
    let close = run(&spec);
    for r in [&rpc, &close] {
        assert_eq!(r.counts.completed, 20);
        assert_eq!(r.counts.errors_total(), 0);
        assert_eq!((r.counts.connects, r.reconnects), (20, 19));
    }
    assert_eq!(rpc.counts.bytes_written, close.counts.bytes_written);
    assert!(rpc.keep_alive && !close.keep_alive);
    let conns = seen(&server);
    assert_eq!(conns.len(), 40);
    assert!(conns.iter().all(|c| *c == [true]), "{conns:?}");
}

/// A pipeline as deep as the limit: each connection gets its requests in
/// one go, the last asking to close, and nothing is written after it.
#[test]
fn a_pipeline_ends_with_the_connections_last_request() {
    let server = Server::start(honour_close);
    let mut spec = limited(&server, 64, 8);
    spec.pipeline = 8;
    let r = run(&spec);
    assert_eq!(r.counts.completed, 64);
    assert_eq!(r.counts.sent, 64);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.reconnects, 7);
    let conns = seen(&server);
    assert_eq!(conns.len(), 8);
    assert!(conns.iter().all(|c| *c == full(8)), "{conns:?}");
}

/// The open model sends on a schedule, but the limit is the same.
#[test]
fn the_open_model_keeps_the_limit() {
    let server = Server::start(honour_close);
    let mut spec = limited(&server, 20, 5);
    spec.rate = Some(2000.0);
    let r = run(&spec);
    assert_eq!(r.counts.completed, 20);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.reconnects, 3);
    let conns = seen(&server);
    assert_eq!(conns.len(), 4);
    assert!(conns.iter().all(|c| *c == full(5)), "{conns:?}");
}

/// A session's connections outlive its windows, and so does their count:
/// every window goes on reconnecting as the limit says, with no error.
#[test]
fn a_session_keeps_the_limit_across_windows() {
    let server = Server::start(answer);
    let mut spec = server.spec();
    spec.connections = 2;
    spec.stop = Stop::Duration(Duration::from_secs(1));
    spec.requests_per_connection = Some(3);
    let mut session = Session::open(&spec).unwrap();
    for k in 0..3 {
        let r = session
            .window(Duration::ZERO, Duration::from_millis(100), &Control::new())
            .unwrap();
        assert!(r.counts.completed > 3, "window {k}");
        assert_eq!(r.counts.errors_total(), 0, "window {k}");
        assert!(r.reconnects > 0, "window {k}");
    }
}
