//! The doctor and the environment on the real machine: the shape is fixed
//! whatever the machine, and the figures match what /proc says.

use std::collections::BTreeSet;

use throng_model::Severity;
use throng_trust::doctor::{check, environment, Plan};
use throng_trust::snapshot::{parse_cpu_list, Snapshot};

fn proc_value(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn mem_total_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn doctor_on_this_machine_has_one_finding_per_check() {
    let plan = Plan {
        connections: 100,
        close_mode: false,
        client_cpus: vec![],
        server_cpus: vec![],
    };
    let f = check(&plan);
    assert_eq!(f.len(), 20);
    let ids: BTreeSet<&str> = f.iter().map(|x| x.check.as_str()).collect();
    assert_eq!(ids.len(), 20, "check ids are unique");
    for x in &f {
        assert!(!x.message.is_empty(), "{x:?}");
        // A finding always says what to do; an Ok never asks for anything.
        assert_eq!(x.severity == Severity::Ok, x.fix.is_empty(), "{x:?}");
    }
    let plan_cpus = f.iter().find(|x| x.check == "plan.cpus").unwrap();
    assert_eq!(plan_cpus.message, "no CPU pinning planned");
}

#[test]
fn snapshot_matches_proc() {
    let s = Snapshot::read();
    assert_eq!(
        s.sysctls["net.core.somaxconn"],
        proc_value("/proc/sys/net/core/somaxconn")
    );
    assert_eq!(
        s.sysctls["net.ipv4.ip_local_port_range"],
        proc_value("/proc/sys/net/ipv4/ip_local_port_range")
    );
    assert_eq!(
        s.sysctls.contains_key("net.ipv4.tcp_tw_recycle"),
        std::path::Path::new("/proc/sys/net/ipv4/tcp_tw_recycle").exists()
    );
    assert_eq!(s.memory_bytes, mem_total_bytes());
    let online =
        parse_cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    assert_eq!(s.cpus_online, online);
    assert_eq!(s.cpufreq.len(), online.len());
    // Every online CPU's idle states, as many as /sys lists for it.
    assert_eq!(s.idle.cpus.len(), online.len());
    for c in &s.idle.cpus {
        let listed = (0..)
            .take_while(|k| {
                std::path::Path::new(&format!(
                    "/sys/devices/system/cpu/cpu{}/cpuidle/state{k}/latency",
                    c.cpu
                ))
                .exists()
            })
            .count();
        assert_eq!(c.states.len(), listed, "cpu{}", c.cpu);
    }
    assert_eq!(
        s.idle.driver,
        std::fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver")
            .ok()
            .map(|d| d.trim().to_string())
    );
    let me = std::process::id() as i32;
    assert!(
        s.processes.iter().all(|p| p.pid != me),
        "the doctor excludes itself"
    );
    // The window is one second of wall time, give or take scheduling.
    assert!((1.0..1.5).contains(&s.window_s), "{}", s.window_s);
}

#[test]
fn environment_matches_proc() {
    let e = environment();
    assert_eq!(e.hostname, proc_value("/proc/sys/kernel/hostname"));
    assert_eq!(e.memory_bytes, mem_total_bytes());
    let online =
        parse_cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    assert_eq!(e.cpus_online as usize, online.len());
    assert!(e
        .kernel
        .starts_with(&proc_value("/proc/sys/kernel/osrelease")));
    assert_eq!(
        e.sysctls["fs.file-max"],
        proc_value("/proc/sys/fs/file-max")
    );
    assert!(!e.sysctls.contains_key("net.netfilter.nf_conntrack_count"));
    assert_eq!(e.throng_version, env!("CARGO_PKG_VERSION"));
    let (soft, hard) = e.nofile;
    let (s2, h2) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    assert_eq!((soft, hard), (s2, h2));
    let release = std::fs::read_to_string("/etc/os-release").unwrap();
    let pretty = release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .unwrap()
        .trim_matches('"');
    assert_eq!(e.os, pretty);
}

#[test]
fn cpu_list_format() {
    assert_eq!(parse_cpu_list("0-3,6,8-9\n"), vec![0, 1, 2, 3, 6, 8, 9]);
    assert_eq!(parse_cpu_list("0"), vec![0]);
    assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
}
