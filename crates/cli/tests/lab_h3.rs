//! A study over HTTP/3: `protocols = ["https1", "h2", "h3"]` runs Caddy
//! three times, as `caddy`, `caddy-h2` and `caddy-h3`, the last over QUIC
//! on the port its TLS is served on; every round completes its exact
//! count with no error, h3 is decided against h2 with an interval (on
//! the 6 KB page: on the 7-byte tiny file the two are too close to call
//! in a short test), the report's protocols table compares h3 with both, and the feature table
//! has a real HTTP/3 GET as evidence. nginx, whose Debian build has no
//! HTTP/3, is stored as unsupported with its recipe's reason.

mod support;

use std::time::Duration;

use serde_json::Value;

fn step<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["run"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == name)
        .unwrap_or_else(|| panic!("no step for {name}"))
}

use support::feature;

#[test]
fn a_study_measures_caddy_over_h3_against_h2_and_https1() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        "name = 'h3'\nservers = ['caddy']\nworkloads = ['page']\ncores = [1]\n\
         concurrency = [2]\nprotocols = ['https1', 'h2', 'h3']\nwarmup_seconds = 0.2\n\
         [load]\nrequests = 10000\nstreams = 4\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.0\nmin = 10\nmax = 10\nlaunches = 1\n",
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let j = support::lab_report(&study, &db, Duration::from_secs(120));
    for (name, alpn) in [
        ("caddy", "http/1.1"),
        ("caddy-h2", "h2"),
        ("caddy-h3", "h3"),
    ] {
        let s = step(&j, name);
        assert_eq!(s["status"], "ok", "{s}");
        let rounds = s["rounds"].as_array().unwrap();
        // 10000 requests a level in 10 rounds of one launch: 10 pairs.
        assert_eq!(rounds.len(), 10, "{name}");
        for r in rounds {
            let sum = &r["summary"];
            assert_eq!(sum["completed"], 1000, "{name}: {sum}");
            assert_eq!(sum["errors_total"], 0, "{name}: {sum}");
            assert_eq!(sum["tls"]["alpn"], alpn, "{name}: {sum}");
            if name == "caddy-h3" {
                let h = &sum["http3"];
                // A counted round opens its own 2 connections, 4 streams each.
                assert_eq!(h["connections"], 2, "{h}");
                assert_eq!(h["streams"], 4, "{h}");
                assert_eq!(h["congestion"], "cubic", "{h}");
                assert_eq!(sum["tls"]["version"], "TLSv1_3", "{sum}");
                assert_eq!(sum["io"], "ppoll", "{sum}");
            } else {
                assert!(sum.get("http3").is_none(), "{name}: {sum}");
                assert_eq!(sum["io"], "epoll", "{name}: {sum}");
            }
        }
    }
    // h3 against h2 on the same server: a ratio inside its interval, decided.
    let pooled: Vec<&Value> = j["run"]["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["concurrency"].is_null())
        .collect();
    let h3_h2 = pooled
        .iter()
        .find(|c| {
            let (a, b) = (c["a"].as_str().unwrap(), c["b"].as_str().unwrap());
            (a, b) == ("caddy-h2", "caddy-h3") || (a, b) == ("caddy-h3", "caddy-h2")
        })
        .unwrap_or_else(|| panic!("no h3/h2 comparison in {pooled:?}"));
    let (ratio, low, high) = (
        h3_h2["ratio"].as_f64().unwrap(),
        h3_h2["ci_low"].as_f64().unwrap(),
        h3_h2["ci_high"].as_f64().unwrap(),
    );
    assert!(low <= ratio && ratio <= high && low < high, "{h3_h2}");
    assert_eq!(h3_h2["pairs"], 10, "{h3_h2}");
    assert_eq!(h3_h2["interval"], "order_statistic", "{h3_h2}");
    // Decided as the interval and the run's threshold say. Run alone,
    // h3 came out 0.58–0.71 of h2's rate here, decided lower; beside a
    // busy machine ten pairs can leave 1.00 inside the interval, and the
    // decision must then be undecided, not a guess.
    let threshold = j["run"]["run"]["threshold"]["value"].as_f64().unwrap();
    let decided = throng_model::Decision::of(low, high, threshold);
    assert_eq!(h3_h2["decision"], decided.name(), "{h3_h2}");
    eprintln!("h3 against h2 on Caddy: {h3_h2}");
    // The parity rows say how each was spoken to.
    let parity = |server: &str, setting: &str| {
        j["run"]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == server)
            .and_then(|s| {
                s["parity"]
                    .as_array()?
                    .iter()
                    .find(|p| p["setting"] == setting)
                    .map(|p| p["value"].as_str().unwrap().to_string())
            })
            .unwrap_or_else(|| panic!("{server}: no {setting} row"))
    };
    assert_eq!(
        parity("caddy-h3", "protocol"),
        "HTTP/3 over QUIC v1 (ALPN h3)"
    );
    assert!(
        parity("caddy-h3", "cipher").contains("rustls's TLS 1.3 suites (QUIC's TLS is 1.3 alone)")
    );
    assert!(parity("caddy-h3", "congestion_control")
        .starts_with("QUIC's own at each end: the client's cubic"));
    assert!(parity("caddy-h2", "congestion_control").starts_with("the kernel's"));
    let (status, evidence) = feature(&j, "caddy-h3", "tls");
    assert_eq!(status, "yes", "{evidence}");
    assert!(
        evidence.starts_with("GET /index.html answered 200 over HTTP/3: QUIC v1 on UDP ")
            && evidence.ends_with(", TLSv1_3, ALPN h3, the client's congestion control cubic"),
        "{evidence}"
    );
    // The report compares h3 with h2 and with HTTP/1.1 over TLS on Caddy.
    let md = support::report_markdown(&db);
    let section = md
        .split("Protocols compared on each server")
        .nth(1)
        .unwrap_or_else(|| panic!("no protocols table in:\n{md}"));
    for other in ["HTTP/2 over TLS (ALPN h2)", "HTTP/1.1 over TLS"] {
        assert!(
            section.lines().any(|l| l.starts_with("| caddy ")
                && l.contains("HTTP/3 over QUIC v1 (ALPN h3)")
                && l.contains(other)),
            "{other}: {section}"
        );
    }
}

#[test]
fn nginx_over_h3_is_stored_as_unsupported_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        "name = 'h3-nginx'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [2]\nprotocols = ['h3']\nfeatures = false\nwarmup_seconds = 0.2\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.0\nmin = 2\nmax = 2\n",
    )
    .unwrap();
    let j = support::lab_report(&study, &dir.path().join("t.db"), Duration::from_secs(60));
    let s = step(&j, "nginx");
    assert_eq!(s["status"], "unsupported", "{s}");
    assert_eq!(
        s["failure"],
        "nginx serves no HTTP/3 in throng's recipe, so it is not measured over h3: nginx 1.22 \
         (Debian 12's) has no ngx_http_v3_module: HTTP/3 came in nginx 1.25.0, and Debian 12's \
         build lists no --with-http_v3_module in nginx -V",
        "{s}"
    );
    assert!(s["rounds"].as_array().is_none_or(|r| r.is_empty()), "{s}");
}

#[test]
fn a_server_whose_quic_side_does_not_answer_is_refused_before_it_is_measured() {
    // Caddy's recipe with its [h3] insert made a comment: TLS over TCP
    // answers every check, and nothing listens on UDP.
    let dir = tempfile::tempdir().unwrap();
    let recipes = dir.path().join("recipes");
    std::fs::create_dir(&recipes).unwrap();
    let caddy = include_str!("../../servers/recipes/caddy.toml")
        .replace("name = \"caddy\"", "name = \"caddy-tcp\"")
        .replace("text = \" h3\"", "text = \" # no h3\"");
    assert!(caddy.contains("# no h3"));
    std::fs::write(recipes.join("caddy-tcp.toml"), caddy).unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        "name = 'h3-refused'\nservers = ['caddy-tcp']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [2]\nprotocols = ['h3']\nfeatures = false\ndiagnose = false\n\
         warmup_seconds = 0.2\n[rounds]\nseconds = 0.5\nwarmup_seconds = 0.0\nmin = 2\nmax = 2\n\
         launches = 1\nmax_launches = 1\n",
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let mut lab = support::throng();
    lab.args(["lab", study.to_str().unwrap(), "--quiet", "--recipes"])
        .arg(&recipes)
        .arg("--db")
        .arg(&db);
    let out = support::run_bounded(lab, Duration::from_secs(60));
    let mut report = support::throng();
    report.args(["report", "--format", "json", "--db"]).arg(&db);
    let rep = support::run_bounded(report, Duration::from_secs(60));
    let j: Value = serde_json::from_slice(&rep.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&rep.stderr)
        )
    });
    let s = step(&j, "caddy-tcp");
    assert_eq!(s["status"], "failed", "{s}");
    let failure = s["failure"].as_str().unwrap();
    assert!(
        failure.starts_with(
            "started but failed verification: GET /index.html over HTTP/3: \
             https://127.0.0.1:"
        ) && failure.contains(
            "TLS handshake failed: no QUIC handshake within 5.0 s (does the server speak \
             HTTP/3 on UDP "
        ),
        "{failure}"
    );
    assert!(s["rounds"].as_array().is_none_or(|r| r.is_empty()), "{s}");
}
