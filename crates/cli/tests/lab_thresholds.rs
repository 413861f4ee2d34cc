//! A study's `[thresholds]` on a real nginx: each step judged by its
//! worst round, the crossed step named with its figure, exit 99, each
//! round's judgement stored in its summary, and a JUnit report with one
//! case per step and threshold.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

const THRONG: &str = env!("CARGO_BIN_EXE_throng");

fn study(thresholds: &str) -> String {
    format!(
        "name = \"gates\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
         concurrency = [2, 4]\nwarmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n\
         [rounds]\nseconds = 0.3\nwarmup_seconds = 0.1\nmin = 3\nmax = 3\nlaunches = 1\n\
         [thresholds]\n{thresholds}"
    )
}

fn lab(dir: &std::path::Path, text: &str, junit: &std::path::Path) -> std::process::Output {
    let file = dir.join("gates.toml");
    std::fs::write(&file, text).unwrap();
    let mut cmd = Command::new(THRONG);
    cmd.args(["lab", file.to_str().unwrap(), "--quiet", "--db"])
        .arg(dir.join("gates.db"))
        .arg("--junit")
        .arg(junit)
        .stdin(Stdio::null());
    support::run_bounded(cmd, Duration::from_secs(120))
}

#[test]
fn a_step_that_crosses_a_threshold_is_named_and_the_lab_exits_99() {
    if !support::studies::is_installed("nginx") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("lab.xml");
    let out = lab(
        dir.path(),
        &study("completed = \"<1\"\np99 = [\"<10s\"]\n"),
        &junit,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stdout}\n{stderr}");
    assert!(
        stderr.ends_with("2 steps crossed a threshold of [thresholds]\n"),
        "{stderr}"
    );
    // Each step's line is followed by what it crossed, by its worst round.
    for c in [2, 4] {
        let prefix =
            format!("  nginx 1 core tiny c={c}: threshold completed<1 crossed: completed was ");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for c={c}:\n{stdout}"));
        let figure: u64 = line[prefix.len()..].parse().unwrap();
        assert!(figure > 0, "{line}");
    }
    assert!(!stdout.contains("p99<10s"), "{stdout}");
    // Every round keeps its own judgement in its stored summary.
    let db = rusqlite::Connection::open(dir.path().join("gates.db")).unwrap();
    let mut q = db.prepare("SELECT summary FROM rounds").unwrap();
    let summaries: Vec<serde_json::Value> = q
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|s| serde_json::from_str(&s.unwrap()).unwrap())
        .collect();
    assert_eq!(summaries.len(), 6, "two steps of three rounds");
    for s in &summaries {
        let completed = s["completed"].as_f64().unwrap();
        assert_eq!(
            s["thresholds"],
            serde_json::json!([
                {"expression": "completed<1", "figure": completed, "passed": false},
                {"expression": "p99<10s", "figure": s["latency_us"]["p99"].as_f64().unwrap() / 1e6, "passed": true},
            ])
        );
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<(String, bool)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            (
                n.attribute("name").unwrap().to_string(),
                n.children().any(|f| f.has_tag_name("failure")),
            )
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("nginx 1 core tiny c=2: completed<1".to_string(), true),
            ("nginx 1 core tiny c=2: p99<10s".to_string(), false),
            ("nginx 1 core tiny c=4: completed<1".to_string(), true),
            ("nginx 1 core tiny c=4: p99<10s".to_string(), false),
        ]
    );
}

#[test]
fn a_bad_threshold_refuses_the_study_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("lab.xml");
    let out = lab(dir.path(), &study("p99 = \"<50\"\n"), &junit);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "throng: study {}: [thresholds] p99 = \"<50\": p99 is a time: give its unit, us, ms \
             or s (such as p99<50ms)\n",
            dir.path().join("gates.toml").display()
        )
    );
    assert!(!dir.path().join("gates.db").exists());
    assert!(!junit.exists());
}
