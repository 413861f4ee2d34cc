//! `throng load --save` against a real nginx, read back by `throng runs`,
//! `throng report` and `throng compare` as a user would.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{throng, throng_json, Bounded, Nginx};
use throng_testkit::wait::wait_for;

fn run(args: &[&str]) -> Output {
    throng().args(args).bounded_output().expect("run throng")
}

/// `throng runs --json` of `db`, in the time zone `tz`.
fn runs(db: &Path, tz: &str) -> Vec<Value> {
    let out = throng()
        .args(["runs", "--db", &db.to_string_lossy(), "--json"])
        .env("TZ", tz)
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The command line as a shell takes it back: these words need quotes
/// only where they have a space or a quote.
fn typed(args: &[&str]) -> String {
    std::iter::once(env!("CARGO_BIN_EXE_throng"))
        .chain(args.iter().copied())
        .map(|a| {
            if a.contains([' ', '\'']) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// "YYYY-MM-DD HH:MM" of unix seconds, `hours` east of UTC.
fn minute(unix_s: f64, hours: i64) -> String {
    let utc = throng_report::figures::utc(unix_s.floor() + hours as f64 * 3600.0);
    utc[..16].to_string()
}

#[test]
fn a_saved_load_is_listed_reported_and_compared() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("t.db");
    let dbs = db.to_string_lossy().to_string();
    let url = ng.url("/");
    let first = [
        "load",
        &url,
        "-n",
        "500",
        "-c",
        "5",
        "-H",
        "X-Note: it's saved",
        "--save",
        "--db",
        &dbs,
    ];
    let j = throng_json(&first);
    assert_eq!(j["completed"], 500);

    let listed = runs(&db, "UTC");
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let r = &listed[0];
    assert_eq!(r["id"], 1);
    assert_eq!(r["study"], "load");
    assert_eq!(r["complete"], true);
    assert_eq!(r["steps"], 1);
    assert_eq!(r["failed"], 0);
    assert_eq!(
        r["valid"].as_u64().unwrap() + r["suspect"].as_u64().unwrap(),
        1
    );
    // throng_json adds --json after the words given.
    let mut words = first.to_vec();
    words.push("--json");
    assert_eq!(r["command"], typed(&words));
    assert!(
        r["command"]
            .as_str()
            .unwrap()
            .contains(r"'X-Note: it'\''s saved'"),
        "{r:#}"
    );
    let started = r["started_unix_s"].as_f64().unwrap();
    assert_eq!(r["when"], minute(started, 0));
    // The time is the machine's local time: two hours east of UTC here.
    assert_eq!(runs(&db, "XYZ-2")[0]["when"], minute(started, 2));

    let out = run(&["report", "--db", &dbs, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = report_steps(&report);
    assert_eq!(steps.len(), 1, "{report:#}");
    let s = &steps[0];
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    assert_eq!(s["server"], authority);
    assert_eq!(s["workload"], "/");
    assert_eq!(s["concurrency"], 5);
    assert_eq!(s["completed"], 500);
    assert_eq!(s["rounds"], 1);
    assert_eq!(s["status"], "ok");
    // Nothing of the target was sampled: no figure, rather than 0 bytes.
    assert_eq!(
        (&s["pss_peak_bytes"], &s["rss_peak_bytes"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(report["summary"][0]["exe_bytes"], Value::Null, "{report:#}");
    assert_eq!(report["summary"][0]["memory_bytes"], Value::Null);

    // The same load asked for 700: the two runs compare step by step.
    let second = ["load", &url, "-n", "700", "-c", "5", "--db", &dbs, "--json"];
    let out = run(&second);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["completed"], 700);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("saved as run 2 in {dbs}")),
        "{out:?}"
    );
    let listed = runs(&db, "UTC");
    assert_eq!(
        listed
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 1],
        "newest first"
    );
    assert_eq!(listed[0]["command"], typed(&second));

    let out = run(&["compare", "1", "2", "--db", &dbs]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("run 1") && table.contains("run 2"),
        "{table}"
    );
    assert!(table.contains(authority), "{table}");
    // One round a side: the test has nothing to go on, and says so.
    assert!(table.contains("not testable"), "{table}");

    let out = run(&["compare", "1", "2", "--db", &dbs, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["rows"].as_array().unwrap().len(), 1, "{c:#}");
    let row = &c["rows"][0];
    assert_eq!(row["key"]["server"], authority);
    assert_eq!(row["a"]["rounds"].as_array().unwrap().len(), 1);
    assert_eq!(c["unmatched"].as_array().unwrap().len(), 0);

    // The table shows the command without the directory it ran from.
    let out = run(&["runs", "--db", &dbs]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("throng load http://127.0.0.1:"), "{table}");
    assert!(!table.contains(env!("CARGO_BIN_EXE_throng")), "{table}");
}

/// The report's steps, as its JSON lists their figures.
fn report_steps(v: &Value) -> Vec<Value> {
    v["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in {v:#}"))
        .clone()
}

#[test]
fn runs_of_a_missing_database_is_one_line_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("none.db");
    let out = run(&["runs", "--db", &db.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("throng: no results database at {}", db.display())),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_load_spread_over_hosts_is_saved_merged() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("t.db");
    let dbs = db.to_string_lossy().to_string();
    let url = ng.url("/");
    let j = throng_json(&[
        "load", &url, "-n", "600", "-c", "4", "--hosts", "local", "--save", "--db", &dbs,
    ]);
    assert_eq!(j["completed"], 600);

    let listed = runs(&db, "UTC");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["complete"], true);
    assert_eq!(listed[0]["steps"], 1);

    let out = run(&["report", "--db", &dbs, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = report_steps(&report);
    assert_eq!(steps[0]["completed"], 600);
    assert_eq!(steps[0]["concurrency"], 4);
    // The host's histogram was stored with its counts: the report has
    // the latency of the responses.
    assert!(steps[0]["p50_us"].as_u64().is_some(), "{:#}", steps[0]);
    assert!(report.to_string().contains("1 client host"), "{report:#}");
}

#[test]
fn an_interrupted_load_is_saved_incomplete() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("t.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["load", &ng.url("/"), "-c", "2", "-d", "60s", "--json"])
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until nginx has answered, so the run is under way when it is stopped.
    assert!(
        wait_for(Duration::from_secs(10), || ng.log_entries().len() >= 100),
        "no request reached nginx"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = support::wait_until(&mut child, Instant::now() + Duration::from_secs(10))
        .expect("throng did not end within 10 s of SIGINT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(130), "{out:?}");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["interrupted"], true);

    let listed = runs(&db, "UTC");
    assert_eq!(listed.len(), 1);
    let r = &listed[0];
    assert_eq!(r["complete"], false);
    assert_eq!(r["steps"], 1);
    // The step was measured; its verdict says it was cut short.
    assert_eq!(r["suspect"], 1, "{r:#}");

    let out = run(&["report", "--db", &db.to_string_lossy(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = report_steps(&report);
    assert_eq!(steps[0]["completed"], j["completed"]);
}

#[test]
fn a_load_that_cannot_start_is_saved_as_a_failed_step() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("t.db");
    let port = support::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = run(&[
        "load",
        &url,
        "-n",
        "10",
        "-c",
        "1",
        "--db",
        &db.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let listed = runs(&db, "UTC");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["failed"], 1, "{:#}", listed[0]);
    assert_eq!(listed[0]["steps"], 1);
}
