//! A study that sets how requests are made: `[load]` read by `throng lab`,
//! every round stored as asked, and a key that does not apply refused
//! before anything starts.

mod support;

use std::time::Duration;

use support::{run_bounded, throng};

#[test]
fn a_study_without_keep_alive_completes_its_requests_one_connection_each() {
    // ab -n 300 -c 4 and -c 10 without -k, three times a level: rounds of
    // exactly 100 requests, each on a connection of its own.
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("close.toml");
    std::fs::write(
        &study,
        "name = \"close\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
         concurrency = [4, 10]\nwarmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n\
         [load]\nkeep_alive = false\nrequests = 300\n\
         [rounds]\nmin = 3\nmax = 3\nwarmup_seconds = 0\n",
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let j = support::lab_report(&study, &db, Duration::from_secs(60));
    let steps = j["run"]["steps"].as_array().unwrap();
    let levels: Vec<u64> = steps
        .iter()
        .map(|s| s["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(levels, [4, 10]);
    for step in steps {
        let c = step["concurrency"].as_u64().unwrap();
        assert_eq!(step["status"], "ok", "c={c}");
        let rounds = step["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 3, "c={c}");
        for round in rounds {
            let s = &round["summary"];
            assert_eq!(s["completed"], 100, "c={c}: {s}");
            assert_eq!(s["errors_total"], 0, "c={c}: {s}");
            assert_eq!(s["keep_alive"], false, "c={c}: {s}");
            assert_eq!(s["in_flight_at_end"], 0, "c={c}: {s}");
            // Every connection slot opened once, then once more for each
            // of its later requests: one connection per request.
            let conns = &s["connections"];
            assert_eq!(conns["requested"], c, "c={c}: {s}");
            assert_eq!(conns["established"], c, "c={c}: {s}");
            assert_eq!(conns["reconnects"], 100 - c, "c={c}: {s}");
        }
    }
}

#[test]
fn a_load_key_that_does_not_apply_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let head = "name = \"x\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
                concurrency = [4]\n";
    for (rest, message) in [
        (
            "[load]\nkeep_alive = false\npipeline = 4\n",
            "[load] pipeline = 4 with keep_alive = false: a connection closed after each \
             request carries one, so there is nothing to pipeline",
        ),
        (
            "[workload.tiny]\nrequests = 100\n[rounds]\nmin = 3\n",
            "[workload.tiny] requests = 100 is not a multiple of rounds.min = 3: each of a \
             level's 3 rounds completes the same number of requests",
        ),
        (
            "[workload.tiny]\nkeepalive = false\n",
            "line 7: unknown field `keepalive`, expected one of `keep_alive`, `pipeline`, `streams`, \
             `timeout`, `headers`, `method`, `body`, `requests`, `rate`, `concurrency`, \
             `requests_per_connection`, `order`, `docroot`, `urls`, `sessions`, `think`, \
             `think_random`, `users_per_sec`, `arrival`, `conns_per_user`",
        ),
    ] {
        let study = dir.path().join("s.toml");
        std::fs::write(&study, format!("{head}{rest}")).unwrap();
        let db = dir.path().join("t.db");
        let work = dir.path().join("work");
        let mut lab = throng();
        lab.args(["lab", study.to_str().unwrap(), "--db"])
            .arg(&db)
            .arg("--workdir")
            .arg(&work);
        let out = run_bounded(lab, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(2), "{rest}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("throng: study {}: {message}\n", study.display()),
            "{rest}"
        );
        assert!(!db.exists(), "{rest}: no database for a refused study");
        assert!(
            !work.exists(),
            "{rest}: no run directory for a refused study"
        );
    }
}
