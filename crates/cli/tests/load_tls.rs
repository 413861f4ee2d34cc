//! `throng load https://…` against a real nginx with TLS, whose access log
//! says the protocol and whether each handshake was resumed: exact counts,
//! full and resumed handshakes as nginx saw them, versions as asked, a
//! certificate not trusted refused in one line, and a server that closes
//! mid-handshake counted as `tls`.

mod support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use support::{run_bounded, throng, throng_json, u};
use throng_testkit::http::Server;

fn nginx() -> support::Nginx {
    support::Nginx::start_tls(
        &[("index.html", b"hello over tls\n")],
        "$status $ssl_protocol $ssl_session_reused $connection",
    )
}

type Line = (u16, String, bool, u64);

/// (status, protocol, reused, connection) per line of the access log.
fn parse<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Vec<Line> {
    lines
        .into_iter()
        .map(|l| {
            let f: Vec<&str> = l.as_ref().split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[2] == "r",
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// Every request nginx logged, read after a graceful quit.
fn log(ng: support::Nginx) -> Vec<Line> {
    parse(ng.quit_and_read_log())
}

/// The lines logged once there are `n`, or what there is after a bound.
fn logged(ng: &support::Nginx, n: usize) -> Vec<Line> {
    parse(ng.lines_once_logged(n))
}

#[test]
fn keep_alive_over_tls_counts_exactly_one_handshake_per_connection() {
    let ng = nginx();
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--insecure",
        "-n",
        "1000",
        "-c",
        "4",
        "-t",
        "1",
    ]);
    assert_eq!(u(&j, "/completed"), 1000);
    assert_eq!(j["status"]["200"], 1000);
    assert_eq!(u(&j, "/errors_total"), 0);
    assert_eq!(u(&j, "/body_bytes"), 1000 * 15);
    let t = &j["tls"];
    assert_eq!(t["version"], "TLSv1_3");
    assert_eq!(t["alpn"], "http/1.1");
    assert_eq!(u(t, "/handshakes"), 4);
    assert_eq!(u(t, "/resumed"), 0);
    assert_eq!(u(&t["handshake_us"], "/count"), 4);
    let lines = log(ng);
    assert_eq!(lines.len(), 1000);
    assert!(lines.iter().all(|l| l.0 == 200 && l.1 == "TLSv1.3" && !l.2));
    let mut conns: Vec<u64> = lines.iter().map(|l| l.3).collect();
    conns.sort();
    conns.dedup();
    assert_eq!(conns.len(), 4);
}

#[test]
fn close_mode_makes_full_handshakes_and_tls_resume_resumes_them() {
    let ng = nginx();
    let full = throng_json(&[
        "load",
        &ng.url("/"),
        "--insecure",
        "--close",
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
    ]);
    assert_eq!(u(&full, "/completed"), 200);
    assert_eq!(u(&full["tls"], "/handshakes"), 200);
    assert_eq!(u(&full["tls"], "/resumed"), 0);
    let lines = logged(&ng, 200);
    assert_eq!(lines.len(), 200);
    assert!(lines.iter().all(|l| !l.2), "nginx saw a resumed session");

    let resumed = throng_json(&[
        "load",
        &ng.url("/"),
        "--insecure",
        "--close",
        "--tls-resume",
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
    ]);
    assert_eq!(u(&resumed, "/completed"), 200);
    let t = &resumed["tls"];
    assert_eq!(u(t, "/handshakes"), 200);
    // nginx's own count of the sessions it resumed is throng's.
    let lines = log(ng);
    assert_eq!(lines.len(), 400);
    let reused = lines[200..].iter().filter(|l| l.2).count() as u64;
    assert_eq!(u(t, "/resumed"), reused);
    // Only the first connections, opened before any ticket came, were full.
    assert!(reused >= 196, "{reused} of 200 resumed");
}

#[test]
fn tls_12_only_is_what_the_server_sees() {
    let ng = nginx();
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--insecure",
        "--tls-version",
        "1.2",
        "-n",
        "100",
        "-c",
        "2",
    ]);
    assert_eq!(u(&j, "/completed"), 100);
    assert_eq!(j["tls"]["version"], "TLSv1_2");
    let lines = log(ng);
    assert_eq!(lines.len(), 100);
    assert!(lines.iter().all(|l| l.1 == "TLSv1.2"));
}

#[test]
fn a_certificate_is_trusted_through_cacert_and_refused_without() {
    let ng = nginx();
    let url = format!("https://localhost:{}/", ng.port);
    let cert = ng.cert();
    let j = throng_json(&[
        "load",
        &url,
        "--cacert",
        cert.to_str().unwrap(),
        "-n",
        "50",
        "-c",
        "1",
    ]);
    assert_eq!(u(&j, "/completed"), 50);
    for args in [
        vec!["load", &url, "-n", "10"],
        vec!["load", &ng.url("/"), "-n", "10"],
    ] {
        let mut cmd = throng();
        cmd.args(&args);
        let out = run_bounded(cmd, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("TLS handshake failed"), "{err}");
        assert!(err.contains("--insecure"), "{err}");
    }
    // Nothing was requested.
    assert_eq!(log(ng).len(), 50);
    // TLS options on a cleartext URL are refused, not ignored.
    let mut cmd = throng();
    cmd.args(["load", "http://127.0.0.1:9/", "--insecure"]);
    let out = run_bounded(cmd, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("apply to https:// URLs only"));
}

/// What the proxy does to a connection past its good ones.
#[derive(Clone, Copy, PartialEq)]
enum Past {
    /// Read its ClientHello, then close (a FIN).
    Close,
    /// Hold it open, silent, until the proxy stops.
    Stall,
    /// Abort it at once, its ClientHello unread (a reset).
    Reset,
}

/// Forwards the first `good` connections to `to`; later ones meet `past`.
/// Its port; dropping it stops it.
fn proxy(to: std::net::SocketAddr, good: usize, past: Past) -> (u16, Server) {
    let seen = AtomicUsize::new(0);
    let relay = Server::start(move |mut c| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        match past {
            _ if n < good => forward(c.stream, to),
            Past::Reset => c.reset(),
            Past::Stall => c.stall(),
            Past::Close => {
                let _ = c.stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut hello = [0u8; 512];
                let _ = c.stream.read(&mut hello);
                let _ = c.stream.shutdown(Shutdown::Both);
            }
        }
    });
    (relay.addr.port(), relay)
}

/// Copies bytes both ways between `client` and a new connection to `to`
/// until each side has closed its half.
fn forward(client: TcpStream, to: std::net::SocketAddr) {
    client.set_read_timeout(None).unwrap();
    let server = TcpStream::connect(to).unwrap();
    let pipe = |mut a: TcpStream, mut b: TcpStream| {
        let mut buf = [0u8; 16384];
        while let Ok(n) = a.read(&mut buf) {
            if n == 0 || b.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = b.shutdown(Shutdown::Write);
    };
    std::thread::scope(|s| {
        let (c, v) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        s.spawn(move || pipe(c, v));
        pipe(server, client);
    });
}

#[test]
fn a_server_closing_mid_handshake_is_a_tls_error() {
    // Whether its close is a FIN or a reset: the reset used to be counted
    // as `reset`, a TLS failure named after how the server closed.
    for past in [Past::Close, Past::Reset] {
        closing_mid_handshake(past);
    }
}

fn closing_mid_handshake(past: Past) {
    let ng = nginx();
    // The check before the load, then nine good connections.
    let (port, relay) = proxy(([127, 0, 0, 1], ng.port).into(), 10, past);
    let j = throng_json(&[
        "load",
        &format!("https://127.0.0.1:{port}/"),
        "--insecure",
        "--close",
        "-n",
        "20",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    drop(relay);
    assert_eq!(u(&j, "/completed"), 9, "{j}");
    assert_eq!(u(&j, "/errors/tls"), 11, "{j}");
    assert_eq!(u(&j, "/errors_total"), 11);
    assert_eq!(u(&j["tls"], "/handshakes"), 9);
}

#[test]
fn a_server_silent_mid_handshake_times_out_as_tls_within_the_deadline() {
    let ng = nginx();
    // The check before the load gets through; then every handshake stalls.
    let (port, relay) = proxy(([127, 0, 0, 1], ng.port).into(), 1, Past::Stall);
    let started = Instant::now();
    let j = throng_json(&[
        "load",
        &format!("https://127.0.0.1:{port}/"),
        "--insecure",
        "--close",
        "--timeout",
        "300ms",
        "-n",
        "3",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    let took = started.elapsed();
    drop(relay);
    assert_eq!(u(&j, "/completed"), 0);
    assert_eq!(u(&j, "/errors/tls"), 3);
    assert_eq!(u(&j, "/errors_total"), 3);
    // Three timeouts of 300 ms, each seen within a scan of its time.
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_server_silent_to_the_check_is_one_line_saying_it_did_not_answer() {
    let ng = nginx();
    // Every connection, the check's among them, stalls on its ClientHello.
    let (port, relay) = proxy(([127, 0, 0, 1], ng.port).into(), 0, Past::Stall);
    let mut cmd = throng();
    cmd.args([
        "load",
        &format!("https://127.0.0.1:{port}/"),
        "--insecure",
        "--timeout",
        "300ms",
        "-n",
        "1",
        "-c",
        "1",
    ]);
    let out = run_bounded(cmd, Duration::from_secs(30));
    drop(relay);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("TLS handshake failed: the server did not answer within 300ms"),
        "{err}"
    );
}

#[test]
fn streams_asked_of_a_server_that_chose_http1_are_said_to_be_absent() {
    // This nginx offers no h2 in ALPN: each connection carries one request
    // at a time, and the headline said "8 streams each" all the same.
    let ng = nginx();
    let mut cmd = throng();
    cmd.args([
        "load",
        &format!("https://127.0.0.1:{}/", ng.port),
        "--insecure",
        "--streams",
        "8",
        "-n",
        "40",
        "-c",
        "2",
    ]);
    let out = run_bounded(cmd, Duration::from_secs(30));
    assert!(out.status.success(), "{out:?}");
    let human = String::from_utf8_lossy(&out.stdout);
    let head = human.lines().next().unwrap_or_default();
    assert!(
        head.contains(", 8 streams asked but HTTP/1.1 spoken: one request at a time each"),
        "{head}"
    );
}
