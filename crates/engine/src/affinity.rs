//! CPU affinity: which CPUs this process may use, and pinning a thread to
//! some of them. The load threads, the lab's choice of cores, the server
//! sampler and `throng load -t` all ask here.

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// CPUs this process may run on (what `taskset` set), in order; every
/// online CPU when the mask cannot be read.
pub fn own_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        }
    }
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(std::io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)
}

/// The CPU set of `cpus`, for pinning a child between fork and exec
/// (prepared before the fork, since nothing may allocate after it).
pub fn cpu_set(cpus: &[usize]) -> std::io::Result<CpuSet> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(std::io::Error::from)?;
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_sees_only_its_cpu() {
        let cpus = own_cpus();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&[last]).unwrap();
            assert_eq!(own_cpus(), vec![last]);
        })
        .join()
        .unwrap();
    }
}
