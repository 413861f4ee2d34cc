//! `throng doctor`: the machine checks run before a study.
//!
//! Every check is a pure function of a [`Snapshot`] and a [`Plan`]; [`check`]
//! reads the real machine once and runs them all. Each check always yields
//! one [`Finding`] (Ok when nothing is wrong) so the output lists what was
//! looked at, not only what went wrong. docs/trust.md explains each one.

use throng_model::{Finding, Severity};

pub use crate::snapshot::environment;
use crate::snapshot::Snapshot;

mod cpu;
use cpu::{frequency_drift, governor, idle, plan_cpus, steal, turbo};
pub use cpu::{FREQ_DRIFT_MAX, IDLE_EXIT_MAX_US, STEAL_MAX};

/// What the study is about to do, so limits can be checked against it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Most connections the client will hold open at once.
    pub connections: u64,
    /// `Connection: close`: a new connection (and a TIME_WAIT) per request.
    pub close_mode: bool,
    pub client_cpus: Vec<usize>,
    pub server_cpus: Vec<usize>,
}

/// Below this, a burst of connects at the start of a step (every -c
/// connection opening at once) can overflow the accept queue; dropped SYNs
/// are retried after 1 s and show up as a false latency tail. 1k–10k is the
/// range kernel network maintainers recommend for benchmarks.
pub const BACKLOG_MIN: u64 = 1024;
/// somaxconn and tcp_max_syn_backlog were 16-bit on kernels before 5.5:
/// larger values were truncated or rejected, and they never help.
pub const BACKLOG_16BIT: u64 = 65535;
/// The middle value of tcp_rmem/tcp_wmem is allocated for every socket at
/// accept/connect; above 1 MiB, thousands of connections thrash memory
/// without helping small responses (the 2016 Linux web server benchmark set tcp_rmem to 30 MB).
pub const SOCKET_BUFFER_DEFAULT_MAX: u64 = 1 << 20;
/// Fewer ephemeral ports than this runs out quickly once connections are
/// closed: each port then stays in TIME_WAIT for 60 s.
pub const PORT_RANGE_MIN: u64 = 16384;
/// How long a closed connection keeps its port (Linux's TCP_TIMEWAIT_LEN).
pub const TIME_WAIT_S: f64 = 60.0;
/// Files the client needs besides its sockets: the engine's own margin,
/// so the doctor asks for exactly what a run will.
pub use throng_model::SPARE_FDS as NOFILE_MARGIN;
/// A conntrack table fuller than this starts dropping new connections.
pub const CONNTRACK_FULL: f64 = 0.8;
/// A neighbour using a tenth of a core is enough to move a 2% precision
/// target; smaller blips (shells, daemons waking up) are not worth a finding.
pub const BUSY_PROCESS_CORES: f64 = 0.10;

/// Runs every machine check against the machine as it is now (takes about
/// a second: frequency, steal and busy processes are sampled).
pub fn check(plan: &Plan) -> Vec<Finding> {
    checks(&Snapshot::read(), plan)
}

/// [`check`], and the server's own cores: their governor and the
/// interrupts of `interface` (the one carrying the server's traffic) that
/// land on them, read from this machine's /sys and /proc.
pub fn check_serving(plan: &Plan, interface: Option<&str>) -> Vec<Finding> {
    let mut found = check(plan);
    found.extend(serving_checks(&crate::serving::read_server_cores(
        std::path::Path::new("/"),
        &plan.server_cpus,
        interface,
    )));
    found
}

/// The server's cores' checks against what was read of them.
pub fn serving_checks(s: &crate::serving::ServerCores) -> Vec<Finding> {
    vec![
        crate::serving::governor_finding(s),
        crate::serving::interrupts_finding(s),
    ]
}

/// Every check against a given snapshot, in a stable order.
pub fn checks(s: &Snapshot, plan: &Plan) -> Vec<Finding> {
    vec![
        tcp_tw_recycle(s),
        somaxconn(s, plan),
        syn_backlog(s),
        tcp_mem(s),
        socket_buffers(s, "tcp_rmem", "4096 131072 6291456"),
        socket_buffers(s, "tcp_wmem", "4096 16384 4194304"),
        port_range(s, plan),
        tcp_tw_reuse(s, plan),
        sysctl_files(s),
        nofile(s, plan),
        file_max(s, plan),
        conntrack(s, plan),
        governor(s),
        turbo(s),
        frequency_drift(s),
        idle(s, plan),
        swap(s),
        busy_processes(s),
        steal(s),
        plan_cpus(s, plan),
    ]
}

/// True when any finding is Warn or Fail (the doctor's exit status 1).
pub fn has_findings(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity != Severity::Ok)
}

fn finding(check: &str, severity: Severity, message: String, fix: String) -> Finding {
    Finding {
        check: check.to_string(),
        severity,
        message,
        fix,
    }
}

fn ok(check: &str, message: String) -> Finding {
    finding(check, Severity::Ok, message, String::new())
}

fn nums(v: &str) -> Vec<u64> {
    v.split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect()
}

fn sysctl_u64(s: &Snapshot, key: &str) -> Option<u64> {
    s.sysctls.get(key).and_then(|v| nums(v).first().copied())
}

fn tcp_tw_recycle(s: &Snapshot) -> Finding {
    const C: &str = "sysctl.tcp_tw_recycle";
    let key = "net.ipv4.tcp_tw_recycle";
    if let Some(v) = s.sysctls.get(key).filter(|v| v.as_str() != "0") {
        return finding(
            C,
            Severity::Fail,
            format!(
                "{key} = {v}: connections from clients behind NAT or with \
                 unsynchronised timestamps are silently dropped, so some \
                 sockets close on one side and stay open on the other"
            ),
            format!("sysctl -w {key}=0"),
        );
    }
    let files: Vec<String> = s
        .sysctl_files
        .iter()
        .filter(|f| f.key == key)
        .map(|f| format!("{} ({} = {})", f.file, f.key, f.value))
        .collect();
    if !files.is_empty() {
        return finding(
            C,
            Severity::Warn,
            format!(
                "tcp_tw_recycle was removed in Linux 4.12 but is still set in {}: \
                 a sign of copied tuning; check the other settings from the same source",
                files.join(", ")
            ),
            format!("delete the {key} line from those files"),
        );
    }
    ok(C, "tcp_tw_recycle is not set".to_string())
}

fn somaxconn(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "sysctl.somaxconn";
    let key = "net.core.somaxconn";
    let Some(v) = sysctl_u64(s, key) else {
        return ok(C, format!("{key}: unknown"));
    };
    let fix = format!("sysctl -w {key}=4096");
    if v > BACKLOG_16BIT {
        return finding(
            C,
            Severity::Warn,
            format!(
                "{key} = {v} is above {BACKLOG_16BIT}: kernels before 5.5 keep only \
                 16 bits of it, and a backlog above ~10k never helps"
            ),
            fix,
        );
    }
    if v < BACKLOG_MIN {
        return finding(
            C,
            Severity::Warn,
            format!(
                "{key} = {v} caps every listen backlog below {BACKLOG_MIN}: a burst of \
                 connects overflows the accept queue and dropped SYNs come back 1 s later \
                 as a false latency tail"
            ),
            fix,
        );
    }
    if plan.connections > v && plan.connections <= BACKLOG_16BIT {
        return finding(
            C,
            Severity::Warn,
            format!(
                "{key} = {v} is below the {} planned connections: when they all \
                 connect at once the accept queue overflows",
                plan.connections
            ),
            format!("sysctl -w {key}={}", plan.connections.max(4096)),
        );
    }
    ok(C, format!("{key} = {v}"))
}

fn syn_backlog(s: &Snapshot) -> Finding {
    const C: &str = "sysctl.tcp_max_syn_backlog";
    let key = "net.ipv4.tcp_max_syn_backlog";
    match sysctl_u64(s, key) {
        None => ok(C, format!("{key}: unknown")),
        Some(v) if v < BACKLOG_MIN => finding(
            C,
            Severity::Warn,
            format!("{key} = {v}: half-open connections beyond it are dropped during connect bursts"),
            format!("sysctl -w {key}=4096"),
        ),
        Some(v) if v > BACKLOG_16BIT => finding(
            C,
            Severity::Warn,
            format!("{key} = {v} is above {BACKLOG_16BIT}: useless, and it delays SYN cookies under a flood"),
            format!("sysctl -w {key}=4096"),
        ),
        Some(v) => ok(C, format!("{key} = {v}")),
    }
}

fn tcp_mem(s: &Snapshot) -> Finding {
    const C: &str = "sysctl.tcp_mem";
    let key = "net.ipv4.tcp_mem";
    let Some(v) = s.sysctls.get(key) else {
        return ok(C, format!("{key}: unknown"));
    };
    let pages = nums(v);
    let page = s.page_size.max(1);
    let max_pages = pages.iter().copied().max().unwrap_or(0);
    let max_bytes = max_pages.saturating_mul(page);
    if s.memory_bytes > 0 && max_bytes > s.memory_bytes {
        // The kernel's own default: a sixteenth of memory as the pressure
        // point, 3/4 of it as the low mark and twice the low mark as the max.
        let mid = s.memory_bytes / page / 16;
        let low = mid / 4 * 3;
        return finding(
            C,
            Severity::Fail,
            format!(
                "{key} = {v} is counted in pages of {page} bytes: {max_pages} pages = {} GiB, \
                 more than this machine's {} GiB of memory (bytes were meant for pages)",
                gib(max_bytes),
                gib(s.memory_bytes)
            ),
            format!("sysctl -w {key}=\"{low} {mid} {}\"", low * 2),
        );
    }
    ok(C, format!("{key} = {v} pages (max {} GiB)", gib(max_bytes)))
}

fn gib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 30) as f64)
}

fn socket_buffers(s: &Snapshot, name: &str, default: &str) -> Finding {
    let check = format!("sysctl.{name}");
    let key = format!("net.ipv4.{name}");
    let Some(v) = s.sysctls.get(&key) else {
        return ok(&check, format!("{key}: unknown"));
    };
    match nums(v).get(1) {
        Some(&mid) if mid > SOCKET_BUFFER_DEFAULT_MAX => finding(
            &check,
            Severity::Warn,
            format!(
                "{key} = {v}: every socket starts with a {mid}-byte buffer; with many \
                 connections that is memory pressure, and small responses never need it"
            ),
            format!("sysctl -w {key}=\"{default}\""),
        ),
        _ => ok(&check, format!("{key} = {v}")),
    }
}

fn port_range(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "sysctl.ip_local_port_range";
    let key = "net.ipv4.ip_local_port_range";
    let Some(size) = ephemeral_ports(s) else {
        return ok(C, format!("{key}: unknown"));
    };
    let v = &s.sysctls[key];
    let fix = format!("sysctl -w {key}=\"1024 65535\"");
    if size < plan.connections {
        return finding(
            C,
            Severity::Fail,
            format!(
                "{key} = {v} gives {size} ports: fewer than the {} planned connections \
                 to one server address",
                plan.connections
            ),
            fix,
        );
    }
    if size < PORT_RANGE_MIN {
        return finding(
            C,
            Severity::Warn,
            format!(
                "{key} = {v} gives only {size} ports: with closed connections waiting \
                 {TIME_WAIT_S} s in TIME_WAIT, at most {:.0} new connections per second \
                 can be sustained",
                size as f64 / TIME_WAIT_S
            ),
            fix,
        );
    }
    ok(C, format!("{key} = {v} ({size} ports)"))
}

/// Size of the ephemeral port range, when known.
pub fn ephemeral_ports(s: &Snapshot) -> Option<u64> {
    let r = nums(s.sysctls.get("net.ipv4.ip_local_port_range")?);
    match r.as_slice() {
        [lo, hi] if hi >= lo => Some(hi - lo + 1),
        _ => None,
    }
}

fn tcp_tw_reuse(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "sysctl.tcp_tw_reuse";
    let key = "net.ipv4.tcp_tw_reuse";
    match s.sysctls.get(key).map(String::as_str) {
        None => ok(C, format!("{key}: unknown")),
        Some("0") if plan.close_mode => finding(
            C,
            Severity::Warn,
            format!(
                "{key} = 0: the client cannot reuse ports in TIME_WAIT, so a \
                 connection-per-request run exhausts the ephemeral range and connect() \
                 fails with EADDRNOTAVAIL"
            ),
            format!("sysctl -w {key}=1"),
        ),
        Some("2") => ok(
            C,
            format!(
                "{key} = 2: the client reuses TIME_WAIT ports on loopback, where throng lab runs"
            ),
        ),
        Some(v) => ok(C, format!("{key} = {v}")),
    }
}

fn sysctl_files(s: &Snapshot) -> Finding {
    const C: &str = "sysctl.files";
    // Only keys whose live value we read: a mismatch means the kernel
    // rejected or clamped the setting, or it was never applied.
    let mismatched: Vec<String> = s
        .sysctl_files
        .iter()
        .filter_map(|f| {
            let live = s.sysctls.get(&f.key)?;
            (live != &f.value).then(|| {
                format!(
                    "{} asks {} = {} but the kernel has {}",
                    f.file, f.key, f.value, live
                )
            })
        })
        .collect();
    if mismatched.is_empty() {
        return ok(
            C,
            format!(
                "{} settings in sysctl files; all applied",
                s.sysctl_files.len()
            ),
        );
    }
    finding(
        C,
        Severity::Warn,
        format!(
            "settings not in effect: {}; the machine does not run the tuning its \
             configuration claims",
            mismatched.join("; ")
        ),
        "sysctl --system, then fix or delete the lines it rejects".to_string(),
    )
}

fn nofile(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "limits.nofile";
    let (soft, hard) = s.nofile;
    let need = plan.connections + NOFILE_MARGIN;
    if soft >= need {
        return ok(
            C,
            format!(
                "open files: soft {} / hard {}",
                limit_str(soft),
                limit_str(hard)
            ),
        );
    }
    if hard >= need {
        // The engine raises its own soft limit up to the hard one.
        return ok(
            C,
            format!(
                "open files: soft {} / hard {}; throng raises the soft limit to the {need} \
                 needed for {} connections",
                limit_str(soft),
                limit_str(hard),
                plan.connections
            ),
        );
    }
    finding(
        C,
        Severity::Fail,
        format!(
            "open-file limit soft {} / hard {} is below the {need} needed for {} \
             connections plus {NOFILE_MARGIN} other files",
            limit_str(soft),
            limit_str(hard),
            plan.connections
        ),
        format!(
            "as root: prlimit --nofile={need}:{need} --pid $$ (this shell), and \
             \"* - nofile {need}\" in /etc/security/limits.conf to keep it"
        ),
    )
}

fn limit_str(v: u64) -> String {
    if v == u64::MAX || v == libc::RLIM_INFINITY {
        "unlimited".to_string()
    } else {
        v.to_string()
    }
}

fn file_max(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "sysctl.file_max";
    let key = "fs.file-max";
    let Some(v) = sysctl_u64(s, key) else {
        return ok(C, format!("{key}: unknown"));
    };
    // Client and server run on the same machine: each connection is two
    // sockets, one on each side.
    let need = plan.connections * 2 + NOFILE_MARGIN;
    if v < need {
        return finding(
            C,
            Severity::Fail,
            format!(
                "{key} = {v} is below the {need} files needed system-wide for {} \
                 connections (client and server side)",
                plan.connections
            ),
            format!("sysctl -w {key}={}", need.max(1 << 20)),
        );
    }
    ok(C, format!("{key} = {v}"))
}

fn conntrack(s: &Snapshot, plan: &Plan) -> Finding {
    const C: &str = "conntrack";
    let Some(max) = sysctl_u64(s, "net.netfilter.nf_conntrack_max") else {
        return ok(C, "connection tracking is not loaded".to_string());
    };
    let count = sysctl_u64(s, "net.netfilter.nf_conntrack_count").unwrap_or(0);
    let buckets = sysctl_u64(s, "net.netfilter.nf_conntrack_buckets").unwrap_or(0);
    let module = s
        .modules
        .as_ref()
        .is_some_and(|m| m.iter().any(|n| n == "nf_conntrack"));
    let fix = if module {
        "unload it: modprobe -r nf_conntrack (after removing the rules that use it)".to_string()
    } else {
        "iptables -t raw -I PREROUTING -j NOTRACK && iptables -t raw -I OUTPUT -j NOTRACK"
            .to_string()
    };
    let table = format!("{count} of {max} entries, {buckets} buckets");
    if count as f64 >= CONNTRACK_FULL * max as f64 {
        return finding(
            C,
            Severity::Fail,
            format!(
                "connection tracking table nearly full ({table}): new connections will be dropped"
            ),
            fix,
        );
    }
    if count == 0 {
        return ok(
            C,
            format!("connection tracking is loaded but tracks nothing now ({table}): no ruleset uses it"),
        );
    }
    // Closed connections stay tracked for the TIME_WAIT timeout (120 s).
    let small = if max < plan.connections * 2 {
        format!(
            "; the table is smaller than twice the {} planned connections",
            plan.connections
        )
    } else {
        String::new()
    };
    finding(
        C,
        Severity::Warn,
        format!(
            "connection tracking is active ({table}){small}: every connect and close \
             goes through its hash table, which behaves differently per server and \
             makes results irregular"
        ),
        fix,
    )
}

fn swap(s: &Snapshot) -> Finding {
    const C: &str = "memory.swap";
    let used = s.swap_total_bytes.saturating_sub(s.swap_free_bytes);
    if s.swap_total_bytes == 0 {
        return ok(C, "no swap configured".to_string());
    }
    if used == 0 {
        return ok(
            C,
            format!("swap in use: 0 of {} MiB", s.swap_total_bytes >> 20),
        );
    }
    finding(
        C,
        Severity::Warn,
        format!(
            "{} MiB of swap in use: a server page swapped in during a round stalls it \
             for milliseconds",
            used >> 20
        ),
        "free memory, then swapoff -a && swapon -a to bring the pages back".to_string(),
    )
}

fn busy_processes(s: &Snapshot) -> Finding {
    const C: &str = "processes.busy";
    let busy: Vec<String> = s
        .processes
        .iter()
        .filter(|p| p.cores >= BUSY_PROCESS_CORES)
        .take(5)
        .map(|p| format!("{} (pid {}) {:.0}%", p.comm, p.pid, p.cores * 100.0))
        .collect();
    if busy.is_empty() {
        return ok(
            C,
            format!(
                "no other process used {:.0}% of a core over {:.1} s",
                BUSY_PROCESS_CORES * 100.0,
                s.window_s
            ),
        );
    }
    finding(
        C,
        Severity::Warn,
        format!(
            "other processes were busy over {:.1} s (% of one core): {}; they compete \
             with the client and the server",
            s.window_s,
            busy.join(", ")
        ),
        "stop them, or wait until they finish, before measuring".to_string(),
    )
}
