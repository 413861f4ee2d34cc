//! `throng load --metrics-addr` scraped by a real Prometheus (Debian's
//! package) while it loads a real nginx: Prometheus's own query of the
//! run's final counter equals the run's `completed`, scraped and pushed
//! by remote write alike, and promtool finds the exposition well formed.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{free_port, wait_listening, wait_until, Nginx};
use throng_testkit::wait::wait_for;

fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Prometheus of its own, on loopback, gone with its data at the end.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: throng\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting prometheus");
        let p = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        wait_listening(addr, Duration::from_secs(20));
        p
    }

    /// The value of an instant query's only sample, if it has one.
    fn query(&self, q: &str) -> Option<String> {
        let enc: String = q
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let body = http_get(self.addr, &format!("/api/v1/query?query={enc}"))?;
        let j: serde_json::Value = serde_json::from_str(&body).ok()?;
        let result = j["data"]["result"].as_array()?;
        (result.len() == 1).then(|| result[0]["value"][1].as_str().unwrap().to_string())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a 200 answer to `GET path`, HTTP/1.0 so that it ends with
/// the connection.
fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut all = String::new();
    s.read_to_string(&mut all).ok()?;
    let (head, body) = all.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1);
    (status == Some("200")).then(|| body.to_string())
}

fn promtool_accepts(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

#[test]
fn prometheus_scrapes_the_run_and_its_final_counter_is_completed() {
    if !installed("prometheus") || !installed("promtool") {
        println!("skipped: Debian's prometheus package (prometheus, promtool) is not installed");
        return;
    }
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let prom = Prometheus::start(metrics);
    let run = "it-10s";
    let mut child = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["load", &ng.url("/"), "-d", "10s", "-c", "4", "-t", "1"])
        .args(["--rate", "500", "--json"])
        .args(["--metrics-addr", &metrics.to_string(), "--metrics-run", run])
        .args(["--metrics-linger", "3s"])
        .arg("--remote-write")
        .arg(format!("http://{}/api/v1/write", prom.addr))
        .args(["--remote-write-interval", "1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = String::new();
        stdout.read_to_string(&mut v).unwrap();
        v
    });
    // The exposition mid-run, once a second has been counted.
    let mut text = String::new();
    let counted = wait_for(Duration::from_secs(10), || {
        text = http_get(metrics, "/metrics").unwrap_or_default();
        text.lines().any(|l| {
            l.starts_with("throng_requests_completed_total{run=\"it-10s\"} ") && !l.ends_with(" 0")
        })
    });
    assert!(counted, "no second counted at {metrics}:\n{text}");
    let (ok, said) = promtool_accepts(&text);
    assert!(ok, "promtool check metrics: {said}\n{text}");
    for family in [
        "# TYPE throng_requests_completed_total counter",
        "# TYPE throng_responses_total counter",
        "# TYPE throng_errors_total counter",
        "# TYPE throng_in_flight gauge",
        "# TYPE throng_connections gauge",
        "# TYPE throng_latency_seconds histogram",
    ] {
        assert!(text.contains(family), "{family}:\n{text}");
    }
    let status = wait_until(&mut child, Instant::now() + Duration::from_secs(40));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let j: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    let completed = j["completed"].as_u64().unwrap();
    assert!(completed > 0);
    // The endpoint is gone and Prometheus marked the series stale: the
    // last value scraped is the greatest of a counter's.
    let q = format!(
        "max_over_time(throng_requests_completed_total{{run=\"{run}\",job=\"throng\"}}[5m])"
    );
    let ok2xx = format!(
        "max_over_time(throng_responses_total{{run=\"{run}\",class=\"2xx\",job=\"throng\"}}[5m])"
    );
    let count =
        format!("max_over_time(throng_latency_seconds_count{{run=\"{run}\",job=\"throng\"}}[5m])");
    let want = completed.to_string();
    let mut seen = None;
    let agreed = wait_for(Duration::from_secs(10), || {
        seen = prom.query(&q);
        seen.as_deref() == Some(want.as_str())
    });
    assert!(
        agreed,
        "Prometheus has {seen:?}, the run completed {completed}"
    );
    assert_eq!(prom.query(&ok2xx).as_deref(), Some(want.as_str()));
    assert_eq!(prom.query(&count).as_deref(), Some(want.as_str()));
    // The same figures pushed by remote write: series with no job, since
    // no scrape labelled them; the final push is made when the load ends.
    let pushed =
        format!("max_over_time(throng_requests_completed_total{{run=\"{run}\",job=\"\"}}[5m])");
    let pushed_count =
        format!("max_over_time(throng_latency_seconds_count{{run=\"{run}\",job=\"\"}}[5m])");
    assert_eq!(prom.query(&pushed).as_deref(), Some(want.as_str()));
    assert_eq!(prom.query(&pushed_count).as_deref(), Some(want.as_str()));
}

#[test]
fn an_address_that_cannot_serve_is_refused_before_any_request() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let refused = |addr: &str| {
        let mut cmd = support::throng();
        cmd.args(["load", &ng.url("/"), "-n", "10", "--metrics-addr", addr]);
        let out = support::run_bounded(cmd, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    };
    assert_eq!(
        refused("localhost:9464"),
        "throng: --metrics-addr `localhost:9464` is not an IP address and port (e.g. 127.0.0.1:9464)\n"
    );
    assert_eq!(
        refused(&taken_addr),
        format!("throng: --metrics-addr {taken_addr}: cannot listen: Address already in use (os error 98)\n")
    );
    let mut cmd = support::throng();
    cmd.args(["load", &ng.url("/"), "-n", "10"])
        .args(["--remote-write", "https://127.0.0.1:9090/api/v1/write"]);
    let out = support::run_bounded(cmd, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "throng: --remote-write https://127.0.0.1:9090/api/v1/write: is not an http:// URL with a host\n"
    );
    assert_eq!(ng.quit_and_read_entries().len(), 0);
}
