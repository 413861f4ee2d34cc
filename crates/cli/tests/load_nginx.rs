//! `throng load` against a real nginx: exact counts checked against the
//! server's own access log.

mod support;

use support::{throng_json, Nginx};

#[test]
fn exactly_n_requests_reach_the_server() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let j = throng_json(&["load", &ng.url("/"), "-n", "10000", "-c", "10", "-t", "2"]);
    assert_eq!(j["completed"], 10000);
    assert_eq!(j["sent"], 10000);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["in_flight_at_end"], 0);
    assert_eq!(j["status"]["200"], 10000);
    assert_eq!(j["body_bytes"], 70000);
    assert_eq!(j["connections"]["requested"], 10);
    assert_eq!(j["connections"]["established"], 10);
    assert_eq!(j["connections"]["reconnects"], 0);
    let log = ng.quit_and_read_entries();
    assert_eq!(
        log.len(),
        10000,
        "the server saw exactly the requests counted"
    );
    assert!(log.iter().all(|(s, _)| *s == 200));
    // Every byte nginx sent was read and counted, headers included.
    let sent: u64 = log.iter().map(|(_, b)| b).sum();
    assert_eq!(j["bytes_read"], sent);
}

#[test]
fn close_mode_opens_one_connection_per_request() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let j = throng_json(&["load", &ng.url("/"), "-n", "500", "-c", "5", "--close"]);
    assert_eq!(j["completed"], 500);
    assert_eq!(j["keep_alive"], false);
    assert_eq!(j["connections"]["established"], 5);
    // Each connection carries one request: 5 first connects, 495 reconnects.
    assert_eq!(j["connections"]["reconnects"], 495);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(ng.quit_and_read_entries().len(), 500);
}

#[test]
fn pipelined_requests_are_all_answered() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "-n",
        "4000",
        "-c",
        "4",
        "--pipeline",
        "16",
        "-t",
        "1",
    ]);
    assert_eq!(j["completed"], 4000);
    assert_eq!(j["pipeline"], 16);
    assert_eq!(j["errors_total"], 0);
    let log = ng.quit_and_read_entries();
    assert_eq!(log.len(), 4000);
    let sent: u64 = log.iter().map(|(_, b)| b).sum();
    assert_eq!(j["bytes_read"], sent);
}

#[test]
fn url_list_statuses_and_size_mismatch() {
    let ng = Nginx::start(&[("a.html", b"aaaa"), ("b.html", b"bbbbbbbb")]);
    let list = ng.dir.path().join("urls.txt");
    // A byte-order mark first, as some editors write one: it was taken as
    // part of the first line.
    std::fs::write(
        &list,
        "\u{feff}# two files and one that is missing\n/a.html\n/b.html\n/missing.html\n",
    )
    .unwrap();
    let url = ng.url("/");
    let listed = |n: &str, c: &str, t: &str, more: &[&str]| {
        let args = [
            "load",
            &url,
            "--urls",
            list.to_str().unwrap(),
            "-n",
            n,
            "-c",
            c,
            "-t",
            t,
        ];
        throng_json(&[&args[..], more].concat())
    };
    let j = listed("300", "1", "1", &[]);
    // Sequential order over three URLs: 100 each.
    assert_eq!(j["completed"], 300);
    assert_eq!(j["status"]["200"], 200);
    assert_eq!(j["status"]["404"], 100);
    assert_eq!(j["errors"]["status"], 100);
    assert_eq!(j["errors_total"], 100);
    // 100 × 4 + 100 × 8 bytes of files, and 100 of nginx's 404 page, whose
    // size one request tells.
    let page = throng_json(&[
        "load",
        &ng.url("/missing.html"),
        "-n",
        "1",
        "-c",
        "1",
        "--expect-status",
        "404",
    ]);
    let page = page["body_bytes"].as_u64().unwrap();
    assert!(page > 0, "nginx sends a body with its 404");
    assert_eq!(j["body_bytes"].as_u64().unwrap(), 1200 + 100 * page);
    // On two threads, the second goes on in turn where the first stops:
    // each started at the first URL, 11, 10 and 9 of 30.
    let j = listed("30", "3", "2", &[]);
    assert_eq!(
        (j["status"]["200"].as_u64(), j["status"]["404"].as_u64()),
        (Some(20), Some(10))
    );
    assert_eq!(j["body_bytes"].as_u64().unwrap(), 120 + 10 * page);

    // Holding every URL to a fixed size turns the other sizes into errors.
    let j = listed(
        "300",
        "1",
        "1",
        &["--expect-size", "4", "--expect-status", "200,404"],
    );
    assert_eq!(j["errors"]["status"], 0);
    assert_eq!(j["errors"]["size_mismatch"], 200);
}

#[test]
fn timeline_has_one_row_per_second() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "-d",
        "2s",
        "-c",
        "4",
        "--timeline",
        "--warmup",
        "500ms",
    ]);
    let rows = j["timeline"].as_array().unwrap();
    assert!(rows.len() == 2 || rows.len() == 3, "{} rows", rows.len());
    let total: u64 = rows.iter().map(|r| r["completed"].as_u64().unwrap()).sum();
    assert_eq!(total, j["completed"].as_u64().unwrap());
    let t0 = rows[0]["t_unix"].as_f64().unwrap();
    assert_eq!(rows[1]["t_unix"].as_f64().unwrap() - t0, 1.0);
    // Warmup is reported apart and not in the measured counts.
    let w = &j["warmup"];
    assert_eq!(w["duration_s"], 0.5);
    let counted = j["completed"].as_u64().unwrap() + w["completed"].as_u64().unwrap();
    // The server also logs what was in flight when the run ended.
    let logged = ng.quit_and_read_entries().len() as u64;
    assert!(
        logged >= counted && logged <= counted + 4,
        "{logged} logged, {counted} counted"
    );
}

/// `--rate --tick` against nginx: the requests of a tick reach it together
/// as the tick starts. 400 a second over 4 connections for 975 ms, in
/// ticks of 50 ms: the requests are spaced 2.5 ms apart, 20 to a tick, and
/// the last tick (from 950 ms) carries the 10 spaced before the end. nginx
/// logs each request's arrival to the millisecond ($msec); a gap of more
/// than 25 ms starts a new burst.
#[test]
fn a_ticks_requests_reach_nginx_together() {
    let ng = Nginx::start_logging(&[("index.html", b"hello!\n")], "$status $msec");
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "-c",
        "4",
        "-t",
        "1",
        "--rate",
        "400",
        "--tick",
        "50ms",
        "-d",
        "975ms",
    ]);
    assert_eq!(j["completed"], 390);
    assert_eq!(j["sent"], 390);
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["rate"]["unsent"], 0);
    assert_eq!(j["rate"]["tick_us"], 50_000);
    let mut at: Vec<f64> = ng
        .quit_and_read_log()
        .iter()
        .map(|l| {
            let (status, msec) = l.split_once(' ').unwrap();
            assert_eq!(status, "200", "{l}");
            msec.parse().unwrap()
        })
        .collect();
    at.sort_by(f64::total_cmp);
    let mut bursts: Vec<u32> = vec![];
    for (k, t) in at.iter().enumerate() {
        if k > 0 && t - at[k - 1] <= 0.025 {
            *bursts.last_mut().unwrap() += 1;
        } else {
            bursts.push(1);
        }
    }
    let mut expected = vec![20; 19];
    expected.push(10);
    // Each burst is whole ticks: a tick spread over more than 25 ms would
    // split one. Two ticks can run together where the host held nginx or
    // the client for 25 ms (the hypervisor's steal on a shared machine
    // did: one burst of 40), which tells nothing of the ticks; at most
    // two such, so that a schedule sent all at once still fails.
    let mut ticks = expected.iter().copied();
    for &b in &bursts {
        let mut whole = 0;
        while whole < b {
            whole += ticks.next().unwrap_or_else(|| panic!("{bursts:?}"));
        }
        assert_eq!(whole, b, "a burst that is not whole ticks: {bursts:?}");
    }
    assert_eq!(ticks.next(), None, "{bursts:?}");
    assert!(bursts.len() + 2 >= expected.len(), "{bursts:?}");
    if bursts.len() < expected.len() {
        eprintln!("ticks ran together where the host held a side: {bursts:?}");
    }
}
