//! The built-in studies that reproduce published benchmarks: `ladder`
//! (Seravo's ab latency ladder) and `shootout` (the 2007 comparison of
//! Apache, lighttpd, nginx and Varnish). Each is checked as loaded, with
//! its estimate, and run for real scaled down from its own TOML text, since
//! the full studies take minutes (the ladder's run is in `ladder_report`,
//! the shootout's in `shootout`, each with its report).

mod support;

use std::sync::Mutex;
use std::time::Duration;

use support::studies::{builtin_text, installed, substitute};
use throng_lab::run::estimate_groups;
use throng_lab::{Recipes, Study};

/// The real runs share one core for the servers: one at a time.
static REAL_RUN: Mutex<()> = Mutex::new(());

/// The estimate `throng lab` prints when the study starts on a 2-CPU
/// machine: one core for the servers, one group per workload.
fn two_cpu_estimate_s(study: &Study) -> (f64, f64) {
    assert_eq!(study.cores.as_deref(), Some(&[1][..]));
    let e = estimate_groups(study, study.workloads.len() as u64);
    (e.min_s, e.max_s)
}

/// Per workload: its name, levels, requests per level and keep-alive.
fn loads(study: &Study) -> Vec<(String, Vec<u32>, Option<u64>, bool)> {
    study
        .loads
        .iter()
        .map(|w| {
            (
                w.kind.name().to_string(),
                w.concurrency.clone(),
                w.round_requests
                    .zip(w.counted_rounds)
                    .map(|(r, n)| r * u64::from(n)),
                w.shape.keep_alive,
            )
        })
        .collect()
}

#[test]
fn ladder_is_seravos_ab_ladder_and_siege_run() {
    let study = Study::load("ladder", &Recipes::builtin()).unwrap();
    let servers: Vec<&str> = study.servers.iter().map(|s| s.name.as_str()).collect();
    // The servers its text names: Apache prefork and threaded, nginx,
    // lighttpd, Squid and Node.js.
    assert_eq!(
        servers,
        [
            "nginx",
            "lighttpd",
            "apache2-prefork",
            "apache2-worker",
            "squid",
            "node"
        ]
    );
    // A static HTML page, one core, from one visitor up to a hundred and
    // on to a thousand, a count of requests per level, each on a
    // connection of its own as ab without -k makes them; then siege's
    // thousand users over a site, each fetching its 403 files once.
    assert_eq!(
        loads(&study),
        [
            (
                "page".to_string(),
                vec![1, 5, 10, 25, 50, 100, 250, 500, 1000],
                Some(6000),
                false
            ),
            ("site".to_string(), vec![1000], Some(403_000), false)
        ]
    );
    // Every level runs exactly its count: no precision loop.
    assert_eq!(study.precision.min_rounds, study.precision.max_rounds);
    let (min_s, max_s) = two_cpu_estimate_s(&study);
    eprintln!("ladder: estimated {min_s:.0}-{max_s:.0} s");
    assert!(max_s < 600.0, "ladder estimated at {max_s:.0} s");
}

#[test]
fn shootout_is_the_2007_comparison_and_fits_in_ten_minutes() {
    let study = Study::load("shootout", &Recipes::builtin()).unwrap();
    let servers: Vec<&str> = study.servers.iter().map(|s| s.name.as_str()).collect();
    // Its table: Apache with prefork and with worker, lighttpd, nginx and
    // Varnish in front of Apache.
    assert_eq!(
        servers,
        [
            "apache2-prefork",
            "apache2-worker",
            "lighttpd",
            "nginx",
            "varnish-apache"
        ]
    );
    assert_eq!(
        study.servers[4].backend.as_ref().unwrap().name,
        "apache2-prefork"
    );
    // ab -k: 10000 requests at 50 for the page and for phpinfo(), 100 at
    // 10 for the 21 MB file.
    assert_eq!(
        loads(&study),
        [
            ("page".to_string(), vec![50], Some(10000), true),
            ("phpinfo".to_string(), vec![50], Some(10000), true),
            ("large".to_string(), vec![10], Some(100), true),
        ]
    );
    assert_eq!(study.precision.min_rounds, study.precision.max_rounds);
    let (min_s, max_s) = two_cpu_estimate_s(&study);
    eprintln!("shootout: estimated {min_s:.0}-{max_s:.0} s");
    assert!(max_s < 600.0, "shootout estimated at {max_s:.0} s");
}

/// Runs `toml` with `throng lab` within `limit` and returns its steps from
/// `throng report --format json`.
fn run_study(toml: &str, limit: Duration) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(&study, toml).unwrap();
    let j = support::lab_report(&study, &dir.path().join("t.db"), limit);
    j["run"]["steps"].as_array().unwrap().clone()
}

/// Asserts every round of `step` completed exactly `per_round` requests
/// with no error, with keep-alive as given.
fn assert_exact_rounds(step: &serde_json::Value, rounds: usize, per_round: u64, keep_alive: bool) {
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
        assert_eq!(s["keep_alive"], keep_alive, "{at}: {s}");
    }
}

#[test]
fn site_visits_is_users_who_think_and_fits_in_ten_minutes() {
    let study = Study::load("site-visits", &Recipes::builtin()).unwrap();
    let servers: Vec<&str> = study.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        servers,
        ["nginx", "lighttpd", "apache2-event", "h2o", "caddy"]
    );
    assert_eq!(
        loads(&study),
        [("site".to_string(), vec![10, 50, 200], None, true)]
    );
    let users = study.loads[0].shape.users.as_ref().expect("sessions");
    assert_eq!(users.conns_per_user, 6);
    assert_eq!(users.file.sessions.len(), 4);
    assert!(study.max_users_cap.is_some());
    let (min_s, max_s) = two_cpu_estimate_s(&study);
    eprintln!("site-visits: estimated {min_s:.0}-{max_s:.0} s");
    assert!(max_s < 600.0, "site-visits estimated at {max_s:.0} s");
}

#[test]
fn a_scaled_down_site_visits_study_completes_exact_visits() {
    let servers = installed(&["nginx", "lighttpd"]);
    if !servers.iter().any(|s| s == "nginx") {
        eprintln!("skipping the scaled-down site-visits study: it needs nginx");
        return;
    }
    let _one = REAL_RUN.lock().unwrap_or_else(|e| e.into_inner());
    let list = servers
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = builtin_text("site-visits");
    let text = substitute(
        &text,
        "servers = [\"nginx\", \"lighttpd\", \"apache2-event\", \"h2o\", \"caddy\"]\n",
        &format!("servers = [{list}]\n"),
    );
    let text = substitute(
        &text,
        "concurrency = [10, 50, 200]\n",
        "concurrency = [4]\n",
    );
    let text = substitute(&text, "max_users = true\n", "max_users = false\n");
    // 8 visits a level over 2 rounds: each round's 4 visits are the file's
    // four, taken in turn by one client thread, so 10 + 12 + 3 + 11 = 36
    // requests whichever visit a round starts at.
    let text = substitute(
        &text,
        "conns_per_user = 6\n",
        "conns_per_user = 6\nrequests = 8\n",
    );
    let text = substitute(&text, "min = 3\n", "min = 2\n");
    let text = substitute(&text, "max = 3\n", "max = 2\n");
    let steps = run_study(&text, Duration::from_secs(240));
    assert_eq!(steps.len(), servers.len());
    for step in &steps {
        assert_exact_rounds(step, 2, 36, true);
        for r in step["rounds"].as_array().unwrap() {
            let s = &r["summary"]["sessions"];
            let at = format!("{}: {s}", step["server"]);
            assert_eq!(s["started"], 4, "{at}");
            assert_eq!(s["completed"], 4, "{at}");
            assert_eq!(s["failed"], 0, "{at}");
            assert_eq!(s["users"], 4, "{at}");
            // Four pages of the four visits have a page after them.
            assert_eq!(s["think_us"]["count"], 4, "{at}");
        }
    }
}
