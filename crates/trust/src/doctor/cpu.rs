//! The doctor's checks of the CPUs: their governor, turbo and frequency
//! over the window, the idle states they may sleep in, the hypervisor's
//! steal, and the CPUs the run plans to pin the client and the server to,
//! against those online and those the host has besides the server's.

use std::collections::BTreeSet;

use throng_model::{Finding, Severity};

use super::{finding, ok, Plan};
use crate::snapshot::{Snapshot, Turbo};

/// Frequency spread within one CPU over the window above which throughput
/// numbers mostly measure the governor or the thermals.
pub const FREQ_DRIFT_MAX: f64 = 0.05;
/// Steal above 2% of CPU time means another guest competes for the host's
/// cores, and round-to-round noise follows. Not lower: /proc/stat counts in
/// 10 ms ticks, so on a 2-CPU machine one second holds only 200 of them and
/// a single stolen tick is already 0.5%.
pub const STEAL_MAX: f64 = 0.02;
/// An idle state whose exit takes longer than this (µs) is deep enough to
/// show in a request's time: C1 and C1E (1–10 µs on x86 servers) are not,
/// C3 and C6 (40–200 µs) are, against the tens of microseconds a request
/// takes on loopback. `cpupower idle-set -D` takes the same figure.
pub const IDLE_EXIT_MAX_US: u64 = 20;

pub(super) fn governor(s: &Snapshot) -> Finding {
    const C: &str = "cpu.governor";
    let known: Vec<(usize, &str)> = s
        .cpufreq
        .iter()
        .filter_map(|f| f.governor.as_deref().map(|g| (f.cpu, g)))
        .collect();
    if known.is_empty() {
        return ok(
            C,
            "governor: unknown (no cpufreq driver, as in most VMs)".to_string(),
        );
    }
    let slow: Vec<String> = known
        .iter()
        .filter(|(_, g)| *g != "performance")
        .map(|(c, g)| format!("cpu{c}={g}"))
        .collect();
    if slow.is_empty() {
        return ok(C, "governor: performance on every CPU".to_string());
    }
    finding(
        C,
        Severity::Warn,
        format!(
            "frequency governor is not \"performance\" ({}): the clock follows the load, \
             so low-concurrency steps run slower than high ones",
            slow.join(", ")
        ),
        "cpupower frequency-set -g performance (or: echo performance | tee \
         /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
            .to_string(),
    )
}

pub(super) fn turbo(s: &Snapshot) -> Finding {
    const C: &str = "cpu.turbo";
    let why = "the clock then depends on temperature and on how many cores are busy, \
               so 1-core and all-core steps are not measured at the same speed";
    match s.turbo {
        Turbo::Unknown => ok(
            C,
            "turbo: unknown (not exposed on this machine)".to_string(),
        ),
        Turbo::IntelPstate { enabled: true } => finding(
            C,
            Severity::Warn,
            format!("turbo is enabled (intel_pstate/no_turbo = 0): {why}"),
            "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo".to_string(),
        ),
        Turbo::Boost { enabled: true } => finding(
            C,
            Severity::Warn,
            format!("boost is enabled (cpufreq/boost = 1): {why}"),
            "echo 0 > /sys/devices/system/cpu/cpufreq/boost".to_string(),
        ),
        Turbo::IntelPstate { enabled: false } | Turbo::Boost { enabled: false } => {
            ok(C, "turbo: disabled".to_string())
        }
    }
}

pub(super) fn frequency_drift(s: &Snapshot) -> Finding {
    const C: &str = "cpu.frequency_drift";
    let mut worst: Option<(usize, f64, f64, f64)> = None;
    for f in &s.cpufreq {
        let (Some(lo), Some(hi)) = (
            f.samples_mhz.iter().copied().reduce(f64::min),
            f.samples_mhz.iter().copied().reduce(f64::max),
        ) else {
            continue;
        };
        if lo <= 0.0 {
            continue;
        }
        let d = (hi - lo) / lo;
        if worst.is_none_or(|w| d > w.3) {
            worst = Some((f.cpu, lo, hi, d));
        }
    }
    let Some((cpu, lo, hi, d)) = worst else {
        return ok(
            C,
            "frequency: unknown (not exposed on this machine)".to_string(),
        );
    };
    if d > FREQ_DRIFT_MAX {
        return finding(
            C,
            Severity::Warn,
            format!(
                "cpu{cpu} moved between {lo:.0} and {hi:.0} MHz ({:.0}%) within {:.1} s \
                 (from {}): throughput will follow the clock",
                d * 100.0,
                s.window_s,
                s.freq_source
            ),
            "fix the governor and turbo (see cpu.governor, cpu.turbo) and let the \
             machine cool down between runs"
                .to_string(),
        );
    }
    ok(
        C,
        format!(
            "frequency steady within {:.1}% over {:.1} s (from {})",
            d * 100.0,
            s.window_s,
            s.freq_source
        ),
    )
}

/// The deepest state each watched CPU may sleep in: the planned client's
/// and server's CPUs, or every CPU read when none are planned.
pub(super) fn idle(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "cpu.idle";
    let planned: BTreeSet<usize> = plan
        .client_cpus
        .iter()
        .chain(&plan.server_cpus)
        .copied()
        .collect();
    let watched: Vec<usize> = s
        .idle
        .cpus
        .iter()
        .map(|c| c.cpu)
        .filter(|c| planned.is_empty() || planned.contains(c))
        .collect();
    let cap = match s.idle.latency_limit_us {
        Some(l) if l < 1_000_000 => format!(", capped at {l} µs by /dev/cpu_dma_latency"),
        _ => String::new(),
    };
    let deepest: Vec<(usize, &str, u64)> = watched
        .iter()
        .filter_map(|&c| {
            s.idle
                .usable(c)
                .max_by_key(|st| st.exit_us)
                .map(|st| (c, st.name.as_str(), st.exit_us))
        })
        .collect();
    let deep: Vec<String> = deepest
        .iter()
        .filter(|(_, _, us)| *us > IDLE_EXIT_MAX_US)
        .map(|(c, name, us)| format!("cpu{c} {name} ({us} µs)"))
        .collect();
    if !deep.is_empty() {
        return finding(
            C,
            Severity::Warn,
            format!(
                "CPUs may sleep in idle states that take over {IDLE_EXIT_MAX_US} µs to leave \
                 ({}{cap}): a request that finds the client or the server asleep waits \
                 for the exit, every request at one connection, so low-concurrency steps \
                 and latency percentiles measure the idle state",
                deep.join(", ")
            ),
            format!(
                "cpupower idle-set -D {IDLE_EXIT_MAX_US} (turns off the states whose exit \
                 takes {IDLE_EXIT_MAX_US} µs or more; -E turns them on again), or hold \
                 /dev/cpu_dma_latency at 0 during the run (tuned's latency-performance \
                 profile does)"
            ),
        );
    }
    if let Some(&(_, name, us)) = deepest.iter().max_by_key(|d| d.2) {
        return ok(
            C,
            format!("deepest idle state in use: {name} ({us} µs to leave{cap})"),
        );
    }
    let driver = s.idle.driver.as_deref().unwrap_or("none shown");
    // Without states an idle CPU halts. In a VM the halt usually hands the
    // CPU to the hypervisor, and a thread woken on it costs its waker an
    // interrupt through the hypervisor: on loopback the server pays that
    // for every answer that finds the client asleep (docs/methodology.md,
    // wake-ups).
    let how = if s.virtualised {
        "an idle CPU halts, in a VM usually to the hypervisor, and waking a thread there \
         costs its waker an exit (on loopback the server pays it for a sleeping client)"
    } else {
        "an idle CPU halts (C1)"
    };
    ok(
        C,
        format!("no idle states listed (cpuidle driver: {driver}): {how}"),
    )
}

pub(super) fn steal(s: &Snapshot) -> Finding {
    const C: &str = "cpu.steal";
    let share = s.cpu.steal_share();
    if share >= STEAL_MAX {
        return finding(
            C,
            Severity::Warn,
            format!(
                "the hypervisor took {:.1}% of CPU time (steal) over {:.1} s: another \
                 guest shares these cores, so rounds will not repeat",
                share * 100.0,
                s.window_s
            ),
            "give the VM dedicated (pinned) host cores, or measure on bare metal".to_string(),
        );
    }
    let vm = if s.virtualised {
        "running in a VM; "
    } else {
        ""
    };
    ok(
        C,
        format!("{vm}steal {:.1}% over {:.1} s", share * 100.0, s.window_s),
    )
}

pub(super) fn plan_cpus(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "plan.cpus";
    let online: BTreeSet<usize> = s.cpus_online.iter().copied().collect();
    let offline: Vec<String> = plan
        .client_cpus
        .iter()
        .chain(&plan.server_cpus)
        .filter(|c| !online.is_empty() && !online.contains(c))
        .map(|c| c.to_string())
        .collect();
    if !offline.is_empty() {
        return finding(
            C,
            Severity::Fail,
            format!(
                "planned CPUs {} are not online (online: {:?})",
                offline.join(","),
                s.cpus_online
            ),
            "choose CPUs from /sys/devices/system/cpu/online".to_string(),
        );
    }
    let server: BTreeSet<usize> = plan.server_cpus.iter().copied().collect();
    let shared: Vec<String> = plan
        .client_cpus
        .iter()
        .filter(|c| server.contains(c))
        .map(|c| c.to_string())
        .collect();
    if !shared.is_empty() {
        return finding(
            C,
            Severity::Warn,
            format!(
                "client and server share CPUs {}: each steals time from the other, so \
                 the result measures both",
                shared.join(",")
            ),
            "give the client and the server disjoint CPU sets".to_string(),
        );
    }
    if plan.client_cpus.is_empty() && plan.server_cpus.is_empty() {
        return ok(C, "no CPU pinning planned".to_string());
    }
    // A server host apart: what runs beside the server there (the agent
    // that samples it and answers each slice, sshd relaying both) has no
    // CPU of its own and takes its time from the server's, by a share
    // that moves from one launch to the next.
    let allowed: BTreeSet<usize> = if s.cpus_allowed.is_empty() {
        online.clone()
    } else {
        s.cpus_allowed.iter().copied().collect()
    };
    if plan.client_cpus.is_empty() && !allowed.is_empty() && allowed.is_subset(&server) {
        return finding(
            C,
            Severity::Warn,
            format!(
                "the server's CPUs {:?} are every CPU this host may use ({:?}): the agent \
                 that samples the server, and sshd, take their time from the server's",
                plan.server_cpus,
                allowed.iter().collect::<Vec<_>>()
            ),
            "give the server host a CPU beyond the server's".to_string(),
        );
    }
    ok(
        C,
        format!(
            "client on CPUs {:?}, server on CPUs {:?}",
            plan.client_cpus, plan.server_cpus
        ),
    )
}
