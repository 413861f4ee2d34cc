//! The namespace harness itself: hosts reach each other over ssh, a killed
//! sshd stops answering, and nothing is left behind once the Net is dropped.
//! Tests that lean on the harness are only as good as this.

mod support;

use std::process::Command;
use std::time::Duration;

use support::netns::Net;
use support::run_bounded;

const LIMIT: Duration = Duration::from_secs(30);

fn namespaces() -> Vec<String> {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "list"]);
    let out = run_bounded(cmd, LIMIT);
    assert!(out.status.success(), "ip netns list: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn two_hosts_reach_each_other_over_ssh() {
    let Some(net) = Net::new("h", &["ctl", "a"]) else {
        return;
    };
    let a = net.host("a").clone();
    assert_eq!(a.addr.to_string(), "198.18.0.11");
    assert_eq!(net.url("a"), "ssh://root@198.18.0.11");
    let ssh_to_a = || {
        let mut cmd = net.exec("ctl", "ssh");
        cmd.arg("-F").arg(net.ssh_config());
        cmd.args([
            &format!("root@{}", a.addr),
            "ip",
            "-4",
            "-o",
            "addr",
            "show",
        ]);
        run_bounded(cmd, LIMIT)
    };

    let out = ssh_to_a();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ssh ctl -> a failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The command ran on "a": its only non-loopback address is a's.
    assert!(stdout.contains("198.18.0.11/24"), "{stdout}");
    assert!(!stdout.contains("198.18.0.10/"), "{stdout}");
    // The session and the client are gone once ssh returns.
    assert_eq!(net.leftovers("a"), vec![], "{:?}", net.processes("a"));
    assert_eq!(net.leftovers("ctl"), vec![]);

    assert!(net.kill_sshd("a") >= 1);
    assert_eq!(net.processes("a"), vec![]);
    let out = ssh_to_a();
    assert!(
        !out.status.success(),
        "ssh reached a after its sshd was killed: {}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Namespaces of this Net are "<stem>" (the bridge) and "<stem>-<host>".
    let stem = a.netns.strip_suffix("-a").unwrap().to_string();
    let ours = |names: Vec<String>| -> Vec<String> {
        names
            .into_iter()
            .filter(|n| *n == stem || n.starts_with(&format!("{stem}-")))
            .collect()
    };
    assert_eq!(ours(namespaces()).len(), 3, "bridge, ctl and a");
    let dir = net.dir().to_path_buf();
    drop(net);
    assert_eq!(ours(namespaces()), Vec::<String>::new());
    assert!(!dir.exists(), "{} survived the Net", dir.display());
}
