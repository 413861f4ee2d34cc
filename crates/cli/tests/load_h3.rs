//! `throng load --http3` against real HTTP/3 servers: Caddy (quic-go),
//! counted against its JSON access log, and aioquic, a server of the
//! test's own (support/h3_server.py) that counts each request it reads
//! and resets or ignores some on purpose; and a UDP port nobody answers.

mod support;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{free_port, run_bounded, throng, throng_json, u};
use throng_testkit::wait::wait_for;

/// Whether something holds UDP `port` on this machine.
fn udp_bound(port: u16) -> bool {
    let hex = format!(":{port:04X} ");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| t.lines().skip(1).any(|l| l.contains(&hex)))
    })
}

/// The tests with a server take turns. Each runs the server (a Python
/// one, or Caddy) beside throng, and what several asserted (a schedule
/// kept to the tick, requests timed out after their handshake) came
/// apart when the file's dozen servers shared two CPUs: a QUIC handshake
/// with the Python server took longer than a test's 300 ms timeout.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A server process of the test's, killed (through its handle) when
/// dropped, and the file's turn, given back after it.
struct Server {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    _turn: std::sync::MutexGuard<'static, ()>,
}

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        let _ = self.child.wait();
    }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }
    fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }
    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Caddy 2.6 serving `body` as /index.html over HTTP/1.1, 2 and 3 with
    /// the test kit's certificate, each request a JSON line in access.log.
    fn caddy(body: &[u8]) -> Server {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        throng_testkit::cert::localhost_in(d);
        std::fs::create_dir(d.join("www")).unwrap();
        std::fs::write(d.join("www/index.html"), body).unwrap();
        let port = free_port();
        let conf = format!(
            "{{\n\tadmin off\n\tauto_https off\n\tstorage file_system {d}/data\n\
             \tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
             https://localhost:{port} {{\n\ttls {d}/cert.pem {d}/key.pem\n\troot * {d}/www\n\
             \tfile_server\n\tlog {{\n\t\toutput file {d}/access.log\n\t\tformat json\n\t}}\n}}\n",
            d = d.display()
        );
        std::fs::write(d.join("Caddyfile"), conf).unwrap();
        let child = Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(d.join("Caddyfile"))
            .env("HOME", d)
            .env("XDG_DATA_HOME", d.join("data"))
            .env("XDG_CONFIG_HOME", d.join("config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("caddy runs (scripts/setup installs it)");
        let s = Server {
            child,
            dir,
            port,
            _turn,
        };
        assert!(
            wait_for(Duration::from_secs(10), || udp_bound(port)),
            "caddy bound no UDP port {port}"
        );
        s
    }

    /// aioquic's HTTP/3 server of support/h3_server.py, paths in requests.log.
    fn aioquic() -> Server {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = throng_testkit::cert::localhost_in(dir.path());
        let port = free_port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/h3_server.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .arg(port.to_string())
            .args([&cert, &key])
            .arg(dir.path().join("requests.log"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let out = child.stdout.take().unwrap();
        let mut s = Server {
            child,
            dir,
            port,
            _turn,
        };
        // The server says `ready` once it listens; a reader thread keeps a
        // server that never says so from holding the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        if line.trim() != "ready" {
            s.child.kill().ok();
            panic!("the aioquic server did not start: is aioquic installed (scripts/setup)?");
        }
        s
    }

    /// Caddy's access log lines, once there are `n` of them (it writes
    /// each as its response goes out).
    fn caddy_lines(&self, n: usize) -> Vec<String> {
        let read = || {
            std::fs::read_to_string(self.file("access.log"))
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        wait_for(Duration::from_secs(10), || read().len() >= n);
        read()
    }

    /// `throng load` of `path` on this server over HTTP/3, trusting its
    /// certificate, with `rest` after: the summary as JSON.
    fn h3_load(&self, path: &str, rest: &[&str]) -> Value {
        let cacert = self.cert();
        let url = self.url(path);
        let mut args = vec![
            "load",
            &url,
            "--http3",
            "--cacert",
            cacert.to_str().unwrap(),
        ];
        args.extend_from_slice(rest);
        throng_json(&args)
    }

    fn requests_seen(&self) -> Vec<String> {
        std::fs::read_to_string(self.file("requests.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

#[test]
fn caddy_logs_exactly_the_requests_counted_over_h3() {
    let body = vec![b'x'; 1000];
    let caddy = Server::caddy(&body);
    let j = caddy.h3_load(
        "/index.html",
        &["-n", "10000", "-c", "4", "--streams", "10"],
    );
    assert_eq!(j["completed"], 10000);
    assert_eq!(j["sent"], 10000);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(j["status"]["200"], 10000);
    assert_eq!(j["body_bytes"], 10_000_000);
    assert_eq!(j["connections"]["established"], 4);
    assert_eq!(j["tls"]["alpn"], "h3");
    assert_eq!(j["tls"]["handshakes"], 4);
    let h = &j["http3"];
    assert_eq!(h["connections"], 4);
    assert_eq!(h["streams"], 10);
    // quic-go allows 100 streams: 10 are not capped.
    assert!(h.get("server_max_streams").is_none());
    assert_eq!(h["congestion"], "cubic");
    assert!(u(h, "/datagrams_sent") > 0 && u(h, "/packets_sent") >= u(h, "/datagrams_sent"));
    assert!(h["rtt_us"].as_f64().unwrap() > 0.0);
    let lines = caddy.caddy_lines(10000);
    let h3 = lines
        .iter()
        .filter(|l| l.contains(r#""proto":"HTTP/3.0""#))
        .count();
    assert_eq!((lines.len(), h3), (10000, 10000));
    assert!(lines.iter().all(|l| l.contains(r#""status":200"#)));
}

#[test]
fn a_duration_over_h3_accounts_for_every_request_sent() {
    let caddy = Server::caddy(b"hello\n");
    let cacert = caddy.cert();
    let j = throng_json(&[
        "load",
        &caddy.url("/index.html"),
        "--alpn",
        "h3",
        "--cacert",
        cacert.to_str().unwrap(),
        "-d",
        "1s",
        "-c",
        "2",
        "--streams",
        "4",
        "--congestion",
        "newreno",
    ]);
    let (sent, done, errors, in_flight) = (
        u(&j, "/sent"),
        u(&j, "/completed"),
        u(&j, "/errors_total"),
        u(&j, "/in_flight_at_end"),
    );
    assert!(done > 0);
    assert_eq!(errors, 0);
    assert_eq!(sent, done + in_flight);
    assert!(
        in_flight <= 8,
        "at most 2 connections × 4 streams: {in_flight}"
    );
    assert_eq!(j["http3"]["congestion"], "newreno");
    // Those in flight at the end may or may not have reached Caddy.
    let lines = caddy.caddy_lines(done as usize).len() as u64;
    assert!(
        (done..=done + in_flight).contains(&lines),
        "{lines} logged, {done} completed"
    );
}

#[test]
fn aioquic_sees_exactly_the_requests_counted_and_caps_the_streams() {
    let srv = Server::aioquic();
    let j = srv.h3_load("/", &["-n", "2000", "-c", "2", "--streams", "200"]);
    assert_eq!(j["completed"], 2000);
    assert_eq!(j["sent"], 2000);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["status"]["200"], 2000);
    assert_eq!(j["body_bytes"], 2000 * 14);
    // aioquic gives each connection 128 bidirectional streams at a time.
    assert_eq!(j["http3"]["server_max_streams"], 128);
    assert_eq!(srv.requests_seen().len(), 2000);
}

#[test]
fn an_answer_that_waited_for_a_stalled_client_ends_when_it_came() {
    // aioquic answers /slow 150 ms after reading it. Once it has read the
    // request, the client is stopped for 1 s, so the answer waits in its
    // socket: the response still ends at its datagram's kernel receive
    // stamp, 150 ms and a little after the send, not over a second after.
    let srv = Server::aioquic();
    let (cacert, url) = (srv.cert(), srv.url("/slow"));
    let mut child = throng()
        .args(["load", &url, "--http3", "--cacert"])
        .arg(&cacert)
        .args(["-n", "1", "-c", "1", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("throng runs");
    let pid = child.id() as libc::pid_t;
    // SAFETY: signals to the child this test spawned and still holds.
    let signal = |sig| assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal {sig}");
    let read = wait_for(Duration::from_secs(20), || srv.requests_seen().len() == 1);
    signal(libc::SIGSTOP);
    // The stall itself, not a wait for anything.
    std::thread::sleep(Duration::from_secs(1));
    signal(libc::SIGCONT);
    assert!(read, "the server never read the request");
    let status = support::wait_until(&mut child, Instant::now() + Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    let j: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!((u(&j, "/sent"), u(&j, "/completed")), (1, 1));
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["latency_us"]["count"], 1);
    let (first, last) = (u(&j, "/first_byte_us/max"), u(&j, "/latency_us/max"));
    assert!((150_000..900_000).contains(&last), "latency {last} µs");
    assert!((150_000..=last).contains(&first), "first byte {first} µs");
}

#[test]
fn a_closed_load_naps_between_turns_and_says_what_it_held() {
    let srv = Server::aioquic();
    let args = [
        "-n",
        "600",
        "-c",
        "2",
        "--streams",
        "6",
        "--nap-divisor",
        "8",
    ];
    let j = srv.h3_load("/", &args);
    assert_eq!((u(&j, "/sent"), u(&j, "/completed")), (600, 600));
    assert_eq!(
        (j["errors_total"].clone(), j["in_flight_at_end"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(j["coalesce"], true);
    assert!(u(&j, "/client_naps") > 0);
    // What the naps cost: each answered place's wait for its next request.
    assert!(j["client_hold_us"].as_f64().is_some_and(|h| h > 0.0));
    assert!(j["client_held_connections"]
        .as_f64()
        .is_some_and(|h| h > 0.0));
    let j = srv.h3_load("/", &[&args[..6], &["--no-coalesce"]].concat());
    assert_eq!((u(&j, "/sent"), u(&j, "/completed")), (600, 600));
    assert_eq!(
        (j["coalesce"].clone(), j["client_naps"].clone()),
        (false.into(), 0.into())
    );
    assert!(j["client_hold_us"].as_f64().is_some_and(|h| h > 0.0));
    assert_eq!(srv.requests_seen().len(), 1200);
}

#[test]
fn streams_the_server_resets_fail_by_their_code() {
    let srv = Server::aioquic();
    let j = srv.h3_load("/reset", &["-n", "20", "-c", "1"]);
    assert_eq!(j["completed"], 0);
    assert_eq!(j["sent"], 20);
    assert_eq!(j["errors_total"], 20);
    assert_eq!(j["errors"]["stream_reset"], 20);
    assert_eq!(j["http3"]["stream_resets"]["H3_REQUEST_REJECTED"], 20);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(srv.requests_seen().len(), 20);
}

#[test]
fn requests_a_server_never_answers_time_out_and_the_run_ends() {
    let srv = Server::aioquic();
    let start = Instant::now();
    let j = srv.h3_load(
        "/silent",
        // A timeout of 1 s leaves the Python server's handshake, which the
        // timeout bounds too, room on a busy machine.
        &["-n", "4", "-c", "1", "--streams", "2", "--timeout", "1s"],
    );
    assert_eq!(j["completed"], 0);
    assert_eq!(j["sent"], 4);
    assert_eq!(j["errors"]["timeout"], 4);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(srv.requests_seen().len(), 4);
    // Two rounds of two streams, each timed out after 1 s (and found by a
    // scan within 50 ms): well inside 8 s.
    assert!(start.elapsed() < Duration::from_secs(8));
}

#[test]
fn a_silent_udp_port_is_one_clear_error_within_the_timeout() {
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut cmd = throng();
    cmd.args([
        "load",
        &format!("https://localhost:{port}/"),
        "--http3",
        "-k",
        "-n",
        "10",
        "-c",
        "1",
        "--timeout",
        "1s",
    ]);
    let start = Instant::now();
    let out = run_bounded(cmd, Duration::from_secs(20));
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "no QUIC handshake within 1.0 s (does the server speak HTTP/3 on UDP {port}?)"
        )),
        "{err}"
    );
}

#[test]
fn uploads_go_out_several_datagrams_a_call_unless_told_not_to() {
    // 50 POSTs of 200 KB each: about 170 datagrams a request, which GSO
    // hands the kernel up to 64 at a time.
    let caddy = Server::caddy(b"ok\n");
    let body = caddy.dir.path().join("body.bin");
    std::fs::write(&body, vec![b'b'; 200_000]).unwrap();
    let body = body.to_str().unwrap();
    let base = [
        "-m",
        "POST",
        "--body-file",
        body,
        "-n",
        "50",
        "-c",
        "2",
        "-t",
        "1",
    ];
    let on = caddy.h3_load("/index.html", &base);
    let mut args = base.to_vec();
    args.push("--no-gso");
    let off = caddy.h3_load("/index.html", &args);
    for j in [&on, &off] {
        assert_eq!(j["completed"], 50);
        assert_eq!(j["errors_total"], 0);
        assert_eq!(j["status"]["200"], 50);
    }
    let (h, o) = (&on["http3"], &off["http3"]);
    // This kernel has both offloads (Linux 4.18 and 5.0).
    assert_eq!(
        (h["gso"].as_bool(), h["gro"].as_bool()),
        (Some(true), Some(true))
    );
    let sent = u(h, "/datagrams_sent");
    // 10 MB go in no fewer datagrams than this even at jumbo sizes
    // (quinn's path MTU discovery grows them past 1,500 on loopback).
    assert!(sent >= 50 * 200_000 / 9_000, "{h}");
    assert!(4 * u(h, "/send_calls") < sent, "{h}");
    // Without them each datagram is a call of its own, both ways.
    assert_eq!(
        (o["gso"].as_bool(), o["gro"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(u(o, "/send_calls"), u(o, "/datagrams_sent"), "{o}");
    // Without GRO a receive holds one datagram, and one call (recvmmsg)
    // takes up to 16 receives.
    let (calls, got) = (u(o, "/receive_calls"), u(o, "/datagrams_received"));
    assert!(calls <= got && got <= 16 * calls, "{o}");
}

#[test]
fn h3_options_are_refused_where_they_cannot_apply() {
    let run = |args: &[&str]| {
        let mut cmd = throng();
        cmd.args(args);
        run_bounded(cmd, Duration::from_secs(20))
    };
    for (args, says) in [
        (
            &["load", "http://127.0.0.1:9/", "--http3"][..],
            "--http3 needs https:// URLs",
        ),
        (
            &["load", "https://127.0.0.1:9/", "--alpn", "h3,h2"][..],
            "cannot be offered beside h2",
        ),
        (
            &[
                "load",
                "https://127.0.0.1:9/",
                "--http3",
                "--congestion",
                "vegas",
            ][..],
            "--congestion vegas: give cubic, newreno or bbr",
        ),
        (
            &["load", "https://127.0.0.1:9/", "--congestion", "bbr"][..],
            "--congestion is HTTP/3's",
        ),
        (
            &["load", "https://127.0.0.1:9/", "--no-gso"][..],
            "--no-gso is HTTP/3's",
        ),
        (
            &["load", "https://127.0.0.1:9/", "--http3", "--close"][..],
            "--http3 cannot be combined with a request limit per connection",
        ),
        (
            &[
                "load",
                "https://localhost:9/",
                "--http3",
                "--metrics-addr",
                "127.0.0.1:0",
            ][..],
            "--http3 cannot be combined with --hdr-log, --metrics-addr or --remote-write yet",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn requests_above_a_goaway_go_out_again_on_a_fresh_connection() {
    let srv = Server::aioquic();
    let j = srv.h3_load("/goaway", &["-n", "20", "-c", "1", "--streams", "4"]);
    assert_eq!(j["completed"], 20);
    assert_eq!(j["sent"], 20);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["in_flight_at_end"], 0);
    let seen = srv.requests_seen();
    let ignored = seen.iter().filter(|l| l.starts_with("ignored")).count() as u64;
    assert_eq!(seen.len() as u64 - ignored, 20, "each answered once");
    // Five answers a connection: four connections, the last GOAWAY
    // perhaps unread when the twentieth answer ended the run.
    let h = &j["http3"];
    assert!((3..=4).contains(&u(h, "/goaways")), "{h}");
    assert_eq!(u(h, "/connections"), 4);
    // What the server ignored went out again, and perhaps more that it
    // never saw.
    assert!(u(h, "/retried") >= ignored, "{h}: {ignored} ignored");
}

#[test]
fn a_header_block_above_the_client_s_limit_fails_its_request_only() {
    let srv = Server::aioquic();
    let j = srv.h3_load("/big-header", &["-n", "5", "-c", "1"]);
    assert_eq!(j["completed"], 0);
    assert_eq!(j["sent"], 5);
    assert_eq!(j["errors"]["parse"], 5);
    assert_eq!(j["http3"]["h3_errors"]["H3_EXCESSIVE_LOAD"], 5);
    // Each stream is cancelled; the connection carries the next request.
    assert_eq!(j["http3"]["connections"], 1);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(srv.requests_seen().len(), 5);
}

#[test]
fn a_url_list_is_spread_exactly_over_h3() {
    let srv = Server::aioquic();
    let cacert = srv.cert();
    let list = srv.file("urls.txt");
    std::fs::write(&list, "/a\n/b\n/c\n").unwrap();
    let j = throng_json(&[
        "load",
        &srv.url("/"),
        "--urls",
        list.to_str().unwrap(),
        "--http3",
        "--cacert",
        cacert.to_str().unwrap(),
        "-n",
        "300",
        "-c",
        "3",
        "--streams",
        "5",
        "--checksum",
    ]);
    assert_eq!(j["completed"], 300);
    assert_eq!(j["errors_total"], 0);
    let seen = srv.requests_seen();
    for p in ["/a", "/b", "/c"] {
        assert_eq!(seen.iter().filter(|l| *l == p).count(), 100, "{p}");
    }
}

#[test]
fn the_open_model_over_h3_sends_what_its_schedule_says() {
    let srv = Server::aioquic();
    let j = srv.h3_load(
        "/",
        &["--rate", "200", "-d", "1s", "-c", "2", "--streams", "4"],
    );
    assert_eq!(j["model"], "open");
    let (sent, done, in_flight, unsent) = (
        u(&j, "/sent"),
        u(&j, "/completed"),
        u(&j, "/in_flight_at_end"),
        u(&j, "/rate/unsent"),
    );
    // 200 a second for a second: each either went out or is counted unsent.
    assert_eq!(sent + unsent, 200, "{j}");
    assert_eq!(sent, done + u(&j, "/errors_total") + in_flight);
    assert!(j["latency_uncorrected_us"]["count"].as_u64().unwrap() > 0);
    let seen = srv.requests_seen().len() as u64;
    assert!(
        (done..=sent).contains(&seen),
        "{seen} seen, {done} done, {sent} sent"
    );
}

#[test]
fn the_open_model_over_h3_in_ticks_sends_each_ticks_requests_together() {
    let srv = Server::aioquic();
    // 400 a second in ticks of 50 ms: twenty ticks of twenty requests,
    // each tick's going out together as it starts, on two connections
    // with room for all twenty in flight.
    let args: Vec<&str> = "--rate 400 --tick 50ms -d 1s -c 2 --streams 16"
        .split(' ')
        .collect();
    let j = srv.h3_load("/stamped", &args);
    assert_eq!(j["rate"]["tick_us"], 50_000, "{j}");
    assert_eq!((u(&j, "/sent"), u(&j, "/rate/unsent")), (400, 0), "{j}");
    assert_eq!(u(&j, "/errors_total"), 0, "{j}");
    let mut at: Vec<f64> = srv
        .requests_seen()
        .iter()
        .filter_map(|l| l.strip_prefix("/stamped ")?.parse().ok())
        .collect();
    at.sort_by(f64::total_cmp);
    // Arrivals more than 20 ms apart are in different ticks: sent evenly,
    // they would be 2.5 ms apart and make one group.
    let mut bursts = vec![1usize];
    for w in at.windows(2) {
        if w[1] - w[0] > 0.020 {
            bursts.push(1);
        } else {
            *bursts.last_mut().unwrap() += 1;
        }
    }
    // Each burst is whole ticks. Two ticks may arrive as one where the
    // Python server, on a busy machine, took the first late (its stamps
    // are when it read a request), and a pause of the server's in the
    // middle of its reading of a tick cuts that tick in two bursts of
    // parts, the second joined to the next tick ([4, 36] once). Sent
    // evenly, the 400 would make one burst; ticks sent in parts would
    // leave a part in most bursts, not in one pause's two.
    let parts = bursts.iter().filter(|&&b| b % 20 != 0).count();
    assert!(
        parts <= 2 && bursts.len() >= 10,
        "arrivals by tick: {bursts:?}"
    );
}
