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
            "study STUDY: [load] pipeline = 4 with keep_alive = false: a connection closed after \
             each request carries one, so there is nothing to pipeline",
        ),
        (
            "[workload.tiny]\nrequests = 100\n[rounds]\nmin = 3\n",
            "study STUDY: [workload.tiny] requests = 100 is not a multiple of rounds.min = 3: \
             each of a level's 3 rounds completes the same number of requests",
        ),
        (
            "[workload.tiny]\nkeepalive = false\n",
            "STUDY:7:1: unknown field `keepalive`, expected one of `keep_alive`, `pipeline`, `streams`, \
             `timeout`, `headers`, `method`, `body`, `requests`, `rate`, `tick`, `concurrency`, \
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
            format!("throng: {}\n", message.replace("STUDY", &study.display().to_string())),
            "{rest}"
        );
        assert!(!db.exists(), "{rest}: no database for a refused study");
        assert!(
            !work.exists(),
            "{rest}: no run directory for a refused study"
        );
    }
}

/// `throng lab` on `text` written as `s.toml` in `dir`: its exit code and
/// stderr, with `STUDY` in it standing for the file's path, after checking
/// that no database and no run directory were made.
fn refused(dir: &std::path::Path, text: &str) -> (Option<i32>, String) {
    let study = dir.join("s.toml");
    std::fs::write(&study, text).unwrap();
    let db = dir.join("t.db");
    let work = dir.join("work");
    let mut lab = throng();
    lab.args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
        .arg(&db)
        .arg("--workdir")
        .arg(&work);
    let out = run_bounded(lab, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!db.exists(), "no database for a refused study: {err}");
    assert!(
        !work.exists(),
        "no run directory for a refused study: {err}"
    );
    (
        out.status.code(),
        err.replace(&study.display().to_string(), "STUDY"),
    )
}

const HEAD: &str = "name = 'x'\nservers = ['nginx']\ncores = [1]\nfeatures = false\n";

#[test]
fn a_wrongly_typed_level_says_what_the_key_takes() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        refused(
            dir.path(),
            &format!("{HEAD}workloads = ['tiny']\nconcurrency = [10, -5]\n")
        ),
        (
            Some(2),
            "throng: STUDY:6:20: concurrency: -5 is not a level; give levels of 1 or more: a \
             list such as [10, 50, 100] or a range such as \"10..1000 step 10\"\n"
                .to_string()
        )
    );
}

#[test]
fn a_workload_listed_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        refused(
            dir.path(),
            &format!("{HEAD}workloads = ['tiny', 'tiny']\nconcurrency = [4]\n")
        ),
        (
            Some(2),
            "throng: study STUDY: workloads: \"tiny\" is listed twice; steps are stored by \
             workload name, so the two would be mixed\n"
                .to_string()
        )
    );
}

#[test]
fn a_toml_syntax_error_is_one_line_at_its_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        refused(
            dir.path(),
            &format!("{HEAD}workloads = ['tiny']\nconcurrency = [4\n[rounds]\nmin = 1\n")
        ),
        (
            Some(2),
            "throng: STUDY:7:1: invalid array, expected `]`\n".to_string()
        )
    );
}

#[test]
fn a_session_files_bad_line_is_refused_at_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    // siege's URL file: the second URL's port is past 65535, and a study
    // takes no URL at all, since it loads each server at its own address.
    std::fs::write(
        dir.path().join("urls.txt"),
        "/site/page000.html\nhttp://127.0.0.1:99999/site/page001.html\n",
    )
    .unwrap();
    assert_eq!(
        refused(
            dir.path(),
            &format!(
                "{HEAD}workloads = ['site']\nconcurrency = [4]\n[load]\nsessions = 'urls.txt'\n"
            )
        ),
        (
            Some(2),
            "throng: study STUDY: [load] sessions: urls.txt:2: \
             `http://127.0.0.1:99999/site/page001.html`: a study loads each server at its own \
             address, so give paths, not URLs\n"
                .to_string()
        )
    );
}

/// Files named as studies, recipes or certificates that are not regular
/// files: /dev/zero was read until memory ran out, a FIFO forever.
#[test]
fn a_device_or_fifo_named_as_a_file_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let recipes = dir.path().join("recipes");
    std::fs::create_dir(&recipes).unwrap();
    std::os::unix::fs::symlink("/dev/zero", recipes.join("zero.toml")).unwrap();
    let fifo_s = fifo.to_string_lossy().into_owned();
    let recipes_s = recipes.to_string_lossy().into_owned();
    let zero = format!("{recipes_s}/zero.toml");
    let cases: [(Vec<&str>, String); 6] = [
        // A path that is not there is not an unknown built-in study.
        (
            vec!["lab", "/nonexistent/s.toml"],
            "throng: study /nonexistent/s.toml: no such file".into(),
        ),
        (
            vec!["lab", "/dev/zero"],
            "throng: study /dev/zero: not a regular file".into(),
        ),
        (
            vec!["lab", &fifo_s],
            format!("throng: study {fifo_s}: not a regular file"),
        ),
        (
            vec!["hosts", "check", "/dev/zero"],
            "throng: study /dev/zero: not a regular file".into(),
        ),
        (
            vec!["servers", "--recipes", &recipes_s],
            format!("throng: recipe {zero}: not a regular file"),
        ),
        (
            vec![
                "load",
                "https://127.0.0.1:9/",
                "-n",
                "1",
                "-c",
                "1",
                "--cacert",
                "/dev/zero",
            ],
            "throng: --cacert /dev/zero: not a regular file".into(),
        ),
    ];
    for (args, want) in cases {
        let mut cmd = throng();
        cmd.args(&args);
        let out = run_bounded(cmd, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            want,
            "{args:?}"
        );
    }
}
