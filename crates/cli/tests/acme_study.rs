//! The built-in `acme` study against ACME's thttpd comparison table: run
//! for real from its own TOML text, scaled down (two servers, one level,
//! short rounds, one launch, a low max-users cap), then reported; the
//! report must carry the table's figures per server: requests per second
//! on small files and on CGI (or "–" with why), max users on large files
//! (or "none found up to N"), and the large file's MB/s.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::studies::{is_installed as installed, substitute};

#[test]
fn a_scaled_down_acme_reports_the_tables_columns_per_server() {
    // nginx runs CGI through fcgiwrap; varnish's recipe serves no CGI, so
    // its CGI column is "–" with the recipe's reason.
    let fcgiwrap = throng_servers::helper::Helper::FcgiWrap.binary().is_some();
    if !installed("nginx") || !installed("varnish") || !fcgiwrap {
        eprintln!("skipping the scaled-down acme: it needs nginx, varnish and fcgiwrap");
        return;
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lab/studies/acme.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = substitute(
        &text,
        "servers = [\"nginx\", \"lighttpd\", \"apache2-prefork\", \"apache2-event\", \"h2o\", \"caddy\"]\n",
        "servers = [\"nginx\", \"varnish\"]\n",
    );
    let text = substitute(
        &text,
        "concurrency = [1, 10, 50, 100, 250, 500, 1000]\n",
        "concurrency = [5]\n",
    );
    let text = substitute(
        &text,
        "warmup_seconds = 2.0\n",
        "warmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n",
    );
    // Past the sweep's 5: 10, then 20, the cap, for every workload.
    let text = substitute(&text, "max_users_cap = 20000\n", "max_users_cap = 20\n");
    let text = substitute(
        &text,
        "seconds = 2.0\nwarmup_seconds = 0.5\nmin = 3\nmax = 8\n",
        "seconds = 0.3\nwarmup_seconds = 0.1\nmin = 3\nmax = 3\nlaunches = 1\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("acme.toml");
    std::fs::write(&study, &text).unwrap();
    let db = dir.path().join("acme.db");
    let json = support::lab_report(&study, &db, Duration::from_secs(90));

    // Every server's steps: 3 workloads at one level; varnish's CGI step
    // stored unsupported with its recipe's reason.
    let steps = json["run"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    let why = "the varnish recipe measures the cache in front of static files; dynamic pages \
               are measured on the servers themselves";
    for s in steps {
        let at = format!("{} {} c={}", s["server"], s["workload"], s["concurrency"]);
        if s["server"] == "varnish" && s["workload"] == "cgi" {
            assert_eq!(s["status"], "unsupported", "{at}");
            assert_eq!(s["failure"], why, "{at}");
        } else {
            assert_eq!(s["status"], "ok", "{at}: {s}");
            assert_eq!(s["rounds"].as_array().unwrap().len(), 3, "{at}");
        }
    }

    // The summary: small files and CGI in req/s, the large file in MB/s,
    // max users on the large file as ACME's table gives it.
    let rows = json["summary"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let server = row["server"].as_str().unwrap();
        assert_eq!(row["small_workload"], "small-files", "{server}");
        assert!(row["small_rps"].as_f64().unwrap() > 0.0, "{server}: {row}");
        assert_eq!(row["large_workload"], "large", "{server}");
        assert!(row["large_mb_per_sec"].as_f64().unwrap() > 0.0, "{server}");
        assert_eq!(row["max_users_workload"], "large", "{server}");
        assert_eq!(row["max_users_source"], "searched", "{server}");
        if server == "varnish" {
            assert_eq!(row["dynamic_workload"], serde_json::Value::Null);
            assert_eq!(row["dynamic_rps"], serde_json::Value::Null);
            assert_eq!(row["dynamic_missing"], why);
        } else {
            assert_eq!(row["dynamic_workload"], "cgi", "{server}");
            assert!(row["dynamic_rps"].as_f64().unwrap() > 0.0, "{row}");
            assert_eq!(row.get("dynamic_missing"), None);
        }
    }
    // Every search is stored, one per server and workload; with the cap at
    // 20, a level that held is 20, and one that broke (5, 10 or 20) says by what.
    let servers = json["run"]["servers"].as_array().unwrap();
    for s in servers {
        let searches = s["max_users"].as_array().unwrap();
        let workloads: Vec<&str> = searches
            .iter()
            .map(|m| m["workload"].as_str().unwrap())
            .collect();
        assert_eq!(workloads, ["small-files", "cgi", "large"]);
        for m in searches {
            if s["name"] == "varnish" && m["workload"] == "cgi" {
                assert_eq!(m["broke_by"], "the sweep measured no level", "{m}");
                continue;
            }
            match m["broke_at"].as_u64() {
                None => {
                    assert_eq!(m["level"], 20, "{m}");
                    assert_eq!(m["broke_by"], "no failure up to the cap of 20", "{m}");
                }
                Some(at) => {
                    assert!([5, 10, 20].contains(&at), "{m}");
                    assert!(!m["broke_by"].as_str().unwrap().is_empty(), "{m}");
                }
            }
        }
    }

    // The Markdown article: the summary's columns named by workload, and
    // each server's line with its figures.
    let md = support::report_markdown(&db);
    let head = md
        .lines()
        .find(|l| l.starts_with("| Server | Version | Model |") && l.contains("Max users"))
        .unwrap_or_else(|| panic!("no summary table:\n{md}"));
    assert_eq!(
        head,
        "| Server | Version | Model | req/s (small-files) | req/s (cgi) | MB/s (large) | \
         Max users (large) | Memory (peak PSS) | Executable |"
    );
    for (server, search) in servers.iter().map(|s| {
        let large = s["max_users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["workload"] == "large")
            .unwrap();
        (s["name"].as_str().unwrap(), large)
    }) {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| {server} | ")) && l.contains("(searched, 1 core)"))
            .unwrap_or_else(|| panic!("no summary line for {server}:\n{md}"));
        let cells: Vec<&str> = line.split(" | ").collect();
        // Server, version, model, small files, CGI, large, max users.
        assert!(cells[3].contains(" — "), "{server} small files: {line}");
        if server == "varnish" {
            assert_eq!(cells[4], format!("– (unsupported: {why})"), "{line}");
        } else {
            assert!(cells[4].contains(" — "), "{server} CGI: {line}");
        }
        let mb: f64 = cells[5].split(' ').next().unwrap().parse().unwrap();
        assert!(mb > 0.0, "{server} MB/s: {line}");
        let users = match search["broke_at"].as_u64() {
            None => "none found up to 20 (the study's cap)".to_string(),
            Some(_) => search["level"]
                .as_u64()
                .map_or_else(|| "none".to_string(), |l| l.to_string()),
        };
        assert_eq!(cells[6], format!("{users} (searched, 1 core)"), "{line}");
    }
}
