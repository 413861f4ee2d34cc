//! The built-in `shootout` (the 2007 comparison of Apache, lighttpd, nginx
//! and Varnish in front of Apache) run for real, scaled down from its own
//! TOML text, and its report's table checked against the article's: per
//! server the page's and phpinfo()'s requests per second, the 21 MB file's
//! MB/s, its fastest and slowest transfer, and the large run's requests,
//! bytes and time.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::studies::{installed, substitute};

/// Asserts every round of `step` completed exactly `per_round` requests
/// with no error, over keep-alive.
fn assert_exact_rounds(step: &serde_json::Value, rounds: usize, per_round: u64) {
    let at = format!(
        "{} {} c={}",
        step["server"], step["workload"], step["concurrency"]
    );
    assert_eq!(step["status"], "ok", "{at}: {step}");
    let rs = step["rounds"].as_array().unwrap();
    assert_eq!(rs.len(), rounds, "{at}");
    for r in rs {
        let s = &r["summary"];
        assert_eq!(s["completed"], per_round, "{at}: {s}");
        assert_eq!(s["errors_total"], 0, "{at}: {s}");
        assert_eq!(s["keep_alive"], true, "{at}: {s}");
    }
}

/// A step's completed requests, body bytes and measured seconds, summed
/// over its rounds as stored.
fn totals(step: &serde_json::Value) -> (u64, u64, f64) {
    step["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .fold((0, 0, 0.0), |(n, b, t), r| {
            let s = &r["summary"];
            (
                n + s["completed"].as_u64().unwrap(),
                b + s["body_bytes"].as_u64().unwrap(),
                t + s["duration_s"].as_f64().unwrap(),
            )
        })
}

/// The rows of the Markdown table under `heading`, each as its cells.
fn markdown_table(md: &str, heading: &str) -> Vec<Vec<String>> {
    let at = md
        .find(&format!("## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?} in\n{md}"));
    md[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|--") && !l.starts_with("|-"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn grouped(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_scaled_down_shootout_draws_the_articles_table() {
    // Three of its five servers keep the run short: an event loop, Apache
    // alone and Varnish in front of Apache.
    let servers = installed(&["nginx", "apache2-prefork", "varnish-apache"]);
    if !servers.iter().any(|s| s == "nginx") {
        eprintln!("skipping the scaled-down shootout: it needs nginx");
        return;
    }
    let php = throng_servers::helper::Helper::PhpFpm.binary().is_some();
    if !php {
        eprintln!(
            "skipping the phpinfo workload: php-fpm is not installed (apt-get install php-fpm)"
        );
    }
    // The page and phpinfo() at 5 clients and the 21 MB file at 1 (the
    // article's 50 and 10), 120 and 5 requests a level (its 10000 and
    // 100), each server started once.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lab/studies/shootout.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let list = servers
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = substitute(
        &text,
        "servers = [\"apache2-prefork\", \"apache2-worker\", \"lighttpd\", \"nginx\", \"varnish-apache\"]\n",
        &format!("servers = [{list}]\n"),
    );
    let text = if php {
        text
    } else {
        substitute(
            &text,
            "workloads = [\"page\", \"phpinfo\", \"large\"]\n",
            "workloads = [\"page\", \"large\"]\n",
        )
    };
    let text = substitute(&text, "concurrency = [50]\n", "concurrency = [5]\n");
    let text = substitute(
        &text,
        "warmup_seconds = 2.0\n",
        "warmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n",
    );
    let text = substitute(&text, "requests = 10000\n", "requests = 120\n");
    let text = substitute(
        &text,
        "[workload.large]\nconcurrency = [10]\nrequests = 100\n",
        "[workload.large]\nconcurrency = [1]\nrequests = 5\n",
    );
    let text = substitute(&text, "warmup_seconds = 0.5\n", "warmup_seconds = 0.05\n");
    let text = substitute(&text, "launches = 3\n", "launches = 1\n");
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(&study, &text).unwrap();
    let db = dir.path().join("t.db");
    let j = support::lab_report(&study, &db, Duration::from_secs(90));
    let steps = j["run"]["steps"].as_array().unwrap();

    // With two servers to pair, 120 requests are 6 rounds of 20 rather
    // than 5 of 24; the 5 of the large file cannot be split further.
    let two = servers.len() >= 2;
    let (n, page) = if two { (6, 20) } else { (5, 24) };
    let workloads: &[(&str, u64, usize, u64)] = if php {
        &[
            ("page", 5, n, page),
            ("phpinfo", 5, n, page),
            ("large", 1, 5, 1),
        ]
    } else {
        &[("page", 5, n, page), ("large", 1, 5, 1)]
    };
    let step = |server: &str, workload: &str| -> &serde_json::Value {
        let mine: Vec<&serde_json::Value> = steps
            .iter()
            .filter(|s| s["server"] == server && s["workload"] == workload)
            .collect();
        assert_eq!(mine.len(), 1, "{server} {workload}");
        mine[0]
    };
    for server in &servers {
        for &(workload, c, rounds, per_round) in workloads {
            let s = step(server, workload);
            // Each workload keeps its own concurrency: ab -k at 50 and 10.
            assert_eq!(s["concurrency"], c, "{server} {workload}");
            assert_exact_rounds(s, rounds, per_round);
        }
    }
    assert_eq!(steps.len(), servers.len() * workloads.len());

    // The article's table, drawn from the same steps.
    let md = support::report_markdown(&db);
    let rows = markdown_table(&md, "Each workload at its level");
    let mut head = vec!["Server".to_string(), "req/s (page)".to_string()];
    if php {
        head.push("req/s (phpinfo)".into());
    }
    for c in [
        "MB/s (large)",
        "Transfer min–max (large)",
        "Requests (large)",
        "Body bytes (large)",
        "Run time (large)",
    ] {
        head.push(c.into());
    }
    assert_eq!(rows[0], head);
    // One row a server.
    let mut names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = servers.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(names, want);
    for row in &rows[1..] {
        let server = row[0].as_str();
        let small: Vec<&str> = workloads
            .iter()
            .map(|w| w.0)
            .filter(|w| *w != "large")
            .collect();
        // Requests per second as ab counts them: completed over the time.
        for (k, w) in small.iter().enumerate() {
            let (n, _, t) = totals(step(server, w));
            assert_eq!(row[1 + k], format!("{:.0}", n as f64 / t), "{server} {w}");
        }
        let large = &row[1 + small.len()..];
        let (n, bytes, t) = totals(step(server, "large"));
        // The large run's counts are exact: its 5 requests, each the
        // whole 21 MB file.
        assert_eq!((n, bytes), (5, 5 * 22_020_096), "{server}");
        assert_eq!(
            large[0],
            format!("{:.1}", bytes as f64 / 1e6 / t),
            "{server}"
        );
        let (lo, hi) = large[1]
            .split_once('–')
            .unwrap_or_else(|| panic!("{server}: transfer {:?}", large[1]));
        assert!(!lo.is_empty() && !hi.is_empty(), "{server}: {}", large[1]);
        assert_eq!(large[2], "5", "{server}");
        assert_eq!(large[3], grouped(bytes), "{server}");
        assert_eq!(large[3], "110,100,480", "{server}");
        assert_eq!(large[4], format!("{t:.2} s"), "{server}");
    }
}
