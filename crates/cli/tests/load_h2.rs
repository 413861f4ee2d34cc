//! `throng load` over HTTP/2 against a real nginx, whose access log says
//! the protocol, status, body size, method, announced body length,
//! connection and, where nginx read it, the body of every request: exact
//! counts on both sides, ALPN's choice, h2c, the server's stream limit,
//! POST bodies through flow control, GOAWAY and RST_STREAM counted by
//! code, and every refusal one clear line.

mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use support::{only_errors, run_bounded, throng, throng_json, u, Listen, Nginx};

/// Fields per request: the protocol, status, body bytes sent, method,
/// Content-Length asked ("-" for none), connection serial number, URI,
/// and the request body as nginx read it ("-" when it read none).
const FORMAT: &str = "$server_protocol $status $body_bytes_sent $request_method \
                      $content_length $connection $request_uri $request_body";

const INDEX: &[u8] = b"hello over http/2\n";

/// `/echo` reads a request's body whole into memory (so `$request_body`
/// logs it) and passes it to a sink on a unix socket, which answers
/// `ok`; `/reset` answers with nginx's 444, which resets the stream.
const SERVER: &str = "location = /echo { client_body_buffer_size 256k; \
                      proxy_pass http://unix:{dir}/sink.sock:/sink; } \
                      location = /reset { return 444; }";
/// The sink: its own requests stay out of the access log, whose lines
/// are then exactly the client's.
const SINK: &str = "server { listen unix:{dir}/sink.sock; access_log off; \
                    location / { return 200 \"ok\\n\"; } }";

fn nginx(listen: Listen) -> Nginx {
    nginx_with(listen, "")
}

fn nginx_with(listen: Listen, more: &str) -> Nginx {
    let big = big_file();
    Nginx::start_conf(
        &[("index.html", INDEX), ("big.bin", &big)],
        FORMAT,
        listen,
        &format!("{SERVER} {more}"),
        SINK,
    )
}

/// 300,001 bytes: more than four 64 KiB windows, and not a multiple of
/// the 16 KiB frame.
fn big_file() -> Vec<u8> {
    (0..300_001u32).map(|i| (i * 7 % 251) as u8).collect()
}

#[derive(Debug, Clone, PartialEq)]
struct Line {
    proto: String,
    status: u16,
    body_bytes: u64,
    method: String,
    content_length: String,
    connection: u64,
    uri: String,
    body: String,
}

/// Every request `ng` logged, once it has quit (see
/// [`Nginx::quit_and_read_log`]).
fn log(ng: Nginx) -> Vec<Line> {
    ng.quit_and_read_log()
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 8, "{l}");
            Line {
                proto: f[0].to_string(),
                status: f[1].parse().unwrap(),
                body_bytes: f[2].parse().unwrap(),
                method: f[3].to_string(),
                content_length: f[4].to_string(),
                connection: f[5].parse().unwrap(),
                uri: f[6].to_string(),
                body: f[7].to_string(),
            }
        })
        .collect()
}

/// Log lines per distinct (protocol, status, body bytes, method, URI).
fn tally(lines: &[Line]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in lines {
        *m.entry(format!(
            "{} {} {} {} {}",
            l.proto, l.status, l.body_bytes, l.method, l.uri
        ))
        .or_default() += 1;
    }
    m
}

/// Requests per connection, as nginx numbered them.
fn per_connection(lines: &[Line]) -> Vec<usize> {
    let mut m: BTreeMap<u64, usize> = BTreeMap::new();
    for l in lines {
        *m.entry(l.connection).or_default() += 1;
    }
    m.into_values().collect()
}

/// Runs throng with `args`, for a run that must not start: its exit code
/// and its stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = throng();
    cmd.args(args);
    let out = run_bounded(cmd, Duration::from_secs(30));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_one_line(code: Option<i32>, err: &str, says: &str) {
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(says), "`{says}` not in: {err}");
}

#[test]
fn default_alpn_speaks_h2_with_nginx_on_every_stream() {
    let ng = nginx(Listen::H2);
    let j = throng_json(&[
        "load",
        "-k",
        "-n",
        "1000",
        "-c",
        "4",
        "--streams",
        "10",
        &ng.url("/index.html"),
    ]);
    assert_eq!(u(&j, "/completed"), 1000);
    assert_eq!(u(&j, "/sent"), 1000);
    assert_eq!(u(&j, "/in_flight_at_end"), 0);
    assert_eq!(j["status"], json!({"200": 1000}));
    only_errors(&j, &[]);
    assert_eq!(u(&j, "/body_bytes"), 1000 * INDEX.len() as u64);
    assert_eq!(j["tls"]["alpn"], "h2");
    assert_eq!(u(&j, "/tls/handshakes"), 4);
    assert_eq!(u(&j, "/connections/established"), 4);
    assert_eq!(u(&j, "/connections/reconnects"), 0);
    assert_eq!(
        j["http2"],
        json!({
            "connections": 4,
            "streams": 10,
            "server_max_streams": 128,
            "resets": {},
            "goaways": {},
            "retried": 0,
        })
    );
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(
            format!("HTTP/2.0 200 {} GET /index.html", INDEX.len()),
            1000
        )])
    );
    // Four connections, the requests spread over them.
    let per = per_connection(&lines);
    assert_eq!(per.len(), 4, "{per:?}");
    assert_eq!(per.iter().sum::<usize>(), 1000);
}

#[test]
fn http1_1_is_what_alpn_settles_on_when_asked_for_or_all_the_server_speaks() {
    let ng = nginx(Listen::H2);
    let j = throng_json(&[
        "load",
        "-k",
        "--http1.1",
        "-n",
        "200",
        "-c",
        "2",
        &ng.url("/index.html"),
    ]);
    assert_eq!(u(&j, "/completed"), 200);
    assert_eq!(j["status"], json!({"200": 200}));
    only_errors(&j, &[]);
    assert_eq!(j["tls"]["alpn"], "http/1.1");
    // No connection could speak HTTP/2: no http2 object at all.
    assert!(j.get("http2").is_none(), "{j:#}");
    // `ng`'s log is read at the end, after one more run on it below.

    // The default offer (h2, http/1.1) to a server without HTTP/2: it
    // chooses http/1.1, and the http2 object says no connection spoke it.
    let old = nginx(Listen::Tls);
    let j = throng_json(&[
        "load",
        "-k",
        "-n",
        "200",
        "-c",
        "2",
        &old.url("/index.html"),
    ]);
    assert_eq!(u(&j, "/completed"), 200);
    only_errors(&j, &[]);
    assert_eq!(j["tls"]["alpn"], "http/1.1");
    assert_eq!(
        j["http2"],
        json!({
            "connections": 0,
            "streams": 1,
            "server_max_streams": null,
            "resets": {},
            "goaways": {},
            "retried": 0,
        })
    );
    let lines = log(old);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(format!("HTTP/1.1 200 {} GET /index.html", INDEX.len()), 200)])
    );

    // The human summary's tls line names the protocol ALPN chose.
    let mut cmd = throng();
    cmd.args(["load", "-k", "--http1.1", "-n", "10", "-c", "1"])
        .arg(ng.url("/index.html"));
    let out = run_bounded(cmd, Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(", ALPN http/1.1; 1 handshakes"), "{text}");
    assert!(!text.contains("http2  "), "{text}");
    // The first run's 200 requests, then this one's 10: one nginx worker
    // logs a request before it reads anything more, and each run ended
    // with every response in hand before the next began.
    let lines = log(ng);
    assert_eq!(lines.len(), 210);
    assert_eq!(
        tally(&lines[..200]),
        BTreeMap::from([(format!("HTTP/1.1 200 {} GET /index.html", INDEX.len()), 200)])
    );
    assert_eq!(per_connection(&lines[..200]).len(), 2);
    assert_eq!(
        tally(&lines[200..]),
        BTreeMap::from([(format!("HTTP/1.1 200 {} GET /index.html", INDEX.len()), 10)])
    );
}

#[test]
fn h2c_speaks_http2_in_cleartext_by_prior_knowledge() {
    let ng = nginx(Listen::H2c);
    let j = throng_json(&[
        "load",
        "--h2c",
        "-n",
        "500",
        "-c",
        "2",
        "--streams",
        "5",
        &ng.url("/index.html"),
    ]);
    assert_eq!(u(&j, "/completed"), 500);
    assert_eq!(u(&j, "/sent"), 500);
    assert_eq!(j["status"], json!({"200": 500}));
    only_errors(&j, &[]);
    assert_eq!(u(&j, "/body_bytes"), 500 * INDEX.len() as u64);
    assert!(j.get("tls").is_none(), "{j:#}");
    assert_eq!(u(&j, "/http2/connections"), 2);
    assert_eq!(u(&j, "/http2/streams"), 5);
    assert_eq!(u(&j, "/http2/server_max_streams"), 128);
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(format!("HTTP/2.0 200 {} GET /index.html", INDEX.len()), 500)])
    );
    assert_eq!(per_connection(&lines).len(), 2);
}

#[test]
fn more_streams_than_the_server_allows_are_capped_by_its_settings() {
    let ng = nginx(Listen::H2);
    let mut cmd = throng();
    cmd.args(["load", "-k", "-n", "1000", "-c", "1", "--streams", "200"])
        .arg(ng.url("/index.html"));
    let out = run_bounded(cmd, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "  http2        1 connection, 200 streams each \
             (capped at 128 by the server's SETTINGS)\n"
        ),
        "{text}"
    );
    assert!(text.contains("  completed    1,000 responses"), "{text}");
    assert!(text.contains("  status       200: 1,000\n"), "{text}");
    assert!(text.contains("  errors       none\n"), "{text}");
    assert!(text.contains(", ALPN h2; 1 handshakes"), "{text}");
    // nginx refuses a stream above its limit with RST_STREAM; none was,
    // and all 1000 went over the one connection.
    assert!(!text.contains("RST_STREAM"), "{text}");
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(
            format!("HTTP/2.0 200 {} GET /index.html", INDEX.len()),
            1000
        )])
    );
    assert_eq!(per_connection(&lines), vec![1000]);
}

/// `openssl s_server` on a free loopback port: TLS with no ALPN at all,
/// killed when dropped.
struct NoAlpn(Child, u16);

impl Drop for NoAlpn {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn no_alpn_server(ng: &Nginx) -> NoAlpn {
    let port = support::free_port();
    let key = ng.dir.path().join("key.pem");
    let child = Command::new("openssl")
        .args(["s_server", "-quiet", "-www", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(ng.cert())
        .arg("-key")
        .arg(key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl must be installed");
    support::wait_listening(([127, 0, 0, 1], port).into(), Duration::from_secs(10));
    NoAlpn(child, port)
}

#[test]
fn http2_required_of_a_server_without_it_is_one_line_and_exit_2() {
    // nginx without http2 has ALPN protocols of its own and none in
    // common with an offer of h2 alone: it ends the handshake with a
    // no_application_protocol alert, which says the same.
    let ng = nginx(Listen::Tls);
    let url = ng.url("/index.html");
    let (code, err) = refused(&["load", "-k", "--http2", "-n", "10", &url]);
    assert_one_line(
        code,
        &err,
        &format!("{url}: the server does not speak HTTP/2 over TLS: ALPN chose nothing"),
    );
    // A server that finishes the handshake choosing nothing.
    let plain = no_alpn_server(&ng);
    let url = format!("https://127.0.0.1:{}/", plain.1);
    let (code, err) = refused(&["load", "-k", "--http2", "-n", "10", &url]);
    assert_one_line(
        code,
        &err,
        &format!("{url}: the server does not speak HTTP/2 over TLS: ALPN chose nothing"),
    );
    assert!(log(ng).is_empty(), "nginx was sent a request");
}

#[test]
fn options_that_cannot_apply_are_refused_in_one_line() {
    let tls = nginx(Listen::H2);
    let https = tls.url("/index.html");
    let clear = nginx(Listen::H2c);
    let http = clear.url("/index.html");
    for (args, says) in [
        (
            vec!["--streams", "2", &http],
            "--streams needs HTTP/2: an https:// URL (without --http1.1 or an --alpn without h2), or --h2c",
        ),
        (
            vec!["--streams", "0", "-k", &https],
            "--streams 0: give 1 to 4096",
        ),
        (
            vec!["--streams", "4097", "--h2c", &http],
            "--streams 4097: give 1 to 4096",
        ),
        (
            vec!["--h2c", "-k", &https],
            "--h2c is HTTP/2 over cleartext, for http:// URLs",
        ),
        (
            vec!["--http2", &http],
            "--http2 and --alpn apply to https:// URLs; over http://, --h2c speaks HTTP/2",
        ),
        (
            vec!["--alpn", "spdy/3", "-k", &https],
            "--alpn: `spdy/3` is not a protocol throng speaks (give h2, http/1.1 or both, or h3 alone)",
        ),
        (
            vec!["--http2", "--pipeline", "2", "-k", &https],
            "--pipeline cannot be used with HTTP/2, whose streams take its place (--streams)",
        ),
        (
            vec!["--h2c", "--pipeline", "2", &http],
            "--pipeline cannot be used with HTTP/2",
        ),
        (
            vec!["--window", "10", "-k", &https],
            "--window/--connection-window 10: give 65535 to 2147483647 bytes",
        ),
        (
            vec!["--connection-window", "2147483648", "--h2c", &http],
            "--window/--connection-window 2147483648: give 65535 to 2147483647 bytes",
        ),
        (
            vec!["--http1.1", "--streams", "4", "-k", &https],
            "--streams needs HTTP/2",
        ),
        // HTTP/2's own settings where no connection can speak it.
        (
            vec!["--window", "100000", &http],
            "--window and --connection-window are HTTP/2's: give an https:// URL",
        ),
        (
            vec!["--http1.1", "--connection-window", "100000", "-k", &https],
            "--window and --connection-window are HTTP/2's: give an https:// URL",
        ),
        (
            vec!["--alpn", "http/1.1", "--streams", "4", "-k", &https],
            "--streams needs HTTP/2",
        ),
    ] {
        let mut all = vec!["load", "-n", "10", "-c", "1"];
        all.extend(args.iter().copied());
        let (code, err) = refused(&all);
        assert_one_line(code, &err, says);
    }
    // Refused before a connection was opened, let alone a request sent.
    assert!(log(tls).is_empty());
    assert!(log(clear).is_empty());
}

#[test]
fn an_open_model_over_h2_keeps_its_schedule() {
    let ng = nginx(Listen::H2);
    let j = throng_json(&[
        "load",
        "--rate",
        "200",
        "-d",
        "2",
        "--streams",
        "4",
        "-k",
        &ng.url("/index.html"),
    ]);
    assert_eq!(j["model"], "open");
    let done = u(&j, "/completed");
    // 200/s for 2 s, within 1%.
    assert!((396..=404).contains(&done), "{done} completed");
    only_errors(&j, &[]);
    assert_eq!(j["status"], json!({"200": done}));
    assert_eq!(u(&j, "/sent"), done + u(&j, "/in_flight_at_end"));
    // -c's default, each connection speaking h2.
    assert_eq!(u(&j, "/http2/connections"), 10);
    assert_eq!(u(&j, "/http2/streams"), 4);
    // Every request sent reached nginx, once.
    let sent = u(&j, "/sent") as usize;
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(
            format!("HTTP/2.0 200 {} GET /index.html", INDEX.len()),
            sent
        )])
    );
}

#[test]
fn a_post_body_reaches_nginx_over_h2() {
    let ng = nginx(Listen::H2);
    let body = "name=throng&n=1";
    // nginx reads the body and passes it on: every one arrived whole.
    let j = throng_json(&[
        "load",
        "-m",
        "POST",
        "--body",
        body,
        "-n",
        "300",
        "-c",
        "3",
        "--streams",
        "4",
        "-k",
        &ng.url("/echo"),
    ]);
    assert_eq!(u(&j, "/completed"), 300);
    assert_eq!(j["status"], json!({"200": 300}));
    only_errors(&j, &[]);
    assert_eq!(u(&j, "/body_bytes"), 300 * 3);
    // `ng`'s log is read at the end, after the second run on it below:
    // the first 300 lines are this run's.

    // A static file does not take POST: nginx's 405, expected.
    let j = throng_json(&[
        "load",
        "-m",
        "POST",
        "--body",
        body,
        "--expect-status",
        "405",
        "-n",
        "300",
        "-c",
        "3",
        "--streams",
        "4",
        "-k",
        &ng.url("/index.html"),
    ]);
    assert_eq!(u(&j, "/completed"), 300);
    assert_eq!(j["status"], json!({"405": 300}));
    only_errors(&j, &[]);
    let lines = log(ng);
    assert_eq!(lines.len(), 600);
    for l in &lines[..300] {
        assert_eq!(
            (
                l.proto.as_str(),
                l.status,
                l.body_bytes,
                l.method.as_str(),
                l.content_length.as_str(),
                l.uri.as_str(),
                l.body.as_str()
            ),
            ("HTTP/2.0", 200, 3, "POST", "15", "/echo", body),
        );
    }
    let page = lines[300].body_bytes;
    assert_eq!(
        tally(&lines[300..]),
        BTreeMap::from([(format!("HTTP/2.0 405 {page} POST /index.html"), 300)])
    );
    assert!(lines[300..].iter().all(|l| l.content_length == "15"));
    assert_eq!(u(&j, "/body_bytes"), 300 * page);
}

#[test]
fn a_body_larger_than_the_servers_windows_waits_for_them_and_arrives_whole() {
    // nginx gives each request body a 64 KiB window
    // (http2_body_preread_size): a 100,000-byte body goes out only as
    // WINDOW_UPDATEs come, four such streams at once.
    let ng = nginx(Listen::H2c);
    let body: String = (0..100_000)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.txt");
    std::fs::write(&file, &body).unwrap();
    let j = throng_json(&[
        "load",
        "--h2c",
        "-m",
        "POST",
        "--body-file",
        file.to_str().unwrap(),
        "-n",
        "40",
        "-c",
        "1",
        "--streams",
        "4",
        &ng.url("/echo"),
    ]);
    assert_eq!(u(&j, "/completed"), 40);
    assert_eq!(j["status"], json!({"200": 40}));
    only_errors(&j, &[]);
    assert!(
        u(&j, "/bytes_written") > 40 * 100_000,
        "every body was written"
    );
    let lines = log(ng);
    assert_eq!(lines.len(), 40);
    for l in &lines {
        assert_eq!(
            (l.proto.as_str(), l.status, l.content_length.as_str()),
            ("HTTP/2.0", 200, "100000")
        );
        assert!(
            l.body == body,
            "a body arrived altered ({} bytes)",
            l.body.len()
        );
    }
}

#[test]
fn responses_larger_than_our_windows_arrive_whole_with_the_smallest_windows() {
    let ng = nginx(Listen::H2);
    let size = big_file().len() as u64;
    for windows in [
        vec![],
        vec!["--window", "65535", "--connection-window", "65535"],
    ] {
        let mut args = vec![
            "load",
            "-k",
            "--checksum",
            "-n",
            "60",
            "-c",
            "2",
            "--streams",
            "3",
        ];
        args.extend(windows.iter().copied());
        let url = ng.url("/big.bin");
        args.push(&url);
        let j = throng_json(&args);
        assert_eq!(u(&j, "/completed"), 60, "{windows:?}");
        assert_eq!(j["status"], json!({"200": 60}));
        only_errors(&j, &[]);
        assert_eq!(u(&j, "/body_bytes"), 60 * size, "{windows:?}");
    }
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(format!("HTTP/2.0 200 {size} GET /big.bin"), 120)])
    );
}

#[test]
fn goaway_after_keepalive_requests_moves_the_rest_to_a_new_connection() {
    // nginx ends an HTTP/2 connection after keepalive_requests streams
    // with GOAWAY(NO_ERROR), naming the last stream it will answer.
    let ng = nginx_with(Listen::H2, "keepalive_requests 100;");
    let j = throng_json(&[
        "load",
        "-k",
        "-n",
        "1000",
        "-c",
        "1",
        "--streams",
        "10",
        &ng.url("/index.html"),
    ]);
    assert_eq!(u(&j, "/completed"), 1000);
    // Requests turned back by a GOAWAY are sent again, not twice counted.
    assert_eq!(u(&j, "/sent"), 1000);
    assert_eq!(j["status"], json!({"200": 1000}));
    only_errors(&j, &[]);
    let h = &j["http2"];
    assert_eq!(u(h, "/connections"), 10);
    assert_eq!(h["goaways"], json!({"no_error": 10}));
    assert_eq!(h["resets"], json!({}));
    // At most the nine others in flight when a connection's 100th stream
    // went out lay above its GOAWAY's last stream.
    assert!(u(h, "/retried") <= 90, "{h}");
    assert_eq!(u(&j, "/tls/handshakes"), 10);
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([(
            format!("HTTP/2.0 200 {} GET /index.html", INDEX.len()),
            1000
        )])
    );
    // nginx answered exactly 100 on each: none of those sent again was
    // answered twice.
    assert_eq!(per_connection(&lines), vec![100; 10]);
}

#[test]
fn a_url_mix_is_served_as_asked_across_goaways() {
    // A GOAWAY every 7 streams turns back whatever was above its last
    // stream; sent again with the order's next URLs rather than their own,
    // the mix nginx served drifted (543 of 2,000 for one of four URLs).
    let ng = nginx_with(Listen::H2, "keepalive_requests 7;");
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(
        &list,
        "/index.html\n/big.bin\n/index.html?b\n/index.html?c\n",
    )
    .unwrap();
    let j = throng_json(&[
        "load",
        "-k",
        "-n",
        "400",
        "-c",
        "2",
        "--streams",
        "4",
        "--urls",
        list.to_str().unwrap(),
        &ng.url("/"),
    ]);
    assert_eq!(u(&j, "/completed"), 400);
    assert_eq!(j["status"], json!({"200": 400}));
    only_errors(&j, &[]);
    assert!(u(&j, "/http2/retried") > 0, "{}", j["http2"]);
    let lines = log(ng);
    let mut uris: BTreeMap<String, usize> = BTreeMap::new();
    for l in &lines {
        *uris.entry(l.uri.clone()).or_default() += 1;
    }
    assert_eq!(
        uris,
        BTreeMap::from([
            ("/big.bin".to_string(), 100),
            ("/index.html".to_string(), 100),
            ("/index.html?b".to_string(), 100),
            ("/index.html?c".to_string(), 100),
        ])
    );
}

#[test]
fn a_stream_the_server_resets_is_a_stream_reset_counted_by_its_code() {
    // nginx's 444 closes a request as timed out, which over HTTP/2 is
    // RST_STREAM(PROTOCOL_ERROR) on its stream, the connection kept.
    let ng = nginx(Listen::H2c);
    let j = throng_json(&[
        "load",
        "--h2c",
        "-n",
        "100",
        "-c",
        "1",
        "--streams",
        "10",
        &ng.url("/reset"),
    ]);
    assert_eq!(u(&j, "/completed"), 0);
    assert_eq!(u(&j, "/sent"), 100);
    only_errors(&j, &[("stream_reset", 100)]);
    let h = &j["http2"];
    assert_eq!(h["resets"], json!({"protocol_error": 100}));
    assert_eq!(h["goaways"], json!({}));
    assert_eq!(u(h, "/connections"), 1);
    let lines = log(ng);
    assert_eq!(
        tally(&lines),
        BTreeMap::from([("HTTP/2.0 444 0 GET /reset".to_string(), 100)])
    );
    assert_eq!(per_connection(&lines), vec![100]);
}
