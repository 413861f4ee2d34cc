//! `throng compare A B` on two runs that both stored paired ratios: each
//! pair of servers' ratio checked against the other run's interval, and
//! `--fail-on-disagreement` as a gate on it.

mod support;
use support::Bounded;

#[path = "../../report/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use throng_model::{Comparison, Decision};
use throng_store::Store;

fn pooled(a: &str, b: &str, workload: &str, cores: u32, r: [f64; 3], pairs: u32) -> Comparison {
    let [ratio, ci_low, ci_high] = r;
    Comparison {
        a: a.into(),
        b: b.into(),
        workload: workload.into(),
        cores,
        concurrency: None,
        rate: None,
        ratio,
        ci_low,
        ci_high,
        pairs,
        decision: Decision::Undecided,
        interval: throng_model::IntervalKind::OrderStatistic,
        launch_ratios: Vec::new(),
        next_run: None,
        next_run_runs: None,
        runs_differ: false,
    }
}

/// The first run's comparisons: a level's ratio among them, which is not
/// checked, and a pooled one from too few pairs for an interval.
fn first() -> Vec<Comparison> {
    let mut level = pooled("nginx", "lighttpd", "tiny", 1, [1.2, 1.1, 1.3], 6);
    level.concurrency = Some(10);
    vec![
        pooled("nginx", "lighttpd", "tiny", 1, [1.46, 1.42, 1.50], 20),
        level,
        pooled(
            "nginx",
            "apache2-event",
            "tiny",
            1,
            [0.239, 0.232, 0.246],
            20,
        ),
        pooled("nginx", "lighttpd", "tiny", 2, [1.40, 1.35, 1.45], 20),
        pooled("nginx", "apache2-event", "large", 1, [0.5, 0.45, 0.55], 4),
    ]
}

/// Three runs: the first, a second that disagrees on one pair and stored
/// another the other way round, and a third that measured the first's
/// figures again.
fn database(dir: &Path) -> PathBuf {
    let db = dir.join("throng.db");
    let mut store = Store::open(&db).unwrap();
    assert_eq!(
        support::store_run(&mut store, &common::rich_run(), &first()),
        1
    );
    let second = [
        pooled("lighttpd", "nginx", "tiny", 1, [0.68, 0.66, 0.70], 20),
        pooled(
            "nginx",
            "apache2-event",
            "tiny",
            1,
            [0.268, 0.256, 0.281],
            20,
        ),
        pooled("nginx", "apache2-event", "large", 1, [0.52, 0.50, 0.54], 20),
        pooled("nginx", "lighttpd", "large", 1, [0.9, 0.85, 0.95], 20),
    ];
    assert_eq!(
        support::store_run(&mut store, &common::second_run(), &second),
        2
    );
    assert_eq!(
        support::store_run(&mut store, &common::second_run(), &first()),
        3
    );
    db
}

fn throng(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_throng"))
        .current_dir(dir)
        .args(args)
        .bounded_output()
        .expect("run throng")
}

/// In the run's reading order: its workloads as its steps list them
/// (large first), fewer cores first; then what only run 2 measured.
const LINES: [&str; 5] = [
    "- apache2-event/nginx (large, 1 core): 0.500 (too few pairs to bound: 4) in run 1, \
     0.520 (0.500–0.540) in run 2: not judged, for want of an interval",
    "- lighttpd/nginx (tiny, 1 core): 1.460 (1.420–1.500) in run 1, 1.471 (1.429–1.515) in run 2: \
     the runs agree within their intervals",
    "- apache2-event/nginx (tiny, 1 core): 0.239 (0.232–0.246) in run 1, 0.268 (0.256–0.281) in run 2: \
     the runs disagree beyond their intervals",
    "- lighttpd/nginx (tiny, 2 cores): measured in run 1 only",
    "- lighttpd/nginx (large, 1 core): measured in run 2 only",
];

#[test]
fn two_runs_check_each_others_paired_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let db = db.to_str().unwrap();

    let out = throng(tmp.path(), &["compare", "1", "2", "--db", db]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let title = "Paired ratios in run 1 and run 2 (B/A, pooled over each sweep, 95% intervals): \
                 the runs agree on a pair when each one's ratio lies inside the other's interval.";
    let at = text
        .lines()
        .position(|l| l == title)
        .unwrap_or_else(|| panic!("{text}"));
    let part: Vec<&str> = text.lines().skip(at + 1).take(7).collect();
    assert_eq!(part[..5], LINES, "{text}");
    assert_eq!(
        part[5],
        "1 of 3 pairs agree, 1 not judged for want of an interval"
    );
    // The runs' verdicts and machine checks are alike: no caution follows.
    assert_eq!(part.len(), 6, "{text}");

    let out = throng(
        tmp.path(),
        &["compare", "1", "2", "--db", db, "--fail-on-disagreement"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "throng: 1 pair(s) of servers disagree between run 1 and run 2 beyond their intervals:\n  \
         apache2-event/nginx (tiny, 1 core): 0.239 (0.232–0.246) in run 1, 0.268 (0.256–0.281) in run 2: \
         the runs disagree beyond their intervals\n"
    );
    // The gate changes the status, not what is printed.
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}

#[test]
fn runs_that_agree_pass_the_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let db = db.to_str().unwrap();
    let out = throng(
        tmp.path(),
        &["compare", "1", "3", "--db", db, "--fail-on-disagreement"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "\n- apache2-event/nginx (tiny, 1 core): 0.239 (0.232–0.246) in run 1, \
             0.239 (0.232–0.246) in run 3: the runs agree within their intervals\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n3 of 4 pairs agree, 1 not judged for want of an interval\n"),
        "{text}"
    );
}

#[test]
fn the_check_is_in_the_json_and_the_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let db = db.to_str().unwrap();
    let out = throng(
        tmp.path(),
        &["compare", "1", "2", "--db", db, "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &v["agreement"];
    assert_eq!(a["runs"], serde_json::json!([1, 2]));
    let accords: Vec<&str> = a["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["accord"].as_str().unwrap())
        .collect();
    assert_eq!(
        accords,
        [
            "no-interval",
            "agree",
            "disagree",
            "first-only",
            "second-only"
        ]
    );
    // Run 2's inverted pair, turned to run 1's lighttpd over nginx.
    let second = &a["pairs"][1]["second"];
    assert_eq!(
        (second["a"].as_str(), second["b"].as_str()),
        (Some("nginx"), Some("lighttpd"))
    );

    let out = throng(
        tmp.path(),
        &["compare", "1", "2", "--db", db, "--format", "md"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("\n\n1 of 3 pairs agree, 1 not judged for want of an interval\n"),
        "{md}"
    );
}

#[test]
fn the_gate_needs_two_runs_and_says_when_there_is_nothing_to_check() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let mut store = Store::open(&db).unwrap();
    assert_eq!(
        support::store_run(&mut store, &common::second_run(), &[]),
        4
    );
    drop(store);
    let db = db.to_str().unwrap();

    let out = throng(
        tmp.path(),
        &["compare", "1", "4", "--db", db, "--fail-on-disagreement"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "throng: --fail-on-disagreement: run 1 and run 4 did not both store paired ratios, \
         so none were checked\n"
    );
    assert!(!String::from_utf8(out.stdout)
        .unwrap()
        .contains("Paired ratios in run"));

    let out = throng(
        tmp.path(),
        &[
            "compare",
            "1",
            "--servers",
            "nginx",
            "lighttpd",
            "--db",
            db,
            "--fail-on-disagreement",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn svg_draws_the_check_as_a_forest_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let mut store = Store::open(&db).unwrap();
    assert_eq!(
        support::store_run(&mut store, &common::second_run(), &[]),
        4
    );
    drop(store);
    let db = db.to_str().unwrap();
    let svg = tmp.path().join("agreement.svg");
    let out = throng(
        tmp.path(),
        &[
            "compare",
            "1",
            "2",
            "--db",
            db,
            "--svg",
            svg.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    // A row per pair, in the lines' order; the pair the runs disagree on
    // and the one they could not judge are marked.
    assert_eq!(drawn.matches("<g class=\"row\">").count(), LINES.len());
    assert_eq!(drawn.matches(">disagree</text>").count(), 1);
    assert_eq!(drawn.matches(">not judged</text>").count(), 1);
    assert!(drawn.contains(">run 1: 0.50×</text>"));
    assert!(drawn.contains(">too few pairs to bound: 4</text>"));

    // Nothing to draw is said, with the option, and nothing is written.
    let none = tmp.path().join("none.svg");
    let out = throng(
        tmp.path(),
        &[
            "compare",
            "1",
            "4",
            "--db",
            db,
            "--svg",
            none.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "throng: --svg {}: run 1 and run 4 did not both store paired ratios, so there is \
             nothing to draw\n",
            none.display()
        )
    );
    assert!(!none.exists());
}
