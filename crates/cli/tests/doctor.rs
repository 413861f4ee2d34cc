//! `throng doctor` as a user runs it: exit status, text and JSON.

mod support;
use support::Bounded;

use std::process::Command;

fn throng() -> Command {
    Command::new(env!("CARGO_BIN_EXE_throng"))
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn finding<'a>(doc: &'a serde_json::Value, check: &str) -> &'a serde_json::Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check} in {doc}"))
}

#[test]
fn exit_status_follows_the_findings() {
    let out = throng()
        .args(["doctor", "--json", "-c", "10"])
        .bounded_output()
        .unwrap();
    let doc = json(&out);
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 22);
    let bad = findings.iter().filter(|f| f["severity"] != "ok").count();
    // Whatever this machine looks like, the status and "clean" agree with it.
    assert_eq!(out.status.code(), Some(if bad == 0 { 0 } else { 1 }));
    assert_eq!(doc["clean"], bad == 0);
    assert_eq!(doc["plan"]["connections"], 10);
    assert_eq!(
        doc["environment"]["throng_version"],
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn more_connections_than_the_open_file_limit_fails() {
    let out = Command::new("prlimit")
        .args(["--nofile=256:256", env!("CARGO_BIN_EXE_throng")])
        .args(["doctor", "--json", "-c", "1000"])
        .bounded_output()
        .expect("prlimit (util-linux)");
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let f = finding(&doc, "limits.nofile");
    assert_eq!(f["severity"], "fail");
    assert_eq!(
        f["message"],
        "open-file limit soft 256 / hard 256 is below the 1064 needed for 1000 connections \
         plus 64 other files"
    );
    assert_eq!(doc["environment"]["nofile"], serde_json::json!([256, 256]));
}

#[test]
fn shared_cpus_are_reported_in_text() {
    let out = throng()
        .args(["doctor", "--client-cpus", "0", "--server-cpus", "0-1"])
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains("plan.cpus")).unwrap();
    assert!(line.starts_with("WARN  plan.cpus"), "{line}");
    assert!(line.contains("client and server share CPUs 0:"), "{line}");
    assert!(text.contains("fix: give the client and the server disjoint CPU sets"));
}

#[test]
fn a_bad_cpu_list_is_a_usage_error() {
    let out = throng()
        .args(["doctor", "--client-cpus", "x"])
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "throng: --client-cpus \"x\": expected a CPU list such as 0-1,3"
    );
    // A range as wide as the type panicked, or ran out of memory; an
    // empty item between commas was read as no CPU at all.
    for list in ["0-18446744073709551615", "0-99999999", "1-0", "0,,1", ","] {
        let out = throng()
            .args(["doctor", "--server-cpus", list])
            .bounded_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{list}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            format!("throng: --server-cpus {list:?}: expected a CPU list such as 0-1,3")
        );
    }
    let out = throng()
        .args(["doctor", "--client-cpus", "4000"])
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with(
        "throng: --client-cpus \"4000\": CPU 4000 is not one this process may run on"
    ));
    // No connection at all is no plan to check the limits against.
    let out = throng()
        .args(["doctor", "-c", "0"])
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("invalid value '0' for '--connections <CONNECTIONS>'"));
}
