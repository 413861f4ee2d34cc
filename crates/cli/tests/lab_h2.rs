//! A study over HTTP/2: `protocols = ["h2", "h2c"]` runs nginx and
//! lighttpd over TLS with ALPN h2 and over cleartext with prior
//! knowledge, 4 streams on each of 2 connections; every round completes
//! its exact count over HTTP/2, says how many streams each server allowed,
//! and the feature table's HTTP/2 column has a real exchange as evidence.

mod support;

use std::time::Duration;

#[test]
fn a_study_runs_each_server_over_h2_and_h2c() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        "name = 'h2'\nservers = ['nginx', 'lighttpd', 'apache2-prefork']\nworkloads = ['tiny']\n\
         cores = [1]\nconcurrency = [2]\nprotocols = ['h2', 'h2c']\nwarmup_seconds = 0.2\n\
         [load]\nrequests = 400\nstreams = 4\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.0\nmin = 2\nmax = 2\n",
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let j = support::lab_report(&study, &db, Duration::from_secs(240));
    let steps = j["run"]["steps"].as_array().unwrap();
    let step = |name: &str| {
        steps
            .iter()
            .find(|s| s["server"] == name)
            .unwrap_or_else(|| panic!("no step for {name}"))
    };
    // nginx allows 128 streams a connection, lighttpd 8: both above 4.
    for (name, tls, allowed) in [
        ("nginx", true, 128),
        ("nginx-h2c", false, 128),
        ("lighttpd", true, 8),
        ("lighttpd-h2c", false, 8),
    ] {
        let s = step(name);
        assert_eq!(s["status"], "ok", "{s}");
        for r in s["rounds"].as_array().unwrap() {
            let sum = &r["summary"];
            // 400 requests a level, split into 8 rounds so that pairs form.
            assert_eq!(sum["completed"], 50, "{name}: {sum}");
            assert_eq!(sum["errors_total"], 0, "{name}: {sum}");
            let h = &sum["http2"];
            assert_eq!(h["connections"], 2, "{name}: {h}");
            assert_eq!(h["streams"], 4, "{name}: {h}");
            assert_eq!(h["server_max_streams"], allowed, "{name}: {h}");
            if tls {
                assert_eq!(sum["tls"]["alpn"], "h2", "{name}: {sum}");
            } else {
                assert!(sum.get("tls").is_none(), "{name}: {sum}");
            }
        }
    }
    // apache2-prefork cannot serve HTTP/2 (mod_http2 refuses prefork).
    let p = step("apache2-prefork");
    assert_eq!(p["status"], "unsupported", "{p}");
    assert!(
        p["failure"]
            .as_str()
            .unwrap_or("")
            .contains("serves no HTTP/2 over TLS"),
        "{p}"
    );
    let feature = |server: &str, name: &str| support::feature(&j, server, name);
    assert_eq!(
        feature("nginx", "http2"),
        (
            "yes".to_string(),
            "GET /index.html answered 200 over HTTP/2 over TLS, ALPN h2".to_string()
        )
    );
    assert_eq!(
        feature("nginx-h2c", "http2"),
        (
            "yes".to_string(),
            "GET /index.html answered 200 over HTTP/2 over cleartext with prior knowledge (h2c)"
                .to_string()
        )
    );
    let (status, evidence) = feature("nginx", "tls");
    assert_eq!(status, "yes");
    assert!(
        evidence
            .contains("ALPN h2; a second handshake resumed the session; OCSP stapling untested"),
        "{evidence}"
    );
    assert_eq!(feature("apache2-prefork", "http2").0, "no");
    // The report compares each server's two protocols apart from the
    // pairs of different servers, naming the protocols by the parity rows.
    let mut report = support::throng();
    report
        .args(["report", "--format", "markdown", "--db"])
        .arg(&db);
    let out = support::run_bounded(report, Duration::from_secs(60));
    let md = String::from_utf8_lossy(&out.stdout);
    let section = md
        .split("Protocols compared on each server")
        .nth(1)
        .unwrap_or_else(|| panic!("no protocols table in:\n{md}"));
    for server in ["nginx", "lighttpd"] {
        assert!(
            section
                .lines()
                .any(|l| l.starts_with(&format!("| {server} "))
                    && l.contains("HTTP/2 over TLS (ALPN h2)")
                    && l.contains("HTTP/2 cleartext (h2c, prior knowledge)")),
            "{server}: {section}"
        );
    }
}
