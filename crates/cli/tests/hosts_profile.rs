//! A profile taken apart: nginx runs on a server host (a network namespace
//! on 198.18.0.0/24 with its own sshd, as in `hosts.rs`), its load comes
//! from a client host, and the server host's agent samples nginx's stacks
//! over the diagnostic round, folds them there and sends them compressed;
//! the coordinator stores them as a study on one machine does.
//! A test that cannot make namespaces here skips with a printed reason.

mod support;

use std::time::Duration;

use support::netns::Net;
use throng_testkit::wait::wait_for;

const STUDY: &str = "servers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
    concurrency = [8]\nwarmup_seconds = 0.2\nfeatures = false\n\
    [rounds]\nseconds = 0.2\nwarmup_seconds = 0.05\nmin = 2\nmax = 2\nlaunches = 1\n";

#[test]
fn the_server_hosts_agent_samples_nginx_and_the_coordinator_stores_its_stacks() {
    if throng_lab::profile::on_path("nginx").is_none()
        || throng_lab::profile::on_path("perf").is_none()
    {
        println!("skipped: needs nginx and perf");
        return;
    }
    let Some(net) = Net::new("prof", &["ctl", "c1", "srv"]) else {
        return;
    };
    let study = net.dir().join("apart.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"apart\"\nserver_host = \"{}\"\nclient_hosts = [\"{}\"]\n{STUDY}",
            net.url("srv"),
            net.url("c1"),
        ),
    )
    .unwrap();
    let db = net.dir().join("apart.db");
    let mut lab = net.exec("ctl", env!("CARGO_BIN_EXE_throng"));
    lab.args(["lab", &study.to_string_lossy(), "--quiet", "--db"])
        .arg(&db)
        .env("THRONG_SSH_COMMAND", net.ssh_command());
    let out = support::run_bounded(lab, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let store = throng_store::Store::open(&db).unwrap();
    let run = store.load_run(1).unwrap();
    assert_eq!(run.steps.len(), 1);
    let step = &run.steps[0];
    assert_eq!(step.server, "nginx");
    let d = step.diagnosis.as_ref().expect("a diagnosis");
    assert_eq!(d.unavailable, None);
    let p = d.profile.as_ref().expect("a profile");
    assert_eq!(p.absent, None, "sampled on the server host");
    assert_eq!((p.event.as_str(), p.period_ns), ("cpu-clock", 100_000));
    // nginx is pinned to the server host's first CPU.
    assert_eq!(p.cpus, [0]);
    assert!(p.seconds > 0.0, "{p:?}");
    assert!(p.kernel_symbols, "kernel frames are named as root");
    let folded = throng_report::components::folded(p).expect("stacks that read back");
    let lines: Vec<(&str, u64)> = throng_report::components::lines(&folded).collect();
    assert!(!lines.is_empty());
    assert!(p.samples > 0);
    assert_eq!(lines.iter().map(|(_, n)| n).sum::<u64>(), p.samples);
    // nginx's processes alone, none of the agent's or perf's.
    assert!(
        lines.iter().all(|(s, _)| s.starts_with("nginx;")),
        "{folded}"
    );
    // Its worker sending and opening the file on the server host's kernel.
    assert!(
        lines.iter().any(|(s, _)| s.contains("tcp_sendmsg_[k]")),
        "{folded}"
    );
    assert!(
        lines.iter().any(|(s, _)| s.contains(";do_sys_openat2_[k]")),
        "{folded}"
    );
    // Every syscall of the window counted there too: a write per response.
    let writev = d.syscalls_per_request.get("writev").copied().unwrap_or(0.0);
    assert!((writev - 1.0).abs() < 0.01, "{d:?}");

    // No perf, agent or server is left on any host.
    let left = || -> Vec<(String, i32, String)> {
        ["srv", "c1", "ctl"]
            .iter()
            .flat_map(|h| {
                net.leftovers(h)
                    .into_iter()
                    .map(move |(p, c)| (h.to_string(), p, c))
            })
            .collect()
    };
    assert!(
        wait_for(Duration::from_secs(10), || left().is_empty()),
        "left running: {:?}",
        left()
    );
}
