//! What makes a comparison fair and explained: the settings each server ran
//! with (parity), the cost of one request measured on the live server
//! (diagnosis), and the paired ratios between servers (comparisons).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A server setting that changes results, as the comment sections of
/// published benchmarks keep asking about ("was sendfile on for both?").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    AccessLog,
    Sendfile,
    /// Open-file / stat caching: whether a request opens and stats its file.
    OpenFileCache,
    #[serde(rename = "keepalive_timeout")]
    KeepAliveTimeout,
    #[serde(rename = "keepalive_requests")]
    KeepAliveRequests,
    Workers,
    Pinning,
    Gzip,
    Etag,
    LastModified,
    TcpNodelay,
    TcpNopush,
    ListenBacklog,
    MaxConnections,
    Protocol,
    Cipher,
    /// How each end paces its sending: the kernel's over TCP, each QUIC
    /// stack's own over HTTP/3.
    CongestionControl,
}

impl Setting {
    pub const ALL: [Setting; 17] = [
        Setting::AccessLog,
        Setting::Sendfile,
        Setting::OpenFileCache,
        Setting::KeepAliveTimeout,
        Setting::KeepAliveRequests,
        Setting::Workers,
        Setting::Pinning,
        Setting::Gzip,
        Setting::Etag,
        Setting::LastModified,
        Setting::TcpNodelay,
        Setting::TcpNopush,
        Setting::ListenBacklog,
        Setting::MaxConnections,
        Setting::Protocol,
        Setting::Cipher,
        Setting::CongestionControl,
    ];

    /// The stored name (as in recipes and JSON).
    pub fn name(self) -> &'static str {
        match self {
            Setting::AccessLog => "access_log",
            Setting::Sendfile => "sendfile",
            Setting::OpenFileCache => "open_file_cache",
            Setting::KeepAliveTimeout => "keepalive_timeout",
            Setting::KeepAliveRequests => "keepalive_requests",
            Setting::Workers => "workers",
            Setting::Pinning => "pinning",
            Setting::Gzip => "gzip",
            Setting::Etag => "etag",
            Setting::LastModified => "last_modified",
            Setting::TcpNodelay => "tcp_nodelay",
            Setting::TcpNopush => "tcp_nopush",
            Setting::ListenBacklog => "listen_backlog",
            Setting::MaxConnections => "max_connections",
            Setting::Protocol => "protocol",
            Setting::Cipher => "cipher",
            Setting::CongestionControl => "congestion_control",
        }
    }

    pub fn parse(name: &str) -> Option<Setting> {
        Setting::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Where a setting's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A line of the config throng rendered for the server.
    Config,
    /// Not in the rendered config: the server's documented default.
    Default,
    /// Set by the lab itself (workers, pinning, connection limits).
    Lab,
    /// Seen on the running server (a log that grew, a file opened per
    /// request).
    Live,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Config => "config",
            Source::Default => "default",
            Source::Lab => "lab",
            Source::Live => "live",
        }
    }
}

/// One setting of one server, with where its value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParityEntry {
    pub setting: Setting,
    pub value: String,
    pub source: Source,
    /// The config line, the documentation's default, or what was seen.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// The cost of one request on the live server, from a diagnostic round run
/// after a step's measured rounds and kept apart from them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// How the syscalls were counted ("perf stat", "strace"), or empty when
    /// they could not be.
    pub tool: String,
    /// Why syscalls were not counted, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    pub seconds: f64,
    /// Responses completed while counting.
    pub requests: u64,
    /// Syscalls by name, per response, over the server's process tree.
    pub syscalls_per_request: BTreeMap<String, f64>,
    /// Every syscall per response, named or not (perf's raw count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_per_request: Option<f64>,
    pub voluntary_switches_per_request: f64,
    pub involuntary_switches_per_request: f64,
    /// Bytes the server's log files grew by per response: an access log
    /// that is on shows here whatever its config says.
    pub log_bytes_per_request: f64,
    /// The server's stacks sampled over the same round; none when the
    /// round was not profiled (a run from before profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::StackProfile>,
}

/// What a paired ratio says about B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The whole interval lies above 1 + the noise threshold.
    Higher,
    /// The whole interval lies below 1 − the noise threshold.
    Lower,
    /// The whole interval lies within 1 ± the noise threshold.
    Equal,
    /// The interval crosses the threshold: more pairs would be needed.
    Undecided,
}

impl Decision {
    pub fn name(self) -> &'static str {
        match self {
            Decision::Higher => "higher",
            Decision::Lower => "lower",
            Decision::Equal => "equal",
            Decision::Undecided => "undecided",
        }
    }

    pub fn parse(name: &str) -> Option<Decision> {
        [
            Decision::Higher,
            Decision::Lower,
            Decision::Equal,
            Decision::Undecided,
        ]
        .into_iter()
        .find(|d| d.name() == name)
    }

    /// The decision for an interval `[lo, hi]` of B/A and a relative
    /// noise threshold.
    pub fn of(lo: f64, hi: f64, threshold: f64) -> Decision {
        if lo > 1.0 + threshold {
            Decision::Higher
        } else if hi < 1.0 - threshold {
            Decision::Lower
        } else if lo >= 1.0 - threshold && hi <= 1.0 + threshold {
            Decision::Equal
        } else {
            Decision::Undecided
        }
    }
}

/// B's requests per second over A's, from slices measured close in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub workload: String,
    pub cores: u32,
    /// The level, or `None` for every level of the sweep pooled.
    pub concurrency: Option<u32>,
    /// The offered rate of the level, for a level of an open-model sweep
    /// (whose levels share their concurrency); `None` otherwise and when
    /// pooled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Median of the per-pair ratios B/A.
    pub ratio: f64,
    /// Distribution-free 95% interval of that median.
    pub ci_low: f64,
    pub ci_high: f64,
    pub pairs: u32,
    pub decision: Decision,
    /// How the interval was drawn; `Unbounded` when the pairs are too few
    /// for any method to bound the ratio (then `ci_low` and `ci_high` are
    /// the ratio itself and say nothing).
    #[serde(default)]
    pub interval: IntervalKind,
    /// Each launch's own ratio (the median of its pairs, or over a sweep
    /// the geometric mean of its levels' medians), in launch order; empty
    /// when every server was started once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch_ratios: Vec<f64>,
    /// Where the next run's ratio should land, 95%, low then high: over
    /// launches, Student's t over the launches' log ratios with their
    /// spread counted for this run and for the next one (√2 × the
    /// interval's half-width). The interval says where the true ratio is;
    /// this says what running the study again will show. `None` where the
    /// interval is not drawn over launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run: Option<[f64; 2]>,
    /// How many runs of this study on this machine `next_run` was drawn
    /// over, this one included (1: it had no earlier run to learn from).
    /// Runs minutes apart differ by what no launch inside one run can
    /// sample; only earlier runs show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_runs: Option<u32>,
    /// Those runs' ratios spread beyond what their launches give, so the
    /// next-run range is the runs' own spread.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runs_differ: bool,
}

/// How a comparison's 95% interval was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalKind {
    /// The order statistics of one launch's per-pair ratios around their
    /// median (distribution-free); what every run stored before launches
    /// were a level reads as.
    #[default]
    OrderStatistic,
    /// Levels of one launch pooled: each level's pairs resampled within
    /// the level.
    StratifiedBootstrap,
    /// Launches as the unit: Student's t over each launch's log ratio,
    /// with one degree of freedom fewer than launches.
    Launches,
    /// Too few pairs for a 95% interval of any of the above.
    Unbounded,
}

impl IntervalKind {
    pub fn name(self) -> &'static str {
        match self {
            IntervalKind::OrderStatistic => "order_statistic",
            IntervalKind::StratifiedBootstrap => "stratified_bootstrap",
            IntervalKind::Launches => "launches",
            IntervalKind::Unbounded => "unbounded",
        }
    }

    pub fn parse(name: &str) -> Option<IntervalKind> {
        [
            IntervalKind::OrderStatistic,
            IntervalKind::StratifiedBootstrap,
            IntervalKind::Launches,
            IntervalKind::Unbounded,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// The words an unbounded ratio carries instead of an interval: too few
/// pairs, or launches too few for how much their own ratios differ.
pub fn unbounded_words(pairs: u32, launches: &[f64]) -> String {
    let lo = launches.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = launches.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if launches.len() >= 2 && lo.is_finite() && hi.is_finite() {
        format!(
            "too few launches to bound: {}, whose own ratios ran {lo:.3}–{hi:.3}",
            launches.len()
        )
    } else {
        format!("too few pairs to bound: {pairs}")
    }
}

impl Comparison {
    /// What an unbounded comparison says in place of its interval.
    pub fn unbounded_words(&self) -> String {
        unbounded_words(self.pairs, &self.launch_ratios)
    }

    /// Whether the interval bounds the ratio at all.
    pub fn bounded(&self) -> bool {
        self.interval != IntervalKind::Unbounded
    }

    /// Half-width of the interval relative to the ratio (0.05 = ±5%).
    pub fn relative_half_width(&self) -> f64 {
        if self.ratio == 0.0 {
            f64::INFINITY
        } else {
            (self.ci_high - self.ci_low) / 2.0 / self.ratio
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_needs_the_whole_interval_on_one_side() {
        assert_eq!(Decision::of(1.05, 1.10, 0.02), Decision::Higher);
        assert_eq!(Decision::of(0.90, 0.97, 0.02), Decision::Lower);
        assert_eq!(Decision::of(0.99, 1.01, 0.02), Decision::Equal);
        assert_eq!(Decision::of(0.99, 1.05, 0.02), Decision::Undecided);
        assert_eq!(Decision::of(0.95, 1.01, 0.02), Decision::Undecided);
        for d in ["higher", "lower", "equal", "undecided"] {
            assert_eq!(Decision::parse(d).unwrap().name(), d);
        }
    }

    #[test]
    fn settings_keep_their_names() {
        for s in Setting::ALL {
            assert_eq!(Setting::parse(s.name()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.name()));
        }
    }
}
