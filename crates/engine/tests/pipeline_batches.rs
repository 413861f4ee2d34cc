//! A pipelined connection is refilled in batches: once half its depth has
//! been answered, the missing half goes out in one write. Topping up each
//! answer instead settles into a write, a server read and a client read per
//! response, which is what made a pipelined response cost the client more
//! than wrk's. Checked on both I/O backends against a server that answers
//! every request the moment it has it, one write per response, and counts
//! the requests each of its reads brought.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;
use std::time::Duration;

mod common;

use throng_engine::{Control, IoBackend, LoadSpec, Stop, Warning};

use common::OK;

/// Serves one connection; returns the number of whole requests each read
/// completed.
fn serve_one(listener: TcpListener) -> JoinHandle<Vec<usize>> {
    std::thread::spawn(move || {
        // The engine's reachability check connects and closes first.
        let mut batches = Vec::new();
        for stream in listener.incoming() {
            let mut s = stream.unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // One write per response: Nagle would hold each second one back
            // for the client's delayed ACK.
            s.set_nodelay(true).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                let mut whole = 0;
                while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    buf.drain(..end + 4);
                    whole += 1;
                }
                if whole > 0 {
                    batches.push(whole);
                }
                for _ in 0..whole {
                    if s.write_all(OK).is_err() {
                        return batches;
                    }
                }
            }
            if !batches.is_empty() {
                return batches;
            }
        }
        batches
    })
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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = serve_one(listener);
    let r = throng_engine::run(&spec(addr, io, depth, requests), &Control::new()).unwrap();
    assert_eq!(r.counts.completed, requests);
    assert_eq!(r.counts.sent, requests);
    assert_eq!(r.counts.errors_total(), 0, "{:?}", r.counts.errors);
    assert_eq!(r.counts.connects, 1);
    let fell_back = r
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::UringUnavailable { .. }));
    let batches = server.join().unwrap();
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
