//! HTTP/3 across a path that loses packets: two network namespaces, the
//! aioquic server of support/h3_server.py in one, throng in the other,
//! netem dropping 5% of what each sends. (A token bucket is no stand-in
//! where netem is missing: QUIC's pacing kept under its queue, and it
//! dropped nothing.) QUIC's recovery sends the lost
//! packets again: every request is answered once, and the summary counts
//! the losses.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use support::netns::Net;
use support::{run_bounded, u};

/// Whether qdisc `what` can be put on a namespace's loopback here.
fn has_qdisc(net: &Net, what: &[&str]) -> bool {
    let mut c = net.exec("cli", "tc");
    c.args(["qdisc", "add", "dev", "lo", "root"]).args(what);
    let ok = run_bounded(c, Duration::from_secs(10)).status.success();
    if ok {
        let mut c = net.exec("cli", "tc");
        c.args(["qdisc", "del", "dev", "lo", "root"]);
        run_bounded(c, Duration::from_secs(10));
    }
    ok
}

#[test]
fn requests_over_a_lossy_path_are_each_answered_once_and_the_losses_counted() {
    let Some(net) = Net::new("h3loss", &["cli", "srv"]) else {
        return;
    };
    if !has_qdisc(&net, &["netem", "delay", "1ms"]) {
        eprintln!("skipped: this kernel has no netem (CONFIG_NET_SCH_NETEM), so no packet is lost");
        return;
    }
    net.lose("srv", 5);
    net.lose("cli", 5);
    let (cert, key) = throng_testkit::cert::localhost_in(net.dir());
    let log = net.dir().join("requests.log");
    let addr = net.host("srv").addr.to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/h3_server.py");
    let mut server = net.exec("srv", "/usr/bin/python3");
    server
        .arg(script)
        .arg("4433")
        .args([&cert, &key, &log])
        .arg(&addr)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = server.spawn().expect("python3 runs");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    let ready = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
    if ready.trim() != "ready" {
        child.kill().ok();
        let _ = child.wait();
        panic!("the aioquic server did not start: is aioquic installed (scripts/setup)?");
    }
    let mut load = net.exec("cli", env!("CARGO_BIN_EXE_throng"));
    load.args([
        "load",
        &format!("https://{addr}:4433/"),
        "--http3",
        "-k",
        "-n",
        "2000",
        "-c",
        "2",
        "--streams",
        "10",
        "--timeout",
        "10s",
        "--json",
    ]);
    let done = run_bounded(load, Duration::from_secs(60));
    child.kill().ok();
    let _ = child.wait();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(j["completed"], 2000, "{j}");
    assert_eq!(j["errors_total"], 0);
    assert_eq!(j["in_flight_at_end"], 0);
    let seen = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(seen, 2000, "each request reached the server once");
    let h = &j["http3"];
    assert!(u(h, "/packets_lost") > 0, "{h}");
    assert!(u(h, "/packets_sent") > u(h, "/packets_lost"));
}
