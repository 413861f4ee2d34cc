//! The server's own cores as the doctor sees them: the frequency governor
//! they run under, and the network interrupts that land on them.
//!
//! A server pinned to a core shares it with whatever the kernel runs
//! there: a `powersave` governor clocks it down between bursts, and the
//! NIC's interrupts (and the softirq work behind them) take CPU the server
//! is measured without. Both are read from /sys and /proc under a root
//! path, so a test hands the readers a tree of its own; where the kernel
//! shows neither, the findings say so rather than guess.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use throng_model::{Finding, Severity};

use crate::sysfs::read;

/// What the doctor read of the server's cores and its NIC.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerCores {
    /// The CPUs the server is pinned to (the plan's).
    pub cpus: Vec<usize>,
    /// Each of those CPUs' governor; `None` where cpufreq is not shown.
    pub governors: Vec<(usize, Option<String>)>,
    pub nic: Nic,
}

/// The interface that carries the server's traffic, and its interrupts.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Nic {
    /// No interface is known to carry it.
    #[default]
    Unknown,
    /// Loopback, a veth, a bridge: no device, no interrupts of its own.
    Virtual {
        interface: String,
    },
    /// A device whose interrupts this kernel does not show.
    Unshown {
        interface: String,
    },
    Irqs {
        interface: String,
        irqs: Vec<Irq>,
    },
}

/// One interrupt line of a NIC.
#[derive(Debug, Clone, PartialEq)]
pub struct Irq {
    pub number: u32,
    /// Its action's name in /proc/interrupts (`virtio2-input.0`, `eth0-TxRx-3`).
    pub name: String,
    /// Where it is delivered: `effective_affinity_list` where the kernel
    /// shows it, else `smp_affinity_list`; `None` where neither is shown.
    pub cpus: Option<Vec<usize>>,
    /// Times it fired since boot, all CPUs together.
    pub count: u64,
}

/// Reads the governors of `cpus` and the interrupts of `interface` under
/// `root` (`/` for this machine).
pub fn read_server_cores(root: &Path, cpus: &[usize], interface: Option<&str>) -> ServerCores {
    let governors = cpus
        .iter()
        .map(|&c| {
            (
                c,
                read(
                    root,
                    &format!("sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"),
                ),
            )
        })
        .collect();
    ServerCores {
        cpus: cpus.to_vec(),
        governors,
        nic: interface.map_or(Nic::Unknown, |i| read_nic(root, i)),
    }
}

fn read_nic(root: &Path, interface: &str) -> Nic {
    let dev = root.join(format!("sys/class/net/{interface}"));
    let device = dev.join("device");
    let named = || interface.to_string();
    if interface == "lo" || (dev.exists() && !device.exists()) {
        return Nic::Virtual { interface: named() };
    }
    let Some(table) = read(root, "proc/interrupts") else {
        return Nic::Unshown { interface: named() };
    };
    // A PCI function lists its MSI vectors; a virtio device's are its PCI
    // parent's, and named after the virtio device in /proc/interrupts.
    let mut numbers: Vec<u32> = Vec::new();
    let canonical = std::fs::canonicalize(&device).ok();
    let mut dirs = vec![device.join("msi_irqs")];
    if let Some(parent) = canonical.as_ref().and_then(|c| c.parent()) {
        dirs.push(parent.join("msi_irqs"));
    }
    for d in dirs {
        if let Ok(entries) = std::fs::read_dir(d) {
            numbers.extend(
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()),
            );
        }
    }
    let device_name = canonical
        .as_ref()
        .and_then(|c| c.file_name())
        .and_then(|n| n.to_str())
        .map(|n| format!("{n}-"));
    let mut irqs = Vec::new();
    for (number, name, count) in parse_interrupts(&table) {
        let by_name = name.starts_with(&format!("{interface}-"))
            || device_name.as_deref().is_some_and(|d| name.starts_with(d));
        if !(numbers.contains(&number) || by_name) {
            continue;
        }
        let cpus = read(root, &format!("proc/irq/{number}/effective_affinity_list"))
            .or_else(|| read(root, &format!("proc/irq/{number}/smp_affinity_list")))
            .map(|l| crate::snapshot::parse_cpu_list(&l));
        irqs.push(Irq {
            number,
            name,
            cpus,
            count,
        });
    }
    if irqs.is_empty() {
        return Nic::Unshown { interface: named() };
    }
    Nic::Irqs {
        interface: named(),
        irqs,
    }
}

/// The numbered lines of /proc/interrupts: number, action name, count
/// over every CPU.
pub fn parse_interrupts(text: &str) -> Vec<(u32, String, u64)> {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |h| h.split_whitespace().count());
    lines
        .filter_map(|l| {
            let (n, rest) = l.trim_start().split_once(':')?;
            let number = n.parse::<u32>().ok()?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let count = words
                .iter()
                .take(cpus)
                .filter_map(|w| w.parse::<u64>().ok())
                .sum();
            // Chip, hardware IRQ and trigger come between the counts and
            // the name; the name is the last word.
            let name = words.get(cpus..)?.last()?.to_string();
            Some((number, name, count))
        })
        .collect()
}

/// The interface a server listening on `addr` is reached through: `lo`
/// for a loopback address, else the interface of the most specific direct
/// route (no gateway) to it in `/proc/net/route` under `root`. IPv6
/// addresses are not looked up.
pub fn interface_of(root: &Path, addr: IpAddr) -> Option<String> {
    if addr.is_loopback() {
        return Some("lo".to_string());
    }
    let IpAddr::V4(v4) = addr else {
        return None;
    };
    let table = read(root, "proc/net/route")?;
    routes(&table)
        .into_iter()
        .filter(|r| r.gateway.is_unspecified() && mask(v4, r.mask) == r.destination)
        .max_by_key(|r| u32::from(r.mask).count_ones())
        .map(|r| r.interface)
}

/// The interface of this machine's default route under `root`: the NIC
/// other hosts reach it through, when nothing names another.
pub fn default_interface(root: &Path) -> Option<String> {
    let table = read(root, "proc/net/route")?;
    routes(&table)
        .into_iter()
        .find(|r| r.destination.is_unspecified() && r.mask.is_unspecified())
        .map(|r| r.interface)
}

struct Route {
    interface: String,
    destination: Ipv4Addr,
    gateway: Ipv4Addr,
    mask: Ipv4Addr,
}

fn routes(table: &str) -> Vec<Route> {
    // The kernel writes each address as the hex of its bytes in memory
    // order: on every little-endian machine, reversed.
    let addr = |hex: &str| {
        u32::from_str_radix(hex, 16)
            .ok()
            .map(|v| Ipv4Addr::from(v.to_ne_bytes()))
    };
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(Route {
                interface: f.first()?.to_string(),
                destination: addr(f.get(1)?)?,
                gateway: addr(f.get(2)?)?,
                mask: addr(f.get(7)?)?,
            })
        })
        .collect()
}

fn mask(a: Ipv4Addr, m: Ipv4Addr) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(a) & u32::from(m))
}

fn cpu_words(cpus: &[usize]) -> String {
    let v: Vec<String> = cpus.iter().map(usize::to_string).collect();
    v.join(",")
}

/// `server.governor`: a `powersave` governor on a core the server is
/// pinned to is a warning.
pub fn governor_finding(s: &ServerCores) -> Finding {
    const C: &str = "server.governor";
    let ok = |message: String| Finding {
        check: C.into(),
        severity: Severity::Ok,
        message,
        fix: String::new(),
    };
    if s.cpus.is_empty() {
        return ok("no server CPUs planned".into());
    }
    let shown: Vec<(usize, &str)> = s
        .governors
        .iter()
        .filter_map(|(c, g)| g.as_deref().map(|g| (*c, g)))
        .collect();
    if shown.is_empty() {
        return ok(format!(
            "governor of the server's CPUs {}: not shown by this kernel (no cpufreq)",
            cpu_words(&s.cpus)
        ));
    }
    let slow: Vec<usize> = shown
        .iter()
        .filter(|(_, g)| *g == "powersave")
        .map(|(c, _)| *c)
        .collect();
    if slow.is_empty() {
        let each: Vec<String> = shown.iter().map(|(c, g)| format!("CPU {c} {g}")).collect();
        return ok(format!(
            "governor of the server's CPUs: {}",
            each.join(", ")
        ));
    }
    let list = cpu_words(&slow);
    Finding {
        check: C.into(),
        severity: Severity::Warn,
        message: format!(
            "the server's CPUs {list} run the powersave governor: the clock drops between \
             bursts of requests, so a light level is served by a slower core than a heavy one"
        ),
        fix: format!("cpupower -c {list} frequency-set -g performance"),
    }
}

/// `server.interrupts`: the NIC's interrupts delivered to a core the
/// server is pinned to.
pub fn interrupts_finding(s: &ServerCores) -> Finding {
    const C: &str = "server.interrupts";
    let ok = |message: String| Finding {
        check: C.into(),
        severity: Severity::Ok,
        message,
        fix: String::new(),
    };
    let (interface, irqs) = match &s.nic {
        Nic::Unknown => return ok("no interface is known to carry the server's traffic".into()),
        Nic::Virtual { interface } => {
            return ok(format!(
                "{interface} carries the server's traffic: a virtual interface, with no \
                 interrupts of its own"
            ))
        }
        Nic::Unshown { interface } => {
            return ok(format!(
                "{interface}'s interrupts: not shown by this kernel"
            ))
        }
        Nic::Irqs { interface, irqs } => (interface, irqs),
    };
    if s.cpus.is_empty() {
        return ok(format!(
            "{interface} has {} interrupt lines; no server CPUs planned",
            irqs.len()
        ));
    }
    // A line that never fired (a device's configuration vector) lands
    // nowhere that matters.
    let landing: Vec<&Irq> = irqs
        .iter()
        .filter(|i| i.count > 0)
        .filter(|i| {
            i.cpus
                .as_ref()
                .is_some_and(|c| c.iter().any(|c| s.cpus.contains(c)))
        })
        .collect();
    if landing.is_empty() {
        return ok(format!(
            "{interface}'s {} interrupt lines are delivered off the server's CPUs {}",
            irqs.len(),
            cpu_words(&s.cpus)
        ));
    }
    let each: Vec<String> = landing
        .iter()
        .map(|i| {
            format!(
                "IRQ {} ({}) to CPUs {}",
                i.number,
                i.name,
                cpu_words(i.cpus.as_deref().unwrap_or(&[]))
            )
        })
        .collect();
    let numbers: Vec<String> = landing.iter().map(|i| i.number.to_string()).collect();
    Finding {
        check: C.into(),
        severity: Severity::Warn,
        message: format!(
            "{interface}'s interrupts land on the server's CPUs {}: {}; the interrupt and \
             softirq work of every packet takes CPU the server is measured without",
            cpu_words(&s.cpus),
            each.join(", ")
        ),
        fix: format!(
            "stop irqbalance, then for IRQ in {}: echo CPUS > /proc/irq/$IRQ/smp_affinity_list \
             with CPUs the server is not pinned to",
            numbers.join(" ")
        ),
    }
}
