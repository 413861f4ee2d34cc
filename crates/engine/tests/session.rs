//! A session keeps its connections open, idle, between its windows: the
//! server sees them once, nothing goes out while no window runs, what a
//! server closes meanwhile is reopened quietly, and every window ends on
//! time whatever the server does.

mod common;

use std::io::ErrorKind as IoErrorKind;
use std::time::{Duration, Instant};

use common::{answer, Peer, Server, Tally};
use throng_engine::{Control, Drain, EngineError, LoadResult, Session, Stop};

/// How far past its bound a window may end (see `bounded.rs`).
const SLACK: Duration = Duration::from_millis(if cfg!(debug_assertions) { 300 } else { 100 });
const WAIT: Duration = Duration::from_secs(5);

fn session_spec(server: &Server, connections: usize, threads: usize) -> throng_engine::LoadSpec {
    let mut spec = server.spec();
    spec.connections = connections;
    spec.threads = threads;
    spec.stop = Stop::Duration(Duration::from_secs(1));
    spec
}

// The lab may hand a session to another thread between its windows.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Session>();
};

fn answered_in(r: &LoadResult) -> u64 {
    r.counts.completed + r.warmup.map_or(0, |w| w.completed)
}

/// The first connection that sends a request gets no answer, ever; the
/// others are answered.
fn stall_first(p: &mut Peer) {
    if p.index > 0 {
        return answer(p);
    }
    while p.request() {}
}

#[test]
fn connections_stay_open_and_idle_between_windows() {
    const N: u64 = 4;
    let server = Server::start(answer);
    let t = &server.tally;
    let mut session = Session::open(&session_spec(&server, N as usize, 2)).unwrap();
    let mut answered = 0;
    for k in 0..3 {
        let r = session
            .window(
                Duration::from_millis(50),
                Duration::from_millis(200),
                &Control::new(),
            )
            .unwrap();
        let drain = session.drained();
        assert!(!r.interrupted);
        assert_eq!(r.duration_s, 0.2);
        assert_eq!(r.threads, 2);
        assert_eq!(r.connections_established, N);
        assert_eq!(r.reconnects, 0, "window {k}");
        assert_eq!(r.counts.connects, 0, "window {k}");
        assert_eq!(r.counts.errors_total(), 0, "window {k}");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(r.counts.completed > 0);
        assert!(r.warmup.unwrap().completed > 0);
        // Every request in flight at the end was answered in the drain.
        assert_eq!(drain.responses, r.in_flight_at_end, "window {k}");
        assert_eq!(drain.abandoned, 0);
        answered += answered_in(&r) + drain.responses;
        // Everything the server read, the client read back.
        assert_eq!(Tally::get(&t.requests), answered, "window {k}");

        // Between windows nothing goes out: watched for 100 ms.
        let before = (Tally::get(&t.requests), Tally::get(&t.accepted));
        let moved = t.wait_until(Duration::from_millis(100), |t| {
            (Tally::get(&t.requests), Tally::get(&t.accepted)) != before
        });
        assert!(!moved, "the server heard from the client between windows");
    }
    // The N connections carried every request; the one more accepted is
    // the reachability check, which sends nothing and is the only one
    // closed.
    assert_eq!(Tally::get(&t.used), N);
    assert_eq!(Tally::get(&t.accepted), N + 1);
    assert!(t.wait_until(WAIT, |t| Tally::get(&t.client_closed) == 1));
}

#[test]
fn connections_the_server_closes_between_windows_are_reopened_quietly() {
    const N: u64 = 3;
    let server = Server::start(answer);
    let t = &server.tally;
    let mut session = Session::open(&session_spec(&server, N as usize, 1)).unwrap();
    for round in 1..=2u64 {
        let r = session
            .window(Duration::ZERO, Duration::from_millis(150), &Control::new())
            .unwrap();
        assert_eq!(r.counts.errors_total(), 0);
        assert_eq!(r.reconnects, if round == 1 { 0 } else { N });
        assert_eq!(r.counts.connects, r.reconnects);
        assert_eq!(r.connections_established, N);
        assert!(r.counts.completed > 0);
        assert_eq!(session.drained().abandoned, 0);

        // The server's keep-alive timeout, while no window runs.
        t.close_idle
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(t.wait_until(WAIT, |t| Tally::get(&t.closed_idle) == round * N));
    }
    let r = session
        .window(Duration::ZERO, Duration::from_millis(150), &Control::new())
        .unwrap();
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.reconnects, N);
    assert!(r.counts.completed > 0);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // N at the start and N after each of the two closes; plus the
    // reachability check.
    assert_eq!(Tally::get(&t.used), 3 * N);
    assert_eq!(Tally::get(&t.accepted), 3 * N + 1);
}

/// A window's measured time in the stalled-response tests.
const MEASURE: Duration = Duration::from_millis(200);
/// The drain's bound: the timeout, but at most a second.
const DRAIN: Duration = Duration::from_secs(1);

/// One connection to a server that never answers its first request, with
/// a timeout above the drain's bound.
fn stalled_session() -> (Server, Session) {
    let server = Server::start(stall_first);
    let mut spec = session_spec(&server, 1, 1);
    spec.timeout = Duration::from_secs(2);
    let session = Session::open(&spec).unwrap();
    (server, session)
}

#[test]
fn a_stalled_response_holds_a_window_no_longer_than_its_drain() {
    let (server, mut session) = stalled_session();

    let started = Instant::now();
    let r = session
        .window(Duration::ZERO, MEASURE, &Control::new())
        .unwrap();
    let took = started.elapsed();
    assert!(took >= MEASURE + DRAIN, "took {took:?}");
    assert!(took <= MEASURE + DRAIN + SLACK, "took {took:?}");
    assert_eq!(
        (r.counts.sent, r.counts.completed, r.in_flight_at_end),
        (1, 0, 1)
    );
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(
        session.drained(),
        Drain {
            responses: 0,
            abandoned: 1
        }
    );

    // The stalled connection was closed; the next window opens another,
    // which the server answers.
    let r = session
        .window(Duration::ZERO, MEASURE, &Control::new())
        .unwrap();
    assert_eq!(r.reconnects, 1);
    assert_eq!(r.counts.errors_total(), 0);
    assert!(r.counts.completed > 0);
    assert_eq!(session.drained().abandoned, 0);
    assert!(server
        .tally
        .wait_until(WAIT, |t| Tally::get(&t.client_closed) == 2));
    assert_eq!(Tally::get(&server.tally.used), 2);
}

#[test]
fn a_window_s_figures_can_leave_before_its_drain_and_the_drain_is_still_counted() {
    let (_server, mut session) = stalled_session();

    let started = Instant::now();
    let r = session
        .window_unsettled(Duration::ZERO, MEASURE, &Control::new())
        .unwrap();
    let figures = started.elapsed();
    // The figures come at the window's end, not the drain's.
    assert!(figures >= MEASURE, "took {figures:?}");
    assert!(figures <= MEASURE + SLACK, "took {figures:?}");
    assert_eq!(
        (r.counts.sent, r.counts.completed, r.in_flight_at_end),
        (1, 0, 1)
    );
    // Settling waits for the drain, bounded as before.
    session.settle();
    let settled = started.elapsed();
    assert!(settled >= MEASURE + DRAIN, "took {settled:?}");
    assert!(settled <= MEASURE + DRAIN + SLACK, "took {settled:?}");
    assert_eq!(
        session.drained(),
        Drain {
            responses: 0,
            abandoned: 1
        }
    );

    // A window asked for while a drain is under way starts after it:
    // nothing of the last window overlaps the next.
    let r = session
        .window_unsettled(Duration::ZERO, MEASURE, &Control::new())
        .unwrap();
    assert_eq!(r.reconnects, 1);
    assert_eq!(r.counts.errors_total(), 0);
    let started = Instant::now();
    let r2 = session
        .window(Duration::ZERO, MEASURE, &Control::new())
        .unwrap();
    assert!(
        started.elapsed() <= MEASURE + SLACK,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r2.counts.errors_total(), 0);
    assert_eq!(session.drained().abandoned, 0);
}

#[test]
fn a_stopped_window_ends_at_once_and_the_next_one_runs() {
    let server = Server::start(answer);
    let t = server.tally.clone();
    let mut session = Session::open(&session_spec(&server, 1, 1)).unwrap();
    let control = Control::new();
    let stopper = control.clone();
    let stopped_at = std::thread::spawn(move || {
        let answered = t.wait_until(WAIT, |t| Tally::get(&t.answered) >= 100);
        stopper.stop();
        assert!(answered, "the server answered too few requests");
        Instant::now()
    });
    let r = session
        .window(Duration::ZERO, Duration::from_secs(30), &control)
        .unwrap();
    let ended = Instant::now();
    let stopped_at = stopped_at.join().unwrap();
    assert!(ended - stopped_at <= SLACK, "{:?}", ended - stopped_at);
    assert!(r.interrupted);
    assert!(r.duration_s < 30.0);
    assert!(r.counts.completed >= 99, "{}", r.counts.completed);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.counts.sent, r.counts.completed + r.in_flight_at_end);
    // A stop skips the drain: what was in flight is closed.
    let drain = session.drained();
    assert_eq!(drain.responses, 0);
    assert_eq!(drain.abandoned, r.in_flight_at_end);

    // The next window runs whole, reopening what was closed.
    let r = session
        .window(Duration::ZERO, Duration::from_millis(100), &Control::new())
        .unwrap();
    assert!(!r.interrupted);
    assert_eq!(r.reconnects, drain.abandoned);
    assert_eq!(r.counts.errors_total(), 0);
    assert!(r.counts.completed > 0);
    assert_eq!(Tally::get(&server.tally.used), 1 + drain.abandoned);
}

#[test]
fn dropping_a_session_closes_its_connections_and_joins_its_threads() {
    const N: u64 = 4;
    let server = Server::start(answer);
    let mut session = Session::open(&session_spec(&server, N as usize, 2)).unwrap();
    let r = session
        .window(Duration::ZERO, Duration::from_millis(100), &Control::new())
        .unwrap();
    assert_eq!(r.counts.errors_total(), 0);
    let started = Instant::now();
    drop(session);
    let took = started.elapsed();
    assert!(took <= SLACK, "took {took:?}");
    // Its threads closed every connection before they ended; the one more
    // is the reachability check's.
    assert!(server
        .tally
        .wait_until(WAIT, |t| Tally::get(&t.client_closed) == N + 1));
}

#[test]
fn a_session_runs_the_closed_model_for_a_duration_only() {
    let server = Server::start(answer);
    let refused = |spec: &throng_engine::LoadSpec| match Session::open(spec) {
        Err(EngineError::Io(e)) => e.kind() == IoErrorKind::InvalidInput,
        _ => false,
    };
    let mut spec = session_spec(&server, 1, 1);
    spec.rate = Some(100.0);
    assert!(refused(&spec));
    let mut spec = session_spec(&server, 1, 1);
    spec.stop = Stop::Requests(10);
    assert!(refused(&spec));
    let mut session = Session::open(&session_spec(&server, 1, 1)).unwrap();
    assert!(matches!(
        session.window(Duration::ZERO, Duration::ZERO, &Control::new()),
        Err(EngineError::Invalid(throng_engine::SpecError::ZeroDuration))
    ));
    // Nothing was opened by the refusals, not even a reachability check:
    // the two accepted are the last session's check and connection.
    assert!(server
        .tally
        .wait_until(WAIT, |t| Tally::get(&t.accepted) == 2));
}
