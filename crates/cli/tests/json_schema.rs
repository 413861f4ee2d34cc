//! docs/json-schema.md and `throng load --json` must describe the same
//! document: every printed field documented, every documented field printed.

mod support;

use std::collections::BTreeSet;

use support::{throng_json, Nginx};

fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/json-schema.md"
    ))
    .expect("docs/json-schema.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(p, _)| p.to_string()))
        .collect()
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeSet<String>) {
    if !prefix.is_empty() {
        out.insert(prefix.to_string());
    }
    // A host's share is this whole document again, and its path is
    // described in one row: neither is listed field by field.
    if prefix == "hosts[].summary" || prefix == "hosts[].path" {
        return;
    }
    match v {
        serde_json::Value::Object(m) => {
            for (k, child) in m {
                // Status codes and HTTP/2 error codes are map keys,
                // documented once as <code>.
                let key = if ["status", "http2.resets", "http2.goaways"].contains(&prefix) {
                    "<code>"
                } else {
                    k.as_str()
                };
                let p = if prefix.is_empty() {
                    key.to_string()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&p, child, out);
            }
        }
        serde_json::Value::Array(a) => {
            for child in a {
                flatten(&format!("{prefix}[]"), child, out);
            }
        }
        _ => {}
    }
}

#[test]
fn documented_fields_match_printed_fields() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let url = ng.url("/");
    let dir = tempfile::tempdir().unwrap();
    let visits = dir.path().join("visits.log");
    std::fs::write(
        &visits,
        "/index.html think=0.01\n\t/index.html\n/index.html\n",
    )
    .unwrap();
    let visits = visits.to_str().unwrap().to_string();
    let tls = support::Nginx::start_tls(&[("index.html", b"hello!\n")], "$status");
    let https = tls.url("/");
    // HTTP/2 over TLS; and in cleartext, an nginx that resets the streams
    // of /reset (its 444) and ends a connection after 50 requests with a
    // GOAWAY, so the maps of codes have members.
    let h2 = Nginx::start_h2(&[("index.html", b"hello!\n")], "$status");
    let h2_url = h2.url("/");
    let h2c = Nginx::start_conf(
        &[("index.html", b"hello!\n")],
        "$status",
        support::Listen::H2c,
        "keepalive_requests 50; location = /reset { return 444; }",
        "",
    );
    let (h2c_url, h2c_reset) = (h2c.url("/"), h2c.url("/reset"));
    let mut seen = BTreeSet::new();
    // A closed run and an open-model run with every optional part switched
    // on, plus one that warns (more connections than can be established is
    // hard to arrange here; a size that changes is not: --expect-size).
    for args in [
        vec![
            "load",
            &url,
            "-n",
            "2000",
            "-c",
            "4",
            "--threshold",
            "completed>=2000",
        ],
        vec![
            "load",
            &url,
            "-d",
            "1s",
            "-c",
            "4",
            "--rate",
            "500",
            "--warmup",
            "200ms",
            "--timeline",
        ],
        vec!["load", &url, "-n", "100", "-c", "1", "--expect-size", "3"],
        // Waits that spin before they sleep.
        vec!["load", &url, "-n", "100", "-c", "1", "--spin", "50us"],
        // A rate in stages, each second with its target, kept in ticks.
        vec![
            "load",
            &url,
            "--stages",
            "1s:100,1s:200",
            "-c",
            "4",
            "--tick",
            "1ms",
        ],
        // An agent on this machine stands in for a client host.
        vec!["load", &url, "-n", "100", "-c", "2", "--hosts", "local"],
        // Over TLS.
        vec!["load", &https, "--insecure", "-n", "100", "-c", "2"],
        // Over HTTP/2, ALPN choosing it, more streams than one.
        vec![
            "load",
            &h2_url,
            "--insecure",
            "-n",
            "100",
            "-c",
            "2",
            "--streams",
            "4",
        ],
        // h2c with GOAWAYs, and with resets.
        vec![
            "load",
            &h2c_url,
            "--h2c",
            "-n",
            "200",
            "-c",
            "1",
            "--streams",
            "4",
        ],
        vec![
            "load",
            &h2c_reset,
            "--h2c",
            "-n",
            "20",
            "-c",
            "1",
            "--streams",
            "4",
        ],
        // Users who think, arriving.
        vec![
            "load",
            &url,
            "--sessions",
            &visits,
            "--users-per-sec",
            "50",
            "-c",
            "10",
            "-d",
            "1s",
        ],
        // Users in stages, each second with its target and active users.
        vec![
            "load",
            &url,
            "--sessions",
            &visits,
            "--users-stages",
            "1s:2",
        ],
    ] {
        flatten("", &throng_json(&args), &mut seen);
    }
    let doc = documented();
    let undocumented: Vec<_> = seen.difference(&doc).collect();
    assert!(
        undocumented.is_empty(),
        "printed but not in docs/json-schema.md: {undocumented:?}"
    );
    // Warnings appear only on runs that trigger them (edge-case tests do);
    // these runs have none, so they are not required to be printed here.
    // A local server's usage leaves out what was 0: no steal outside a
    // VM, no wait on a quiet machine; and it says it shared the load's
    // CPUs only when it did.
    let optional: BTreeSet<String> = [
        "warnings[]",
        // HTTP/3 loads only, whose fields tests/load_h3.rs reads.
        "http3",
        "http3.connections",
        "http3.streams",
        "http3.server_max_streams",
        "http3.congestion",
        "http3.datagrams_sent",
        "http3.datagrams_received",
        "http3.packets_sent",
        "http3.packets_lost",
        "http3.rtt_us",
        "http3.min_rtt_us",
        "http3.transport_errors",
        "http3.h3_errors",
        "http3.stream_resets",
        "http3.idle_timeouts",
        "http3.handshake_failures",
        "http3.version_mismatches",
        "http3.goaways",
        "http3.retried",
        "http3.send_calls",
        "http3.receive_calls",
        "http3.gso",
        "http3.gro",
        // Only a schedule that was not kept has one.
        "rate.saturated_second",
        "local_server.usage.runqueue_s",
        "local_server.usage.others_cpu_s",
        "local_server.usage.steal_s",
        "local_server.shared_cores",
        // A server whose pool held through the run has no range.
        "local_server.usage.shape_range",
        "local_server.usage.shape_range.min",
        "local_server.usage.shape_range.min.processes",
        "local_server.usage.shape_range.min.threads",
        "local_server.usage.shape_range.min.listeners",
        "local_server.usage.shape_range.max",
        "local_server.usage.shape_range.max.processes",
        "local_server.usage.shape_range.max.threads",
        "local_server.usage.shape_range.max.listeners",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let missing: Vec<_> = doc
        .difference(&seen)
        .filter(|p| !optional.contains(*p))
        .collect();
    assert!(
        missing.is_empty(),
        "documented but never printed: {missing:?}"
    );
    assert_eq!(doc.len(), 305, "update this count with the table");
}
