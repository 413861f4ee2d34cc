//! A pipelined connection is refilled in batches: once half its depth has
//! been answered, the missing half goes out in one write. Topping up each
//! answer instead settles into a write, a server read and a client read per
//! response, which is what made a pipelined response cost the client more
//! than wrk's. Checked on both I/O backends against a server that answers
//! every request the moment it has it, one write per response, and counts
//! the requests each of its reads brought.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use throng_engine::{Control, IoBackend, LoadSpec, Stop, Warning};

use throng_testkit::http::{Server, OK};

/// A server that answers every request the moment it has it, one write
/// per response (Nagle off: it would hold each second one back for the
/// client's delayed ACK), and keeps the number of whole requests each of
/// its reads brought.
fn counting_server() -> (Server, Arc<Mutex<Vec<usize>>>) {
    let batches = Arc::new(Mutex::new(Vec::new()));
    let seen = batches.clone();
    let server = Server::start(move |mut c| {
        while let Some(batch) = c.next_batch() {
            seen.lock().unwrap().push(batch.len());
            for _ in batch {
                if !c.send(OK) {
                    return;
                }
            }
        }
    });
    (server, batches)
}

fn spec(addr: SocketAddr, io: IoBackend, depth: usize, requests: u64) -> LoadSpec {
    let mut spec = common::spec_to(addr);
    spec.io = io;
    spec.pipeline = depth;
    spec.stop = Stop::Requests(requests);
    spec.timeout = Duration::from_secs(5);
    spec
}

fn batches_of(io: IoBackend, depth: usize, requests: u64) -> Vec<usize> {
    let (server, batches) = counting_server();
    let r = throng_engine::run(&spec(server.addr, io, depth, requests), &Control::new()).unwrap();
    assert_eq!(r.counts.completed, requests);
    assert_eq!(r.counts.sent, requests);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.counts.connects, 1);
    let fell_back = r
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::UringUnavailable { .. }));
    // Each batch was counted before its answers went out, so before the
    // run could end.
    let batches = batches.lock().unwrap().clone();
    assert_eq!(batches.iter().sum::<usize>() as u64, requests);
    if fell_back {
        println!("skipped on io_uring: the kernel gives no ring");
        return Vec::new();
    }
    batches
}

/// Every read but the last brought at least `least` requests: a refill
/// is never less than half the depth (more when one read of the client's
/// took several answers), and two may reach the server's one read
/// together. The last may be short: the run's quota ran out.
fn refills_at_least(io: IoBackend, depth: usize, least: usize) {
    let batches = batches_of(io, depth, 1_000);
    if batches.is_empty() {
        return;
    }
    assert_eq!(
        batches[0], depth,
        "{io:?}: the first write fills the pipeline"
    );
    let (_, refills) = batches.split_last().unwrap();
    assert!(
        refills.iter().all(|b| *b >= least),
        "{io:?}, depth {depth}: reads of {batches:?}"
    );
    // Not one refill per answer: about a read per half depth.
    assert!(
        batches.len() <= 1_000 / least + 1,
        "{io:?}: {} reads",
        batches.len()
    );
}

#[test]
fn a_pipeline_is_refilled_half_a_depth_at_a_time() {
    for io in [IoBackend::Epoll, IoBackend::Uring] {
        refills_at_least(io, 8, 4);
        // An odd depth refills when at most half of it, rounded down, is
        // left in flight.
        refills_at_least(io, 5, 3);
        refills_at_least(io, 16, 8);
    }
}

#[test]
fn a_depth_of_two_still_tops_up_each_answer() {
    let batches = batches_of(IoBackend::Epoll, 2, 300);
    assert_eq!(batches[0], 2);
    assert_eq!(batches.iter().sum::<usize>(), 300);
    assert!(batches.iter().all(|b| *b <= 2), "{batches:?}");
}
