//! The server's cores against a scripted /sys and /proc: a powersave
//! governor and a NIC's interrupts on them are found with exact words,
//! and a kernel that shows neither is said to, not guessed at.

use std::net::IpAddr;
use std::path::Path;

use throng_model::{Finding, Severity};
use throng_trust::doctor::serving_checks;
use throng_trust::serving::{
    default_interface, interface_of, parse_interrupts, read_server_cores, Irq, Nic,
};

const INTERRUPTS: &str = "           CPU0       CPU1       
 26:          0        499  IO-APIC   4-edge      ttyS0
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0       6311 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:       4576          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 41:      14767          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
LOC:    8856252   20933360   Local timer interrupts
";

/// `/proc/net/route` of a host with a default route through eth0 and the
/// benchmark network on t1b.
const ROUTE: &str =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
t1b\t000012C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A virtio NIC as this VM shows it: eth0's device is virtio2, whose PCI
/// parent lists the MSI vectors 37–39; CPU 0 runs powersave.
fn machine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        "powersave\n",
    );
    write(
        root,
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
        "performance\n",
    );
    let pci = root.join("sys/devices/pci0000:00/0000:00:03.0");
    std::fs::create_dir_all(pci.join("virtio2")).unwrap();
    for n in ["37", "38", "39"] {
        write(&pci, &format!("msi_irqs/{n}"), "msix\n");
    }
    std::fs::create_dir_all(root.join("sys/class/net/eth0")).unwrap();
    std::os::unix::fs::symlink(pci.join("virtio2"), root.join("sys/class/net/eth0/device"))
        .unwrap();
    std::fs::create_dir_all(root.join("sys/class/net/t1b")).unwrap();
    write(root, "proc/interrupts", INTERRUPTS);
    for (n, eff, all) in [("37", "0", "0-1"), ("38", "1", "0-1"), ("39", "0", "0-1")] {
        write(root, &format!("proc/irq/{n}/effective_affinity_list"), eff);
        write(root, &format!("proc/irq/{n}/smp_affinity_list"), all);
    }
    write(root, "proc/net/route", ROUTE);
    dir
}

fn finding(severity: Severity, check: &str, message: &str, fix: &str) -> Finding {
    Finding {
        check: check.into(),
        severity,
        message: message.into(),
        fix: fix.into(),
    }
}

#[test]
fn interrupts_are_read_by_line() {
    assert_eq!(
        parse_interrupts(INTERRUPTS),
        vec![
            (26, "ttyS0".to_string(), 499),
            (37, "virtio2-config".to_string(), 0),
            (38, "virtio2-input.0".to_string(), 6311),
            (39, "virtio2-output.0".to_string(), 4576),
            (41, "virtio3-rx".to_string(), 14767),
        ]
    );
}

#[test]
fn a_powersave_core_and_a_nics_interrupts_on_it_are_found() {
    let m = machine();
    let s = read_server_cores(m.path(), &[0], Some("eth0"));
    assert_eq!(s.governors, vec![(0, Some("powersave".to_string()))]);
    assert_eq!(
        s.nic,
        Nic::Irqs {
            interface: "eth0".into(),
            irqs: vec![
                Irq {
                    number: 37,
                    name: "virtio2-config".into(),
                    cpus: Some(vec![0]),
                    count: 0
                },
                Irq {
                    number: 38,
                    name: "virtio2-input.0".into(),
                    cpus: Some(vec![1]),
                    count: 6311
                },
                Irq {
                    number: 39,
                    name: "virtio2-output.0".into(),
                    cpus: Some(vec![0]),
                    count: 4576
                },
            ]
        }
    );
    assert_eq!(
        serving_checks(&s),
        vec![
            finding(
                Severity::Warn,
                "server.governor",
                "the server's CPUs 0 run the powersave governor: the clock drops between bursts \
                 of requests, so a light level is served by a slower core than a heavy one",
                "cpupower -c 0 frequency-set -g performance",
            ),
            finding(
                Severity::Warn,
                "server.interrupts",
                "eth0's interrupts land on the server's CPUs 0: IRQ 39 (virtio2-output.0) to \
                 CPUs 0; the interrupt and softirq work of every packet takes CPU the server \
                 is measured without",
                "stop irqbalance, then for IRQ in 39: echo CPUS > /proc/irq/$IRQ/smp_affinity_list \
                 with CPUs the server is not pinned to",
            ),
        ]
    );
}

#[test]
fn a_performance_core_is_ok_and_interrupts_count_where_they_are_delivered() {
    // CPU 1 runs performance, and the input queue is delivered there: the
    // NIC's work on the server's core all the same.
    let m = machine();
    let s = read_server_cores(m.path(), &[1], Some("eth0"));
    let f = serving_checks(&s);
    assert_eq!(
        f[0],
        finding(
            Severity::Ok,
            "server.governor",
            "governor of the server's CPUs: CPU 1 performance",
            ""
        )
    );
    assert_eq!(f[1].severity, Severity::Warn);
    assert!(f[1].message.contains("IRQ 38 (virtio2-input.0) to CPUs 1"));
    // Without its effective affinity, the line's allowed CPUs count, and
    // its configuration vector, which never fired, lands nowhere.
    std::fs::remove_file(m.path().join("proc/irq/38/effective_affinity_list")).unwrap();
    std::fs::write(m.path().join("proc/irq/38/smp_affinity_list"), "0").unwrap();
    let s = read_server_cores(m.path(), &[1], Some("eth0"));
    assert_eq!(
        serving_checks(&s)[1],
        finding(
            Severity::Ok,
            "server.interrupts",
            "eth0's 3 interrupt lines are delivered off the server's CPUs 1",
            ""
        )
    );
}

#[test]
fn what_the_kernel_does_not_show_is_said_so() {
    let empty = tempfile::tempdir().unwrap();
    let s = read_server_cores(empty.path(), &[0], Some("eth0"));
    assert_eq!(
        serving_checks(&s),
        vec![
            finding(
                Severity::Ok,
                "server.governor",
                "governor of the server's CPUs 0: not shown by this kernel (no cpufreq)",
                ""
            ),
            finding(
                Severity::Ok,
                "server.interrupts",
                "eth0's interrupts: not shown by this kernel",
                ""
            ),
        ]
    );
    // Loopback and a veth have no interrupts of their own.
    let m = machine();
    for i in ["lo", "t1b"] {
        let s = read_server_cores(m.path(), &[0], Some(i));
        assert_eq!(
            serving_checks(&s)[1].message,
            format!(
                "{i} carries the server's traffic: a virtual interface, with no interrupts of \
                 its own"
            )
        );
    }
    let s = read_server_cores(m.path(), &[], None);
    assert_eq!(serving_checks(&s)[0].message, "no server CPUs planned");
    assert_eq!(
        serving_checks(&s)[1].message,
        "no interface is known to carry the server's traffic"
    );
}

#[test]
fn the_servers_address_names_its_interface() {
    let m = machine();
    let at = |a: &str| interface_of(m.path(), a.parse::<IpAddr>().unwrap());
    assert_eq!(at("198.18.0.20").as_deref(), Some("t1b"));
    assert_eq!(at("192.0.2.7").as_deref(), Some("eth0"));
    assert_eq!(at("127.0.0.1").as_deref(), Some("lo"));
    // Reached only through a gateway: no interface of its own.
    assert_eq!(at("203.0.113.9"), None);
    assert_eq!(default_interface(m.path()).as_deref(), Some("eth0"));
}
