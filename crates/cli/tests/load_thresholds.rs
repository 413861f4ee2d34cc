//! `throng load --threshold` against a real nginx: a threshold that must
//! be crossed exits 99 with its exact figure printed, in the JSON and in
//! the JUnit report; one that must hold exits 0; a bad one is refused
//! before any request is sent.

mod support;

use std::time::Duration;

use support::{run_bounded, throng, Nginx};

fn load(args: &[&str]) -> std::process::Output {
    let mut cmd = throng();
    cmd.args(args);
    run_bounded(cmd, Duration::from_secs(60))
}

#[test]
fn a_crossed_threshold_exits_99_with_its_figure_and_a_kept_one_exits_0() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let url = ng.url("/");
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    let junit_arg = junit.to_str().unwrap();
    let base = ["load", &url, "-n", "200", "-c", "2", "-t", "1"];
    let out = load(
        &[
            &base[..],
            &[
                "--threshold",
                "completed<1",
                "--threshold",
                "errors <= 0%",
                "--threshold",
                "sent>=200",
                "--junit",
                junit_arg,
                "--json",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr, "threshold completed<1 crossed: completed was 200\n");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["completed"], 200);
    assert_eq!(
        j["thresholds"],
        serde_json::json!([
            {"expression": "completed<1", "figure": 200.0, "passed": false},
            {"expression": "errors<=0%", "figure": 0.0, "passed": true},
            {"expression": "sent>=200", "figure": 200.0, "passed": true},
        ])
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 3);
    let failed: Vec<(&str, &str)> = cases
        .iter()
        .filter_map(|c| {
            let f = c.children().find(|n| n.has_tag_name("failure"))?;
            Some((
                c.attribute("name").unwrap(),
                f.attribute("message").unwrap(),
            ))
        })
        .collect();
    assert_eq!(
        failed,
        [(
            "completed<1",
            "threshold completed<1 crossed: completed was 200"
        )]
    );
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("3"));
    assert_eq!(suite.attribute("failures"), Some("1"));
    // A latency no loopback answer comes under: its exact figure, the
    // JSON's p99, in the unit it was written in.
    let out = load(&[&base[..], &["--threshold", "p99<1us", "--json"]].concat());
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p99 = j["latency_us"]["p99"].as_u64().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("threshold p99<1us crossed: p99 was {p99} µs\n")
    );
    assert_eq!(
        j["thresholds"],
        serde_json::json!([{"expression": "p99<1us", "figure": p99 as f64, "passed": false}])
    );
    // Without --json the figure is in the summary's lines, on stdout.
    let out = load(&[&base[..], &["--threshold", "p99<1us"]].concat());
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap();
    assert!(
        line.starts_with("threshold p99<1us crossed: p99 was ") && line.ends_with(" µs"),
        "{stdout}"
    );
    // Kept: exit 0, and the report has no failure.
    let out = load(
        &[
            &base[..],
            &[
                "--threshold",
                "completed>=200",
                "--threshold",
                "p99<10s",
                "--junit",
                junit_arg,
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("  threshold    completed>=200 held: completed was 200\n"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"2\" failures=\"0\""), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    assert_eq!(ng.quit_and_read_entries().len(), 800);
}

#[test]
fn a_bad_threshold_is_refused_before_any_request() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let url = ng.url("/");
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    for (expr, line) in [
        (
            "p99<50",
            "throng: --threshold \"p99<50\": p99 is a time: give its unit, us, ms or s (such as p99<50ms)\n",
        ),
        (
            "p98<50ms",
            "throng: --threshold \"p98<50ms\": `p98` is not a figure: use p50, p75, p90, p99, p999, \
             p9999, min, mean or max (latency; first_byte.p99 for the first byte), errors, rps, \
             mb_per_sec, completed or sent\n",
        ),
    ] {
        let out = load(&[
            "load",
            &url,
            "-n",
            "10",
            "--threshold",
            expr,
            "--junit",
            junit.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&out.stderr), line);
        assert!(out.stdout.is_empty());
    }
    let missing = dir.path().join("no/such/folder/report.xml");
    let out = load(&[
        "load",
        &url,
        "-n",
        "10",
        "--threshold",
        "p99<1s",
        "--junit",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not exist"),
        "{out:?}"
    );
    assert!(!junit.exists(), "nothing written for a refused run");
    assert_eq!(ng.quit_and_read_entries().len(), 0, "no request was sent");
}

#[test]
fn threshold_abort_stops_the_run_at_the_first_second_that_crosses() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let url = ng.url("/");
    let out = load(&[
        "load",
        &url,
        "-d",
        "20s",
        "-c",
        "2",
        "-t",
        "1",
        "--threshold",
        "completed<1",
        "--threshold-abort",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["interrupted"], true);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    // The end's judgement, then the second that stopped the run.
    assert_eq!(
        lines[0],
        format!(
            "threshold completed<1 crossed: completed was {}",
            j["completed"]
        )
    );
    // The first whole second with a response crosses it (the first, but
    // on a machine too loaded to answer within it); the run stops there.
    let (_, tail) = lines[1]
        .strip_prefix("threshold completed<1 crossed: completed was ")
        .and_then(|t| t.split_once(" after "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let second: f64 = tail
        .strip_suffix(" s: the run was stopped there (--threshold-abort)")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    let ran = j["duration_s"].as_f64().unwrap();
    assert!(second >= 1.0 && ran < second + 1.0, "{second} {ran}");
    // A figure the run does not keep per second is refused before it starts.
    let out = load(&[
        "load",
        &url,
        "-d",
        "20s",
        "--threshold",
        "p99<1ms",
        "--threshold-abort",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "throng: --threshold-abort: \"p99<1ms\" cannot be judged while the run goes on; only \
         completed or errors under a limit, errors as a share (%), rps and mb_per_sec can\n"
    );
}

#[test]
fn thresholds_judge_the_merged_figures_of_several_hosts() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let url = ng.url("/");
    // An agent on this machine stands in for a client host.
    let out = load(&[
        "load",
        &url,
        "-n",
        "200",
        "-c",
        "2",
        "--hosts",
        "local",
        "--threshold",
        "completed<1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        j["thresholds"],
        serde_json::json!([{"expression": "completed<1", "figure": 200.0, "passed": false}])
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "threshold completed<1 crossed: completed was 200\n"
    );
    assert_eq!(ng.quit_and_read_entries().len(), 200);
}
