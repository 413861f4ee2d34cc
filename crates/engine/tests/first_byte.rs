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

/// `n` requests over one connection to a server that answers as `play`
/// does: the run, every one completed, and its first bytes.
fn one_connection(
    play: fn(&mut Peer),
    n: u64,
) -> (throng_engine::LoadResult, hdrhistogram::Histogram<u64>) {
    let server = Server::start(play);
    let mut spec = server.spec();
    spec.connections = 1;
    spec.stop = Stop::Requests(n);
    let r = throng_engine::run(&spec, &Control::new()).unwrap();
    assert_eq!(r.counts.completed, n);
    let first = r.first_byte.clone().expect("every run has first bytes");
    (r, first)
}

#[test]
fn the_first_byte_is_the_headers_and_the_latency_the_body() {
    let (r, first) = one_connection(headers_then_body, 4);
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

/// How long the body of every other answer waits after its headers.
const SPLIT_AFTER: Duration = Duration::from_millis(40);

/// Answers in one write and in two, in turn.
fn whole_then_split(p: &mut Peer) {
    for n in 0.. {
        let sent = if n % 2 == 0 {
            p.stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                .is_ok()
        } else {
            p.stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
                .is_ok()
                && {
                    // The split is what the test measures, not a wait for
                    // anything to happen.
                    std::thread::sleep(SPLIT_AFTER);
                    p.stream.write_all(b"hello").is_ok()
                }
        };
        if !sent || !p.request() {
            break;
        }
    }
}

/// The values recorded below `under` µs, each with its count.
fn below(h: &hdrhistogram::Histogram<u64>, under: u64) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .filter(|&(v, _)| v < under)
        .collect()
}

/// An answer that comes whole has one time for its first byte and its
/// last, kept once for both (driver/stats.rs): each histogram still holds
/// every answer, the whole ones' times in both alike.
#[test]
fn answers_that_come_whole_are_in_the_first_byte_and_the_latency_alike() {
    let (r, first) = one_connection(whole_then_split, 6);
    assert_eq!((first.len(), r.latency.len()), (6, 6));
    let split_us = SPLIT_AFTER.as_micros() as u64;
    // Every first byte is a head sent at once.
    assert!(first.max() < split_us / 2, "first byte max {}", first.max());
    // Three answers waited for their bodies; the three whole ones have the
    // same times in both histograms.
    assert_eq!(r.latency.count_between(split_us, u64::MAX), 3);
    let whole = below(&r.latency, split_us / 2);
    assert_eq!(whole.iter().map(|&(_, n)| n).sum::<u64>(), 3, "{whole:?}");
    let firsts = below(&first, split_us / 2);
    // A split answer's head may share a whole one's microsecond: at least
    // as many first bytes at each whole answer's time.
    assert!(
        whole
            .iter()
            .all(|&(v, n)| firsts.iter().any(|&(f, m)| f == v && m >= n)),
        "whole answers' latencies {whole:?} not all among the first bytes {firsts:?}"
    );
}
