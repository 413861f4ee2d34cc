//! Users who think, against a server that records when each request
//! arrived and on which connection: exact requests per session, think
//! times as the script says, bursts in parallel on separate connections,
//! and a failed session counted once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use throng_engine::users::{Arrival, Page, Script, Spacing, Think, Users};
use throng_engine::{run, Control, LoadSpec, Stop, Target};
use throng_testkit::http::{Conn, Server};

#[derive(Debug, Clone)]
struct Seen {
    conn: u64,
    path: String,
    method: String,
    body: Vec<u8>,
    arrived: Instant,
    answered: Instant,
}

/// Answers every request with 200 "ok", except `/fail` (500) and `/slow`
/// (after 100 ms), and keeps what it saw.
struct Recorder {
    server: Server,
    seen: Arc<Mutex<Vec<Seen>>>,
}

const SLOW: Duration = Duration::from_millis(100);

impl Recorder {
    fn start() -> Recorder {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let server = Server::start(move |c| serve(c, &log));
        Recorder { server, seen }
    }

    fn target(&self, path: &str) -> Target {
        let addr = self.server.addr;
        Target::new(
            addr,
            addr.to_string(),
            path.to_string(),
            format!("http://{addr}{path}"),
        )
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut c: Conn, log: &Mutex<Vec<Seen>>) {
    while let Some(req) = c.next_request() {
        let arrived = Instant::now();
        let Some(body) = c.body() else { return };
        if req.path == "/slow" {
            std::thread::sleep(SLOW);
        }
        let reply: &[u8] = if req.path == "/fail" {
            b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        };
        // Logged before the answer goes out, so a test that sees the
        // answer sees the record.
        log.lock().unwrap().push(Seen {
            conn: c.index,
            path: req.path,
            method: req.method,
            body,
            arrived,
            answered: Instant::now(),
        });
        if !c.send(reply) {
            return;
        }
    }
}

fn page(request: u32, burst: &[u32], think_ms: Option<u64>) -> Page {
    Page {
        request,
        burst: burst.to_vec(),
        think: think_ms.map(Duration::from_millis),
    }
}

fn spec(server: &Recorder, paths: &[&str], scripts: Vec<Script>, per_user: usize) -> LoadSpec {
    let mut spec = LoadSpec::new(paths.iter().map(|p| server.target(p)).collect());
    spec.threads = 1;
    spec.connections = per_user;
    spec.timeout = Duration::from_secs(5);
    spec.users = Some(Users {
        scripts,
        arrival: Arrival::Population,
        conns_per_user: per_user,
        think: Think::Fixed(Duration::ZERO),
    });
    spec
}

#[test]
fn sessions_make_exactly_their_requests_and_think_as_written() {
    let server = Recorder::start();
    // Page /a, then its burst /b /c; 200 ms of thought; page /d alone,
    // with a POST body; 50 ms; page /e.
    let mut s = spec(
        &server,
        &["/a", "/b", "/c", "/d", "/e"],
        vec![Script {
            pages: vec![
                page(0, &[1, 2], Some(200)),
                page(3, &[], Some(50)),
                page(4, &[], None),
            ],
        }],
        2,
    );
    s.targets[3].method = Some("POST".into());
    s.targets[3].body = Some(b"x=1".to_vec());
    s.stop = Stop::Requests(2);
    let r = run(&s, &Control::new()).unwrap();
    let sessions = r.sessions.clone().unwrap();
    assert_eq!(
        (
            sessions.counts.started,
            sessions.counts.completed,
            sessions.counts.failed,
            sessions.counts.unfinished
        ),
        (2, 2, 0, 0)
    );
    assert_eq!(sessions.users, 1);
    assert_eq!(r.counts.completed, 10);
    assert_eq!(r.counts.sent, 10);
    assert_eq!(r.counts.errors_total(), 0);
    assert_eq!(r.counts.status, vec![(200, 10)]);
    assert_eq!(sessions.duration.len(), 2);
    assert_eq!(sessions.think.len(), 4);

    let seen = server.seen();
    let paths: Vec<&str> = seen.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(paths.len(), 10, "{paths:?}");
    for half in paths.chunks(5) {
        assert_eq!(half[0], "/a");
        let mut burst = vec![half[1], half[2]];
        burst.sort();
        assert_eq!(burst, ["/b", "/c"]);
        assert_eq!(&half[3..], ["/d", "/e"]);
    }
    let post = seen.iter().find(|x| x.path == "/d").unwrap();
    assert_eq!(
        (post.method.as_str(), post.body.as_slice()),
        ("POST", &b"x=1"[..])
    );

    // Think: from the page's last answer to the next page's arrival, as
    // the script says, within 1 ms + 1%.
    for half in seen.chunks(5) {
        let burst_done = half[1].answered.max(half[2].answered);
        for (from, to, want_ms) in [
            (burst_done, half[3].arrived, 200u64),
            (half[3].answered, half[4].arrived, 50),
        ] {
            let want = Duration::from_millis(want_ms);
            let took = to.duration_since(from);
            let slack = Duration::from_millis(1) + want / 100;
            assert!(
                took >= want && took <= want + slack,
                "think {took:?}, want {want:?}"
            );
        }
    }
}

#[test]
fn a_burst_goes_out_at_once_on_separate_connections() {
    let server = Recorder::start();
    let mut s = spec(
        &server,
        &["/a", "/slow"],
        vec![Script {
            pages: vec![page(0, &[1, 1, 1], None)],
        }],
        3,
    );
    s.stop = Stop::Requests(1);
    let started = Instant::now();
    let r = run(&s, &Control::new()).unwrap();
    let sessions = r.sessions.unwrap();
    assert_eq!((sessions.counts.completed, r.counts.completed), (1, 4));
    let seen = server.seen();
    let slow: Vec<&Seen> = seen.iter().filter(|x| x.path == "/slow").collect();
    assert_eq!(slow.len(), 3);
    let mut conns: Vec<u64> = slow.iter().map(|x| x.conn).collect();
    conns.sort();
    conns.dedup();
    assert_eq!(conns.len(), 3, "a burst shares no connection");
    // All three were waiting at the server at once.
    let last_arrival = slow.iter().map(|x| x.arrived).max().unwrap();
    let first_answer = slow.iter().map(|x| x.answered).min().unwrap();
    assert!(last_arrival < first_answer);
    // One slow answer's time for the burst, not three.
    let took = sessions.duration.max();
    assert!(took < 2 * SLOW.as_micros() as u64, "session took {took} µs");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_failed_session_counts_once_and_sends_nothing_more() {
    let server = Recorder::start();
    let mut s = spec(
        &server,
        &["/a", "/fail", "/slow", "/never"],
        vec![Script {
            pages: vec![page(0, &[1, 1, 2], Some(10)), page(3, &[], None)],
        }],
        3,
    );
    s.stop = Stop::Requests(1);
    let r = run(&s, &Control::new()).unwrap();
    let sessions = r.sessions.unwrap();
    assert_eq!(
        (
            sessions.counts.started,
            sessions.counts.completed,
            sessions.counts.failed
        ),
        (1, 0, 1)
    );
    assert_eq!(sessions.duration.len(), 0);
    // Every request of the page went out; the next page never did.
    assert_eq!(r.counts.completed, 4);
    assert_eq!(r.counts.status, vec![(200, 2), (500, 2)]);
    assert_eq!(r.counts.error(throng_engine::ErrorKind::Status), 2);
    let paths: Vec<String> = server.seen().iter().map(|x| x.path.clone()).collect();
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert!(!paths.iter().any(|p| p == "/never"));
}

#[test]
fn users_arrive_on_a_schedule_and_leave_when_done() {
    let server = Recorder::start();
    let mut s = spec(
        &server,
        &["/a", "/b"],
        vec![Script {
            pages: vec![page(0, &[], Some(30)), page(1, &[], None)],
        }],
        1,
    );
    // 40 users a second for a second, room for 8 at once: each stays
    // about 30 ms, so about 1.2 are active at once and none is turned away.
    s.connections = 8;
    s.stop = Stop::Duration(Duration::from_secs(1));
    s.users.as_mut().unwrap().arrival = Arrival::Open {
        per_sec: 40.0,
        spacing: Spacing::Uniform,
    };
    let r = run(&s, &Control::new()).unwrap();
    let sessions = r.sessions.unwrap();
    assert_eq!(sessions.users, 8);
    assert_eq!(sessions.arrival_per_sec, Some(40.0));
    // Arrivals at 0, 25, ..., 975 ms: 40, unless the last one found the
    // loop past the end on a loaded machine.
    assert!(
        (39..=40).contains(&sessions.counts.started),
        "{}",
        sessions.counts.started
    );
    assert_eq!(sessions.counts.turned_away, 0);
    assert_eq!(
        sessions.counts.completed + sessions.counts.failed + sessions.counts.unfinished,
        sessions.counts.started
    );
    assert_eq!(sessions.counts.failed, 0);
    assert!(sessions.active_max <= 2, "{}", sessions.active_max);
    // Each completed session made its two requests; an unfinished one one.
    assert_eq!(
        r.counts.completed,
        2 * sessions.counts.completed + sessions.counts.unfinished - r.in_flight_at_end
    );
    assert_eq!(sessions.active.len(), 1);
}
