//! httperf's figures the engine keeps: each connection's life from its
//! connect to its close, the bytes of each reply that are not body, and
//! sessions by the requests of theirs answered; against a server whose
//! answers take a known time and have a known head.

use std::time::Duration;

use throng_engine::users::{Arrival, Page, Script, Think, Users};
use throng_engine::{run, Control, LoadSpec, Stop, Target};
use throng_testkit::http::{Conn, Server};

const SLOW: Duration = Duration::from_millis(100);
/// `HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n`.
const HEAD: u64 = 38;

/// `/slow` after 100 ms, `/fail` a 500 at once, anything else at once.
fn serve(mut c: Conn) {
    while let Some(req) = c.next_request() {
        if c.body().is_none() {
            return;
        }
        if req.path == "/slow" {
            std::thread::sleep(SLOW);
        }
        let reply: &[u8] = if req.path == "/fail" {
            b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        };
        if !c.send(reply) {
            return;
        }
    }
}

fn sessions(server: &Server, paths: &[&str], pages: &[u32], sessions: u64) -> LoadSpec {
    let addr = server.addr;
    let targets = paths
        .iter()
        .map(|p| {
            Target::new(
                addr,
                addr.to_string(),
                p.to_string(),
                format!("http://{addr}{p}"),
            )
        })
        .collect();
    let mut spec = LoadSpec::new(targets);
    spec.threads = 1;
    spec.connections = 1;
    spec.timeout = Duration::from_secs(5);
    spec.users = Some(Users {
        scripts: vec![Script {
            pages: pages
                .iter()
                .map(|&request| Page {
                    request,
                    burst: Vec::new(),
                    think: None,
                })
                .collect(),
        }],
        arrival: Arrival::Population,
        conns_per_user: 1,
        think: Think::Fixed(Duration::ZERO),
    });
    spec.stop = Stop::Requests(sessions);
    spec
}

#[test]
fn a_connection_lives_from_its_connect_to_its_close() {
    let server = Server::start(serve);
    // httperf's --wsesslog with sessions of one request: each on its own
    // connection, closed by the client once answered.
    let r = run(&sessions(&server, &["/slow"], &[0], 3), &Control::new()).unwrap();
    assert_eq!(r.counts.completed, 3);
    assert_eq!(r.counts.connects, 3);
    let life = r.connection_time.expect("measured");
    assert_eq!(life.len(), 3);
    // Each lives the server's 100 ms and the exchange around it, which on
    // loopback is well under 50 ms.
    let slow = SLOW.as_micros() as u64;
    assert!(life.min() >= slow, "{} µs", life.min());
    assert!(life.max() < slow + 50_000, "{} µs", life.max());
    assert_eq!((r.counts.head_replies, r.counts.head_bytes), (3, 3 * HEAD));
    assert_eq!(r.counts.body_bytes, 6);
    let s = r.sessions.expect("sessions");
    assert_eq!(s.lengths, [0, 3]);
}

#[test]
fn a_failed_session_counts_the_requests_answered_before_it_failed() {
    let server = Server::start(serve);
    // Two pages: /a answers, /fail is a 500, which fails the session.
    let r = run(
        &sessions(&server, &["/a", "/fail"], &[0, 1], 2),
        &Control::new(),
    )
    .unwrap();
    assert_eq!(r.counts.completed, 4);
    let s = r.sessions.expect("sessions");
    assert_eq!((s.counts.completed, s.counts.failed), (0, 2));
    assert_eq!(s.lengths, [0, 2]);
    // Every reply's head, the 500's too.
    assert_eq!(
        (r.counts.head_replies, r.counts.head_bytes),
        (4, 2 * HEAD + 2 * (HEAD + 2))
    );
    assert_eq!(r.connection_time.expect("measured").len(), 2);
}
