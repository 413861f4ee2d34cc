//! Seravo's "The fastest web server in the world?" as the built-in
//! `ladder` reproduces it, run for real scaled down from its own TOML
//! text: every level completes its count on a new connection a request,
//! and the report carries the article's figures in its section "Time per
//! request, connect included": ab's time per request per server and level
//! (the stored connect and latency means added up), and for the siege run
//! over the site the time taken for every request, with the servers' CPU
//! and memory.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::studies::{builtin_text, cell, installed, markdown_table as table, substitute};

/// The mean of every sample behind the spectra at `key` of `rounds`,
/// each round's mean weighed by its count, as the report takes it.
fn weighted_mean(rounds: &[Value], key: &str) -> f64 {
    let (total, n) = rounds
        .iter()
        .map(|r| r["summary"].pointer(key).unwrap())
        .filter(|l| l["count"].as_u64().unwrap() > 0)
        .fold((0.0, 0u64), |(t, n), l| {
            let count = l["count"].as_u64().unwrap();
            (t + l["mean"].as_f64().unwrap() * count as f64, n + count)
        });
    assert!(n > 0);
    total / n as f64
}

/// The row of `server` at level `c`.
fn row_of<'a>(rows: &'a [Vec<(String, String)>], server: &str, c: u64) -> &'a [(String, String)] {
    rows.iter()
        .find(|r| cell(r, "Server").replace('\\', "") == server && cell(r, "c") == c.to_string())
        .unwrap_or_else(|| panic!("no row for {server} c={c}: {rows:?}"))
}

#[test]
fn a_scaled_ladder_reports_abs_time_per_request_and_sieges_time_taken() {
    let servers = installed(&["nginx", "node"]);
    if servers.len() < 2 {
        eprintln!("skipping the scaled-down ladder: it needs nginx and node");
        return;
    }
    // Two of its levels, 120 requests a level instead of 6000, the site at
    // c = 20 for 400 requests instead of 1000 users for 403,000, one start
    // of each server.
    let mut text = builtin_text("ladder");
    for (from, to) in [
        (
            "servers = [\"nginx\", \"lighttpd\", \"apache2-prefork\", \"apache2-worker\", \"squid\", \"node\"]\n",
            "servers = [\"nginx\", \"node\"]\n",
        ),
        (
            "concurrency = [1, 5, 10, 25, 50, 100, 250, 500, 1000]\n",
            "concurrency = [1, 10]\n",
        ),
        (
            "warmup_seconds = 1.0\n",
            "warmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n",
        ),
        ("requests = 6000\n", "requests = 120\n"),
        ("concurrency = [1000]\n", "concurrency = [20]\n"),
        ("requests = 403000\n", "requests = 400\n"),
        ("launches = 3\n", "launches = 1\n"),
    ] {
        text = substitute(&text, from, to);
    }
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(&study, &text).unwrap();
    let db = dir.path().join("t.db");
    let j = support::lab_report(&study, &db, Duration::from_secs(60));
    let md = support::report_markdown(&db);

    let steps = j["run"]["steps"].as_array().unwrap();
    let mut seen: Vec<(String, String, u64)> = steps
        .iter()
        .map(|s| {
            (
                s["server"].as_str().unwrap().to_string(),
                s["workload"].as_str().unwrap().to_string(),
                s["concurrency"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    let mut want: Vec<(String, String, u64)> = servers
        .iter()
        .flat_map(|s| {
            [
                (s.clone(), "page".to_string(), 1),
                (s.clone(), "page".to_string(), 10),
                (s.clone(), "site".to_string(), 20),
            ]
        })
        .collect();
    want.sort();
    assert_eq!(seen, want);

    let page = table(&md, "Time per request, connect included", "page, 1 core");
    let site = table(&md, "Time per request, connect included", "site, 1 core");
    assert_eq!(page.len(), 4, "{page:?}");
    assert_eq!(site.len(), 2, "{site:?}");
    for step in steps {
        let server = step["server"].as_str().unwrap();
        let c = step["concurrency"].as_u64().unwrap();
        let at = format!("{server} {} c={c}", step["workload"]);
        assert_eq!(step["status"], "ok", "{at}: {step}");
        let rounds = step["rounds"].as_array().unwrap();
        // 120 requests in 6 rounds of 20 (two servers to pair: at least 6
        // rounds), 400 in 8 of 50 (6 and 7 do not divide 400); each a
        // response, on a connection of its own, none left waiting.
        let (n, each) = if step["workload"] == "page" {
            (6, 20)
        } else {
            (8, 50)
        };
        assert_eq!(rounds.len(), n, "{at}");
        for r in rounds {
            let s = &r["summary"];
            assert_eq!(s["completed"], each, "{at}: {s}");
            assert_eq!(s["errors_total"], 0, "{at}: {s}");
            assert_eq!(s["keep_alive"], false, "{at}: {s}");
            assert_eq!(s["connections"]["requested"], c, "{at}: {s}");
            assert_eq!(s["in_flight_at_end"], 0, "{at}: {s}");
        }
        let rows = if step["workload"] == "page" {
            &page
        } else {
            &site
        };
        let row = row_of(rows, server, c);
        assert_eq!(cell(row, "requests"), (n * each).to_string(), "{at}");
        assert_eq!(cell(row, "errors"), "0", "{at}");
        let connects: u64 = rounds
            .iter()
            .map(|r| {
                r["summary"]["connections"]["connect_time_us"]["count"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert_eq!(cell(row, "connects"), connects.to_string(), "{at}");
        // ab's time per request: the stored connect mean plus the stored
        // latency mean, over every request of the level.
        let connect = weighted_mean(rounds, "/connections/connect_time_us");
        let latency = weighted_mean(rounds, "/latency_us");
        assert_eq!(
            cell(row, "connect (ms)"),
            format!("{:.3}", connect / 1000.0),
            "{at}"
        );
        assert_eq!(
            cell(row, "latency (ms)"),
            format!("{:.3}", latency / 1000.0),
            "{at}"
        );
        assert_eq!(
            cell(row, "ab time per request (ms)"),
            format!("{:.3}", (connect + latency) / 1000.0),
            "{at}"
        );
        // siege's figure: the measured time of the rounds added up; and
        // what the server used meanwhile.
        let seconds: f64 = rounds
            .iter()
            .map(|r| r["summary"]["duration_s"].as_f64().unwrap())
            .sum();
        assert_eq!(cell(row, "time taken (s)"), format!("{seconds:.2}"), "{at}");
        let (cpu, wall) = rounds.iter().fold((0.0, 0.0), |(cpu, wall), r| {
            let u = &r["server"];
            (
                cpu + (u["cpu_user_s"].as_f64().unwrap() + u["cpu_sys_s"].as_f64().unwrap()),
                wall + u["wall_s"].as_f64().unwrap(),
            )
        });
        assert_eq!(
            cell(row, "server CPU"),
            format!("{:.0}%", cpu / wall * 100.0),
            "{at}"
        );
        let rss = rounds
            .iter()
            .map(|r| r["server"]["rss_peak_bytes"].as_u64().unwrap())
            .max()
            .unwrap();
        assert!(rss > 0, "{at}");
        assert_eq!(
            cell(row, "peak RSS"),
            format!("{:.1} MiB", rss as f64 / (1024.0 * 1024.0)),
            "{at}"
        );
    }
    assert!(md.contains("No request failed at any level."), "{md}");
    // The report opens with the article the study rebuilds, before any
    // figure, and each way the study differs from it.
    let article = md
        .find("\n## The article and this study\n")
        .expect("article");
    assert!(article < md.find("\n## Summary\n").unwrap(), "{md}");
    assert!(
        md.contains("**The fastest web server in the world?** (Seravo, Linux-natives blog)"),
        "{md}"
    );
    assert!(
        md.contains("- Node.js serves the page with its own http module "),
        "{md}"
    );
}
