//! The 2016 "Linux Web Server Performance Benchmark" as the built-in
//! `static-sweep` reproduces it, run for real scaled down from its own
//! TOML text (nginx and Varnish in front of it, two levels, short rounds):
//! the report carries the article's three figures, each equal to the
//! arithmetic on the stored steps: requests per second against
//! concurrency at each core count, the server's memory, and the time to
//! serve a fixed 100,000 requests a level; and it says how many core
//! counts this machine could sweep, and why, where the article swept 1,
//! 2, 4 and 8.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::studies::{builtin_text, cell, installed, markdown_table, substitute};
use throng_report::chart_data::fmt_num as shown;

/// The report's figures of `server`'s steps, by level.
fn steps_of<'a>(json: &'a Value, server: &str) -> Vec<&'a Value> {
    let mut v: Vec<&Value> = json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["server"] == server)
        .collect();
    v.sort_by_key(|s| s["concurrency"].as_u64());
    v
}

#[test]
fn a_scaled_static_sweep_reports_the_articles_three_figures_and_its_core_counts() {
    let servers = installed(&["nginx", "varnish"]);
    if servers.len() < 2 {
        eprintln!("skipping the scaled-down static-sweep: it needs nginx and varnish");
        return;
    }
    let text = builtin_text("static-sweep");
    let text = substitute(
        &text,
        "servers = [\"nginx\", \"lighttpd\", \"apache2-prefork\", \"apache2-worker\", \
         \"apache2-event\", \"h2o\", \"caddy\", \"varnish\"]\n",
        "servers = [\"nginx\", \"varnish\"]\n",
    );
    let text = substitute(
        &text,
        "concurrency = \"100..1000 step 100\"\n",
        "concurrency = \"100..200 step 100\"\n",
    );
    let text = substitute(
        &text,
        "warmup_seconds = 2.0\n",
        "warmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n",
    );
    let text = substitute(
        &text,
        "seconds = 2.0\nwarmup_seconds = 0.5\nmin = 3\nmax = 10\n",
        "seconds = 0.3\nwarmup_seconds = 0.1\nmin = 3\nmax = 3\nlaunches = 1\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("static-sweep.toml");
    std::fs::write(&study, &text).unwrap();
    let db = dir.path().join("static-sweep.db");
    let json = support::lab_report(&study, &db, Duration::from_secs(120));

    // On this machine cores = "auto" gives the server what it can while
    // keeping a CPU for the client: one core on two CPUs.
    let cpus = json["run"]["run"]["environment"]["cpus_online"]
        .as_u64()
        .unwrap() as u32;
    let steps = json["run"]["steps"].as_array().unwrap();
    let mut swept: Vec<u32> = steps
        .iter()
        .map(|s| s["cores"].as_u64().unwrap() as u32)
        .collect();
    swept.sort_unstable();
    swept.dedup();
    if cpus <= 2 {
        assert_eq!(swept, [1]);
    }
    // Two servers at two levels for every core count swept.
    assert_eq!(steps.len(), 2 * 2 * swept.len());
    for s in steps {
        assert_eq!(s["status"], "ok", "{s}");
        assert_eq!(s["rounds"].as_array().unwrap().len(), 3, "{s}");
    }
    let md = support::report_markdown(&db);

    // The article first, then how far the core axis went here and why.
    let article = md
        .find("\n## The article and this study\n")
        .unwrap_or_else(|| panic!("no article section:\n{md}"));
    assert!(article < md.find("\n## Summary\n").unwrap(), "{md}");
    assert!(
        md.contains("**Linux Web Server Performance Benchmark – 2016 Results**"),
        "{md}"
    );
    if cpus < 9 {
        let note = throng_model::cores::auto_cores_note(&swept, cpus).unwrap();
        // Markdown escapes the note's underscores and its anchor's '#'.
        assert!(
            md.replace('\\', "").contains(&note),
            "no cores note {note:?}:\n{md}"
        );
    }

    for cores in &swept {
        let label = if *cores == 1 {
            "1 server core".to_string()
        } else {
            format!("{cores} server cores")
        };
        // Requests per second against concurrency: a row per level, a
        // column per server, each the step's mean and its interval.
        let rows = markdown_table(&md, "Charts", &format!("Throughput, tiny, {label}"));
        assert_eq!(rows.len(), 2, "{rows:?}");
        for server in &servers {
            let mine: Vec<&Value> = steps_of(&json, server)
                .into_iter()
                .filter(|s| s["cores"] == *cores)
                .collect();
            assert_eq!(mine.len(), 2, "{server}");
            for (row, step) in rows.iter().zip(&mine) {
                assert_eq!(
                    cell(row, "concurrent connections"),
                    step["concurrency"].to_string()
                );
                let t = &step["throughput"];
                let want = format!(
                    "{} [{}–{}]",
                    shown(t["mean"].as_f64().unwrap()),
                    // A rate is never below 0: the report starts an
                    // interval that few noisy rounds stretch below it at 0.
                    shown(t["ci_low"].as_f64().unwrap().max(0.0)),
                    shown(t["ci_high"].as_f64().unwrap())
                );
                assert_eq!(
                    cell(row, &format!("{server} requests per second")),
                    want,
                    "{server} c={}",
                    step["concurrency"]
                );
            }
        }
    }

    // The server's memory (the article's free -m): the highest peak PSS
    // of its process tree over its steps, in MiB, with its RSS beside it.
    let memory = markdown_table(&md, "Charts", "Server memory, peak PSS");
    // The time to serve the article's fixed 100,000 requests a level,
    // summed over the sweep, from each step's mean rate.
    let total = markdown_table(
        &md,
        "Charts",
        "Time to serve 100,000 requests per step, tiny",
    );
    assert_eq!(memory.len(), servers.len() * swept.len(), "{memory:?}");
    assert_eq!(total.len(), servers.len() * swept.len(), "{total:?}");
    if swept == [1] {
        for server in &servers {
            let mine = steps_of(&json, server);
            let pss = mine
                .iter()
                .map(|s| s["pss_peak_bytes"].as_u64().unwrap())
                .max()
                .unwrap();
            let rss = mine
                .iter()
                .map(|s| s["rss_peak_bytes"].as_u64().unwrap())
                .max()
                .unwrap();
            let row = memory.iter().find(|r| r[0].1 == *server).unwrap();
            assert_eq!(cell(row, "MiB"), shown(pss as f64 / 1048576.0), "{server}");
            assert_eq!(
                cell(row, "note"),
                format!("MiB (RSS {:.1} MiB)", rss as f64 / 1048576.0),
                "{server}"
            );
            let secs: f64 = mine
                .iter()
                .map(|s| 100_000.0 / s["throughput"]["mean"].as_f64().unwrap())
                .sum();
            let row = total.iter().find(|r| r[0].1 == *server).unwrap();
            assert_eq!(cell(row, "seconds"), shown(secs), "{server}");
            assert_eq!(cell(row, "note"), "s over 2 steps", "{server}");
        }
    }
}
