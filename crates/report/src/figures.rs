//! Figures derived from stored rounds, shared by every output format so the
//! HTML, Markdown, CSV and JSON never disagree.

use std::time::Duration;

use serde::Serialize;
use throng_model::max_users::{self, DEFAULT_PATIENCE_S};
use throng_model::{Estimate, RunData, StepRecord, StepStatus};

/// Bodies at least this large make a workload a large-file one, reported in
/// MB/s with transfer times (as the Apache/lighttpd/nginx/Varnish article
/// reported its 21 MB file) rather than req/s.
pub const LARGE_BODY_BYTES: f64 = 1024.0 * 1024.0;

/// What one step measured, reduced over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    pub server: String,
    pub cores: u32,
    pub workload: String,
    pub concurrency: u32,
    pub status: StepStatus,
    pub failure: Option<String>,
    pub rounds: u32,
    /// Requests per second over rounds (mean, median, 95% CI of the mean).
    pub throughput: Estimate,
    /// Median over rounds.
    pub mb_per_sec: f64,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// Fastest and slowest single response over all rounds.
    pub min_us: Option<u64>,
    pub max_us: Option<u64>,
    pub completed: u64,
    pub errors: u64,
    /// Server CPU (user + sys) per completed request, over all rounds.
    pub cpu_us_per_request: Option<f64>,
    /// Median over rounds of server CPU seconds per wall second.
    pub cpu_utilisation: Option<f64>,
    pub pss_peak_bytes: u64,
    pub rss_peak_bytes: u64,
    /// Mean body bytes per response.
    pub body_bytes_per_response: Option<f64>,
    /// Measured seconds over all rounds.
    pub measured_s: f64,
    pub shared_cores: bool,
    pub verdict: String,
    pub verdict_reasons: Vec<String>,
}

pub fn step_figures(s: &StepRecord) -> StepFigures {
    let rps: Vec<f64> = s
        .rounds
        .iter()
        .map(|r| r.summary.requests_per_sec)
        .collect();
    // The lab stores the estimate; recompute only when it is missing so old or
    // hand-made records still show their spread.
    let throughput = if s.throughput.n == 0 && !rps.is_empty() {
        throng_stats::estimate(&rps)
    } else {
        s.throughput.clone()
    };
    let completed: u64 = s.rounds.iter().map(|r| r.summary.completed).sum();
    let body: u64 = s.rounds.iter().map(|r| r.summary.body_bytes).sum();
    let cpu: f64 = s
        .rounds
        .iter()
        .map(|r| r.server.cpu_user_s + r.server.cpu_sys_s)
        .sum();
    let with_latency = s.rounds.iter().filter(|r| r.summary.latency_us.count > 0);
    StepFigures {
        server: s.server.clone(),
        cores: s.cores,
        workload: s.workload.clone(),
        concurrency: s.concurrency,
        status: s.status,
        failure: s.failure.clone(),
        rounds: s.rounds.len() as u32,
        throughput,
        mb_per_sec: s.median_of(|r| r.summary.mb_per_sec).unwrap_or(0.0),
        p50_us: s.p50_us(),
        p99_us: s.p99_us(),
        min_us: with_latency.clone().map(|r| r.summary.latency_us.min).min(),
        max_us: with_latency.map(|r| r.summary.latency_us.max).max(),
        completed,
        errors: s.rounds.iter().map(|r| r.summary.errors_total).sum(),
        cpu_us_per_request: (completed > 0).then(|| cpu / completed as f64 * 1e6),
        cpu_utilisation: s.median_of(|r| r.server.cpu_utilisation()),
        pss_peak_bytes: s
            .rounds
            .iter()
            .map(|r| r.server.pss_peak_bytes)
            .max()
            .unwrap_or(0),
        rss_peak_bytes: s
            .rounds
            .iter()
            .map(|r| r.server.rss_peak_bytes)
            .max()
            .unwrap_or(0),
        body_bytes_per_response: (completed > 0).then(|| body as f64 / completed as f64),
        measured_s: s.rounds.iter().map(|r| r.summary.duration_s).sum(),
        shared_cores: s.shared_cores,
        verdict: s.verdict.label(),
        verdict_reasons: s
            .verdict
            .reasons
            .iter()
            .map(|r| format!("{}: {}", r.code, r.message))
            .collect(),
    }
}

/// A step that produced numbers worth plotting.
pub fn measured(s: &StepFigures) -> bool {
    s.status == StepStatus::Ok && s.rounds > 0
}

/// Names in first-seen order: servers as the run lists them, then any that
/// only appear in steps.
pub fn server_names(run: &RunData) -> Vec<String> {
    let mut v: Vec<String> = run.servers.iter().map(|s| s.name.clone()).collect();
    for s in &run.steps {
        if !v.contains(&s.server) {
            v.push(s.server.clone());
        }
    }
    v
}

pub fn workload_names(run: &RunData) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in &run.steps {
        if !v.contains(&s.workload) {
            v.push(s.workload.clone());
        }
    }
    v
}

pub fn core_counts(run: &RunData) -> Vec<u32> {
    let mut v: Vec<u32> = run.steps.iter().map(|s| s.cores).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Mean body size per response of a workload over all its measured steps.
pub fn workload_body_bytes(figs: &[StepFigures], workload: &str) -> Option<f64> {
    let (mut bytes, mut n) = (0.0, 0u64);
    for f in figs.iter().filter(|f| f.workload == workload) {
        if let Some(b) = f.body_bytes_per_response {
            bytes += b * f.completed as f64;
            n += f.completed;
        }
    }
    (n > 0).then(|| bytes / n as f64)
}

pub fn is_large(figs: &[StepFigures], workload: &str) -> bool {
    workload_body_bytes(figs, workload).is_some_and(|b| b >= LARGE_BODY_BYTES)
}

/// The best step of a server for a workload: highest mean throughput (or
/// MB/s for large files) over core counts and concurrency levels.
pub fn best<'a>(
    figs: &'a [StepFigures],
    server: &str,
    workload: &str,
    large: bool,
) -> Option<&'a StepFigures> {
    let key = |f: &StepFigures| {
        if large {
            f.mb_per_sec
        } else {
            f.throughput.mean
        }
    };
    figs.iter()
        .filter(|f| f.server == server && f.workload == workload && measured(f))
        .max_by(|a, b| key(a).total_cmp(&key(b)))
}

/// One line of the summary table, in the spirit of ACME's thttpd "Web
/// Server Comparisons" table (features, sizes, max users, small files).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    pub server: String,
    pub version: String,
    pub model: String,
    /// Workload whose responses are smallest, and the best req/s on it.
    pub small_workload: Option<String>,
    pub small_rps: Option<f64>,
    pub small_verdict: Option<String>,
    pub large_workload: Option<String>,
    pub large_mb_per_sec: Option<f64>,
    pub large_verdict: Option<String>,
    /// The sweep's max users on the small workload by the one rule of
    /// [`throng_model::max_users`] (no error, p99 under 3 s, below the first
    /// broken level), the highest over core counts; `max_users_tested` tells
    /// whether the sweep went further.
    pub max_users: Option<u32>,
    pub max_users_tested: Option<u32>,
    /// Highest PSS of the server's process tree over the whole run.
    pub memory_bytes: Option<u64>,
    pub exe_bytes: u64,
}

pub fn summary_rows(run: &RunData, figs: &[StepFigures]) -> Vec<SummaryRow> {
    let workloads = workload_names(run);
    let small = workloads
        .iter()
        .filter(|w| !is_large(figs, w))
        .min_by(|a, b| {
            let size = |w: &str| workload_body_bytes(figs, w).unwrap_or(f64::MAX);
            size(a).total_cmp(&size(b))
        })
        .cloned();
    let large = workloads
        .iter()
        .filter(|w| is_large(figs, w))
        .max_by(|a, b| {
            let size = |w: &str| workload_body_bytes(figs, w).unwrap_or(0.0);
            size(a).total_cmp(&size(b))
        })
        .cloned();
    server_names(run)
        .into_iter()
        .map(|name| {
            let rec = run.servers.iter().find(|s| s.name == name);
            let small_best = small.as_deref().and_then(|w| best(figs, &name, w, false));
            let large_best = large.as_deref().and_then(|w| best(figs, &name, w, true));
            let patience = Duration::from_secs_f64(DEFAULT_PATIENCE_S);
            let max_users = small.as_deref().and_then(|w| {
                core_counts(run)
                    .into_iter()
                    .filter_map(|cores| {
                        let sweep: Vec<StepRecord> = run
                            .steps
                            .iter()
                            .filter(|s| s.server == name && s.workload == w && s.cores == cores)
                            .cloned()
                            .collect();
                        max_users::max_users(&sweep, patience)
                    })
                    .max()
            });
            let max_users_tested = figs
                .iter()
                .filter(|f| Some(&f.workload) == small.as_ref() && f.server == name)
                .filter(|f| f.status != StepStatus::Skipped)
                .map(|f| f.concurrency)
                .max();
            let memory = figs
                .iter()
                .filter(|f| f.server == name && f.rounds > 0)
                .map(|f| f.pss_peak_bytes)
                .max();
            SummaryRow {
                server: name.clone(),
                version: rec.map(|r| r.version.clone()).unwrap_or_default(),
                model: rec.map(|r| r.model.clone()).unwrap_or_default(),
                small_workload: small_best.map(|_| small.clone().unwrap_or_default()),
                small_rps: small_best.map(|f| f.throughput.mean),
                small_verdict: small_best.map(|f| f.verdict.clone()),
                large_workload: large_best.map(|_| large.clone().unwrap_or_default()),
                large_mb_per_sec: large_best.map(|f| f.mb_per_sec),
                large_verdict: large_best.map(|f| f.verdict.clone()),
                max_users,
                max_users_tested,
                memory_bytes: memory,
                exe_bytes: rec.map(|r| r.exe_bytes).unwrap_or(0),
            }
        })
        .collect()
}

/// Bytes as MiB with one decimal.
pub fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

/// Microseconds as a short duration.
pub fn duration_us(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{:.2} ms", us as f64 / 1e3)
    } else {
        format!("{us} µs")
    }
}

/// Thousands separated with commas: 1234567 → "1,234,567".
pub fn grouped(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).rem_euclid(3) == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with its 95% interval: "12,345 [12,100–12,590]".
pub fn rate_with_ci(e: &Estimate) -> String {
    if e.n >= 2 {
        format!(
            "{} [{}–{}]",
            grouped(e.mean.round() as u64),
            grouped(e.ci_low.max(0.0).round() as u64),
            grouped(e.ci_high.round() as u64)
        )
    } else {
        grouped(e.mean.round() as u64)
    }
}

/// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC".
pub fn utc(unix_s: f64) -> String {
    let secs = unix_s.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_helpers() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_709_251_200.5), "2024-03-01 00:00:00 UTC");
        assert_eq!(utc(951_825_600.0), "2000-02-29 12:00:00 UTC");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(999), "999");
        assert_eq!(duration_us(1_500), "1.50 ms");
        assert_eq!(duration_us(2_250_000), "2.25 s");
        assert_eq!(duration_us(42), "42 µs");
        assert_eq!(mib(3 * 1024 * 1024 / 2), "1.5 MiB");
    }

    fn step(concurrency: u32, errors: u64) -> StepRecord {
        let summary = throng_model::Summary {
            completed: 1000,
            requests_per_sec: 500.0,
            body_bytes: 7000,
            errors_total: errors,
            errors: [("reset".to_string(), errors)].into(),
            latency_us: throng_model::Latency {
                count: 1000,
                p50: 1000,
                p99: 5000,
                ..Default::default()
            },
            ..Default::default()
        };
        StepRecord {
            server: "x".into(),
            cores: 1,
            workload: "tiny".into(),
            concurrency,
            status: StepStatus::Ok,
            failure: None,
            log_tail: None,
            server_cpus: vec![0],
            client_cpus: vec![1],
            shared_cores: false,
            throughput: Estimate::default(),
            rounds: vec![throng_model::RoundRecord {
                summary,
                ..Default::default()
            }],
            verdict: Default::default(),
        }
    }

    #[test]
    fn summary_max_users_stops_at_the_first_broken_level() {
        // The model's one rule: a clean level above a broken one does not
        // count.
        let run = RunData {
            steps: vec![step(10, 0), step(50, 3), step(100, 0)],
            ..RunData::default()
        };
        let figs: Vec<StepFigures> = run.steps.iter().map(step_figures).collect();
        let rows = summary_rows(&run, &figs);
        assert_eq!(rows[0].max_users, Some(10));
        assert_eq!(rows[0].max_users_tested, Some(100));
    }
}
