//! A server's sampled stacks over a step's diagnostic round: folded, kept
//! compressed with the diagnosis, so a report can draw and classify them
//! again on a machine with no perf.

use serde::{Deserialize, Serialize};

/// What the sampler saw of one server over one diagnostic round, or why it
/// saw nothing: a profile that could not be taken is absent, never empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackProfile {
    /// Why there is no profile (no perf, not permitted, taken apart), when
    /// there is none; the figures below are then zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<String>,
    /// The sampling event ("cpu-clock": a software timer, where the
    /// machine exposes no hardware counters).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub event: String,
    /// CPU time between two samples of a thread, in nanoseconds: a sample
    /// stands for this much of the server's CPU.
    #[serde(default)]
    pub period_ns: u64,
    /// How long the sampler ran, in seconds.
    #[serde(default)]
    pub seconds: f64,
    /// The CPUs the server's processes may run on (its pinned cores).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// Samples of the server's processes (those in `folded`).
    #[serde(default)]
    pub samples: u64,
    /// Whether kernel frames were named from the kernel's symbol table.
    #[serde(default)]
    pub kernel_symbols: bool,
    /// User-space frames seen, and how many of them were named.
    #[serde(default)]
    pub user_frames: u64,
    #[serde(default)]
    pub user_frames_named: u64,
    /// The folded stacks (`comm;outer;...;inner count` lines, kernel frames
    /// ending in `_[k]`), gzip-compressed and base64-encoded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub folded_gz: String,
    /// Hardware counters over the same window, or why there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<HwCounters>,
}

/// The server's hardware counters over a diagnostic round (`perf stat`),
/// or why the machine has none to read (a VM exposing no PMU).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HwCounters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<String>,
    #[serde(default)]
    pub cycles: u64,
    #[serde(default)]
    pub instructions: u64,
    #[serde(default)]
    pub cache_misses: u64,
}

impl StackProfile {
    /// A profile that could not be taken, and why.
    pub fn absent(why: impl Into<String>) -> StackProfile {
        StackProfile {
            absent: Some(why.into()),
            ..StackProfile::default()
        }
    }

    /// The server's CPU per request the samples stand for, in microseconds.
    pub fn cpu_us_per_request(&self, requests: u64) -> Option<f64> {
        if self.absent.is_some() || requests == 0 {
            return None;
        }
        Some(self.samples as f64 * self.period_ns as f64 / 1e3 / requests as f64)
    }
}
