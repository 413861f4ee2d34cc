//! The summary's figures: for each server, its best figure on each
//! workload the summary shows, where it was measured, and its max users.

use std::time::Duration;

use serde::Serialize;
use throng_model::max_users::{self, SweepEnd, DEFAULT_PATIENCE_S};
use throng_model::{RunData, StepRecord, StepStatus, Verdict};

use crate::figures::{
    best, core_counts, is_dynamic, is_large, is_valid, server_names, workload_body_bytes,
    workload_names, StepFigures,
};

/// The workloads the summary's columns show, each named in its heading:
/// static and dynamic workloads are never under one heading.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SummaryWorkloads {
    /// The static workload with the smallest mean response (req/s).
    pub small: Option<String>,
    /// The dynamic workload with the smallest mean response (req/s).
    pub dynamic: Option<String>,
    /// The workload with the largest mean response, when its bodies
    /// average at least [`throng_model::LARGE_BODY_BYTES`] (MB/s).
    pub large: Option<String>,
    /// The workload whose max users the summary gives: the large one when
    /// the run searched it (ACME's table gives max users on large files),
    /// else the small static one, else the dynamic one, else the large one.
    pub max_users: Option<String>,
}

pub fn summary_workloads(run: &RunData, figs: &[StepFigures]) -> SummaryWorkloads {
    let workloads = workload_names(run);
    let smallest = |dynamic: bool| {
        workloads
            .iter()
            .filter(|w| !is_large(figs, w) && is_dynamic(w) == dynamic)
            .min_by(|a, b| {
                let size = |w: &str| workload_body_bytes(figs, w).unwrap_or(f64::MAX);
                size(a).total_cmp(&size(b))
            })
            .cloned()
    };
    let small = smallest(false);
    let dynamic = smallest(true);
    let large = workloads
        .iter()
        .filter(|w| is_large(figs, w))
        .max_by(|a, b| {
            let size = |w: &str| workload_body_bytes(figs, w).unwrap_or(0.0);
            size(a).total_cmp(&size(b))
        })
        .cloned();
    let searched = |w: &String| {
        run.servers
            .iter()
            .any(|s| s.max_users.iter().any(|m| &m.workload == w))
    };
    let max_users = large
        .clone()
        .filter(searched)
        .or(small.clone())
        .or(dynamic.clone())
        .or(large.clone());
    SummaryWorkloads {
        small,
        dynamic,
        large,
        max_users,
    }
}

/// Where a summary's best figure was measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRef {
    pub cores: u32,
    pub concurrency: u32,
    /// False when no step of the workload had a valid verdict and this,
    /// the best of the suspect ones, stands in.
    pub valid: bool,
}

impl StepRef {
    pub fn of(f: &StepFigures) -> StepRef {
        StepRef {
            cores: f.cores,
            concurrency: f.concurrency,
            valid: is_valid(f),
        }
    }
}

/// Where the summary's max users comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MaxUsersSource {
    /// The lab's search past the sweep, stored with the run.
    Searched,
    /// The sweep's own levels.
    Sweep,
}

impl MaxUsersSource {
    pub fn label(self) -> &'static str {
        match self {
            MaxUsersSource::Searched => "searched",
            MaxUsersSource::Sweep => "sweep",
        }
    }
}

/// One server's max users at one core count.
#[derive(Debug, Clone, PartialEq)]
struct MaxUsersAt {
    level: Option<u32>,
    /// Why a search that broke nothing stopped (its cap, or the machine's
    /// limit), as stored.
    unbroken_by: Option<String>,
    broke_at: Option<u32>,
    tested: Option<u32>,
    cores: u32,
    source: MaxUsersSource,
}

/// A server's max users on `workload` at each core count: the stored
/// search when there is one for that core count, the sweep's own answer
/// otherwise.
fn max_users_at(run: &RunData, server: &str, workload: &str) -> Vec<MaxUsersAt> {
    let searches = run
        .servers
        .iter()
        .find(|s| s.name == server)
        .map(|s| s.max_users.as_slice())
        .unwrap_or(&[]);
    let patience = Duration::from_secs_f64(DEFAULT_PATIENCE_S);
    let mut out = Vec::new();
    for cores in core_counts(run) {
        let searched = searches
            .iter()
            .find(|m| m.cores == cores && m.workload == workload)
            // A search with neither a good level nor a broken one says
            // nothing (its sweep measured no level).
            .filter(|m| m.level.is_some() || m.broke_at.is_some());
        if let Some(m) = searched {
            out.push(MaxUsersAt {
                level: m.level,
                unbroken_by: (m.broke_at.is_none() && m.level.is_some())
                    .then(|| m.broke_by.clone()),
                broke_at: m.broke_at,
                tested: m.broke_at.or(m.level),
                cores,
                source: MaxUsersSource::Searched,
            });
            continue;
        }
        let sweep: Vec<StepRecord> = run
            .steps
            .iter()
            .filter(|s| s.server == server && s.workload == workload && s.cores == cores)
            .filter(|s| s.status == StepStatus::Failed || !s.rounds.is_empty())
            .filter(|s| s.status != StepStatus::Skipped)
            .cloned()
            .collect();
        if sweep.is_empty() {
            continue;
        }
        let (level, end) = max_users::from_sweep(&sweep, patience);
        out.push(MaxUsersAt {
            level,
            unbroken_by: None,
            broke_at: match end {
                SweepEnd::Broke(at, _) => Some(at),
                SweepEnd::Unbroken | SweepEnd::Undecided(_) => None,
            },
            tested: sweep.iter().map(|s| s.concurrency).max(),
            cores,
            source: MaxUsersSource::Sweep,
        });
    }
    out
}

/// Why `server` has no figure on `workload`: the stored reason of its
/// unsupported steps (a recipe that cannot serve the workload), `None` when
/// some step of it was measured or none was stored unsupported.
fn unmeasured_because(run: &RunData, server: &str, workload: &str) -> Option<String> {
    let mut steps = run
        .steps
        .iter()
        .filter(|s| s.server == server && s.workload == workload)
        .peekable();
    steps.peek()?;
    let mut why = None;
    for s in steps {
        if s.status != StepStatus::Unsupported {
            return None;
        }
        why = why.or(s.failure.clone());
    }
    Some(why.unwrap_or_else(|| "unsupported".to_string()))
}

/// A summary figure's verdict in the JSON: its label alone.
fn verdict_label<S: serde::Serializer>(v: &Option<Verdict>, s: S) -> Result<S::Ok, S::Error> {
    v.as_ref().map(Verdict::label).serialize(s)
}

/// One line of the summary table, in the spirit of ACME's thttpd "Web
/// Server Comparisons" table (features, sizes, max users, small files).
/// Each best figure is [`best`]'s, with the step it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    pub server: String,
    pub version: String,
    pub model: String,
    /// The static workload with the smallest responses, and the best req/s
    /// on it.
    pub small_workload: Option<String>,
    pub small_rps: Option<f64>,
    #[serde(serialize_with = "verdict_label")]
    pub small_verdict: Option<Verdict>,
    pub small_step: Option<StepRef>,
    pub large_workload: Option<String>,
    pub large_mb_per_sec: Option<f64>,
    #[serde(serialize_with = "verdict_label")]
    pub large_verdict: Option<Verdict>,
    pub large_step: Option<StepRef>,
    /// The dynamic workload with the smallest responses, and the best req/s
    /// on it.
    pub dynamic_workload: Option<String>,
    pub dynamic_rps: Option<f64>,
    #[serde(serialize_with = "verdict_label")]
    pub dynamic_verdict: Option<Verdict>,
    pub dynamic_step: Option<StepRef>,
    /// Why the server has no dynamic figure, when its steps were not
    /// measured: its recipe's reason for an unsupported workload ("the
    /// varnish recipe measures the cache ...").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_missing: Option<String>,
    /// Max users on `max_users_workload` (see [`SummaryWorkloads`]), the
    /// highest over core counts: at each, the stored search when there is
    /// one, else the sweep's answer by the one rule of
    /// [`throng_model::max_users`] (no error, p99 under 3 s, below the
    /// first broken level). `None` with `max_users_tested` set: even the
    /// first level broke.
    pub max_users: Option<u32>,
    /// The highest level tried: the first that broke, or the highest good
    /// one when nothing broke.
    pub max_users_tested: Option<u32>,
    pub max_users_workload: Option<String>,
    pub max_users_cores: Option<u32>,
    pub max_users_source: Option<MaxUsersSource>,
    /// The first level that broke; `None` when nothing broke up to the
    /// highest level tried (the limit was not found).
    pub max_users_broke_at: Option<u32>,
    /// What stopped a search that broke nothing, as stored: its cap, or
    /// the machine's limit ("none found up to 19936 (the machine's limit:
    /// ...)"); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_users_unbroken_by: Option<String>,
    /// Highest PSS of the server's process tree over the whole run.
    pub memory_bytes: Option<u64>,
    /// `None` (null) when not known: a URL `throng load` was pointed at.
    pub exe_bytes: Option<u64>,
}

pub fn summary_rows(run: &RunData, figs: &[StepFigures]) -> Vec<SummaryRow> {
    let cols = summary_workloads(run, figs);
    server_names(run)
        .into_iter()
        .map(|name| {
            let rec = run.servers.iter().find(|s| s.name == name);
            let best_of = |w: &Option<String>, large: bool| {
                w.as_deref()
                    .and_then(|w| best(figs, &name, w, large))
                    .map(|f| (w.clone().unwrap_or_default(), f))
            };
            let small = best_of(&cols.small, false);
            let dynamic = best_of(&cols.dynamic, false);
            let large = best_of(&cols.large, true);
            // The highest over core counts; at a tie, a searched figure,
            // then the fewer cores.
            let users = cols.max_users.as_deref().and_then(|w| {
                max_users_at(run, &name, w).into_iter().max_by(|a, b| {
                    a.level
                        .cmp(&b.level)
                        .then(
                            (a.source == MaxUsersSource::Searched)
                                .cmp(&(b.source == MaxUsersSource::Searched)),
                        )
                        .then(b.cores.cmp(&a.cores))
                })
            });
            // A server that was never sampled has no memory figure, not 0.
            let memory = figs
                .iter()
                .filter(|f| f.server == name && f.rounds > 0)
                .filter_map(|f| f.pss_peak_bytes)
                .max();
            SummaryRow {
                server: name.clone(),
                version: rec.map(|r| r.version.clone()).unwrap_or_default(),
                model: rec.map(|r| r.model.clone()).unwrap_or_default(),
                small_workload: small.as_ref().map(|(w, _)| w.clone()),
                small_rps: small.as_ref().map(|(_, f)| f.throughput.mean),
                small_verdict: small.as_ref().map(|(_, f)| f.verdict.clone()),
                small_step: small.as_ref().map(|(_, f)| StepRef::of(f)),
                large_workload: large.as_ref().map(|(w, _)| w.clone()),
                large_mb_per_sec: large.as_ref().map(|(_, f)| f.mb_per_sec),
                large_verdict: large.as_ref().map(|(_, f)| f.verdict.clone()),
                large_step: large.as_ref().map(|(_, f)| StepRef::of(f)),
                dynamic_workload: dynamic.as_ref().map(|(w, _)| w.clone()),
                dynamic_rps: dynamic.as_ref().map(|(_, f)| f.throughput.mean),
                dynamic_verdict: dynamic.as_ref().map(|(_, f)| f.verdict.clone()),
                dynamic_step: dynamic.as_ref().map(|(_, f)| StepRef::of(f)),
                dynamic_missing: match (&dynamic, &cols.dynamic) {
                    (None, Some(w)) => unmeasured_because(run, &name, w),
                    _ => None,
                },
                max_users: users.as_ref().and_then(|u| u.level),
                max_users_tested: users.as_ref().and_then(|u| u.tested),
                max_users_workload: users.as_ref().and(cols.max_users.clone()),
                max_users_cores: users.as_ref().map(|u| u.cores),
                max_users_source: users.as_ref().map(|u| u.source),
                max_users_broke_at: users.as_ref().and_then(|u| u.broke_at),
                max_users_unbroken_by: users.as_ref().and_then(|u| u.unbroken_by.clone()),
                memory_bytes: memory,
                exe_bytes: rec.map(|r| r.exe_bytes).filter(|&b| b > 0),
            }
        })
        .collect()
}
