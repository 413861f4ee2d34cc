//! The built-in studies that reproduce published benchmarks: `ladder`
//! (Seravo's ab latency ladder) and `shootout` (the 2007 comparison of
//! Apache, lighttpd, nginx and Varnish). Each is checked as loaded, with
//! its estimate, and run for real scaled down from its own TOML text, since
//! the full studies take minutes (`shootout` in tests/shootout.rs, with its
//! report's table).

mod support;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use throng_lab::run::estimate_groups;
use throng_lab::{Recipes, Study};

/// The real runs share one core for the servers: one at a time.
static REAL_RUN: Mutex<()> = Mutex::new(());

/// A built-in study's text, as `throng lab NAME` runs it.
fn builtin_text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../lab/studies")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` with `from`, which must occur exactly once, replaced: a built-in
/// that changes fails here rather than run at full size.
fn substitute(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "expected {from:?} once in the study:\n{text}"
    );
    text.replacen(from, to, 1)
}

/// The servers of `wanted` whose recipes are installed; the others are
/// named with the package that would install them.
fn installed(wanted: &[&str]) -> Vec<String> {
    let recipes = Recipes::builtin();
    let mut out = Vec::new();
    for name in wanted {
        let r = recipes.get(name).expect("a built-in recipe");
        let backend = r.backend.as_deref().and_then(|b| recipes.get(b));
        if r.is_installed() && backend.is_none_or(|b| b.is_installed()) {
            out.push(name.to_string());
        } else {
            eprintln!(
                "skipping {name}: {} is not installed (apt-get install {})",
                r.binary, r.package
            );
        }
    }
    out
}

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
fn ladder_is_seravos_ab_ladder_and_fits_in_ten_minutes() {
    let study = Study::load("ladder", &Recipes::builtin()).unwrap();
    let servers: Vec<&str> = study.servers.iter().map(|s| s.name.as_str()).collect();
    // The servers its text names: Apache prefork and threaded, nginx,
    // lighttpd and Squid.
    assert_eq!(
        servers,
        [
            "nginx",
            "lighttpd",
            "apache2-prefork",
            "apache2-worker",
            "squid"
        ]
    );
    // A static HTML page, one core, from one visitor up to a hundred, a
    // count of requests per level, each on a connection of its own as ab
    // without -k makes them.
    assert_eq!(
        loads(&study),
        [(
            "page".to_string(),
            vec![1, 5, 10, 25, 50, 100],
            Some(5000),
            false
        )]
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
fn a_scaled_down_ladder_completes_its_count_at_every_level() {
    let servers = installed(&["nginx", "lighttpd"]);
    if !servers.iter().any(|s| s == "nginx") {
        eprintln!("skipping the scaled-down ladder: it needs nginx");
        return;
    }
    let _one = REAL_RUN.lock().unwrap_or_else(|e| e.into_inner());
    // Two of its levels and 100 requests a level instead of 5000, still as
    // 5 rounds each and without keep-alive.
    let text = builtin_text("ladder");
    let list = servers
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = substitute(
        &text,
        "servers = [\"nginx\", \"lighttpd\", \"apache2-prefork\", \"apache2-worker\", \"squid\"]\n",
        &format!("servers = [{list}]\n"),
    );
    let text = substitute(
        &text,
        "concurrency = [1, 5, 10, 25, 50, 100]\n",
        "concurrency = [1, 10]\n",
    );
    let text = substitute(
        &text,
        "warmup_seconds = 1.0\n",
        "warmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n",
    );
    let text = substitute(&text, "requests = 5000\n", "requests = 100\n");
    let steps = run_study(&text, Duration::from_secs(50));
    let mut seen: Vec<(String, u64)> = steps
        .iter()
        .map(|s| {
            (
                s["server"].as_str().unwrap().to_string(),
                s["concurrency"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    let mut want: Vec<(String, u64)> = servers
        .iter()
        .flat_map(|s| [(s.clone(), 1), (s.clone(), 10)])
        .collect();
    want.sort();
    assert_eq!(seen, want);
    // 100 requests over 5 rounds: 20 each, every one a response; with two
    // servers to pair, 5 pairs would not bound a comparison, so 10 rounds
    // of 10.
    let (rounds, each) = if servers.len() >= 2 {
        (10, 10)
    } else {
        (5, 20)
    };
    for step in &steps {
        assert_eq!(step["workload"], "page");
        assert_exact_rounds(step, rounds, each, false);
        // ab without -k: a new connection for every request, and none
        // left waiting when the count is reached. (With keep-alive, a
        // request of the round's unmeasured start may still be on the wire
        // then: a 21 MB response outlasts a 0.05 s warmup.)
        let c = step["concurrency"].as_u64().unwrap();
        for r in step["rounds"].as_array().unwrap() {
            let s = &r["summary"];
            assert_eq!(s["connections"]["requested"], c, "{s}");
            assert_eq!(s["in_flight_at_end"], 0, "{s}");
        }
    }
}

#[test]
fn sessions_is_users_who_think_and_fits_in_ten_minutes() {
    let study = Study::load("sessions", &Recipes::builtin()).unwrap();
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
    eprintln!("sessions: estimated {min_s:.0}-{max_s:.0} s");
    assert!(max_s < 600.0, "sessions estimated at {max_s:.0} s");
}

#[test]
fn a_scaled_down_sessions_study_completes_exact_visits() {
    let servers = installed(&["nginx", "lighttpd"]);
    if !servers.iter().any(|s| s == "nginx") {
        eprintln!("skipping the scaled-down sessions study: it needs nginx");
        return;
    }
    let _one = REAL_RUN.lock().unwrap_or_else(|e| e.into_inner());
    let list = servers
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = builtin_text("sessions");
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
