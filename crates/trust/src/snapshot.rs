//! Everything `throng doctor` looks at, read once from /proc and /sys.
//!
//! The doctor's checks are pure functions of a [`Snapshot`], so a
//! test can hand them a crafted machine (the 2016 Linux web server benchmark's sysctl.conf, a busy
//! neighbour, swap in use) and see each one fire, without root and without
//! touching the real kernel settings.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use procfs::{Current, CurrentSI};
use serde::{Deserialize, Serialize};
use throng_model::Environment;

/// Sysctls that change what a web benchmark measures. Read live from
/// /proc/sys; absent ones (tcp_tw_recycle since Linux 4.12, conntrack when
/// not loaded) are simply missing from the map.
pub const SYSCTLS: &[&str] = &[
    "fs.file-max",
    "fs.nr_open",
    "net.core.somaxconn",
    "net.core.netdev_max_backlog",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_max_tw_buckets",
    "net.ipv4.tcp_mem",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_tw_recycle",
    "net.ipv4.tcp_tw_reuse",
    "net.netfilter.nf_conntrack_buckets",
    "net.netfilter.nf_conntrack_count",
    "net.netfilter.nf_conntrack_max",
];

/// How long the machine is watched for frequency drift, steal and busy
/// neighbours. One second is what the issue asks for: long enough to see a
/// cron job or a governor ramping, short enough to run before every study.
pub const SAMPLE_WINDOW: Duration = Duration::from_secs(1);

/// Frequency samples taken inside [`SAMPLE_WINDOW`] (start and end included).
const FREQ_SAMPLES: u32 = 5;

/// A `key = value` line of /etc/sysctl.conf or /etc/sysctl.d/*.conf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SysctlSetting {
    pub file: String,
    pub key: String,
    /// Whitespace-normalised, like the live values.
    pub value: String,
}

/// Scaling state of one CPU, from /sys/devices/system/cpu/cpuN/cpufreq.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFreq {
    pub cpu: usize,
    /// `None`: no cpufreq driver exposes it (typical in a VM).
    pub governor: Option<String>,
    pub driver: Option<String>,
    /// Frequency samples over the window, in MHz. Empty when unknown.
    pub samples_mhz: Vec<f64>,
}

/// Whether the CPU may run above its base clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Turbo {
    /// Neither intel_pstate/no_turbo nor cpufreq/boost exists.
    Unknown,
    /// From /sys/devices/system/cpu/intel_pstate/no_turbo (inverted).
    IntelPstate { enabled: bool },
    /// From /sys/devices/system/cpu/cpufreq/boost.
    Boost { enabled: bool },
}

/// /proc/stat totals over the window, in clock ticks, all CPUs together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuDelta {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuDelta {
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
    /// Share of all CPU time the hypervisor gave to someone else.
    pub fn steal_share(&self) -> f64 {
        let t = self.total();
        if t == 0 {
            0.0
        } else {
            self.steal as f64 / t as f64
        }
    }
}

/// A process that used CPU during the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessUsage {
    pub pid: i32,
    pub comm: String,
    /// CPU seconds per second of the window (1.0 = one core busy).
    pub cores: f64,
}

/// The machine as the doctor sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Live values of [`SYSCTLS`] that exist, whitespace-normalised.
    pub sysctls: BTreeMap<String, String>,
    /// What the boot-time configuration files ask for.
    pub sysctl_files: Vec<SysctlSetting>,
    /// RLIMIT_NOFILE (soft, hard) of this process.
    pub nofile: (u64, u64),
    pub memory_bytes: u64,
    pub page_size: u64,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
    /// Names of loaded modules; `None` when /proc/modules does not exist
    /// (a kernel without module support: everything is built in).
    pub modules: Option<Vec<String>>,
    pub cpus_online: Vec<usize>,
    /// The CPUs this process may run on (its affinity): on a host given
    /// part of a machine, all that it and its children have.
    pub cpus_allowed: Vec<usize>,
    pub cpufreq: Vec<CpuFreq>,
    /// Where `samples_mhz` came from: "scaling_cur_freq", "/proc/cpuinfo" or "".
    pub freq_source: String,
    pub turbo: Turbo,
    /// The online CPUs' idle states (absent from a snapshot taken before
    /// they were read: none shown).
    #[serde(default)]
    pub idle: crate::idle::Idle,
    /// The CPU reports the `hypervisor` flag.
    pub virtualised: bool,
    pub cpu: CpuDelta,
    /// Other processes' CPU use over the window, busiest first.
    pub processes: Vec<ProcessUsage>,
    pub window_s: f64,
}

impl Snapshot {
    /// Reads the machine; takes [`SAMPLE_WINDOW`].
    pub fn read() -> Snapshot {
        let ticks = procfs::ticks_per_second().max(1) as f64;
        let me = std::process::id() as i32;
        let cpus_online = read_cpu_list("/sys/devices/system/cpu/online");

        let stat0 = procfs::KernelStats::current().ok();
        let procs0 = process_ticks(me);
        let start = Instant::now();
        let mut cpufreq: Vec<CpuFreq> = cpus_online
            .iter()
            .map(|&cpu| {
                let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
                CpuFreq {
                    cpu,
                    governor: read_trimmed(&format!("{dir}/scaling_governor")),
                    driver: read_trimmed(&format!("{dir}/scaling_driver")),
                    samples_mhz: Vec::new(),
                }
            })
            .collect();
        let mut freq_source = String::new();
        for i in 0..FREQ_SAMPLES {
            // Sampling instants are the point here, not synchronisation: the
            // window is a measurement of how the machine behaves over time.
            let due = SAMPLE_WINDOW * i / (FREQ_SAMPLES - 1);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
            let (source, mhz) = read_frequencies(&cpus_online);
            if !source.is_empty() {
                freq_source = source.to_string();
            }
            for f in cpufreq.iter_mut() {
                if let Some(v) = mhz.get(&f.cpu) {
                    f.samples_mhz.push(*v);
                }
            }
        }
        let window_s = start.elapsed().as_secs_f64();
        let stat1 = procfs::KernelStats::current().ok();
        let procs1 = process_ticks(me);

        let cpu = match (stat0, stat1) {
            (Some(a), Some(b)) => cpu_delta(&a.total, &b.total),
            _ => CpuDelta::default(),
        };
        let mut processes: Vec<ProcessUsage> = procs1
            .iter()
            .filter_map(|(pid, (comm, t1))| {
                // A process born during the window counts from zero.
                let t0 = procs0.get(pid).map(|(_, t)| *t).unwrap_or(0);
                let used = t1.saturating_sub(t0);
                (used > 0).then(|| ProcessUsage {
                    pid: *pid,
                    comm: comm.clone(),
                    cores: used as f64 / ticks / window_s,
                })
            })
            .collect();
        processes.sort_by(|a, b| b.cores.total_cmp(&a.cores).then(a.pid.cmp(&b.pid)));

        let mem = procfs::Meminfo::current().ok();
        let virtualised = procfs::CpuInfo::current()
            .ok()
            .and_then(|c| c.flags(0).map(|f| f.contains(&"hypervisor")))
            .unwrap_or(false);
        let modules = fs::read_to_string("/proc/modules").ok().map(|s| {
            s.lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        });

        let idle = crate::idle::read_idle(Path::new("/"), &cpus_online);
        Snapshot {
            sysctls: read_sysctls(),
            sysctl_files: read_sysctl_files(),
            nofile: nofile_limit(),
            memory_bytes: mem.as_ref().map(|m| m.mem_total).unwrap_or(0),
            page_size: procfs::page_size(),
            swap_total_bytes: mem.as_ref().map(|m| m.swap_total).unwrap_or(0),
            swap_free_bytes: mem.as_ref().map(|m| m.swap_free).unwrap_or(0),
            modules,
            cpus_online,
            cpus_allowed: allowed_cpus(),
            cpufreq,
            freq_source,
            turbo: read_turbo(),
            idle,
            virtualised,
            cpu,
            processes,
            window_s,
        }
    }
}

pub(crate) fn read_trimmed(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Live values of [`SYSCTLS`] that exist on this kernel.
pub fn read_sysctls() -> BTreeMap<String, String> {
    SYSCTLS
        .iter()
        .filter_map(|k| {
            let path = format!("/proc/sys/{}", k.replace('.', "/"));
            read_trimmed(&path).map(|v| (k.to_string(), v))
        })
        .collect()
}

/// RLIMIT_NOFILE (soft, hard); `u64::MAX` stands for unlimited.
pub fn nofile_limit() -> (u64, u64) {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap_or((0, 0))
}

/// The kernel's CPU list format ("0-3,6,8-9"); nothing for text that is
/// not one.
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    throng_model::parse_cpu_list(s).unwrap_or_default()
}

fn read_cpu_list(path: &str) -> Vec<usize> {
    fs::read_to_string(path)
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default()
}

/// Parses sysctl.conf syntax: `key = value`, `#`/`;` comments, a leading `-`
/// (ignore errors) and `/` as separator are all accepted by sysctl(8).
pub fn parse_sysctl_conf(file: &str, text: &str) -> Vec<SysctlSetting> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                return None;
            }
            let (k, v) = line.split_once('=')?;
            let key = k.trim().trim_start_matches('-').replace('/', ".");
            let value = v.split_whitespace().collect::<Vec<_>>().join(" ");
            Some(SysctlSetting {
                file: file.to_string(),
                key,
                value,
            })
        })
        .collect()
}

fn read_sysctl_files() -> Vec<SysctlSetting> {
    let mut files = vec!["/etc/sysctl.conf".to_string()];
    if let Ok(dir) = fs::read_dir("/etc/sysctl.d") {
        let mut names: Vec<String> = dir
            .filter_map(|e| e.ok())
            .map(|e| e.path().to_string_lossy().into_owned())
            .filter(|p| p.ends_with(".conf"))
            .collect();
        names.sort();
        files.extend(names);
    }
    files
        .iter()
        .filter_map(|f| fs::read_to_string(f).ok().map(|t| parse_sysctl_conf(f, &t)))
        .flatten()
        .collect()
}

fn read_frequencies(cpus: &[usize]) -> (&'static str, BTreeMap<usize, f64>) {
    let from_sysfs: BTreeMap<usize, f64> = cpus
        .iter()
        .filter_map(|&c| {
            let p = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq");
            read_trimmed(&p)
                .and_then(|s| s.parse::<f64>().ok())
                .map(|khz| (c, khz / 1000.0))
        })
        .collect();
    if !from_sysfs.is_empty() {
        return ("scaling_cur_freq", from_sysfs);
    }
    let Ok(info) = procfs::CpuInfo::current() else {
        return ("", BTreeMap::new());
    };
    let from_cpuinfo: BTreeMap<usize, f64> = (0..info.num_cores())
        .filter_map(|i| {
            let cpu: usize = info.get_field(i, "processor")?.trim().parse().ok()?;
            let mhz: f64 = info.get_field(i, "cpu MHz")?.trim().parse().ok()?;
            Some((cpu, mhz))
        })
        .collect();
    if from_cpuinfo.is_empty() {
        ("", from_cpuinfo)
    } else {
        ("/proc/cpuinfo", from_cpuinfo)
    }
}

fn read_turbo() -> Turbo {
    if let Some(v) = read_trimmed("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Turbo::IntelPstate { enabled: v == "0" };
    }
    if let Some(v) = read_trimmed("/sys/devices/system/cpu/cpufreq/boost") {
        return Turbo::Boost { enabled: v == "1" };
    }
    Turbo::Unknown
}

fn cpu_delta(a: &procfs::CpuTime, b: &procfs::CpuTime) -> CpuDelta {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    let o = |x: Option<u64>, y: Option<u64>| d(x.unwrap_or(0), y.unwrap_or(0));
    CpuDelta {
        user: d(a.user, b.user),
        nice: d(a.nice, b.nice),
        system: d(a.system, b.system),
        idle: d(a.idle, b.idle),
        iowait: o(a.iowait, b.iowait),
        irq: o(a.irq, b.irq),
        softirq: o(a.softirq, b.softirq),
        steal: o(a.steal, b.steal),
    }
}

/// utime+stime in ticks of every process but `me`, by pid.
fn process_ticks(me: i32) -> BTreeMap<i32, (String, u64)> {
    let Ok(all) = procfs::process::all_processes() else {
        return BTreeMap::new();
    };
    all.filter_map(|p| p.ok())
        .filter(|p| p.pid != me)
        // Processes may exit between listing and reading: skip them.
        .filter_map(|p| p.stat().ok())
        .map(|s| (s.pid, (s.comm, s.utime + s.stime)))
        .collect()
}

/// Reads a sysctl by its dotted name from /proc/sys.
pub fn read_sysctl(name: &str) -> Option<String> {
    let path = Path::new("/proc/sys").join(name.replace('.', "/"));
    read_trimmed(&path.to_string_lossy())
}

/// `net.ipv4.ip_local_port_range` as (low, high), the ports connect()
/// picks from.
pub fn ephemeral_range() -> Option<(u16, u16)> {
    let v = read_sysctl("net.ipv4.ip_local_port_range")?;
    let r: Vec<u16> = v
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match r.as_slice() {
        [lo, hi] if hi >= lo => Some((*lo, *hi)),
        _ => None,
    }
}

/// TIME_WAIT in the `st` column of /proc/net/tcp and tcp6.
const TCP_TIME_WAIT: &str = "06";

/// Local ports in `lo..=hi` that sockets in TIME_WAIT hold, from the text
/// of /proc/net/tcp or /proc/net/tcp6.
///
/// A port, not a socket, is what connect() runs short of. The side that
/// closes first keeps the TIME_WAIT: when it is a client, its ephemeral
/// port is held; when it is a server, every such socket sits on the
/// server's one listening port and holds no client port at all (on
/// loopback, where the server usually closes first, that is most of them),
/// so counting sockets (/proc/net/sockstat `tw`) would see exhaustion
/// where there is none.
pub fn time_wait_ports(text: &str, lo: u16, hi: u16) -> BTreeSet<u16> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(3) != Some(&TCP_TIME_WAIT) {
                return None;
            }
            let (_, port) = f.get(1)?.rsplit_once(':')?;
            u16::from_str_radix(port, 16).ok()
        })
        .filter(|p| (lo..=hi).contains(p))
        .collect()
}

/// How many ephemeral ports TIME_WAIT sockets hold now, IPv4 and IPv6
/// together (a port is one port for both); `None` when neither the kernel
/// over sock_diag nor /proc/net/tcp answers.
///
/// /proc/net/tcp prints every socket of the namespace, connections
/// included: 30 ms of the client's CPU with 4,000 connections open at a
/// run's end, and 30–64 ms of a client host's after a slice apart. When
/// /proc/net/sockstat counts no TIME_WAIT socket at all (IPv4 and IPv6
/// share that count), no port is held and nothing more is read; else the
/// kernel is asked for the TIME_WAIT sockets of the range alone
/// ([`throng_engine::sockdiag::time_wait_ports`]), and the tables are
/// read only where it does not answer.
pub fn read_time_wait_ports(lo: u16, hi: u16) -> Option<u64> {
    if fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|t| sockstat_time_wait(&t))
        == Some(0)
    {
        return Some(0);
    }
    if let Some(ports) = throng_engine::sockdiag::time_wait_ports(lo, hi) {
        return Some(ports.len() as u64);
    }
    proc_time_wait_ports(lo, hi)
}

/// [`read_time_wait_ports`] from /proc/net/tcp and tcp6.
pub fn proc_time_wait_ports(lo: u16, hi: u16) -> Option<u64> {
    let mut ports = time_wait_ports(&fs::read_to_string("/proc/net/tcp").ok()?, lo, hi);
    // No tcp6 file when IPv6 is disabled: no IPv6 sockets.
    if let Ok(v6) = fs::read_to_string("/proc/net/tcp6") {
        ports.extend(time_wait_ports(&v6, lo, hi));
    }
    Some(ports.len() as u64)
}

/// The TIME_WAIT sockets /proc/net/sockstat counts (`TCP: ... tw N`):
/// the namespace's, of both families.
pub fn sockstat_time_wait(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut f = line.split_whitespace();
    f.find(|w| *w == "tw")?;
    f.next()?.parse().ok()
}

/// The machine as it is now: what a report needs to say where numbers
/// came from.
pub fn environment() -> Environment {
    let cpuinfo = procfs::CpuInfo::current().ok();
    let cpu_model = cpuinfo
        .as_ref()
        .and_then(|c| c.model_name(0).map(str::to_string))
        .unwrap_or_default();
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        })
        .unwrap_or_default();
    let kernel = [
        read_trimmed("/proc/sys/kernel/osrelease"),
        read_trimmed("/proc/sys/kernel/version"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    let mut sysctls = read_sysctls();
    // A live count, not a setting: it would make identical machines differ.
    sysctls.remove("net.netfilter.nf_conntrack_count");
    let cpus_online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| parse_cpu_list(&s).len() as u32)
        .unwrap_or(0);
    Environment {
        hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_default(),
        cpu_model,
        cpus_online,
        memory_bytes: procfs::Meminfo::current().map(|m| m.mem_total).unwrap_or(0),
        kernel,
        os,
        sysctls,
        nofile: nofile_limit(),
        throng_version: env!("CARGO_PKG_VERSION").to_string(),
        ..Default::default()
    }
}

/// This process's affinity; empty where it cannot be read.
fn allowed_cpus() -> Vec<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    match sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => Vec::new(),
    }
}
