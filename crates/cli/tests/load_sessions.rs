//! `throng load --sessions` against a real nginx, whose access log names
//! the connection and the time of every request: sessions make exactly
//! their requests, a page's burst spreads over the user's connections, a
//! failed session stops there and counts once, and a siege URL file runs
//! as one session.

mod support;

use std::time::{Duration, Instant};

use support::{run_bounded, throng, throng_json, u};

/// (status, connection, uri, msec) per logged request.
type Line = (u16, u64, String, f64);

fn nginx() -> support::Nginx {
    support::Nginx::start_logging(
        &[
            ("index.html", b"home\n"),
            ("style.css", b"body{}\n"),
            ("logo.png", b"PNG....\n"),
            ("app.js", b"x()\n"),
            ("about.html", b"about us\n"),
        ],
        "$status $connection $uri $msec",
    )
}

/// (status, connection, uri, msec) per line of the access log.
fn parse<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Vec<Line> {
    lines
        .into_iter()
        .map(|l| {
            let f: Vec<&str> = l.as_ref().split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_string(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// Every request nginx logged, read after a graceful quit.
fn log(ng: support::Nginx) -> Vec<Line> {
    parse(ng.quit_and_read_log())
}

/// The lines logged once there are `n`, or what there is after a bound.
fn logged(ng: &support::Nginx, n: usize) -> Vec<Line> {
    parse(ng.lines_once_logged(n))
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn wsesslog_sessions_make_exactly_their_requests() {
    let ng = nginx();
    let dir = tempfile::tempdir().unwrap();
    // Two sessions of two pages: 5 + 2 requests.
    let file = write(
        dir.path(),
        "s.log",
        "# home page with its objects, then about\n\
         /index.html think=0.05\n\
         \t/style.css\n\
         \t/logo.png\n\
         \t/app.js\n\
         /about.html\n\
         \n\
         /about.html think=0.02\n\
         /index.html\n",
    );
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--sessions",
        &file,
        "-c",
        "2",
        "-n",
        "6",
        "-t",
        "1",
        "--conns-per-user",
        "3",
    ]);
    let s = &j["sessions"];
    assert_eq!(u(s, "/started"), 6);
    assert_eq!(u(s, "/completed"), 6);
    assert_eq!(u(s, "/failed"), 0);
    assert_eq!(u(s, "/unfinished"), 0);
    assert_eq!(u(s, "/users"), 2);
    // Users take the sessions in turn: 3 of each, 3 × 5 + 3 × 2.
    assert_eq!(u(&j, "/completed"), 21);
    assert_eq!(u(&j, "/errors_total"), 0);
    assert_eq!(j["status"]["200"], 21);
    // Think observed once per page that has a next page: one per session.
    assert_eq!(u(&s["think_us"], "/count"), 6);
    assert!(u(&s["think_us"], "/min") >= 20_000);
    let lines = log(ng);
    assert_eq!(lines.len(), 21);
    assert!(lines.iter().all(|l| l.0 == 200));
    let count = |uri: &str| lines.iter().filter(|l| l.2 == uri).count();
    assert_eq!(count("/index.html"), 6);
    assert_eq!(count("/style.css"), 3);
    assert_eq!(count("/logo.png"), 3);
    assert_eq!(count("/app.js"), 3);
    assert_eq!(count("/about.html"), 6);
    // Each burst of three went out on three connections.
    let mut burst_conns: Vec<u64> = lines
        .iter()
        .filter(|l| ["/style.css", "/logo.png", "/app.js"].contains(&l.2.as_str()))
        .map(|l| l.1)
        .collect();
    burst_conns.sort();
    burst_conns.dedup();
    assert!(burst_conns.len() >= 3, "{burst_conns:?}");
}

#[test]
fn a_failed_request_ends_its_session_once() {
    let ng = nginx();
    let dir = tempfile::tempdir().unwrap();
    // Two of the burst are missing (404): the session fails once, and its
    // next page is never asked for.
    let file = write(
        dir.path(),
        "s.log",
        "/index.html\n\t/missing-1.png\n\t/missing-2.png\n\t/style.css\n/about.html\n",
    );
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--sessions",
        &file,
        "-c",
        "1",
        "-n",
        "1",
        "-t",
        "1",
    ]);
    let s = &j["sessions"];
    assert_eq!(
        (u(s, "/started"), u(s, "/completed"), u(s, "/failed")),
        (1, 0, 1)
    );
    assert_eq!(u(&j, "/completed"), 4);
    assert_eq!(j["status"]["404"], 2);
    assert_eq!(j["errors"]["status"], 2);
    let lines = log(ng);
    assert_eq!(lines.len(), 4);
    assert!(!lines.iter().any(|l| l.2 == "/about.html"));
}

#[test]
fn a_siege_url_file_is_one_session_of_pages() {
    let ng = nginx();
    let dir = tempfile::tempdir().unwrap();
    let base = ng.url("");
    let base = base.trim_end_matches('/');
    let file = write(
        dir.path(),
        "urls.txt",
        &format!("HOST={base}\n$(HOST)/index.html\n${{HOST}}/style.css\n/about.html\n"),
    );
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--sessions",
        &file,
        "--think",
        "10ms",
        "-c",
        "2",
        "-n",
        "4",
        "-t",
        "1",
    ]);
    let s = &j["sessions"];
    assert_eq!((u(s, "/started"), u(s, "/completed")), (4, 4));
    assert_eq!(u(&j, "/completed"), 12);
    // --think after each page but the last.
    assert_eq!(u(&s["think_us"], "/count"), 8);
    assert!(u(&s["think_us"], "/min") >= 10_000);
    let lines = log(ng);
    assert_eq!(lines.len(), 12);
    for uri in ["/index.html", "/style.css", "/about.html"] {
        assert_eq!(lines.iter().filter(|l| l.2 == uri).count(), 4, "{uri}");
    }
}

#[test]
fn bad_session_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("\t/x.css\n", "bad.log:1: "),
        ("/a think=soon\n", "bad.log:1: "),
        ("/a\n/b think=1 color=red\n", "bad.log:2: "),
        ("http://127.0.0.1:9/a POST <missing.txt\n", "bad.log:1: "),
        // A siege line's port out of range, at its line.
        (
            "http://127.0.0.1:9/a\nhttp://127.0.0.1:99999/b\n",
            "bad.log:2: ",
        ),
    ];
    for (text, want) in cases {
        let file = write(dir.path(), "bad.log", text);
        let mut cmd = throng();
        cmd.args(["load", "http://127.0.0.1:9/", "--sessions", &file]);
        let out = run_bounded(cmd, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{text:?}: {err}");
    }
    let file = write(dir.path(), "ok.log", "/a\n");
    for (args, want) in [
        (
            vec!["--users-per-sec", "0"],
            "--users-per-sec must be a positive",
        ),
        (
            vec!["--conns-per-user", "0"],
            "--conns-per-user must be at least 1",
        ),
        (vec!["--think-random", "2s-1s"], "ends before it starts"),
    ] {
        let mut cmd = throng();
        cmd.args(["load", "http://127.0.0.1:9/", "--sessions", &file]);
        cmd.args(&args);
        let out = run_bounded(cmd, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_saved_sessions_load_is_reported_by_its_users() {
    let ng = nginx();
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "s.log",
        "/index.html\n\t/style.css\n/about.html\n",
    );
    let db = dir.path().join("t.db");
    let db = db.to_str().unwrap();
    let mut cmd = throng();
    cmd.args([
        "load",
        &ng.url("/"),
        "--sessions",
        &file,
        "-c",
        "3",
        "-n",
        "6",
        "-t",
        "1",
        "--db",
        db,
    ]);
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cmd = throng();
    cmd.args(["report", "--db", db, "--format", "json"]);
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let step = &j["run"]["steps"][0];
    assert_eq!(step["concurrency"], 3);
    assert_eq!(step["workload"], "sessions over 3 URLs");
    let s = &step["rounds"][0]["summary"];
    assert_eq!(s["completed"], 18);
    assert_eq!(s["sessions"]["completed"], 6);
}

#[test]
fn sessions_run_from_another_host_with_the_same_counts() {
    let ng = nginx();
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "s.log",
        "/index.html think=0.01\n\t/style.css\n/about.html\n",
    );
    // An agent on this machine stands in for a client host.
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--sessions",
        &file,
        "-c",
        "2",
        "-n",
        "4",
        "--hosts",
        "local",
    ]);
    let s = &j["sessions"];
    assert_eq!((u(s, "/started"), u(s, "/completed")), (4, 4));
    assert_eq!(u(&j, "/completed"), 12);
    assert_eq!(log(ng).len(), 12);
}

/// Users arrive on the client's schedule, whatever the server does: a
/// client stopped for 300 ms takes the arrivals due meanwhile late, all at
/// once, and says so, though its CPU figures stay quiet (a stopped process
/// waits for no CPU). 100 a second, uniform: 30 fall in the stop.
#[test]
fn arrivals_a_stopped_client_takes_late_are_its_own_doing() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let ng = nginx();
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.log", "/index.html\n");
    let json = dir.path().join("out.json");
    let mut child = throng()
        .args(["load", &ng.url("/"), "--sessions", &file])
        .args(["--users-per-sec", "100", "--arrival", "uniform"])
        .args(["-c", "20", "-t", "1", "-d", "2s", "--json"])
        .stdout(std::fs::File::create(&json).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    // In the measured phase (it starts at once: no warmup) once the server
    // has logged 20 arrivals, the first 0.2 s of them.
    assert!(logged(&ng, 20).len() >= 20, "the load never reached nginx");
    let stopped = Instant::now();
    kill(pid, Signal::SIGSTOP).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    kill(pid, Signal::SIGCONT).unwrap();
    // The stop lasts as long as this thread took to come back, which a
    // busy machine stretches past the 300 ms asked: an arrival falls due
    // every 10 ms of it.
    let due = (stopped.elapsed().as_millis() / 10) as u64;
    // Bounded: the run ends 2 s after it began; a hung one is killed
    // through its handle, which no other process can have taken.
    let status = support::wait_until(&mut child, Instant::now() + Duration::from_secs(30))
        .expect("the load did not end within 30 s");
    assert!(status.success(), "{status:?}");
    let out = std::fs::read(&json).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let late = u(&j, "/sessions/late_arrivals");
    // A busy machine also keeps the client waiting for a CPU outside the
    // stop, and an arrival falls due every 10 ms of that wait too (its
    // run-queue time: a stopped process is not runnable, so the stop is
    // not in it). On a VM the host's steal delays it as well, unseen by
    // that figure (48 late of 30 due and 7 waiting were seen), though not
    // by as much as the stop itself; the run's 200 arrivals all taken as
    // late, or none, would still break the bound.
    let waited = j["client_cpu_s"]["runqueue"].as_f64().unwrap();
    let while_waiting = (waited * 100.0).ceil() as u64;
    assert!(
        (due - 2..=2 * due + while_waiting).contains(&late),
        "{late} late, {due} due while stopped and {while_waiting} while waiting for a CPU: {:#}",
        j["sessions"]
    );
    let reasons = j["verdict"]["reasons"].as_array().unwrap();
    let bound = reasons
        .iter()
        .find(|r| r["code"] == "client_bound")
        .unwrap_or_else(|| panic!("{reasons:?}"));
    assert!(bound["message"]
        .as_str()
        .unwrap()
        .contains(&format!("started {late} of ")));
}
