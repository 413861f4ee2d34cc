//! The open model kept in ticks: the requests whose even spacing falls in
//! a tick reach the server together as it starts, a window sends exactly
//! those spaced within it, and a warmup owns the ticks that start in it.
//! The server notes when each request arrives; the schedule is known, so
//! each figure is too.
//!
//! 400 requests a second over 4 connections: each connection's requests
//! are 10 ms apart, staggered 2.5 ms, so the run's requests are spaced at
//! k × 2.5 ms from the window's start. In ticks of 50 ms, tick j carries
//! k = 20j … 20j + 19.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use throng_engine::{run, Control, IoBackend, LoadResult, Stop};
use throng_testkit::http::{Server, OK};

mod common;

const TICK: Duration = Duration::from_millis(50);

/// A server answering at once, and the instants its requests arrived.
fn noting() -> (Server, Arc<Mutex<Vec<Instant>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = Server::answering(move |_| {
        log.lock().unwrap().push(Instant::now());
        OK.to_vec()
    });
    (server, seen)
}

fn load(io: IoBackend, warmup: Duration, measured: Duration) -> (LoadResult, Vec<Instant>) {
    let (server, seen) = noting();
    let mut spec = common::spec_to(server.addr);
    spec.io = io;
    spec.connections = 4;
    spec.rate = Some(400.0);
    spec.tick = Some(TICK);
    spec.warmup = warmup;
    spec.stop = Stop::Duration(measured);
    spec.timeout = Duration::from_secs(5);
    let r = run(&spec, &Control::new()).unwrap();
    drop(server);
    let mut arrivals = seen.lock().unwrap().clone();
    arrivals.sort();
    (r, arrivals)
}

/// The arrivals in bursts: a gap of more than half a tick starts a new one.
fn bursts(arrivals: &[Instant]) -> Vec<usize> {
    let mut sizes = vec![];
    let mut last: Option<Instant> = None;
    for &t in arrivals {
        match last {
            Some(l) if t - l <= TICK / 2 => *sizes.last_mut().unwrap() += 1,
            _ => sizes.push(1),
        }
        last = Some(t);
    }
    sizes
}

fn backends() -> Vec<IoBackend> {
    let mut io = vec![IoBackend::Epoll];
    match io_uring::IoUring::new(8) {
        Ok(_) => io.push(IoBackend::Uring),
        Err(e) => println!("io_uring skipped: the kernel gives no ring: {e}"),
    }
    io
}

#[test]
fn a_ticks_requests_arrive_together_and_the_window_sends_what_it_spaced() {
    for io in backends() {
        // 975 ms: spaced at 0 … 972.5 ms, 390 requests; the last tick
        // starts at 950 ms and carries only the 10 spaced before the end.
        let (r, arrivals) = load(io, Duration::ZERO, Duration::from_millis(975));
        assert_eq!(r.counts.sent, 390, "{io:?}");
        assert_eq!(r.counts.completed, 390, "{io:?}");
        assert_eq!(r.counts.errors_total(), 0, "{io:?}: {:?}", r.counts.errors);
        let rate = r.rate.as_ref().unwrap();
        assert_eq!(rate.unsent, 0, "{io:?}");
        assert_eq!(rate.tick_us, Some(50_000));
        assert_eq!(arrivals.len(), 390, "{io:?}");
        let mut expected = vec![20; 19];
        expected.push(10);
        assert_eq!(bursts(&arrivals), expected, "{io:?}");
        // Every send left within its tick: a connection carries one
        // request at a time, so a tick's five on one connection go one
        // answer apart, from the tick's start.
        assert!(rate.lateness.max() < TICK.as_micros() as u64, "{io:?}");
    }
}

#[test]
fn on_epoll_a_tick_naps_while_its_answers_are_awaited() {
    // epoll cannot wait for a count of answers: after a tick's sends the
    // thread naps a quarter of the tick at a time while answers are
    // awaited, then waits for the next tick. Here each connection carries
    // five of a tick's twenty, one at a time, so the first four answers
    // of each are worth a wake and only the fifth is napped on: a tick
    // takes one nap, none when its last answer came while the thread was
    // still busy with the one before, and up to four if its answers are
    // slow. Without the naps, the thread waits on epoll and no nap is
    // counted.
    let (r, arrivals) = load(IoBackend::Epoll, Duration::ZERO, Duration::from_millis(975));
    assert_eq!((r.counts.sent, r.counts.completed), (390, 390));
    assert_eq!(arrivals.len(), 390);
    assert!((10..=80).contains(&r.naps), "{} naps", r.naps);
    // A connection's five went out one answer apart, not a nap apart.
    let rate = r.rate.as_ref().unwrap();
    assert!(
        rate.lateness.max() < 12_500,
        "{} µs late",
        rate.lateness.max()
    );
}

#[test]
fn a_warmup_owns_the_ticks_that_start_in_it() {
    for io in backends() {
        // A 75 ms warmup: ticks at 0 and 50 ms are its (40 requests); the
        // measured phase has the ticks from 100 ms to the end at 975 ms,
        // the 350 requests spaced from 100 to 972.5 ms.
        let (r, arrivals) = load(io, Duration::from_millis(75), Duration::from_millis(900));
        assert_eq!(r.counts.sent, 350, "{io:?}");
        assert_eq!(r.counts.completed, 350, "{io:?}");
        assert_eq!(r.counts.errors_total(), 0, "{io:?}: {:?}", r.counts.errors);
        assert_eq!(r.warmup.map(|w| w.completed), Some(40), "{io:?}");
        assert_eq!(r.rate.as_ref().unwrap().unsent, 0, "{io:?}");
        assert_eq!(arrivals.len(), 390, "{io:?}");
        assert_eq!(bursts(&arrivals).len(), 20, "{io:?}");
    }
}

#[test]
fn a_tick_is_a_rates_and_of_a_sane_length() {
    let (server, _) = noting();
    let mut spec = common::spec_to(server.addr);
    spec.tick = Some(TICK);
    assert_eq!(
        spec.validate(),
        Err(throng_engine::SpecError::TickWithoutRate)
    );
    spec.rate = Some(100.0);
    for bad in [
        Duration::ZERO,
        Duration::from_nanos(999),
        Duration::from_millis(1_001),
    ] {
        spec.tick = Some(bad);
        assert_eq!(spec.validate(), Err(throng_engine::SpecError::Tick(bad)));
    }
    spec.tick = Some(Duration::from_secs(1));
    assert_eq!(spec.validate(), Ok(()));
}
