//! `throng load` against a scripted server that misbehaves on purpose:
//! every framing HTTP/1.1 allows, every way a connection can end, and the
//! mistakes users make on the command line. Figures are exact: the server
//! sends known bytes, so what the client must count is known to the byte.

mod support;

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{free_port, only_errors, run_bounded, throng, throng_json, u};
use throng_testkit::http::{chunked, ok, Options, Script, Server};

#[test]
fn chunked_bodies_with_trailers() {
    let resp = chunked(
        &[b"hello, ", b"chunked ", b"world\n"],
        &[("X-Digest", "sha-256=abc"), ("Server-Timing", "db;dur=1")],
    );
    let wire = resp.len() as u64;
    let s = Server::answering(move |_| resp.clone());
    let j = throng_json(&["load", &s.url("/"), "-n", "200", "-c", "2"]);
    assert_eq!(j["completed"], 200);
    assert_eq!(j["status"], json!({"200": 200}));
    // Decoded payload only: no chunk-size lines, CRLFs or trailers.
    assert_eq!(u(&j, "/body_bytes"), 200 * 21);
    assert_eq!(u(&j, "/bytes_read"), 200 * wire);
    only_errors(&j, &[]);
    assert_eq!(j["connections"]["reconnects"], 0);
    assert_eq!(s.requests(), 200);
}

#[test]
fn close_delimited_bodies() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nends when the server closes\n";
    let s = Server::scripted(Script::answering(resp.to_vec()).close_after(1));
    let j = throng_json(&["load", &s.url("/"), "-n", "50", "-c", "1"]);
    assert_eq!(j["completed"], 50);
    assert_eq!(u(&j, "/body_bytes"), 50 * 28);
    assert_eq!(u(&j, "/bytes_read"), 50 * resp.len() as u64);
    only_errors(&j, &[]);
    assert_eq!(j["connections"]["established"], 1);
    // One response per connection: the first connect, then 49 more.
    assert_eq!(j["connections"]["reconnects"], 49);
    assert_eq!(s.conns_with_requests(), 50);
}

#[test]
fn connection_close_every_tenth_response() {
    let body = b"ten per connection\n";
    let s = Server::start(move |mut c| {
        while let Some(r) = c.next_request() {
            if r.nth % 10 == 9 {
                let mut last = format!(
                    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                last.extend_from_slice(body);
                c.send(&last);
                return;
            }
            if !c.send(&ok(body)) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "100", "-c", "1"]);
    assert_eq!(j["completed"], 100);
    assert_eq!(u(&j, "/body_bytes"), 100 * body.len() as u64);
    only_errors(&j, &[]);
    // The 100th response closes too, but nothing is left to reconnect for.
    assert_eq!(j["connections"]["reconnects"], 9);
    assert_eq!(s.conns_with_requests(), 10);
    assert_eq!(s.requests(), 100);
}

/// A server may end a keep-alive connection after any response without
/// saying so. When its FIN arrives with that response, the client knows the
/// connection is gone before it sends again, so nothing is lost.
#[test]
fn unannounced_close_after_every_tenth_response() {
    let s = Server::start(move |mut c| {
        while let Some(r) = c.next_request() {
            if r.nth % 10 == 9 {
                c.send_then_close(&ok(b"last"));
                return;
            }
            if !c.send(&ok(b"more")) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "100", "-c", "1"]);
    assert_eq!(j["completed"], 100);
    assert_eq!(j["sent"], 100);
    only_errors(&j, &[]);
    assert_eq!(j["connections"]["reconnects"], 9);
    assert_eq!(s.requests(), 100);
}

#[test]
fn reset_instead_of_every_fifth_answer() {
    let body = b"answered\n";
    let s = Server::start(move |mut c| {
        while let Some(r) = c.next_request() {
            if r.seq % 5 == 4 {
                c.reset();
                return;
            }
            if !c.send(&ok(body)) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "100", "-c", "1", "-t", "1"]);
    // Requests 5, 10, ..., 100 are reset: each ends as an error, not a response.
    assert_eq!(j["completed"], 80);
    assert_eq!(j["sent"], 100);
    assert_eq!(j["status"], json!({"200": 80}));
    assert_eq!(u(&j, "/body_bytes"), 80 * body.len() as u64);
    only_errors(&j, &[("reset", 20)]);
    // The reset of the 100th request needs no new connection.
    assert_eq!(j["connections"]["reconnects"], 19);
    assert_eq!(s.requests(), 100);
}

#[test]
fn malformed_status_line() {
    let s = Server::answering(|_| b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nhi".to_vec());
    let started = Instant::now();
    let j = throng_json(&["load", &s.url("/"), "-n", "20", "-c", "2"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(j["completed"], 0);
    assert_eq!(j["status"], json!({}));
    assert_eq!(j["body_bytes"], 0);
    only_errors(&j, &[("parse", 20)]);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(s.requests(), 20);
}

#[test]
fn server_that_never_answers_times_out() {
    let s = Server::start(|mut c| {
        if c.next_request().is_some() {
            c.hold();
        }
    });
    let started = Instant::now();
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "-n",
        "4",
        "-c",
        "2",
        "--timeout",
        "200ms",
    ]);
    // Two rounds of 200 ms (timeouts are checked every 50 ms), plus start-up.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(j["completed"], 0);
    only_errors(&j, &[("timeout", 4)]);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(s.requests(), 4);
}

#[test]
fn truncated_body_then_close() {
    let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
    resp.extend_from_slice(b"only ten!\n");
    let wire = resp.len() as u64;
    let s = Server::scripted(Script::answering(resp).close_after(1));
    let j = throng_json(&["load", &s.url("/"), "-n", "20", "-c", "2"]);
    assert_eq!(j["completed"], 0);
    // Incomplete bodies are read but are not bodies of complete responses.
    assert_eq!(j["body_bytes"], 0);
    assert_eq!(u(&j, "/bytes_read"), 20 * wire);
    only_errors(&j, &[("closed", 20)]);
    assert_eq!(s.requests(), 20);
}

/// 50 responses of one body, then 50 of `later`.
fn changing_server(first: Vec<u8>, later: Vec<u8>) -> Server {
    Server::answering(move |r| ok(if r.seq < 50 { &first } else { &later }))
}

#[test]
fn body_size_changes_mid_run() {
    let (a, b) = (vec![b'a'; 100], vec![b'b'; 120]);
    let args = |s: &Server| -> Vec<String> {
        ["load", &s.url("/"), "-n", "100", "-c", "1", "-t", "1"]
            .map(String::from)
            .to_vec()
    };

    // The first response sets the size the others are held to.
    let s = changing_server(a.clone(), b.clone());
    let argv = args(&s);
    let j = throng_json(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(j["completed"], 100);
    assert_eq!(u(&j, "/body_bytes"), 50 * 100 + 50 * 120);
    only_errors(&j, &[("size_mismatch", 50)]);
    drop(s);

    // A fixed size turns the first 50 into the errors instead.
    let s = changing_server(a, b);
    let mut argv = args(&s);
    argv.extend(["--expect-size".to_string(), "120".to_string()]);
    let j = throng_json(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(j["completed"], 100);
    only_errors(&j, &[("size_mismatch", 50)]);
    assert_eq!(j["status"], json!({"200": 100}));
}

#[test]
fn body_content_changes_mid_run() {
    let (a, b) = (vec![b'a'; 64], vec![b'b'; 64]);

    let s = changing_server(a.clone(), b.clone());
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "-n",
        "100",
        "-c",
        "1",
        "-t",
        "1",
        "--checksum",
    ]);
    assert_eq!(j["completed"], 100);
    only_errors(&j, &[("checksum_mismatch", 50)]);
    drop(s);

    // Same size, so without --checksum nothing can tell.
    let s = changing_server(a, b);
    let j = throng_json(&["load", &s.url("/"), "-n", "100", "-c", "1", "-t", "1"]);
    assert_eq!(j["completed"], 100);
    only_errors(&j, &[]);
}

#[test]
fn stalled_server_under_a_fixed_rate() {
    const STALL: Duration = Duration::from_secs(1);
    let s = Server::start(|mut c| {
        while c.next_request().is_some() {
            // One pause of every answer, from 1 s to 2 s after the first request.
            let from = c.first_request_at() + Duration::from_secs(1);
            let to = from + STALL;
            let now = Instant::now();
            if now >= from && now < to {
                std::thread::sleep(to - now);
            }
            if !c.send(&ok(b"on time\n")) {
                return;
            }
        }
    });
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "--rate",
        "1000",
        "-c",
        "10",
        "-d",
        "3s",
    ]);
    assert_eq!(j["model"], "open");
    only_errors(&j, &[]);
    // A third of the schedule fell in the stall and waited up to a second
    // from its intended send time...
    let corrected = u(&j, "/latency_us/p99");
    assert!(corrected >= 500_000, "corrected p99 {corrected} µs");
    assert!(u(&j, "/latency_us/max") >= 900_000);
    // ...but only the ten requests caught on the wire saw it from their
    // actual send time, which is what a closed-model tool would report.
    let uncorrected = u(&j, "/latency_uncorrected_us/p99");
    assert!(uncorrected < 200_000, "uncorrected p99 {uncorrected} µs");
    assert!(u(&j, "/latency_uncorrected_us/max") >= 900_000);
    // About 1,000 sends were due during the one-second stall, and all but
    // the ten on the wire went out late: half of them is a safe floor.
    let late = u(&j, "/rate/late_sends");
    assert!(late >= 500, "{late} late sends");
    let warnings = j["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("after their intended time")),
        "{warnings:?}"
    );
}

#[test]
fn requests_due_but_never_sent_are_counted_not_dropped() {
    // Two connections at 400 req/s: one due every 5 ms on each. A server
    // that takes 20 ms answers a quarter of them; the rest of the
    // schedule is left unsent when the second ends, and said so: every
    // request due in it was either sent or counted as unsent, none lost.
    let slow = Server::scripted(Script::answering(ok(b"slow\n")).delay(Duration::from_millis(20)));
    let j = throng_json(&[
        "load",
        &slow.url("/"),
        "--rate",
        "400",
        "-c",
        "2",
        "-d",
        "1s",
    ]);
    only_errors(&j, &[]);
    let (sent, unsent) = (u(&j, "/sent"), u(&j, "/rate/unsent"));
    assert_eq!(sent + unsent, 400, "{j}");
    assert!(sent <= 110 && unsent >= 290, "{sent} sent, {unsent} unsent");
    let warnings = j["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with(&format!("{unsent} requests fell due"))),
        "{warnings:?}"
    );
    // Their latency is in no figure: the verdict says the schedule was not
    // kept (it used to stay valid with three quarters of it unsent).
    let reasons = j["verdict"]["reasons"].as_array().unwrap();
    let saturated = reasons.iter().find(|r| r["code"] == "saturated");
    assert!(
        saturated.is_some_and(|r| r["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{unsent} of 400 due requests"))),
        "{reasons:?}"
    );
    // A server that keeps up leaves nothing unsent.
    let quick = Server::scripted(Script::answering(ok(b"quick\n")));
    let j = throng_json(&[
        "load",
        &quick.url("/"),
        "--rate",
        "200",
        "-c",
        "4",
        "-d",
        "1s",
    ]);
    assert_eq!((u(&j, "/sent"), u(&j, "/rate/unsent")), (200, 0), "{j}");
    // Nothing unsent, so no verdict of it. (A busy test machine can still
    // make sends late, which `saturated` rightly says in other words.)
    let reasons = j["verdict"]["reasons"].as_array().unwrap();
    assert!(
        !reasons
            .iter()
            .any(|r| r["code"] == "saturated"
                && r["message"].as_str().unwrap().contains("due requests")),
        "{reasons:?}"
    );
    // A rate whose interval is not a whole number of nanoseconds: 7 req/s
    // on 2 connections is one every 285,714,285.7 ns on each. Cut to
    // whole nanoseconds, the schedule ran 5 ns fast and put an eighth
    // request on a connection 5 ns before the end: 15 due, one unsent.
    let j = throng_json(&[
        "load",
        &quick.url("/"),
        "--rate",
        "7",
        "-c",
        "2",
        "-d",
        "2s",
    ]);
    assert_eq!((u(&j, "/sent"), u(&j, "/rate/unsent")), (14, 0), "{j}");
}

#[test]
fn credentials_in_the_url_go_to_the_server_and_nowhere_else() {
    // `user:pa ss`, percent-encoded in the URL: every request carries it
    // as Basic (RFC 7617), and the password is in no output.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let s = Server::start(move |mut c| {
        while let Some(r) = c.next_request() {
            log.lock().unwrap().push(r.authorization);
            if !c.send(&ok(b"in\n")) {
                return;
            }
        }
    });
    let url = s.url("/").replacen("http://", "http://user:pa%20ss@", 1);
    let out = support::throng()
        .args(["load", &url, "-n", "6", "-c", "2", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("pa%20ss") && !text.contains("pa ss"),
        "{text}"
    );
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["completed"], 6);
    let basic = Some("Basic dXNlcjpwYSBzcw==".to_string());
    assert_eq!(*seen.lock().unwrap(), vec![basic.clone(); 6]);
    // Told otherwise with -H, the user's header is sent instead.
    let j = throng_json(&[
        "load",
        &url,
        "-n",
        "1",
        "-c",
        "1",
        "-H",
        "Authorization: Bearer t",
    ]);
    assert_eq!(j["completed"], 1);
    assert_eq!(seen.lock().unwrap()[6].as_deref(), Some("Bearer t"));
    // A session file's URLs carry theirs as well: they were dropped.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.log");
    let second = s
        .url("/second")
        .replacen("http://", "http://user:pa%20ss@", 1);
    std::fs::write(&file, format!("{url}\n{second}\n")).unwrap();
    let j = throng_json(&[
        "load",
        "--sessions",
        file.to_str().unwrap(),
        "-c",
        "1",
        "-n",
        "1",
    ]);
    // One visit of the file's two requests.
    assert_eq!(j["completed"], 2);
    let seen = seen.lock().unwrap();
    assert_eq!(seen[7..], [basic.clone(), basic]);
}

#[test]
fn response_dripped_a_few_bytes_at_a_time() {
    // The same 54-byte body, framed both ways, so a read may end inside a
    // status line, a header, a chunk-size line, chunk data or a trailer.
    let body = [&b"split "[..], b"anywhere", &[b'c'; 40]];
    let plain = ok(&body.concat());
    let framed = chunked(&body, &[("X-After", "body")]);
    let wire = 10 * (plain.len() + framed.len()) as u64;
    let s = Server::start(move |mut c| {
        while let Some(r) = c.next_request() {
            let resp = if r.seq % 2 == 0 { &plain } else { &framed };
            if !c.drip(resp, 3, Duration::from_millis(1)) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "20", "-c", "2"]);
    assert_eq!(j["completed"], 20);
    assert_eq!(u(&j, "/body_bytes"), 20 * 54);
    assert_eq!(u(&j, "/bytes_read"), wire);
    assert_eq!(j["status"], json!({"200": 20}));
    only_errors(&j, &[]);
    assert_eq!(s.requests(), 20);
}

#[test]
fn interim_responses_are_skipped() {
    let mut resp = b"HTTP/1.1 100 Continue\r\n\r\n\
        HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        .to_vec();
    resp.extend_from_slice(&ok(b"final answer\n"));
    let wire = resp.len() as u64;
    let s = Server::answering(move |_| resp.clone());
    let j = throng_json(&["load", &s.url("/"), "-n", "50", "-c", "2"]);
    assert_eq!(j["completed"], 50);
    assert_eq!(j["status"], json!({"200": 50}));
    assert_eq!(u(&j, "/body_bytes"), 50 * 13);
    assert_eq!(u(&j, "/bytes_read"), 50 * wire);
    only_errors(&j, &[]);
}

/// A 103 sent at once and the answer 30 ms later: the time to the first
/// byte is the answer's, as over HTTP/2, not the hint's (which made it
/// about 20 µs).
#[test]
fn the_first_byte_is_the_final_answers_not_an_interim_ones() {
    let s = Server::start(|mut c| {
        while c.next_request().is_some() {
            let hint = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n";
            if !c.send(hint) {
                return;
            }
            std::thread::sleep(Duration::from_millis(30));
            if !c.send(&ok(b"answer\n")) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "6", "-c", "2", "-t", "1"]);
    assert_eq!(j["completed"], 6);
    only_errors(&j, &[]);
    let first = u(&j, "/first_byte_us/min");
    assert!(
        (30_000..1_000_000).contains(&first),
        "first byte {first} µs: the hint's, not the answer's"
    );
    assert!(u(&j, "/latency_us/min") >= first);

    // The hint's first half at once, its rest with the answer 30 ms later:
    // the answer began in the later read.
    let s = Server::start(|mut c| {
        while c.next_request().is_some() {
            if !c.send(b"HTTP/1.1 103 Early") {
                return;
            }
            std::thread::sleep(Duration::from_millis(30));
            let mut rest = b" Hints\r\n\r\n".to_vec();
            rest.extend_from_slice(&ok(b"answer\n"));
            if !c.send(&rest) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "6", "-c", "2", "-t", "1"]);
    assert_eq!(j["completed"], 6);
    only_errors(&j, &[]);
    let first = u(&j, "/first_byte_us/min");
    assert!(
        (30_000..1_000_000).contains(&first),
        "first byte {first} µs"
    );
}

#[test]
fn head_responses_have_no_body() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    let s = Server::answering(move |r| {
        if r.method == "HEAD" {
            head.to_vec()
        } else {
            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".to_vec()
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-m", "HEAD", "-n", "50", "-c", "2"]);
    assert_eq!(j["completed"], 50);
    assert_eq!(j["status"], json!({"200": 50}));
    assert_eq!(j["body_bytes"], 0);
    assert_eq!(u(&j, "/bytes_read"), 50 * head.len() as u64);
    only_errors(&j, &[]);
    assert_eq!(s.methods(), vec!["HEAD"; 50]);
}

#[test]
fn more_threads_than_cpus_are_run_and_said_to_share_them() {
    let s = Server::answering(|_| ok(b"shared\n"));
    let run = |cpus: &str, threads: &str| {
        let mut c = Command::new("taskset");
        c.args(["-c", cpus, env!("CARGO_BIN_EXE_throng")]);
        c.args([
            "load",
            &s.url("/"),
            "-n",
            "300",
            "-c",
            "6",
            "-t",
            threads,
            "--json",
        ]);
        let out = run_bounded(c, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let j = run("0", "3");
    assert_eq!(j["completed"], 300);
    assert_eq!(j["threads"], 3);
    assert_eq!(
        j["warnings"],
        json!([
            "3 load threads shared 1 CPU: they took turns, so their latency and the \
                client's CPU include waits for one another; one thread per CPU is the most \
                that helps"
        ])
    );
    // As many threads as CPUs: nothing to say.
    let j = run("0", "1");
    assert_eq!(j["completed"], 300);
    assert_eq!(j["warnings"], json!([]));
}

/// Run `cmd`, expect exit code 2, nothing on stdout, and one line on stderr
/// containing every one of `needles`.
fn fails_with_one_line(mut cmd: Command, needles: &[&str]) {
    cmd.arg("--json");
    let out = run_bounded(cmd, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
}

#[test]
fn bad_input_is_one_clear_line() {
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let mut cmd = throng();
    cmd.args(["load", &url, "-n", "10"]);
    fails_with_one_line(cmd, &[&port, "Connection refused"]);

    let mut cmd = throng();
    cmd.args(["load", "http://[::1/", "-n", "10"]);
    fails_with_one_line(cmd, &["http://[::1/", "is not a URL"]);

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-list.txt");
    let mut cmd = throng();
    cmd.args([
        "load",
        "http://127.0.0.1/",
        "--urls",
        missing.to_str().unwrap(),
    ]);
    fails_with_one_line(cmd, &["--urls", missing.to_str().unwrap(), "No such file"]);

    // A nap longer than half the latency is refused as the flag is read.
    let mut cmd = throng();
    cmd.args(["load", "http://127.0.0.1/", "--nap-divisor", "1"]);
    let out = run_bounded(cmd, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'1' for '--nap-divisor <D>'"), "{err}");

    // A tick is a rate's schedule, and of a length between a
    // microsecond and a second; a server that is up gets nothing.
    let s = Server::answering(|_| ok(b"x"));
    for (args, needles) in [
        (vec!["--tick", "1ms"], vec!["--tick needs --rate"]),
        (
            vec!["--rate", "100", "--tick", "2s"],
            vec!["--tick 2s", "1µs to 1s"],
        ),
        (
            vec!["--rate", "100", "--tick", "0s"],
            vec!["--tick 0ns", "1µs to 1s"],
        ),
        (
            vec!["--rate", "100", "--tick", "soon"],
            vec!["`soon` is not a duration"],
        ),
        // A spin waits for a closed model's responses, for at most a
        // millisecond.
        (vec!["--spin", "2ms"], vec!["--spin 2ms", "1µs to 1ms"]),
        (vec!["--spin", "0s"], vec!["--spin 0ns", "1µs to 1ms"]),
        (
            vec!["--spin", "50us", "--rate", "100"],
            vec!["--spin waits for the responses", "--rate"],
        ),
    ] {
        let mut cmd = throng();
        cmd.args(["load", &s.url("/"), "-d", "1"]).args(&args);
        fails_with_one_line(cmd, &needles);
    }
    assert_eq!(s.requests(), 0);

    let mut cmd = Command::new("prlimit");
    cmd.arg("--nofile=64:64")
        .arg(env!("CARGO_BIN_EXE_throng"))
        .args(["load", &s.url("/"), "-c", "1000", "-n", "1000"]);
    fails_with_one_line(cmd, &["-c 1000", "limit is 64", "ulimit -n"]);
    assert_eq!(s.requests(), 0);
}

/// Input that once panicked, hung, or was sent as something else: each is
/// one line and exit 2, before any connection or database.
#[test]
fn hostile_input_is_refused_in_one_line_before_anything_runs() {
    let url = "http://127.0.0.1:9/";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none").join("x.db");
    // The URL parser would drop the CR, and send /aX:%20y.
    let cr_list = dir.path().join("list.txt");
    std::fs::write(&cr_list, "/ok\n/a\rX: y\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        // A Duration holds no 10^17 hours: this was a panic.
        (
            vec!["-d".into(), "99999999999999999h".into()],
            "longer than a year",
        ),
        (
            vec![
                "--timeout".into(),
                "99999999999999999999m".into(),
                "-n".into(),
                "10".into(),
            ],
            "longer than a year",
        ),
        // Control characters were escaped or dropped without a word.
        (
            vec!["-n".into(), "10".into(), "-H".into(), "X-A: v\u{1}x".into()],
            "no control character",
        ),
        (
            vec![
                "-n".into(),
                "10".into(),
                "-H".into(),
                "X-A: v\r\nX-B: 1".into(),
            ],
            "must be on one line",
        ),
        // /dev/zero never ends: this hung.
        (
            vec![
                "-n".into(),
                "10".into(),
                "-m".into(),
                "POST".into(),
                "--body-file".into(),
                "/dev/zero".into(),
            ],
            "--body-file /dev/zero: not a regular file",
        ),
        (
            vec!["-n".into(), "10".into(), "--rate".into(), "1e300".into()],
            "--rate 1e300",
        ),
        // Said before the load, not after it had run.
        (
            vec![
                "-n".into(),
                "10".into(),
                "--db".into(),
                db.to_string_lossy().into_owned(),
            ],
            "does not exist",
        ),
        // clap's own errors, in one line with what they allow.
        (
            vec!["-n".into(), "10".into(), "--io".into(), "ring".into()],
            "[possible values: auto, uring, epoll]",
        ),
        // Made as a file named over two lines, said over two.
        (
            vec!["-n".into(), "10".into(), "--db".into(), "a\nb.db".into()],
            "holds the control character '\\n'",
        ),
        // Empty, as /proc's files are, and refused only after the load.
        (
            vec![
                "-n".into(),
                "10".into(),
                "--db".into(),
                "/proc/version".into(),
            ],
            "a file of the kernel's",
        ),
        // A server answers 400 to a Host with no value.
        (
            vec!["-n".into(), "10".into(), "-H".into(), "Host:".into()],
            "-H Host: has no value",
        ),
        (
            vec![
                "-n".into(),
                "10".into(),
                "--urls".into(),
                cr_list.to_string_lossy().into_owned(),
            ],
            "list.txt:2: \"/a\\rX: y\" holds '\\r'",
        ),
    ];
    for (args, needle) in cases {
        let mut cmd = throng();
        cmd.arg("load").arg(url).args(&args);
        fails_with_one_line(cmd, &[needle]);
    }
    // Fields that frame the request were sent as typed, beside throng's own.
    let framing: [(&[&str], &str); 5] = [
        (
            &["-H", "Content-Length: 10", "--body", "abc", "-m", "POST"],
            "-H 'Content-Length: 10' is not the body's length (3 bytes)",
        ),
        (
            &["-H", "Transfer-Encoding: chunked"],
            "-H Transfer-Encoding cannot be given",
        ),
        (
            &["--close", "-H", "Connection: keep-alive"],
            "-H 'Connection: keep-alive' contradicts --close",
        ),
        (
            &["--requests-per-connection", "5", "-H", "connection: close"],
            "-H 'Connection: close' cannot be given with --requests-per-connection 5",
        ),
        (
            &["-H", "Host: a", "-H", "host: b"],
            "-H Host is given more than once",
        ),
    ];
    for (args, needle) in framing {
        let mut cmd = throng();
        cmd.arg("load").arg(url).args(["-n", "10"]).args(args);
        fails_with_one_line(cmd, &[needle]);
    }
    let mut cmd = throng();
    cmd.args(["load", "http://127.0.0.1:0/", "-n", "10"]);
    fails_with_one_line(
        cmd,
        &["`http://127.0.0.1:0/` is not a URL: port 0 is no server's port"],
    );
    let mut cmd = throng();
    cmd.args(["load", "http://127.0.0.1:9/a\r\nX-Injected: 1", "-n", "10"]);
    fails_with_one_line(cmd, &["is not a URL", "'\\r'"]);
    assert!(!db.exists() && !db.parent().unwrap().exists());
}

/// The listener accepts `ACCEPTED` connections and then never again; with a
/// backlog of 0 the kernel completes one more handshake into the accept
/// queue and drops every later SYN. The load generator's reachability check
/// takes the first accept, so it ends up holding `ACCEPTED` connections:
/// two served ones and the one stuck in the queue.
const ACCEPTED: u64 = 3;

fn stingy_server() -> Server {
    let opts = Options {
        accept_limit: Some(ACCEPTED),
        backlog: Some(0),
        ..Options::default()
    };
    Server::with(opts, |mut c| {
        while c.next_request().is_some() {
            if !c.send(&ok(b"served\n")) {
                return;
            }
        }
    })
}

#[test]
fn fewer_connections_than_requested() {
    let opts = ["-c", "6", "-t", "1", "-d", "2s", "--timeout", "300ms"];
    let s = stingy_server();
    let url = s.url("/");
    let mut argv = vec!["load", url.as_str()];
    argv.extend_from_slice(&opts);
    let j = throng_json(&argv);
    assert_eq!(s.accepted(), ACCEPTED);
    assert_eq!(j["connections"]["requested"], 6);
    assert_eq!(u(&j, "/connections/established"), ACCEPTED);
    let warnings: Vec<&str> = j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("only 3 of 6 connections")),
        "{warnings:?}"
    );
    drop(s);

    // People read the same warning, loud, at the end of the summary.
    let s = stingy_server();
    let url = s.url("/");
    let mut cmd = throng();
    cmd.args(["load", url.as_str()]).args(opts);
    let out = run_bounded(cmd, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("WARNING:") && l.contains("only 3 of 6 connections")),
        "{text}"
    );
}

/// A server that takes 2 ms over every answer, so the client's smoothed
/// latency is long enough for naps (1/128 of it is over 15 µs).
fn two_ms_server() -> Server {
    Server::answering(|_| {
        std::thread::sleep(Duration::from_millis(2));
        ok(b"slow\n")
    })
}

#[test]
fn naps_change_no_count_and_no_latency() {
    let s = two_ms_server();
    // Naps of a quarter of the latency: on the ring, a wait for 2 of the
    // 8 connections' answers (a nap's worth of one is no nap).
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "-n",
        "800",
        "-c",
        "8",
        "-t",
        "1",
        "--nap-divisor",
        "4",
    ]);
    assert_eq!(j["coalesce"], true);
    assert_eq!(j["completed"], 800);
    assert_eq!(j["sent"], 800);
    assert_eq!(u(&j, "/body_bytes"), 800 * 5);
    only_errors(&j, &[]);
    assert_eq!(s.requests(), 800);
    let naps = u(&j, "/client_naps");
    assert!(naps >= 1, "the client never napped: {j:#}");
    // What the naps cost: each answered connection waited on the client
    // for a sliver of its 2 ms cycle, and so, on average, a sliver of the
    // 8 connections did (the engine's client_hold test balances the books).
    let hold = j["client_hold_us"].as_f64().unwrap();
    let held = j["client_held_connections"].as_f64().unwrap();
    assert!(hold > 0.0 && hold < 1_000.0, "hold {hold} µs");
    assert!(held > 0.0 && held < 4.0, "held {held} of 8");
    // Latency is the kernel's receive stamp minus the write: never below
    // the server's own 2 ms, and a stamp misplaced on the wrong clock
    // (seconds or decades off) could not pass the upper bound.
    let p50 = u(&j, "/latency_us/p50");
    assert!(
        (2_000..500_000).contains(&p50),
        "p50 {p50} µs against a 2 ms server"
    );
    assert!(u(&j, "/latency_us/max") < 1_000_000);
}

#[test]
fn no_naps_without_coalescing_or_in_the_open_model() {
    let s = two_ms_server();
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "-n",
        "400",
        "-c",
        "8",
        "-t",
        "1",
        "--no-coalesce",
    ]);
    assert_eq!(j["coalesce"], false);
    assert_eq!(j["completed"], 400);
    assert_eq!(u(&j, "/client_naps"), 0);
    assert!(u(&j, "/latency_us/p50") >= 2_000);
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "--rate",
        "400",
        "-c",
        "8",
        "-t",
        "1",
        "-d",
        "1s",
    ]);
    assert_eq!(j["coalesce"], false);
    assert_eq!(u(&j, "/client_naps"), 0);
    // The open model's sends follow their schedule, not the answers.
    assert!(j["client_hold_us"].is_null(), "{j:#}");
    assert!(j["client_held_connections"].is_null(), "{j:#}");
    only_errors(&j, &[]);
}

/// The summary says what its figures mean: naps are explained, not named
/// after the option that turns them off, and CPU is a share of something.
#[test]
fn human_summary_says_what_naps_and_cpu_are() {
    let s = Server::answering(|_| ok(b"words\n"));
    let text = |extra: &[&str]| {
        let mut cmd = throng();
        cmd.args(["load", &s.url("/"), "-n", "200", "-c", "2", "-t", "1"])
            .args(extra);
        let out = run_bounded(cmd, Duration::from_secs(30));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let line = |text: &str, label: &str| -> String {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{text}"))
            .to_string()
    };

    let out = text(&[]);
    let naps = line(&out, "naps");
    assert!(naps.contains(" before waiting for responses: "), "{naps}");
    assert!(naps.contains(" 1/128 of the recent latency"), "{naps}");
    assert!(!naps.contains("--no-coalesce"), "{naps}");
    // On the ring a nap is a count of answers, on epoll a time.
    let ring = line(&out, "client CPU").contains("io_uring");
    let how = if ring {
        " waits for as many as 1/128 of the recent latency brings (when that is more than one), "
    } else {
        " looks for them at most once per 1/128 of the recent latency, "
    };
    assert!(naps.contains(how), "{naps}");
    let hold = line(&out, "client hold");
    assert!(
        hold.contains(" from a response to its connection's next request on average: ")
            && hold.ends_with(" of 2 connections waited on the client, not the server"),
        "{hold}"
    );
    let out = text(&["--io", "epoll"]);
    let naps = line(&out, "naps");
    assert!(
        naps.contains(" looks for them at most once per 1/128 of the recent latency, "),
        "{naps}"
    );
    let out = text(&["--nap-divisor", "16"]);
    let naps = line(&out, "naps");
    assert!(naps.contains(" 1/16 of the recent latency"), "{naps}");
    // A pipeline's answers free places, not connections.
    let out = text(&["--pipeline", "4"]);
    let hold = line(&out, "client hold");
    assert!(
        hold.contains(" places (of up to 4 on each of 2 connections) waited on the client"),
        "{hold}"
    );
    let cpu = line(&out, "client CPU");
    assert!(cpu.contains("% of one core, "), "{cpu}");
    assert!(line(&out, "completed").contains("200 responses"));
    assert!(!out.contains("interrupted"), "{out}");

    let out = text(&["--no-coalesce"]);
    assert_eq!(
        line(&out, "naps").trim_end(),
        "  naps         none: each thread waits for responses as soon as none is ready"
    );
}

/// Bytes written are exactly the requests sent plus those sent again: the
/// count that says why a server saw more requests than `sent`.
fn written_once_or_again(j: &serde_json::Value, request_len: u64) {
    assert_eq!(
        u(j, "/bytes_written"),
        (u(j, "/sent") + u(j, "/resent")) * request_len,
        "{j:#}"
    );
}

/// What one request of a load against `url` writes.
fn request_len(url: &str) -> u64 {
    let j = throng_json(&["load", url, "-n", "1", "-c", "1", "-t", "1"]);
    assert_eq!(j["completed"], 1);
    u(&j, "/bytes_written")
}

/// One unreadable answer on a pipeline is one `parse` error: the requests
/// behind it were never answered and go out again, counted in `resent`.
/// Each was counted as a `parse` error of its own (4 of them per bad
/// answer at depth 4).
#[test]
fn an_unreadable_answer_on_a_pipeline_fails_its_own_request_only() {
    let bad = Arc::new(AtomicU64::new(0));
    let seen = bad.clone();
    let s = Server::start(move |mut c| {
        let mut n = 0;
        while c.next_request().is_some() {
            n += 1;
            if n == 2 {
                seen.fetch_add(1, Ordering::Relaxed);
                c.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok");
                // Read on until the client closes: a close with requests
                // unread would be a reset.
                c.hold();
                return;
            }
            if !c.send(&ok(b"fine\n")) {
                return;
            }
        }
    });
    let len = request_len(&s.url("/"));
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "-n",
        "40",
        "-c",
        "1",
        "-t",
        "1",
        "--pipeline",
        "4",
    ]);
    let bad = bad.load(Ordering::Relaxed);
    assert_eq!(u(&j, "/sent"), 40);
    only_errors(&j, &[("parse", bad)]);
    assert_eq!(u(&j, "/completed"), 40 - bad);
    assert!(u(&j, "/resent") >= bad, "{j:#}");
    written_once_or_again(&j, len);
}

/// An answer that says close with requests pipelined behind it: they go out
/// again, the server may have served them, and `resent` says how many.
#[test]
fn requests_behind_a_closing_answer_are_counted_as_sent_again() {
    let s = Server::start(|mut c| {
        if c.next_request().is_some() {
            c.send(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbye!\n");
            c.hold();
        }
    });
    let len = request_len(&s.url("/"));
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "-n",
        "12",
        "-c",
        "1",
        "-t",
        "1",
        "--pipeline",
        "4",
    ]);
    assert_eq!(u(&j, "/completed"), 12);
    assert_eq!(u(&j, "/sent"), 12);
    only_errors(&j, &[]);
    assert!(u(&j, "/resent") > 0, "{j:#}");
    written_once_or_again(&j, len);
    let mut cmd = throng();
    cmd.args([
        "load",
        &s.url("/"),
        "-n",
        "12",
        "-c",
        "1",
        "-t",
        "1",
        "--pipeline",
        "4",
    ]);
    let out = run_bounded(cmd, Duration::from_secs(30));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains("sent again after their connection closed unanswered"),
        "{human}"
    );
}

#[test]
fn requests_on_a_connection_closed_without_a_word_go_out_again() {
    // Each connection answers one request and closes, saying nothing of
    // it, with three more pipelined behind: RFC 9112 §9.3.2 has a client
    // send those again. They used to fail as `closed`, 3 of every 4, and
    // the server was blamed for a close HTTP allows it.
    let s = Server::start(|mut c| {
        if c.next_request().is_some() {
            c.send_then_close(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nbye!\n");
        }
    });
    let len = request_len(&s.url("/"));
    let args = ["-n", "12", "-c", "1", "-t", "1", "--pipeline", "4"];
    let j = throng_json(&[&["load", &s.url("/")], &args[..]].concat());
    assert_eq!(u(&j, "/completed"), 12, "{j:#}");
    assert_eq!(u(&j, "/sent"), 12);
    only_errors(&j, &[]);
    assert!(u(&j, "/resent") > 0, "{j:#}");
    assert_eq!(u(&j, "/connections/reconnects"), 11, "{j:#}");
    written_once_or_again(&j, len);
    // A POST is not sent twice on the client's judgement: the requests
    // behind the answered one fail as `closed`.
    let j = throng_json(&[&["load", &s.url("/"), "-m", "POST"], &args[..]].concat());
    assert_eq!(u(&j, "/resent"), 0, "{j:#}");
    assert_eq!(
        u(&j, "/completed") + u(&j, "/errors/closed") + u(&j, "/errors/reset"),
        12,
        "{j:#}"
    );
    assert!(
        u(&j, "/errors/closed") + u(&j, "/errors/reset") >= 3,
        "{j:#}"
    );
}

#[test]
fn a_run_by_time_counts_the_bytes_of_its_last_requests() {
    // On the ring, a send counts when its completion is taken, and the
    // sends of a run's last turn completed after the loop had ended: 3 of
    // 4 runs of 300 ms wrote one request less than the server read.
    let s = Server::scripted(Script::answering(ok(b"quick\n")));
    let len = request_len(&s.url("/"));
    for io in ["uring", "epoll"] {
        for _ in 0..4 {
            let j = throng_json(&[
                "load",
                &s.url("/"),
                "-d",
                "300ms",
                "-c",
                "4",
                "-t",
                "1",
                "--io",
                io,
            ]);
            only_errors(&j, &[]);
            assert_eq!(u(&j, "/resent"), 0, "{j:#}");
            written_once_or_again(&j, len);
        }
    }
}

#[test]
fn answers_to_warmup_requests_bring_their_bytes_to_the_warmup() {
    // Open model: a request of the warmup answered after measuring began
    // is a warmup answer, and its bytes were counted as measured: 197
    // answers with 200 answers' bytes. Every answer here takes 30 ms and
    // comes in one write, so what a phase read is its answers' bytes.
    let s = Server::scripted(Script::answering(ok(b"late\n")).delay(Duration::from_millis(30)));
    let one = throng_json(&["load", &s.url("/"), "-n", "1", "-c", "1"]);
    let answer = u(&one, "/bytes_read");
    let j = throng_json(&[
        "load",
        &s.url("/"),
        "--rate",
        "100",
        "--warmup",
        "1s",
        "-d",
        "2s",
        "-c",
        "8",
    ]);
    only_errors(&j, &[]);
    assert_eq!(u(&j, "/bytes_read"), u(&j, "/completed") * answer, "{j:#}");
}
