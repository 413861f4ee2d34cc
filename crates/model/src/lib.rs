//! throng's vocabulary and stored schema.
//!
//! `throng lab` writes these records to SQLite, the trust rules read them to
//! give verdicts, and the report functions turn them into articles. The
//! crate depends on nothing but serde, so the report and the store can read
//! results without linking the engine, and the engine can count by the same
//! [`ErrorKind`] the documents are keyed by. Every enum here keeps the
//! names earlier databases hold.

mod article;
mod checks;
pub mod cores;
mod fairness;
mod feature;
pub mod max_users;
mod prices;
mod profile;
mod reason;
mod shape;
mod stacks;
pub mod summary;
pub mod tcp;
mod threshold;
pub mod units;
mod workload;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use article::{ArticleNote, MAX_ARTICLE_TEXT};
pub use checks::ThresholdCheck;
pub use fairness::{
    unbounded_words, Comparison, Decision, Diagnosis, IntervalKind, ParityEntry, Setting, Source,
};
pub use feature::{Feature, FeatureResult, FeatureStatus};
pub use prices::{CorePrices, Price};
pub use profile::Profile;
pub use reason::{Reason, ReasonCode, Verdict};
pub use shape::{Shape, ShapeRange, SPARE_SHARE};
pub use stacks::{HwCounters, StackProfile};
pub use summary::{
    Connections, CoordinationParts, CpuTime, ErrorKind, HostShare, Http2Report, Http3Report,
    IoBackend, Latency, LoadModel, LocalServer, RateReport, ReplyHeads, SessionCounts, Sessions,
    SleepCost, Spins, Summary, TimelineRow, TlsReport, Warmup, Warning,
};
pub use tcp::{TcpCounters, TcpSegments};
pub use threshold::{
    Threshold, ThresholdSource, CALIBRATED_CEILING, CALIBRATED_FLOOR, DEFAULT_PRECISION,
};
pub use workload::{is_large_body, WorkloadKind, LARGE_BODY_BYTES};

/// Open files a load needs beyond one per connection: stdio, an epoll and
/// a timer descriptor per thread, the reachability check, and whatever the
/// embedding program holds open. The engine raises its limit by this
/// margin, the doctor checks it, and the max-users search stays under it.
pub const SPARE_FDS: u64 = 64;

/// Now, as Unix time in seconds: the timestamps stored with runs and
/// rounds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    Warn,
    Fail,
}

/// One machine check of `throng doctor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, e.g. "sysctl.tcp_tw_recycle".
    pub check: String,
    pub severity: Severity,
    pub message: String,
    /// What to run or change; empty when nothing is to be done.
    pub fix: String,
}

/// The machine a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: String,
    pub cpu_model: String,
    pub cpus_online: u32,
    pub memory_bytes: u64,
    pub kernel: String,
    pub os: String,
    /// Sysctls that matter for benchmarking, name to value.
    pub sysctls: BTreeMap<String, String>,
    /// Open-file limit (soft, hard) of the lab process.
    pub nofile: (u64, u64),
    pub throng_version: String,
    /// When the run was spread over hosts: "2 client hosts → 1 server
    /// host, 0.21 ms RTT". Empty when everything ran on one machine.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topology: String,
    /// Every host of a run spread over hosts, server first. The fields
    /// above then describe the server host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostRecord>,
    /// The servers' core's prices, read before each launch of each
    /// group; empty for runs stored before they were read, and apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prices: Vec<CorePrices>,
}

/// What a host of a run spread over hosts did. Stored by these names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostRole {
    /// The host the servers ran on.
    Server,
    /// A host that sent load; the machine throng ran on, when it sent the
    /// load itself, is one too.
    #[default]
    Client,
}

impl HostRole {
    /// The stored name, which the report shows as it is.
    pub fn name(self) -> &'static str {
        match self {
            HostRole::Server => "server",
            HostRole::Client => "client",
        }
    }
}

/// One host of a run spread over hosts, as it was when the run began.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// `ssh://user@host:port`, or `local` for the machine throng ran on.
    pub host: String,
    pub role: HostRole,
    pub arch: String,
    pub cpu_model: String,
    pub cpus_online: u32,
    pub memory_bytes: u64,
    pub kernel: String,
    pub nofile: (u64, u64),
    pub throng_build: String,
    /// The host's clock minus this machine's, and how well it is known.
    pub clock_offset_ms: f64,
    pub clock_uncertainty_ms: f64,
    /// Client hosts: the path to the server's address.
    #[serde(default)]
    pub rtt_ms: Option<f64>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub interface: Option<String>,
    #[serde(default)]
    pub link_mbps: Option<u64>,
    /// The path stays on one machine's loopback.
    #[serde(default)]
    pub loopback: bool,
    /// `throng doctor` on that host.
    #[serde(default)]
    pub doctor: Vec<Finding>,
}

/// A configuration file as rendered for one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigFile {
    pub path: String,
    pub content: String,
}

/// A server as it ran in a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Name in the study, e.g. "nginx" or "apache2-event".
    pub name: String,
    /// Recipe it was started from.
    pub recipe: String,
    pub version: String,
    /// Debian package, when known.
    pub package: String,
    /// "event loop", "processes", "threads", "processes+threads".
    pub model: String,
    /// Size of the main executable in bytes.
    pub exe_bytes: u64,
    pub configs: Vec<ConfigFile>,
    /// Installed size of the Debian package in bytes (dpkg's
    /// Installed-Size); 0 when unknown.
    #[serde(default)]
    pub installed_bytes: u64,
    /// Features probed on the live server, in [`Feature::ALL`] order.
    #[serde(default)]
    pub features: Vec<FeatureResult>,
    /// Max-users searches, one per core count and workload.
    #[serde(default)]
    pub max_users: Vec<MaxUsers>,
    /// The recipe profile it ran with.
    #[serde(default)]
    pub profile: Profile,
    /// The settings that change results, with where each value comes from.
    #[serde(default)]
    pub parity: Vec<ParityEntry>,
}

impl Default for ServerRecord {
    fn default() -> Self {
        ServerRecord {
            name: String::new(),
            recipe: String::new(),
            version: String::new(),
            package: String::new(),
            model: String::new(),
            exe_bytes: 0,
            configs: Vec::new(),
            installed_bytes: 0,
            features: Vec::new(),
            max_users: Vec::new(),
            profile: Profile::Defaults,
            parity: Vec::new(),
        }
    }
}

/// "Max users", as Sametz's httperf comparison and ACME's thttpd table
/// report it: the highest concurrency answered with no errors and p99
/// under the patience limit, found by stepping up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MaxUsers {
    pub cores: u32,
    pub workload: String,
    pub patience_s: f64,
    /// Highest good level; `None` when even the first level failed.
    pub level: Option<u32>,
    /// First level that failed; `None` when the search reached its cap.
    pub broke_at: Option<u32>,
    /// What broke there ("refusals", "resets", "timeouts", "p99 4.1 s", ...)
    /// or why the search stopped.
    pub broke_by: String,
}

/// What the server's whole process tree used during one round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerUsage {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub rss_peak_bytes: u64,
    pub rss_end_bytes: u64,
    pub pss_peak_bytes: u64,
    pub pss_end_bytes: u64,
    pub processes: u32,
    pub threads: u32,
    /// Seconds the samples cover (the round's wall time).
    pub wall_s: f64,
    /// Seconds the tree's threads were runnable but waiting for a CPU, summed
    /// over its threads (/proc/PID/task/TID/schedstat, second field, as a
    /// delta over the round). Its own threads queueing behind each other
    /// count here too; `others_cpu_s` tells the two apart.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runqueue_s: f64,
    /// CPU time the hypervisor stole from the server's cores over the round
    /// (/proc/stat `steal` of those CPUs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steal_s: f64,
    /// CPU time other processes got on the server's cores over the round:
    /// the cores' user, nice and system time (/proc/stat) less the tree's
    /// own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub others_cpu_s: f64,
    /// Listening sockets the tree held at the last reading that could see
    /// them, each counted once however many of its processes share it (an
    /// Apache's parent and children hold one). 0 when none could be read:
    /// another user's descriptors, or usage stored before it was counted.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub listeners: u32,
    /// The fewest and most processes, threads and listening sockets the
    /// readings found over the round, when they were not the same
    /// throughout; `None` when every reading found the shape the round
    /// ended with (`processes`, `threads` and `listeners`, which are the
    /// last reading's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape_range: Option<ShapeRange>,
    /// The TCP segments the server's host sent and sent again over the
    /// window (its network namespace's counters, whoever sent them); `None`
    /// where they could not be read, and in usage stored before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<crate::TcpSegments>,
}

fn is_zero_count(v: &u32) -> bool {
    *v == 0
}

/// Zero figures are left out of the JSON, so usage measured before these
/// fields existed and usage that measured nothing there serialise alike.
pub(crate) fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl ServerUsage {
    /// The shape the tree ended the round with.
    pub fn shape(&self) -> Shape {
        Shape {
            processes: self.processes,
            threads: self.threads,
            listeners: self.listeners,
        }
    }

    /// The shapes the round's readings found: its range, or its last
    /// reading's when the shape held throughout.
    pub fn shapes(&self) -> ShapeRange {
        self.shape_range
            .unwrap_or_else(|| ShapeRange::of(self.shape()))
    }

    /// Server CPU seconds per second of wall time (1.0 = one core busy).
    pub fn cpu_utilisation(&self) -> f64 {
        if self.wall_s > 0.0 {
            (self.cpu_user_s + self.cpu_sys_s) / self.wall_s
        } else {
            0.0
        }
    }
}

/// One measured round of one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub index: u32,
    pub summary: Summary,
    pub server: ServerUsage,
    /// HdrHistogram V2-deflate serialisation of the latency histogram (µs).
    #[serde(skip)]
    pub histogram: Vec<u8>,
    /// The block of interleaved slices this round was measured in: rounds
    /// of different servers with the same block are paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    /// Which start of its server this round measured (0 for the first):
    /// rounds of one launch share what that start left behind (pool sizes,
    /// memory layout), so launches are a level of the design of their own.
    /// `None` in runs stored before servers were started more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<u32>,
}

/// A point estimate with its 95% confidence interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub mean: f64,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: u32,
}

impl Estimate {
    /// Half-width of the interval relative to the mean (0.02 = ±2%).
    pub fn relative_half_width(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            (self.ci_high - self.ci_low) / 2.0 / self.mean
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Ok,
    /// The server crashed or stopped answering; `failure` says how.
    Failed,
    /// Not run (too few cores, interrupted).
    Skipped,
    /// The server cannot serve this workload.
    Unsupported,
}

impl StepStatus {
    pub const ALL: [StepStatus; 4] = [
        StepStatus::Ok,
        StepStatus::Failed,
        StepStatus::Skipped,
        StepStatus::Unsupported,
    ];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            StepStatus::Ok => "ok",
            StepStatus::Failed => "failed",
            StepStatus::Skipped => "skipped",
            StepStatus::Unsupported => "unsupported",
        }
    }

    pub fn parse(name: &str) -> Option<StepStatus> {
        StepStatus::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One point of a sweep: a server, a core count, a workload, a concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub server: String,
    pub cores: u32,
    pub workload: String,
    /// Connections; with `rate`, the connections the rate is offered over.
    pub concurrency: u32,
    /// Open model: the requests per second offered to the server, which
    /// makes this step a level of its own among steps of the same
    /// concurrency. `None`: closed model, `concurrency` is the level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub status: StepStatus,
    pub failure: Option<String>,
    /// Last lines of the server's log when it failed.
    pub log_tail: Option<String>,
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    pub shared_cores: bool,
    /// Requests per second over the rounds.
    pub throughput: Estimate,
    pub rounds: Vec<RoundRecord>,
    pub verdict: Verdict,
    /// The diagnostic round after the measured ones: never mixed into them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
}

impl StepRecord {
    /// A step not measured yet: status ok, no rounds, a valid verdict, no
    /// cores assigned.
    pub fn new(server: &str, cores: u32, workload: &str, concurrency: u32) -> StepRecord {
        StepRecord {
            server: server.to_string(),
            cores,
            workload: workload.to_string(),
            concurrency,
            rate: None,
            status: StepStatus::Ok,
            failure: None,
            log_tail: None,
            server_cpus: Vec::new(),
            client_cpus: Vec::new(),
            shared_cores: false,
            throughput: Estimate::default(),
            rounds: Vec::new(),
            verdict: Verdict::valid(),
            diagnosis: None,
        }
    }

    /// Whether `other` measured the same level: the same connections and
    /// the same offered rate (or both the closed model).
    pub fn same_level(&self, other: &StepRecord) -> bool {
        self.concurrency == other.concurrency && self.rate == other.rate
    }

    /// The failure's first line: what a console line or a test case names,
    /// worded the same wherever a failed step is shown.
    pub fn failure_head(&self) -> &str {
        self.failure
            .as_deref()
            .and_then(|f| f.lines().next())
            .unwrap_or("")
    }

    /// Median p99 over the rounds that completed a response.
    pub fn p99_us(&self) -> Option<u64> {
        self.latency_median_us(|l| l.p99)
    }
    /// Median p50 over the rounds that completed a response.
    pub fn p50_us(&self) -> Option<u64> {
        self.latency_median_us(|l| l.p50)
    }
    /// Median of a latency figure over the rounds that completed a
    /// response: a round without one has no latency (its percentiles are
    /// zeros, not fast answers), so it must not pull the median down.
    pub fn latency_median_us(&self, f: impl Fn(&Latency) -> u64) -> Option<u64> {
        let v: Vec<f64> = self
            .rounds
            .iter()
            .filter(|r| max_users::has_latency(&r.summary))
            .map(|r| f(&r.summary.latency_us) as f64)
            .collect();
        median(v).map(|m| m as u64)
    }
    /// Median over rounds of some per-round figure.
    pub fn median_of(&self, f: impl Fn(&RoundRecord) -> f64) -> Option<f64> {
        median(self.rounds.iter().map(f).collect())
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// A study run as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub study: String,
    /// The study file as it was run (TOML), so anyone can rerun it.
    pub study_toml: String,
    pub started_unix_s: f64,
    pub finished_unix_s: Option<f64>,
    /// False when interrupted or when the lab itself failed.
    pub complete: bool,
    pub environment: Environment,
    pub doctor: Vec<Finding>,
    /// The server the others are compared against: the study's
    /// `baseline`, or its first server.
    #[serde(default)]
    pub baseline: Option<String>,
    /// The decision threshold its comparisons were decided with, and where
    /// it came from; `None` for runs stored before it was kept, and for a
    /// saved load, which compares nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Threshold>,
}

/// The study name every run `throng load --save` stores.
pub const LOAD_STUDY: &str = "load";

/// What a stored run is, as its two stored columns (`study`,
/// `study_toml`) say: a study with its file, or a saved `throng load`
/// with its command line. The columns stay as they were, so databases of
/// every version read the same; the rule that tells the two apart is
/// here alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind<'a> {
    Study { name: &'a str, toml: &'a str },
    Load { command: &'a str },
}

impl RunRecord {
    /// A study file has several lines and a saved load's command line one
    /// (it is stored shell-quoted, its control characters escaped), so a
    /// lab study that happens to be named "load" is not taken for a
    /// command.
    pub fn kind(&self) -> RunKind<'_> {
        let command = &self.study_toml;
        if self.study == LOAD_STUDY && !command.is_empty() && !command.contains('\n') {
            RunKind::Load { command }
        } else {
            RunKind::Study {
                name: &self.study,
                toml: &self.study_toml,
            }
        }
    }

    /// A saved `throng load`: its command line.
    pub fn load_command(&self) -> Option<&str> {
        match self.kind() {
            RunKind::Load { command } => Some(command),
            RunKind::Study { .. } => None,
        }
    }
}

/// Everything a report needs about one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    pub run: RunRecord,
    pub servers: Vec<ServerRecord>,
    pub steps: Vec<StepRecord>,
    /// Paired ratios between the run's servers, per level and per sweep.
    #[serde(default)]
    pub comparisons: Vec<Comparison>,
}

/// Parses the kernel's CPU list format ("0-3,6,8-9", as in
/// /sys/devices/system/cpu/online and Cpus_allowed_list); `None` when a
/// part is not a number or a range, a range runs backwards, or a CPU is
/// past any kernel's (`MAX_CPUS`): a range as wide as the type held more
/// numbers than memory.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.trim().is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b >= MAX_CPUS {
                    return None;
                }
                out.extend(a..=b);
            }
            None => {
                let c: usize = part.trim().parse().ok()?;
                if c >= MAX_CPUS {
                    return None;
                }
                out.push(c);
            }
        }
    }
    Some(out)
}

/// The text of a file a user named (a study, a recipe, a URL or session
/// list): a regular file, after links, of at most `MAX_TEXT_FILE` bytes, in
/// UTF-8. /dev/zero or a FIFO named as a study used to be read until memory
/// ran out, or forever. The error says what is wrong without the path,
/// which the caller words with the key or option that named it.
pub fn read_text_file(path: &std::path::Path) -> Result<String, String> {
    let m = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err("not a regular file".into());
    }
    if m.len() > MAX_TEXT_FILE {
        return Err(format!(
            "{} bytes, more than the {} MiB a text file may have",
            m.len(),
            MAX_TEXT_FILE >> 20
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes)
        .map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

/// Largest study, recipe or list file read (see [`read_text_file`]).
pub const MAX_TEXT_FILE: u64 = 64 << 20;

/// Linux's most CPUs (`CONFIG_NR_CPUS` at its largest).
pub const MAX_CPUS: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_load_is_told_from_a_study_by_its_one_line() {
        let mut r = RunRecord {
            study: LOAD_STUDY.into(),
            study_toml: "throng load http://h/ -n 5".into(),
            ..Default::default()
        };
        assert_eq!(
            r.kind(),
            RunKind::Load {
                command: "throng load http://h/ -n 5"
            }
        );
        // A lab study named "load" is a study file of several lines.
        r.study_toml = "name = \"load\"\nservers = [\"nginx\"]\n".into();
        assert!(matches!(r.kind(), RunKind::Study { name: "load", .. }));
        r.study_toml = String::new();
        assert_eq!(r.load_command(), None);
        r.study = "quick".into();
        r.study_toml = "throng load http://h/".into();
        assert_eq!(r.load_command(), None);
    }

    #[test]
    fn warnings_are_stored_as_codes_and_read_back_in_either_form() {
        let w = Warning::LateSends { late: 5, sent: 200 };
        let stored = serde_json::to_string(&w).unwrap();
        assert_eq!(stored, r#"{"code":"late_sends","late":5,"sent":200}"#);
        assert_eq!(serde_json::from_str::<Warning>(&stored).unwrap(), w);
        let old = r#""only 8 of 10 connections could be established""#;
        let read: Warning = serde_json::from_str(old).unwrap();
        assert_eq!(
            read,
            Warning::Worded("only 8 of 10 connections could be established".into())
        );
        assert_eq!(serde_json::to_string(&read).unwrap(), old);
    }

    #[test]
    fn load_models_and_backends_keep_their_stored_names() {
        assert_eq!(serde_json::to_string(&LoadModel::Open).unwrap(), "\"open\"");
        assert_eq!(
            serde_json::from_str::<LoadModel>("\"closed\"").unwrap(),
            LoadModel::Closed
        );
        assert_eq!(
            serde_json::to_string(&IoBackend::Uring).unwrap(),
            "\"uring\""
        );
        assert_eq!(
            serde_json::from_str::<IoBackend>("\"epoll\"").unwrap(),
            IoBackend::Epoll
        );
    }

    #[test]
    fn cpu_lists_are_bounded() {
        assert_eq!(parse_cpu_list("0-2,5").unwrap(), [0, 1, 2, 5]);
        // These allocated until memory ran out, or overflowed.
        assert_eq!(parse_cpu_list("0-18446744073709551615"), None);
        assert_eq!(parse_cpu_list("0-99999999"), None);
        assert_eq!(parse_cpu_list("8192"), None);
        assert_eq!(parse_cpu_list("1-0"), None);
        assert_eq!(parse_cpu_list("8191").unwrap(), [8191]);
    }

    #[test]
    fn server_usage_written_before_the_wait_figures_reads_with_zeros() {
        let old = r#"{"cpu_user_s":1.5,"cpu_sys_s":0.5,"rss_peak_bytes":8,"rss_end_bytes":8,
            "pss_peak_bytes":4,"pss_end_bytes":4,"processes":2,"threads":3,"wall_s":2.0}"#;
        let u: ServerUsage = serde_json::from_str(old).unwrap();
        assert_eq!((u.runqueue_s, u.steal_s, u.others_cpu_s), (0.0, 0.0, 0.0));
        assert_eq!(u.cpu_utilisation(), 1.0);
        // Zeros are left out, so such usage writes back as it was read.
        let back: serde_json::Value = serde_json::to_value(&u).unwrap();
        assert_eq!(back.as_object().unwrap().len(), 9);
        let measured = ServerUsage {
            runqueue_s: 0.25,
            steal_s: 0.01,
            others_cpu_s: 0.5,
            ..u
        };
        let json = serde_json::to_string(&measured).unwrap();
        assert!(json.ends_with(r#""runqueue_s":0.25,"steal_s":0.01,"others_cpu_s":0.5}"#));
        assert_eq!(
            serde_json::from_str::<ServerUsage>(&json).unwrap(),
            measured
        );
        assert_eq!((u.listeners, u.shape_range), (0, None));
    }

    #[test]
    fn a_shape_that_varied_is_stored_with_its_range_and_one_that_held_is_not() {
        let held = ServerUsage {
            processes: 2,
            threads: 54,
            listeners: 1,
            ..ServerUsage::default()
        };
        let json = serde_json::to_string(&held).unwrap();
        assert!(json.ends_with(r#""wall_s":0.0,"listeners":1}"#), "{json}");
        assert_eq!(
            held.shapes(),
            ShapeRange::of(Shape {
                processes: 2,
                threads: 54,
                listeners: 1
            })
        );
        let mut range = held.shapes();
        // A reading whose descriptors could not be read widens no
        // listener count.
        range.cover(&ShapeRange::of(Shape {
            processes: 3,
            threads: 80,
            listeners: 0,
        }));
        assert_eq!(
            range,
            ShapeRange {
                min: Shape {
                    processes: 2,
                    threads: 54,
                    listeners: 1
                },
                max: Shape {
                    processes: 3,
                    threads: 80,
                    listeners: 1
                },
            }
        );
        assert!(range.varied());
        let grew = ServerUsage {
            shape_range: Some(range),
            ..held
        };
        let json = serde_json::to_string(&grew).unwrap();
        assert!(
            json.ends_with(
                r#""listeners":1,"shape_range":{"min":{"processes":2,"threads":54,"listeners":1},"max":{"processes":3,"threads":80,"listeners":1}}}"#
            ),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ServerUsage>(&json).unwrap(), grew);
        assert_eq!(grew.shapes(), range);
    }
}
