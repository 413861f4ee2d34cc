//! A fair comparison end to end on real nginx and lighttpd, each with its
//! packaged defaults and its tuned profile: paired ratios, parity with
//! where each value comes from, and the syscalls per request that explain
//! them, in the JSON and Markdown reports.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{run_bounded, throng};

const STUDY: &str = r#"
name = "fair"
servers = ["nginx", "lighttpd"]
profiles = ["defaults", "tuned"]
workloads = ["tiny"]
cores = [1]
concurrency = [10]
warmup_seconds = 0.5
features = false

[rounds]
seconds = 0.1
warmup_seconds = 0.02
min = 8
max = 8
step_seconds = 60
precision = 0.05
"#;

fn parity<'a>(json: &'a Value, server: &str, setting: &str) -> (&'a str, &'a str) {
    let s = json["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == server)
        .unwrap_or_else(|| panic!("no server {server}"));
    let p = &s["parity"][setting];
    (p["value"].as_str().unwrap(), p["source"].as_str().unwrap())
}

fn syscalls(json: &Value, server: &str) -> serde_json::Map<String, Value> {
    json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == server)
        .unwrap()["syscalls_per_request"]
        .as_object()
        .unwrap_or_else(|| panic!("{server}: no syscalls counted"))
        .clone()
}

#[test]
fn defaults_and_tuned_nginx_against_lighttpd() {
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("fair.toml");
    std::fs::write(&study, STUDY).unwrap();
    let db = tmp.path().join("fair.db");
    let db = db.to_str().unwrap();
    let mut lab = throng();
    lab.args(["lab", study.to_str().unwrap(), "--quiet", "--db", db]);
    let out = run_bounded(lab, Duration::from_secs(180));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let json_path = tmp.path().join("fair.json");
    let md_path = tmp.path().join("fair.md");
    for path in [&json_path, &md_path] {
        let mut report = throng();
        report.args(["report", "--db", db, "-o", path.to_str().unwrap()]);
        let out = run_bounded(report, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();

    // Four servers, every pair at the level and over the sweep, each from
    // the level's 8 blocks; the baseline is A in each of its pairs.
    assert_eq!(json["baseline"], "nginx");
    let cs = json["comparisons"].as_array().unwrap();
    assert_eq!(cs.len(), 12, "{cs:#?}");
    assert!(cs.iter().all(|c| c["pairs"] == 8));
    let tuned = cs
        .iter()
        .find(|c| c["a"] == "nginx" && c["b"] == "nginx-tuned" && c["concurrency"].is_null())
        .expect("nginx-tuned against nginx over the sweep");
    let (lo, r, hi) = (
        tuned["ci_low"].as_f64().unwrap(),
        tuned["ratio"].as_f64().unwrap(),
        tuned["ci_high"].as_f64().unwrap(),
    );
    assert!(lo <= r && r <= hi && lo > 0.0, "{tuned}");

    // Where each value comes from: the config throng rendered, the
    // server's documented default, or the running server.
    assert_eq!(parity(&json, "nginx", "sendfile"), ("off", "default"));
    assert_eq!(parity(&json, "nginx-tuned", "sendfile"), ("on", "config"));
    assert_eq!(parity(&json, "nginx", "open_file_cache"), ("off", "live"));
    assert_eq!(
        parity(&json, "nginx-tuned", "open_file_cache"),
        ("on", "live")
    );
    for s in ["nginx", "nginx-tuned", "lighttpd", "lighttpd-tuned"] {
        assert_eq!(parity(&json, s, "access_log"), ("off", "live"), "{s}");
        assert_eq!(parity(&json, s, "workers"), ("1", "lab"), "{s}");
    }
    let profile = |name: &str| {
        json["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["profile"]
            .clone()
    };
    assert_eq!(profile("nginx"), "defaults");
    assert_eq!(profile("nginx-tuned"), "tuned");

    // nginx with its defaults opens, stats, reads and closes the file on
    // every request; tuned, its open-file cache keeps it open.
    let per = |m: &serde_json::Map<String, Value>, k: &str| {
        m.get(k).and_then(Value::as_f64).unwrap_or(0.0)
    };
    let plain = syscalls(&json, "nginx");
    for call in ["openat", "close", "newfstatat"] {
        assert_eq!(
            format!("{:.2}", per(&plain, call)),
            "1.00",
            "{call}: {plain:?}"
        );
    }
    let cached = syscalls(&json, "nginx-tuned");
    assert_eq!(
        format!("{:.2}", per(&cached, "openat")),
        "0.00",
        "{cached:?}"
    );
    assert_eq!(
        format!("{:.2}", per(&cached, "close")),
        "0.00",
        "{cached:?}"
    );
    // lighttpd opens nothing per request with either profile.
    assert_eq!(
        format!("{:.2}", per(&syscalls(&json, "lighttpd"), "openat")),
        "0.00"
    );

    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("nginx-tuned: ") && md.contains("× nginx's requests per second (95% CI "),
        "{md}"
    );
    // How the syscalls differ, named beside the ratio from the side that
    // makes more in all: nginx opens, stats and closes the file (+3), and
    // lighttpd reads twice per request (the request, then EAGAIN) where
    // nginx reads once. Twice at most: when lighttpd loses its core
    // between its answer and the read after it, the client's next request
    // is there by then, and that read takes it instead of meeting EAGAIN.
    let line = md
        .lines()
        .find(|l| l.starts_with("- lighttpd: "))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(line.contains("; nginx makes "), "{line}");
    let reads = line
        .split("; lighttpd read +")
        .nth(1)
        .and_then(|rest| rest.split([',', ')']).next())
        .and_then(|n| n.parse::<f64>().ok());
    assert!(
        reads.is_some_and(|n| (1.0..=2.0).contains(&n)),
        "{reads:?}: {line}"
    );
    assert!(
        md.contains("close 1.00, newfstatat 1.00, openat 1.00"),
        "{md}"
    );
}
