//! A TLS server's close_notify says it will send nothing more: the
//! connection ends there, as at its FIN, whether or not the FIN follows.
//! A server may keep TCP open after it, waiting for the client's own
//! close_notify; a client that waits for the FIN instead leaves its next
//! request unanswered until the request's timeout, charged to nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use throng_engine::{run, Control, LoadResult, LoadSpec, Stop};
use throng_testkit::http::{self, Conn};
use throng_testkit::wait::wait_for;

mod common;

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// What the server does once it has answered a connection's first request.
#[derive(Clone, Copy)]
enum After {
    /// close_notify at once, TCP left open.
    Notify,
    /// close_notify once the next request has come, unanswered.
    NotifyPending,
    /// Every answer's body ends at the close (no length, `Connection:
    /// close`): TCP closed after it, with a close_notify before or not.
    BodyToClose { notify: bool },
}

/// The body of an `After::BodyToClose` answer.
const TO_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nread until the close";

/// A rustls server on loopback that answers one request per connection,
/// then closes TLS but not TCP, holding every connection until dropped.
struct Server(http::Server);

/// Reads one request head; false when the client closed or went quiet.
fn request(tls: &mut rustls::StreamOwned<rustls::ServerConnection, TcpStream>) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tls.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

fn serve(cfg: Arc<rustls::ServerConfig>, c: Conn, after: After) {
    let (tcp, stop) = (c.stream, c.stop);
    tcp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let conn = rustls::ServerConnection::new(cfg).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    if let After::BodyToClose { notify } = after {
        if request(&mut tls) && tls.write_all(TO_CLOSE).is_ok() {
            if notify {
                tls.conn.send_close_notify();
            }
            let _ = tls.flush();
        }
        // Dropped: the FIN.
        return;
    }
    // The check before the load makes a handshake and no request.
    if !request(&mut tls) || tls.write_all(ANSWER).is_err() {
        return;
    }
    if let After::NotifyPending = after {
        if !request(&mut tls) {
            return;
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
    // TCP stays open: no FIN until the test ends.
    wait_for(Duration::from_secs(20), || stop.load(Ordering::Relaxed));
}

impl Server {
    fn start(after: After) -> Server {
        let cfg = common::tls_server_config();
        Server(http::Server::start(move |c| serve(cfg.clone(), c, after)))
    }

    fn spec(&self, stop: Stop) -> LoadSpec {
        common::https_spec(self.0.addr, stop)
    }
}

fn load(spec: &LoadSpec) -> LoadResult {
    run(spec, &Control::new()).unwrap()
}

#[test]
fn a_close_notify_with_no_request_waiting_ends_the_connection_at_once() {
    // One answer per connection, then close_notify: an idle connection
    // closed by its server, no error, and the next one opened at once.
    // Waiting for a FIN that never came, each connection sat out the 3 s
    // timeout: one answer in the second.
    let server = Server::start(After::Notify);
    let r = load(&server.spec(Stop::Duration(Duration::from_secs(1))));
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert!(
        r.counts.completed >= 20,
        "{} answers in a second",
        r.counts.completed
    );
}

#[test]
fn a_close_notify_with_a_request_waiting_sends_it_again_at_once() {
    // The second request of each connection meets the close_notify. The
    // connection answered one first, so the request goes out again on a
    // fresh one (RFC 9112 §9.3.1), as at a FIN, at once: not a `timeout`
    // 3 s later. Each connection answers one request: 6 connections.
    let server = Server::start(After::NotifyPending);
    let started = Instant::now();
    let r = load(&server.spec(Stop::Requests(6)));
    let took = started.elapsed();
    assert_eq!(r.counts.completed, 6, "{:?}", r.counts.errors);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.counts.sent, 6);
    assert_eq!(r.counts.resent, 5);
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_close_notify_with_a_post_waiting_fails_it_as_closed_at_once() {
    // A POST is not sent twice on the client's own judgement (RFC 9112
    // §9.3.1): it is `closed`, at once, not a `timeout` 3 s later.
    let server = Server::start(After::NotifyPending);
    let mut spec = server.spec(Stop::Requests(6));
    spec.method = "POST".into();
    let started = Instant::now();
    let r = load(&spec);
    let took = started.elapsed();
    assert_eq!(r.counts.completed, 3, "{:?}", r.counts.errors);
    assert_eq!(r.counts.error(throng_engine::ErrorKind::Closed), 3);
    assert_eq!(r.counts.errors_total(), 3);
    assert_eq!(r.counts.resent, 0);
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_body_ended_by_the_close_is_whole_only_after_a_close_notify() {
    // RFC 9112 §9.8: over TLS, a body with no length is complete only if
    // the server's close_notify came before the close; a bare FIN may cut
    // it short unseen. Both servers send the same bytes.
    for (notify, completed, closed) in [(true, 5, 0), (false, 0, 5)] {
        let server = Server::start(After::BodyToClose { notify });
        let mut spec = server.spec(Stop::Requests(5));
        spec.keep_alive = false;
        let r = load(&spec);
        assert_eq!(
            r.counts.completed, completed,
            "notify {notify}: {:?}",
            r.counts.errors
        );
        assert_eq!(
            r.counts.error(throng_engine::ErrorKind::Closed),
            closed,
            "notify {notify}"
        );
        assert_eq!(
            r.counts.errors_total(),
            closed,
            "notify {notify}: {:?}",
            r.counts.errors
        );
        assert_eq!(r.counts.sent, 5);
    }
}
