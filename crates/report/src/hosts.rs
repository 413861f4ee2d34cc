//! The hosts of a run spread over hosts, as a table.

use throng_model::{Finding, HostRecord, HostRole, RunData, Severity};

use crate::figures::mib;
use crate::table::{Cell, Column, Table};

/// Every host of a run spread over hosts, server first; `None` for a run
/// on one machine.
pub fn hosts(run: &RunData) -> Option<Table> {
    let hosts = &run.run.environment.hosts;
    if hosts.is_empty() {
        return None;
    }
    let mut t = Table::new(vec![
        Column::left("Host"),
        Column::left("Role"),
        Column::left("Machine"),
        Column::left("Kernel"),
        Column::right("Open files (soft / hard)"),
        Column::right("Clock offset"),
        Column::left("Path to the server"),
        Column::left("Machine check"),
    ])
    .subsection("Hosts")
    .wide();
    for h in hosts {
        t.push(vec![
            Cell::text(&h.host),
            Cell::text(h.role.name()),
            text_or_none(machine(h)),
            text_or_none(h.kernel.clone()),
            Cell::lit(format!("{} / {}", h.nofile.0, h.nofile.1)),
            Cell::lit(clock_offset(h.clock_offset_ms, h.clock_uncertainty_ms)),
            if h.role == HostRole::Server {
                Cell::none()
            } else {
                text_or_none(path_to_server(h))
            },
            host_check(&h.doctor),
        ]);
    }
    Some(t)
}

fn text_or_none(s: String) -> Cell {
    if s.is_empty() {
        Cell::none()
    } else {
        Cell::text(s)
    }
}

/// "x86_64, AMD EPYC 7B13, 8 CPUs, 32768.0 MiB", leaving out what the
/// host did not tell.
fn machine(h: &HostRecord) -> String {
    let cpus = match h.cpus_online {
        0 => String::new(),
        1 => "1 CPU".to_string(),
        n => format!("{n} CPUs"),
    };
    let memory = if h.memory_bytes > 0 {
        mib(h.memory_bytes)
    } else {
        String::new()
    };
    [h.arch.clone(), h.cpu_model.clone(), cpus, memory]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// "+0.012 ms ±0.040": the host's clock minus the coordinator's.
fn clock_offset(offset_ms: f64, uncertainty_ms: f64) -> String {
    // An offset that rounds to zero would print as "-0.000".
    let offset_ms = if offset_ms.abs() < 0.0005 {
        0.0
    } else {
        offset_ms
    };
    format!("{offset_ms:+.3} ms ±{uncertainty_ms:.3}")
}

/// "RTT 0.046 ms, MTU 1500, via eth0 at 10000 Mb/s", or "loopback"; empty
/// when the path was not measured.
fn path_to_server(h: &HostRecord) -> String {
    if h.loopback {
        return "loopback".to_string();
    }
    let link = match (&h.interface, h.link_mbps) {
        (Some(i), Some(s)) => Some(format!("via {i} at {s} Mb/s")),
        (Some(i), None) => Some(format!("via {i}")),
        (None, Some(s)) => Some(format!("at {s} Mb/s")),
        (None, None) => None,
    };
    [
        h.rtt_ms.map(|r| format!("RTT {r:.3} ms")),
        h.mtu.map(|m| format!("MTU {m}")),
        link,
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// A host's doctor findings counted by severity ("1 fail, 1 warn, 2 ok",
/// or "clean" when nothing is wrong). The findings themselves are in the
/// machine check, each client host's named there; HTML repeats the
/// problems as the cell's tooltip.
fn host_check(doctor: &[Finding]) -> Cell {
    if doctor.is_empty() {
        return Cell::none();
    }
    let count = |s: Severity| doctor.iter().filter(|f| f.severity == s).count();
    let (fail, warn, ok) = (
        count(Severity::Fail),
        count(Severity::Warn),
        count(Severity::Ok),
    );
    if fail + warn == 0 {
        return Cell::lit("clean").hook("valid");
    }
    let words: Vec<String> = [(fail, "fail"), (warn, "warn"), (ok, "ok")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
    let problems: Vec<String> = doctor
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .map(|f| format!("{}: {}", f.check, f.message))
        .collect();
    Cell::lit(words.join(", "))
        .hook(if fail > 0 { "fail" } else { "warn" })
        .tip(problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_hosts_path_says_what_was_measured() {
        let mut h = HostRecord {
            role: HostRole::Client,
            rtt_ms: Some(0.0214),
            link_mbps: Some(1000),
            ..HostRecord::default()
        };
        assert_eq!(path_to_server(&h), "RTT 0.021 ms, at 1000 Mb/s");
        h.loopback = true;
        assert_eq!(path_to_server(&h), "loopback");
        assert_eq!(path_to_server(&HostRecord::default()), "");
        assert_eq!(machine(&HostRecord::default()), "");
        assert_eq!(clock_offset(-0.0004, 0.01), "+0.000 ms ±0.010");
        assert_eq!(clock_offset(-1.5, 0.25), "-1.500 ms ±0.250");
        assert_eq!(host_check(&[]), Cell::none());
    }
}
