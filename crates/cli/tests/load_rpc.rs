//! `throng load --requests-per-connection` against a real nginx, whose
//! access log names the connection of every request: the connections the
//! client counts are the ones the server saw, and none carried more than
//! the limit.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::{run_bounded, throng, throng_json, u};

/// The fixture's nginx, logging `$status $connection $connection_requests`:
/// which connection carried each request, and its rank on it.
struct Nginx(support::Nginx);

impl Nginx {
    fn start() -> Nginx {
        // The fixture keeps keepalive_requests far above any limit here:
        // every close is the client's doing.
        Nginx(support::Nginx::start_logging(
            &[("index.html", b"hello!\n")],
            "$status $connection $connection_requests",
        ))
    }

    fn url(&self) -> String {
        self.0.url("/")
    }

    /// (status, connection, requests on it so far) per request nginx
    /// logged, read whole after a graceful quit.
    fn log(self) -> Vec<(u16, u64, u64)> {
        self.0
            .quit_and_read_log()
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                )
            })
            .collect()
    }
}

/// Requests per connection, as nginx logged them; checks on the way that
/// every request was answered 200 and that each connection's log lines
/// count 1, 2, 3... as `$connection_requests` says.
fn per_connection(log: &[(u16, u64, u64)]) -> Vec<u64> {
    let mut conns: BTreeMap<u64, u64> = BTreeMap::new();
    for &(status, conn, rank) in log {
        assert_eq!(status, 200);
        let n = conns.entry(conn).or_default();
        *n += 1;
        assert_eq!(
            rank, *n,
            "connection {conn}: request {rank} logged as its {n}th"
        );
    }
    conns.into_values().collect()
}

/// `-n 1000 -c 4` with a limit, one connection per thread so that each
/// slot's share is fixed (250), and with it the number of connections.
fn limited(ng: &Nginx, limit: u64, threads: Option<&str>) -> serde_json::Value {
    let limit = limit.to_string();
    let mut args = vec![
        "load",
        "--requests-per-connection",
        &limit,
        "-n",
        "1000",
        "-c",
        "4",
    ];
    if let Some(t) = threads {
        args.extend(["-t", t]);
    }
    let url = ng.url();
    args.push(&url);
    let j = throng_json(&args);
    assert_eq!(j["completed"], 1000);
    assert_eq!(j["sent"], 1000);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(j["keep_alive"], true);
    assert_eq!(j["connections"]["established"], 4);
    j
}

#[test]
fn ten_requests_per_connection() {
    let ng = Nginx::start();
    let j = limited(&ng, 10, Some("4"));
    // 250 per slot, 10 per connection: 25 connections a slot, 100 in all;
    // 4 first connects, 96 reconnects.
    assert_eq!(j["connections"]["reconnects"], 96);
    let log = ng.log();
    assert_eq!(
        log.len(),
        1000,
        "the server saw exactly the requests counted"
    );
    let conns = per_connection(&log);
    assert_eq!(conns.len(), 100);
    assert!(conns.iter().all(|&n| n == 10), "{conns:?}");
}

#[test]
fn seven_requests_per_connection() {
    let ng = Nginx::start();
    let j = limited(&ng, 7, Some("4"));
    // 250 per slot = 35 × 7 + 5: 36 connections a slot, 144 in all.
    assert_eq!(j["connections"]["reconnects"], 140);
    let log = ng.log();
    assert_eq!(log.len(), 1000);
    let mut conns = per_connection(&log);
    conns.sort_unstable();
    assert_eq!(conns.len(), 144);
    assert_eq!(conns[..4], [5, 5, 5, 5]);
    assert!(conns[4..].iter().all(|&n| n == 7), "{conns:?}");
}

/// With several connections per thread, the thread's share is spread over
/// them as responses come, so how many requests each slot carries, and
/// with it the last, partial connection of each, is the scheduler's: 100
/// connections at least, one more per slot left partial, never an extra
/// one for a slot that ended on a full connection. What is exact is that
/// the server saw the connections the client counted, and none carried
/// more than the limit.
#[test]
fn shares_spread_by_the_scheduler_still_keep_the_limit() {
    let ng = Nginx::start();
    let j = limited(&ng, 10, Some("1"));
    let reconnects = u(&j, "/connections/reconnects");
    assert!((96..=99).contains(&reconnects), "{reconnects}");
    let log = ng.log();
    assert_eq!(log.len(), 1000);
    let conns = per_connection(&log);
    assert_eq!(conns.len() as u64, 4 + reconnects);
    assert!(conns.iter().all(|&n| n <= 10), "{conns:?}");
    // Only each slot's last connection can be short.
    assert!(conns.iter().filter(|&&n| n < 10).count() <= 4, "{conns:?}");
}

#[test]
fn zero_and_close_are_refused() {
    let out = run_bounded(
        {
            let mut c = throng();
            c.args([
                "load",
                "http://127.0.0.1:1/",
                "-n",
                "10",
                "--requests-per-connection",
                "0",
            ]);
            c
        },
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(out.stdout.is_empty());
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(
        err.contains("--requests-per-connection must be at least 1"),
        "{err}"
    );

    let out = run_bounded(
        {
            let mut c = throng();
            c.args([
                "load",
                "http://127.0.0.1:1/",
                "-n",
                "10",
                "--close",
                "--requests-per-connection",
                "5",
            ]);
            c
        },
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains("cannot be used with")
            && err.contains("--requests-per-connection")
            && err.contains("--close"),
        "{err}"
    );

    // A pipeline deeper than the limit would never fill.
    let out = run_bounded(
        {
            let mut c = throng();
            c.args([
                "load",
                "http://127.0.0.1:1/",
                "-n",
                "10",
                "--pipeline",
                "8",
                "--requests-per-connection",
                "4",
            ]);
            c
        },
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(
        err.contains("--pipeline 8") && err.contains("--requests-per-connection 4"),
        "{err}"
    );
}
