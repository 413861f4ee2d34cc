//! `throng report` and `throng compare` on a database written through the
//! lab's store: what a user runs after `throng lab`.

mod support;
use support::Bounded;

#[path = "../../report/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use throng_model::RunData;
use throng_store::Store;

fn store_run(store: &mut Store, run: &RunData) -> i64 {
    support::store_run(store, run, &[])
}

/// A database with the fixture run and the same run measured again.
fn database(dir: &Path) -> (std::path::PathBuf, i64, i64) {
    let db = dir.join("throng.db");
    let mut store = Store::open(&db).unwrap();
    let a = store_run(&mut store, &common::rich_run());
    let b = store_run(&mut store, &common::second_run());
    (db, a, b)
}

fn throng(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_throng"))
        .current_dir(dir)
        .args(args)
        .bounded_output()
        .expect("run throng")
}

#[test]
fn report_writes_every_format_of_the_latest_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, _a, b) = database(tmp.path());

    let out = throng(tmp.path(), &["report", "-o", "r.html"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let html = std::fs::read_to_string(tmp.path().join("r.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(&format!("<p class=\"meta\">Run {b} ·")));
    assert!(!html.to_ascii_lowercase().contains("<script"));
    assert_eq!(html.matches("<svg ").count(), 12);

    let out = throng(tmp.path(), &["report", &b.to_string(), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let csv = String::from_utf8(out.stdout).unwrap();
    // Header plus the fixture's 30 steps.
    assert_eq!(csv.lines().count(), 31);

    let out = throng(tmp.path(), &["report", "-o", "r.json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["steps"].as_array().unwrap().len(), 30);
    assert_eq!(v["summary"].as_array().unwrap().len(), 3);
}

#[test]
fn report_writes_pngs_and_links_them_from_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let out = throng(
        tmp.path(),
        &["report", "-o", "article.md", "--png", "charts"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut pngs: Vec<String> = std::fs::read_dir(tmp.path().join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pngs.sort();
    assert_eq!(pngs.len(), 12);
    assert!(pngs.contains(&"throughput-tiny-1c.png".to_string()));
    let md = std::fs::read_to_string(tmp.path().join("article.md")).unwrap();
    assert!(md.contains("](charts/throughput-tiny-1c.png)"));
}

#[test]
fn report_without_a_database_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let out = throng(tmp.path(), &["report"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `throng lab STUDY` first"));
    assert!(!tmp.path().join("throng.db").exists());
}

#[test]
fn compare_runs_fails_ci_on_a_real_slowdown_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, a, b) = database(tmp.path());
    let (a, b) = (a.to_string(), b.to_string());

    // nginx is 10% slower on every tiny step of run B.
    let out = throng(tmp.path(), &["compare", &a, &b, "--fail-if-slower", "5%"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("8 step(s) significantly slower"));

    let out = throng(
        tmp.path(),
        &[
            "compare",
            &a,
            &b,
            "--fail-if-slower",
            "15%",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 29);
    let count = |verdict: &str| rows.iter().filter(|r| r["verdict"] == verdict).count();
    assert_eq!(count("slower"), 8);
    assert_eq!(count("faster"), 0);
    // lighttpd's +1% is inside the 2% noise threshold.
    assert_eq!(count("no-change"), 15);
    assert_eq!(count("not-testable"), 6);
}

#[test]
fn compare_two_servers_of_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, a, _b) = database(tmp.path());
    let out = throng(
        tmp.path(),
        &[
            "compare",
            &a.to_string(),
            "--servers",
            "nginx",
            "lighttpd",
            "--format",
            "md",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("| step | nginx req/s | lighttpd req/s | change | p | verdict |\n"));
    assert_eq!(md.matches("| slower |").count(), 8);
    assert!(md.contains("| geometric mean |"));

    let out = throng(
        tmp.path(),
        &["compare", &a.to_string(), "--servers", "nginx", "caddy"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no server \"caddy\""));
}

#[test]
fn report_and_compare_read_a_database_from_before_the_split() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("old.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../store/tests/fixtures/written-before-the-split.db"),
        &db,
    )
    .unwrap();
    let out = throng(tmp.path(), &["report", "--db", "old.db", "-o", "r.md"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = std::fs::read_to_string(tmp.path().join("r.md")).unwrap();
    assert!(md.starts_with("# Web server benchmark: old-main\n"), "{md}");
    // Both servers' four steps, with their stored verdicts, and each
    // server's best figure in the summary and in the best-per-workload
    // table (which the Markdown report carries as the HTML does).
    assert_eq!(
        md.matches("suspect: client\\_bound, noisy").count(),
        4 + 2 + 2
    );
    let out = throng(
        tmp.path(),
        &[
            "compare",
            "1",
            "--db",
            "old.db",
            "--servers",
            "nginx",
            "lighttpd",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("tiny").count(), 2, "{text}");
}

/// `throng ARGS` must exit 2 with `want` as its one line on stderr.
fn refused<S: AsRef<std::ffi::OsStr>>(args: &[S], want: &str) {
    let mut cmd = support::throng();
    cmd.args(args);
    let out = support::run_bounded(cmd, std::time::Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert_eq!(out.status.code(), Some(2), "{shown:?}: {err}");
    assert_eq!(err.trim(), want, "{shown:?}");
}

#[test]
fn a_report_named_for_a_format_throng_does_not_write_is_refused() {
    // report.pdf used to get HTML under a name that said PDF.
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("report.pdf");
    let pdf = out_path.to_string_lossy().into_owned();
    refused(
        &["report", "--db", "none.db", "-o", &pdf],
        &format!(
            "throng: -o {pdf}: throng writes html, md, csv or json; name the file so, or give --format"
        ),
    );
    assert!(!out_path.exists());
    // -o into a folder that does not exist: refused before any chart is
    // written (the charts were left behind).
    let png = dir.path().join("charts");
    let nodir = dir.path().join("nodir");
    let html = nodir.join("r.html").to_string_lossy().into_owned();
    refused(
        &[
            "report",
            "--db",
            "none.db",
            "--png",
            &png.to_string_lossy(),
            "-o",
            &html,
        ],
        &format!(
            "throng: -o {html}: the folder {} does not exist",
            nodir.display()
        ),
    );
    assert!(!png.exists());
    refused(
        &["compare", "--db", "none.db", "3", "3"],
        "throng: run 3 compared with itself: give two different runs",
    );
}

#[test]
fn a_file_that_is_not_a_results_database_is_left_as_it_was() {
    // SQLite takes an empty file for a new database: opening it for a
    // report wrote the schema into whatever the user had pointed at.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("e.db");
    std::fs::write(&empty, b"").unwrap();
    let db = empty.to_string_lossy().into_owned();
    for args in [
        vec!["report", "--db", &db],
        vec!["runs", "--db", &db],
        vec!["compare", "--db", &db, "1", "2"],
    ] {
        refused(
            &args,
            &format!("throng: {db} is not a results database: it is empty"),
        );
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "{args:?}");
    }
    // A file that is not SQLite: SQLite's "Error code 26" named no file.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, b"hello\n").unwrap();
    let db = text.to_string_lossy().into_owned();
    for args in [
        vec!["report", "--db", &db],
        vec!["runs", "--db", &db],
        vec!["lab", "quick", "--db", &db],
        vec!["load", "http://127.0.0.1:9/", "-n", "10", "--db", &db],
    ] {
        refused(
            &args,
            &format!("throng: {db} is not a results database: it is not an SQLite file"),
        );
        assert_eq!(std::fs::read(&text).unwrap(), b"hello\n", "{args:?}");
    }
    // Another program's SQLite database, even one with a `runs` table of
    // its own: throng's tables were added beside its own (`runs` exited
    // 0), or SQLite's 64-line error quoted the schema.
    for (name, sql, shown) in [
        (
            "users.db",
            "CREATE TABLE users (id INTEGER, name TEXT);",
            "users",
        ),
        (
            "jobs.db",
            "CREATE TABLE runs (id INTEGER, what TEXT); CREATE TABLE steps (x); \
             CREATE TABLE t3 (x); CREATE TABLE t4 (x); PRAGMA user_version = 3;",
            "runs, steps, t3, ...",
        ),
    ] {
        let path = dir.path().join(name);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(sql).unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let db = path.to_string_lossy().into_owned();
        for args in [
            vec!["report", "--db", &db],
            vec!["runs", "--db", &db],
            vec!["compare", "--db", &db, "1", "2"],
            vec!["lab", "quick", "--db", &db],
        ] {
            refused(
                &args,
                &format!(
                    "throng: {db} is not a results database: it holds another program's \
                     tables ({shown}); give --db a file of its own"
                ),
            );
            assert_eq!(std::fs::read(&path).unwrap(), before, "{args:?}");
        }
    }
}

#[test]
fn a_report_that_cannot_be_written_whole_leaves_the_old_one_as_it_was() {
    // A disk that fills part-way, here a file-size limit of 48 KiB: the
    // report and its charts used to be cut short or left empty where
    // whole ones had been.
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let (db, _, _) = database(dir.path());
    let old = b"an older report, whole\n";
    std::fs::write(dir.path().join("r.html"), old).unwrap();
    std::fs::create_dir(dir.path().join("png")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_throng"));
    cmd.current_dir(dir.path()).args([
        "report",
        "--db",
        db.to_str().unwrap(),
        "-o",
        "r.html",
        "--png",
        "png",
    ]);
    // SAFETY: between fork and exec only async-signal-safe calls are made.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 48 << 10,
                rlim_max: 48 << 10,
            };
            // Writes past the limit then fail with EFBIG instead of
            // killing the process with SIGXFSZ.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.bounded_output().expect("run throng");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("r.html")).unwrap(), old);
    // No chart cut short, and nothing half-written left beside them.
    for e in std::fs::read_dir(dir.path().join("png")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "{name} left behind");
        let png = std::fs::read(e.path()).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.ends_with(b"IEND\xaeB`\x82"),
            "{name}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_gate_on_slowdowns_fails_a_server_that_no_longer_serves() {
    // Run B is run A with every step of one server failed, as when it
    // exits before it is ready: no ratio can be slower, and the gate
    // passed, listing the steps only as "not measured on both sides".
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("throng.db");
    let mut store = Store::open(&db).unwrap();
    let run = common::rich_run();
    let a = store_run(&mut store, &run).to_string();
    let mut broken = run.clone();
    let server = broken.steps[0].server.clone();
    let mut failed = 0;
    for s in broken.steps.iter_mut().filter(|s| s.server == server) {
        s.status = throng_model::StepStatus::Failed;
        s.failure = Some("exited with status 1 before it was ready\nlog tail".into());
        s.rounds.clear();
        failed += 1;
    }
    let b = store_run(&mut store, &broken).to_string();
    drop(store);
    let out = throng(tmp.path(), &["compare", &a, &b, "--fail-if-slower", "50%"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let head = format!("throng: {failed} step(s) measured in run {a} were not in run {b}:");
    assert!(err.starts_with(&head), "{err}");
    assert!(
        err.contains(&format!(
            ": failed in run {b} (exited with status 1 before it was ready)"
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1 + failed, "{err}");
    // Without a gate, the comparison says it and succeeds.
    let out = throng(tmp.path(), &["compare", &a, &b, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lost"].as_array().unwrap().len(), failed);
}

#[test]
fn stacks_are_kept_in_a_json_report_only() {
    // Refused before the database is opened: the flag has no meaning there.
    refused(
        &["report", "--db", "none.db", "--stacks", "--format", "md"],
        "throng: --stacks keeps the folded stacks in a JSON report: add --format json",
    );
    refused(
        &["report", "--db", "none.db", "--stacks", "-o", "r.html"],
        "throng: --stacks keeps the folded stacks in a JSON report: add --format json",
    );
}
