//! A server may answer a request before it has read all of it (a 413 to
//! an upload larger than it accepts) and then either close, which sends a
//! reset since part of the upload is unread, or keep the connection and
//! read no further. Either way the answer counts, exactly once, and the
//! connection is not used again: the rest of the upload cannot follow on
//! it. The uploads here are larger than both ends' socket buffers, so the
//! client is still writing when the answer comes.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::{Peer, Server, Tally};
use throng_engine::{run, Control, ErrorKind, LoadResult, Stop};

const TOO_LARGE: &[u8] = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n";

/// Answers the head and closes with the body unread: a reset follows the
/// answer, and the client's next write meets it.
fn refuse_and_close(p: &mut Peer) {
    let _ = p.stream.write_all(TOO_LARGE);
}

/// Answers the head and reads no further, leaving the connection open.
fn refuse_and_stall(p: &mut Peer) {
    let _ = p.stream.write_all(TOO_LARGE);
    p.stall();
}

/// 12 uploads of 32 MiB over 2 connections; the timeout is far longer
/// than the run may take.
fn uploads(play: fn(&mut Peer)) -> (LoadResult, Duration, u64) {
    let server = Server::start(play);
    let mut spec = server.spec();
    spec.connections = 2;
    spec.stop = Stop::Requests(12);
    spec.timeout = Duration::from_secs(3);
    spec.method = "POST".into();
    spec.body = Some(vec![b'x'; 32 << 20]);
    let started = Instant::now();
    let r = run(&spec, &Control::new()).unwrap();
    let took = started.elapsed();
    let answered = Tally::get(&server.tally.requests);
    (r, took, answered)
}

fn assert_each_answer_counted_once(r: &LoadResult, heads_read: u64) {
    assert_eq!((r.counts.sent, r.counts.completed), (12, 12));
    assert_eq!(r.counts.status, [(413, 12)]);
    // A 413 is not a status the load expects: each is an error of its
    // own, and nothing else failed.
    assert_eq!(r.counts.error(ErrorKind::Status), 12);
    assert_eq!(r.counts.errors_total(), 12);
    assert_eq!(r.in_flight_at_end, 0);
    // One request a connection: each answer ended its connection.
    assert_eq!(heads_read, 12);
}

#[test]
fn an_answer_ahead_of_the_reset_a_write_meets_is_taken() {
    let (r, took, answered) = uploads(refuse_and_close);
    assert_each_answer_counted_once(&r, answered);
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn an_answer_to_an_upload_still_being_sent_ends_its_connection() {
    // Waiting on the connection instead (for the upload's send to finish,
    // which it never does) would hold each request until its timeout:
    // 6 × 3 s here.
    let (r, took, answered) = uploads(refuse_and_stall);
    assert_each_answer_counted_once(&r, answered);
    assert!(took < Duration::from_secs(3), "took {took:?}");
}
