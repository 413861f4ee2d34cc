//! The CPUs' idle states, as the doctor reads them.
//!
//! A CPU with nothing to run sleeps in an idle state, and the deeper the
//! state the longer it takes to leave: a thread woken there waits for the
//! exit before it runs. In a benchmark every request that finds the client
//! or the server asleep pays it, so a step of one connection (where both
//! sleep on every request) and the latency percentiles of any step measure
//! the idle state as much as the server. The kernel lists each CPU's states
//! with their exit latency under /sys/devices/system/cpu/cpuN/cpuidle, and
//! any process may cap the latency the idle governor accepts through
//! /dev/cpu_dma_latency (as tuned's latency-performance profile does);
//! reading that device gives the cap in force. Where no cpuidle driver is
//! loaded the kernel has no states to choose from and an idle CPU halts.
//! Everything is read under a root path, so a test hands the reader a tree
//! of its own.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sysfs::read;

/// What the kernel shows of the CPUs' idle states.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Idle {
    /// /sys/devices/system/cpu/cpuidle/current_driver (`intel_idle`,
    /// `acpi_idle`, `haltpoll`, `none`); `None` where it is not shown.
    pub driver: Option<String>,
    /// The CPUs read, each with the states it lists (none without a
    /// cpuidle driver).
    pub cpus: Vec<CpuIdle>,
    /// The exit latency, in µs, that /dev/cpu_dma_latency lets the idle
    /// governor choose; `None` where it cannot be read (it is root's).
    pub latency_limit_us: Option<u64>,
}

/// One CPU's idle states, shallowest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuIdle {
    pub cpu: usize,
    pub states: Vec<IdleState>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    /// `POLL`, `C1`, `C1E`, `C6`...
    pub name: String,
    /// How long leaving it takes, in µs, as the driver states it.
    pub exit_us: u64,
    /// Turned off through its `disable` file.
    pub disabled: bool,
}

impl Idle {
    /// The states `cpu` may sleep in: enabled, and within the latency cap.
    pub fn usable(&self, cpu: usize) -> impl Iterator<Item = &IdleState> {
        let limit = self.latency_limit_us.unwrap_or(u64::MAX);
        self.cpus
            .iter()
            .filter(move |c| c.cpu == cpu)
            .flat_map(|c| &c.states)
            .filter(move |s| !s.disabled && s.exit_us <= limit)
    }
}

/// Reads the idle states of `cpus` under `root` (`/` for this machine).
pub fn read_idle(root: &Path, cpus: &[usize]) -> Idle {
    let cpus = cpus
        .iter()
        .map(|&cpu| {
            let mut states = Vec::new();
            // States are numbered from 0 without gaps; the first missing
            // one ends the list.
            for k in 0.. {
                let dir = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}");
                let Some(exit_us) =
                    read(root, &format!("{dir}/latency")).and_then(|l| l.parse().ok())
                else {
                    break;
                };
                states.push(IdleState {
                    name: read(root, &format!("{dir}/name")).unwrap_or_else(|| format!("state{k}")),
                    exit_us,
                    disabled: read(root, &format!("{dir}/disable")).as_deref() == Some("1"),
                });
            }
            CpuIdle { cpu, states }
        })
        .collect();
    Idle {
        driver: read(root, "sys/devices/system/cpu/cpuidle/current_driver"),
        cpus,
        latency_limit_us: latency_limit(&root.join("dev/cpu_dma_latency")),
    }
}

/// The cap in force, from the device's 32-bit value (in µs); opening it
/// places a request at the default, which lowers no cap, and closing it
/// takes that back.
fn latency_limit(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    let v = i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?);
    u64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dir: &Path, cpu: usize, k: usize, name: &str, exit_us: u64, disable: &str) {
        let d = dir.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(d.join("latency"), format!("{exit_us}\n")).unwrap();
        std::fs::write(d.join("disable"), format!("{disable}\n")).unwrap();
    }

    #[test]
    fn reads_each_cpus_states_the_driver_and_the_cap() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for cpu in [0, 1] {
            state(root, cpu, 0, "POLL", 0, "0");
            state(root, cpu, 1, "C1", 2, "0");
            state(root, cpu, 2, "C6", 133, if cpu == 0 { "1" } else { "0" });
        }
        // A gap: state 4 without a state 3 is not read.
        state(root, 1, 4, "C10", 890, "0");
        let d = root.join("sys/devices/system/cpu/cpuidle");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("current_driver"), "intel_idle\n").unwrap();
        std::fs::create_dir_all(root.join("dev")).unwrap();
        std::fs::write(root.join("dev/cpu_dma_latency"), 100i32.to_ne_bytes()).unwrap();

        let idle = read_idle(root, &[0, 1, 2]);
        assert_eq!(idle.driver.as_deref(), Some("intel_idle"));
        assert_eq!(idle.latency_limit_us, Some(100));
        let names = |c: usize| -> Vec<(String, u64, bool)> {
            idle.cpus[c]
                .states
                .iter()
                .map(|s| (s.name.clone(), s.exit_us, s.disabled))
                .collect()
        };
        assert_eq!(
            names(0),
            [
                ("POLL".into(), 0, false),
                ("C1".into(), 2, false),
                ("C6".into(), 133, true)
            ]
        );
        assert_eq!(names(1)[2], ("C6".into(), 133, false));
        assert_eq!(idle.cpus[2].states, []);
        // C6 is enabled on cpu1 but beyond the cap of 100 µs.
        let usable: Vec<&str> = idle.usable(1).map(|s| s.name.as_str()).collect();
        assert_eq!(usable, ["POLL", "C1"]);
    }

    #[test]
    fn a_machine_without_cpuidle_shows_no_states_and_no_cap() {
        let t = tempfile::tempdir().unwrap();
        let idle = read_idle(t.path(), &[0, 1]);
        assert_eq!(idle.driver, None);
        assert_eq!(idle.latency_limit_us, None);
        assert_eq!(idle.cpus.len(), 2);
        assert!(idle.cpus.iter().all(|c| c.states.is_empty()));
    }
}
