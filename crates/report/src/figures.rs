//! Figures derived from stored rounds, shared by every output format so the
//! HTML, Markdown, CSV and JSON never disagree.

use std::collections::BTreeMap;

use serde::Serialize;
use throng_model::max_users;
use throng_model::{
    Diagnosis, Estimate, Latency, RoundRecord, RunData, RunRecord, ServerUsage, SessionCounts,
    Sessions, StepRecord, StepStatus, Verdict, WorkloadKind,
};

pub use throng_model::LOAD_STUDY;

/// A run `throng load --save` stored: its study text is the command line,
/// not a study file ([`RunRecord::kind`]).
pub fn is_load_run(run: &RunRecord) -> bool {
    run.load_command().is_some()
}

/// The command line of a load run as the report shows it: the program
/// named as on a PATH, since the directory it was started from means
/// nothing to a reader on another machine.
pub fn load_command(run: &RunRecord) -> String {
    let c = run.study_toml.trim();
    match c.split_once(' ') {
        // A quoted program path is left whole: its quotes span the
        // directory.
        Some((prog, rest)) if !prog.starts_with(['\'', '$']) => {
            let name = prog.rsplit('/').next().unwrap_or(prog);
            format!("{name} {rest}")
        }
        _ => c.to_string(),
    }
}

/// Whether the server's process tree was sampled over a round. The sampler
/// always records the seconds it covered, while usage nobody measured (a
/// target `throng load` did not start) stays all zeros; its zeros are not
/// an idle server.
pub fn sampled(u: &ServerUsage) -> bool {
    u.wall_s > 0.0
}

/// A run's machine checks that warned or failed, which every report and
/// comparison of it names.
pub fn flagged_findings(run: &RunData) -> Vec<&throng_model::Finding> {
    run.run
        .doctor
        .iter()
        .filter(|f| f.severity != throng_model::Severity::Ok)
        .collect()
}

/// What one step measured, reduced over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    pub server: String,
    pub cores: u32,
    pub workload: String,
    pub concurrency: u32,
    /// The rate offered in an open-model step; such steps are drawn
    /// against it, not against concurrency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub status: StepStatus,
    pub failure: Option<String>,
    pub rounds: u32,
    /// Rounds without a single completed response (counted in `rounds`):
    /// they add no latency figures.
    pub empty_rounds: u32,
    /// Requests per second over rounds (mean, median, 95% CI of the mean).
    pub throughput: Estimate,
    /// Mean over rounds, as `throughput.mean`.
    pub mb_per_sec: f64,
    /// Mean latency over every response of the step's rounds (ab's "Time
    /// per request (mean)", measured rather than derived from the elapsed
    /// time): [`weighted_mean_latency_us`].
    pub latency_mean_us: Option<f64>,
    /// Median over the rounds that completed a response.
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// Fastest and slowest single response over the rounds that completed
    /// one.
    pub min_us: Option<u64>,
    pub max_us: Option<u64>,
    pub completed: u64,
    pub errors: u64,
    /// Server CPU (user + sys) per completed request, over the rounds that
    /// sampled the server; `None` when none did.
    pub cpu_us_per_request: Option<f64>,
    /// The server's CPU seconds per wall second over the rounds that
    /// sampled it, all together.
    pub cpu_utilisation: Option<f64>,
    /// `None` (null in the JSON) when no round sampled the server's
    /// memory: a target `throng load` loaded but did not start has no
    /// memory figure, not one of 0 bytes.
    pub pss_peak_bytes: Option<u64>,
    pub rss_peak_bytes: Option<u64>,
    /// Whether any round sampled the server; false for a target that
    /// `throng load` loaded but did not start. Left out of the JSON, where
    /// the CPU and memory figures are null instead.
    #[serde(skip)]
    pub server_sampled: bool,
    /// Mean body bytes per response.
    pub body_bytes_per_response: Option<f64>,
    /// Measured seconds over all rounds.
    pub measured_s: f64,
    pub shared_cores: bool,
    /// The model's verdict, as stored; worded only where it is shown. The
    /// JSON keeps its first shape: a label and "code: message" reasons.
    #[serde(flatten, serialize_with = "verdict_fields")]
    pub verdict: Verdict,
    /// Syscalls by name per response, from the diagnostic round when it
    /// counted them.
    pub syscalls_per_request: Option<BTreeMap<String, f64>>,
    /// The diagnostic round after the measured ones, as stored; none of the
    /// figures above comes from it.
    pub diagnosis: Option<Diagnosis>,
    /// Users who walked sessions; left out of the JSON for a step of plain
    /// requests, so those steps keep their shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionFigures>,
}

/// What the users of one step who walked sessions did, reduced over the
/// step's rounds. Its users are the step's `concurrency`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionFigures {
    /// Median over rounds of completed sessions per second.
    pub sessions_per_sec: f64,
    /// Median over rounds of the users asked to arrive per second; `None`
    /// for a fixed population, which can turn nobody away.
    pub arrival_per_sec: Option<f64>,
    /// Sums over rounds.
    #[serde(flatten, serialize_with = "session_count_fields")]
    pub counts: SessionCounts,
    /// Median over the rounds that completed a session of each round's p50
    /// (p99) session time, first send to last answer.
    pub duration_p50_us: Option<u64>,
    pub duration_p99_us: Option<u64>,
    /// Mean of every think time observed over the rounds:
    /// [`weighted_mean_us`].
    pub think_mean_us: Option<f64>,
    /// Most users active at once in any round.
    pub active_max: u64,
}

/// A step's session counts in the JSON as it always read: late arrivals
/// stay out, since the verdict judges them round by round and a sum over
/// rounds says nothing of any one.
fn session_count_fields<S: serde::Serializer>(c: &SessionCounts, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(5))?;
    m.serialize_entry("started", &c.started)?;
    m.serialize_entry("completed", &c.completed)?;
    m.serialize_entry("failed", &c.failed)?;
    m.serialize_entry("unfinished", &c.unfinished)?;
    m.serialize_entry("turned_away", &c.turned_away)?;
    m.end()
}

/// The sessions of `rounds`, `None` when no round had users walking them.
pub fn session_figures(rounds: &[RoundRecord]) -> Option<SessionFigures> {
    let of: Vec<&Sessions> = rounds
        .iter()
        .filter_map(|r| r.summary.sessions.as_ref())
        .collect();
    if of.is_empty() {
        return None;
    }
    // A round that completed no session has no session time: its zeros
    // are not short sessions. Percentiles are taken as each round measured
    // them and only their median is reported, since a mean of percentiles
    // is no percentile of anything.
    let done: Vec<&Latency> = of
        .iter()
        .map(|x| &x.duration_us)
        .filter(|d| d.count > 0)
        .collect();
    let percentile = |f: fn(&Latency) -> u64| {
        let v: Vec<f64> = done.iter().map(|d| f(d) as f64).collect();
        throng_stats::median(&v).map(|m| m as u64)
    };
    let arrivals: Vec<f64> = of.iter().filter_map(|x| x.arrival_per_sec).collect();
    let per_sec: Vec<f64> = of.iter().map(|x| x.sessions_per_sec).collect();
    Some(SessionFigures {
        sessions_per_sec: throng_stats::median(&per_sec).unwrap_or(0.0),
        arrival_per_sec: throng_stats::median(&arrivals),
        counts: of.iter().map(|x| &x.counts).sum(),
        duration_p50_us: percentile(|d| d.p50),
        duration_p99_us: percentile(|d| d.p99),
        think_mean_us: weighted_mean_us(of.iter().map(|x| &x.think_us)),
        active_max: of.iter().map(|x| x.active_max).max().unwrap_or(0),
    })
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
    // Server figures come from the rounds that sampled the server alone: a
    // round that did not would count as one that used no CPU.
    let sampled_rounds = || s.rounds.iter().filter(|r| sampled(&r.server));
    let cpu: f64 = sampled_rounds()
        .map(|r| r.server.cpu_user_s + r.server.cpu_sys_s)
        .sum();
    let cpu_completed: u64 = sampled_rounds().map(|r| r.summary.completed).sum();
    // Over all of them, as CPU per request is: a median of rounds hid
    // those where the server was starved, and disagreed with the CPU per
    // request beside it (44% against the 55% that 11.9 µs at 47,198 req/s
    // makes).
    let wall: f64 = sampled_rounds().map(|r| r.server.wall_s).sum();
    // A round that completed nothing has no latency: its zeros are not a
    // fastest transfer.
    let with_latency = s
        .rounds
        .iter()
        .filter(|r| max_users::has_latency(&r.summary));
    let empty_rounds = s.rounds.len() - with_latency.clone().count();
    StepFigures {
        server: s.server.clone(),
        cores: s.cores,
        workload: s.workload.clone(),
        concurrency: s.concurrency,
        rate: s.rate,
        status: s.status,
        failure: s.failure.clone(),
        rounds: s.rounds.len() as u32,
        empty_rounds: empty_rounds as u32,
        throughput,
        // The mean, as the req/s beside it is: the two then agree through
        // the response size, where a median of the one beside a mean of
        // the other did not when rounds spread.
        mb_per_sec: if s.rounds.is_empty() {
            0.0
        } else {
            s.rounds.iter().map(|r| r.summary.mb_per_sec).sum::<f64>() / s.rounds.len() as f64
        },
        latency_mean_us: weighted_mean_latency_us(&s.rounds),
        p50_us: s.p50_us(),
        p99_us: s.p99_us(),
        min_us: with_latency.clone().map(|r| r.summary.latency_us.min).min(),
        max_us: with_latency.map(|r| r.summary.latency_us.max).max(),
        completed,
        errors: s.rounds.iter().map(|r| r.summary.errors_total).sum(),
        cpu_us_per_request: (cpu_completed > 0).then(|| cpu / cpu_completed as f64 * 1e6),
        cpu_utilisation: (wall > 0.0).then(|| cpu / wall),
        pss_peak_bytes: s
            .rounds
            .iter()
            .map(|r| r.server.pss_peak_bytes)
            .max()
            .filter(|&b| b > 0),
        rss_peak_bytes: s
            .rounds
            .iter()
            .map(|r| r.server.rss_peak_bytes)
            .max()
            .filter(|&b| b > 0),
        server_sampled: sampled_rounds().next().is_some(),
        body_bytes_per_response: (completed > 0).then(|| body as f64 / completed as f64),
        measured_s: s.rounds.iter().map(|r| r.summary.duration_s).sum(),
        shared_cores: s.shared_cores,
        verdict: s.verdict.clone(),
        syscalls_per_request: s
            .diagnosis
            .as_ref()
            .filter(|d| d.unavailable.is_none())
            .map(|d| d.syscalls_per_request.clone()),
        diagnosis: s.diagnosis.clone(),
        sessions: session_figures(&s.rounds),
    }
}

/// The mean latency of all the responses of `rounds`: each round's mean
/// times the samples it was taken over is that round's total latency, so
/// the step's mean is Σ meanᵢ·countᵢ / Σ countᵢ. A plain mean of the
/// rounds' means would give a round of 100 responses the say of one of
/// 10,000. The weight is the latency count rather than `completed`: it is
/// what each mean was divided by (the engine records one sample per
/// completed response, so the two agree in a stored round). A round
/// without samples (none completed) adds nothing, and a step with none
/// has no mean rather than 0.
pub fn weighted_mean_latency_us(rounds: &[RoundRecord]) -> Option<f64> {
    weighted_mean_us(rounds.iter().map(|r| &r.summary.latency_us))
}

/// The mean of every sample behind `spectra`, each spectrum's mean
/// weighed by its count, as [`weighted_mean_latency_us`] explains; `None`
/// without a sample.
pub fn weighted_mean_us<'a>(spectra: impl Iterator<Item = &'a Latency>) -> Option<f64> {
    let (total_us, n) = spectra
        .filter(|l| l.count > 0)
        .fold((0.0, 0u64), |(t, n), l| {
            (t + l.mean * l.count as f64, n + l.count)
        });
    (n > 0).then(|| total_us / n as f64)
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
    workload_body_bytes(figs, workload).is_some_and(throng_model::is_large_body)
}

/// A step whose figures can be believed: a valid verdict, and its own
/// cores (steps that share cores with the load generator are marked so
/// even in runs stored before the verdict said it).
pub fn is_valid(f: &StepFigures) -> bool {
    f.verdict.is_valid() && !f.shared_cores
}

/// The figure a step is ranked by: MB/s for a large file, whose
/// requests per second are a handful whatever the server, else requests
/// per second.
pub fn headline(f: &StepFigures, large: bool) -> f64 {
    if large {
        f.mb_per_sec
    } else {
        f.throughput.mean
    }
}

/// The best step of a server for a workload: the highest mean throughput
/// (or mean MB/s for large files) over core counts and concurrency
/// levels among the steps with a valid verdict; the best of the suspect
/// ones only when none is valid (then [`is_valid`] is false for it, and
/// the reports mark it).
pub fn best<'a>(
    figs: &'a [StepFigures],
    server: &str,
    workload: &str,
    large: bool,
) -> Option<&'a StepFigures> {
    let key = |f: &StepFigures| headline(f, large);
    let steps = || {
        figs.iter()
            .filter(move |f| f.server == server && f.workload == workload && measured(f))
    };
    let top =
        |it: &mut dyn Iterator<Item = &'a StepFigures>| it.max_by(|a, b| key(a).total_cmp(&key(b)));
    top(&mut steps().filter(|f| is_valid(f))).or_else(|| top(&mut steps()))
}

/// "1 core", "2 cores".
pub fn cores_label(cores: u32) -> String {
    if cores == 1 {
        "1 core".to_string()
    } else {
        format!("{cores} cores")
    }
}

/// [`cores_label`], or `None` for 0 cores: the count of a server throng
/// did not start (a saved `throng load`), which nobody knows; "0 cores"
/// would read as a measurement.
pub fn known_cores(cores: u32) -> Option<String> {
    (cores > 0).then(|| cores_label(cores))
}

/// The parts of a label joined by commas, leaving out the unknown ones:
/// `labelled([Some("sweep".into()), known_cores(0)])` is "sweep".
pub fn labelled<const N: usize>(parts: [Option<String>; N]) -> String {
    parts.into_iter().flatten().collect::<Vec<_>>().join(", ")
}

/// The steps a report's Failures section lists, each with its heading
/// (server, cores, workload, level), why it failed and the server's last
/// output.
pub fn failures(run: &throng_model::RunData) -> Vec<(String, &str, Option<&str>)> {
    run.steps
        .iter()
        .filter(|s| s.failure.is_some() || s.log_tail.is_some())
        .map(|s| {
            let label = labelled([
                Some(s.server.clone()),
                (s.cores > 0).then(|| format!("{} core(s)", s.cores)),
                Some(s.workload.clone()),
                Some(format!("concurrency {}", s.concurrency)),
                s.rate.map(|r| format!("{r} req/s offered")),
            ]);
            (
                label,
                s.failure.as_deref().unwrap_or("failed"),
                s.log_tail.as_deref(),
            )
        })
        .collect()
}

/// Where a step was measured: "2 cores, c=200", or "c=200" when its
/// cores are not known.
pub fn step_source(cores: u32, concurrency: u32) -> String {
    labelled([known_cores(cores), Some(format!("c={concurrency}"))])
}

/// Whether a workload is answered by a program behind the server (`cgi`,
/// `php`, `app`); names the model does not know are taken as static.
pub fn is_dynamic(workload: &str) -> bool {
    WorkloadKind::parse(workload).is_some_and(WorkloadKind::is_dynamic)
}

/// A step's verdict in the JSON as it always read: `verdict`, the label,
/// and `verdict_reasons`, each reason as "code: message".
fn verdict_fields<S: serde::Serializer>(v: &Verdict, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let reasons: Vec<String> = v
        .reasons
        .iter()
        .map(|r| format!("{}: {}", r.code, r.message))
        .collect();
    let mut m = s.serialize_map(Some(2))?;
    m.serialize_entry("verdict", &v.label())?;
    m.serialize_entry("verdict_reasons", &reasons)?;
    m.end()
}

/// Bytes as MiB with one decimal.
pub fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

/// Microseconds as a short duration, spaced as prose: "850 µs".
pub fn duration_us(us: u64) -> String {
    throng_model::units::duration_us(us as f64, " ")
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
    rate_with_ci_to(e, 0)
}

/// A step's req/s with its interval, to one decimal for a large file: a
/// short round completes few 21 MB responses, so whole numbers hide its
/// spread ("30 [30–30]") where its MB/s shows one.
pub fn step_rate_with_ci(f: &StepFigures) -> String {
    let large = f
        .body_bytes_per_response
        .is_some_and(throng_model::is_large_body);
    rate_with_ci_to(&f.throughput, if large { 1 } else { 0 })
}

/// "12,345 [12,100–12,590]", or with `decimals`, "30.4 [29.8–31.0]".
fn rate_with_ci_to(e: &Estimate, decimals: usize) -> String {
    if decimals > 0 {
        let d = decimals;
        return if e.n >= 2 {
            format!(
                "{:.d$} [{:.d$}–{:.d$}]",
                e.mean,
                e.ci_low.max(0.0),
                e.ci_high
            )
        } else {
            format!("{:.d$}", e.mean)
        };
    }
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
    use crate::summary::{
        summary_rows, summary_workloads, MaxUsersSource, StepRef, SummaryWorkloads,
    };

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

    #[test]
    fn a_steps_mb_per_sec_is_the_mean_of_its_rounds_as_its_req_per_sec_is() {
        let mut st = step(10, 0);
        let round = st.rounds[0].clone();
        st.rounds = [(100.0, 1.0), (100.0, 1.0), (400.0, 4.0)]
            .iter()
            .map(|&(rps, mb)| {
                let mut r = round.clone();
                r.summary.requests_per_sec = rps;
                r.summary.mb_per_sec = mb;
                r
            })
            .collect();
        let f = step_figures(&st);
        assert_eq!(f.throughput.mean, 200.0);
        // The median, 1.0, was half of what the req/s beside it carried.
        assert_eq!(f.mb_per_sec, 2.0);
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
            server_cpus: vec![0],
            client_cpus: vec![1],
            rounds: vec![throng_model::RoundRecord {
                summary,
                ..Default::default()
            }],
            ..StepRecord::new("x", 1, "tiny", concurrency)
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
        assert_eq!(rows[0].max_users_broke_at, Some(50));
        assert_eq!(rows[0].max_users_source, Some(MaxUsersSource::Sweep));
    }

    /// A step of `server` on `workload` at `cores` and `concurrency`, with
    /// rounds at `rps`, `body` bytes a response and this verdict.
    fn at(
        server: &str,
        workload: &str,
        cores: u32,
        concurrency: u32,
        rps: f64,
        body: u64,
        suspect: Option<throng_model::ReasonCode>,
    ) -> StepRecord {
        let mut st = step(concurrency, 0);
        st.server = server.into();
        st.workload = workload.into();
        st.cores = cores;
        st.rounds[0].summary.requests_per_sec = rps;
        st.rounds[0].summary.body_bytes = body * 1000;
        st.rounds[0].summary.mb_per_sec = rps * body as f64 / 1e6;
        if let Some(code) = suspect {
            st.verdict.push(code, "why");
        }
        st
    }

    #[test]
    fn best_prefers_valid_steps_and_says_where_it_comes_from() {
        use throng_model::ReasonCode::{Noisy, SharedCores};
        let run = RunData {
            steps: vec![
                // The top mean is noisy, the next shares cores: the best is
                // the valid step below both.
                at("a", "tiny", 1, 200, 9_000.0, 7, Some(Noisy)),
                at("a", "tiny", 2, 200, 8_500.0, 7, Some(SharedCores)),
                at("a", "tiny", 1, 100, 8_000.0, 7, None),
                // No valid step at all: the best suspect one, marked.
                at("b", "tiny", 1, 100, 5_000.0, 7, Some(Noisy)),
                at("b", "tiny", 1, 200, 6_000.0, 7, Some(Noisy)),
            ],
            ..RunData::default()
        };
        let mut figs: Vec<StepFigures> = run.steps.iter().map(step_figures).collect();
        // A step stored before the verdict said shared_cores.
        figs[1].verdict = Verdict::valid();
        figs[1].shared_cores = true;
        let a = best(&figs, "a", "tiny", false).unwrap();
        assert_eq!(
            (a.cores, a.concurrency, a.throughput.mean),
            (1, 100, 8_000.0)
        );
        assert!(is_valid(a));
        let b = best(&figs, "b", "tiny", false).unwrap();
        assert_eq!(
            (b.concurrency, b.verdict.label().as_str()),
            (200, "suspect: noisy")
        );
        let rows = summary_rows(&run, &figs);
        assert_eq!(
            rows[0].small_step,
            Some(StepRef {
                cores: 1,
                concurrency: 100,
                valid: true
            })
        );
        assert_eq!(
            rows[1].small_step,
            Some(StepRef {
                cores: 1,
                concurrency: 200,
                valid: false
            })
        );
        assert_eq!(step_source(2, 200), "2 cores, c=200");
        assert_eq!(step_source(1, 4), "1 core, c=4");
        assert_eq!(step_source(0, 5), "c=5");
    }

    #[test]
    fn static_dynamic_and_large_workloads_each_have_their_column() {
        // cgi's 14-byte answer is smaller than page's 6451 bytes, yet it is
        // a dynamic workload: it never stands for the static column.
        let run = RunData {
            steps: vec![
                at("a", "page", 1, 10, 20_000.0, 6451, None),
                at("a", "cgi", 1, 10, 842.0, 14, None),
                at("a", "php", 1, 10, 1_500.0, 5000, None),
                at("a", "large", 1, 10, 10.0, 22_020_096, None),
            ],
            ..RunData::default()
        };
        let figs: Vec<StepFigures> = run.steps.iter().map(step_figures).collect();
        let cols = summary_workloads(&run, &figs);
        assert_eq!(
            cols,
            SummaryWorkloads {
                small: Some("page".into()),
                dynamic: Some("cgi".into()),
                large: Some("large".into()),
                max_users: Some("page".into()),
            }
        );
        let row = &summary_rows(&run, &figs)[0];
        assert_eq!(row.small_rps, Some(20_000.0));
        assert_eq!(row.dynamic_rps, Some(842.0));
        assert_eq!(row.dynamic_workload.as_deref(), Some("cgi"));
        assert_eq!(row.max_users_workload.as_deref(), Some("page"));
        // A run of dynamic workloads alone: no static column; max users on
        // the dynamic one.
        let dynamic_only = RunData {
            steps: vec![at("a", "cgi", 1, 10, 842.0, 14, None)],
            ..RunData::default()
        };
        let figs: Vec<StepFigures> = dynamic_only.steps.iter().map(step_figures).collect();
        let cols = summary_workloads(&dynamic_only, &figs);
        assert_eq!((cols.small, cols.dynamic.as_deref()), (None, Some("cgi")));
        assert_eq!(cols.max_users.as_deref(), Some("cgi"));
    }

    #[test]
    fn max_users_is_the_search_where_one_was_stored_else_the_sweep() {
        let mut steps = Vec::new();
        for cores in [1, 2] {
            for c in [10, 50, 100] {
                steps.push(at("a", "tiny", cores, c, 1000.0, 7, None));
            }
        }
        let mut run = RunData {
            servers: vec![throng_model::ServerRecord {
                name: "a".into(),
                ..Default::default()
            }],
            steps,
            ..RunData::default()
        };
        let figs: Vec<StepFigures> = run.steps.iter().map(step_figures).collect();
        // The sweep alone: 100+ on either core count, the fewer cores named.
        let row = &summary_rows(&run, &figs)[0];
        assert_eq!(
            (
                row.max_users,
                row.max_users_broke_at,
                row.max_users_cores,
                row.max_users_source
            ),
            (Some(100), None, Some(1), Some(MaxUsersSource::Sweep))
        );
        // A search stored for 2 cores: 1,600 there, where it broke at
        // 3,200; 1 core stays the sweep's 100+.
        run.servers[0].max_users.push(throng_model::MaxUsers {
            cores: 2,
            workload: "tiny".into(),
            patience_s: 3.0,
            level: Some(1600),
            broke_at: Some(3200),
            broke_by: "37 resets".into(),
        });
        // A search on another workload does not stand for this one.
        run.servers[0].max_users.push(throng_model::MaxUsers {
            cores: 1,
            workload: "small-files".into(),
            patience_s: 3.0,
            level: Some(9000),
            broke_at: None,
            broke_by: "no failure up to the cap of 9000".into(),
        });
        let row = &summary_rows(&run, &figs)[0];
        assert_eq!(
            (
                row.max_users,
                row.max_users_broke_at,
                row.max_users_tested,
                row.max_users_cores,
                row.max_users_source
            ),
            (
                Some(1600),
                Some(3200),
                Some(3200),
                Some(2),
                Some(MaxUsersSource::Searched)
            )
        );
    }

    #[test]
    fn server_figures_come_from_the_rounds_that_sampled_it() {
        let mut st = step(10, 0);
        st.rounds[0].server = throng_model::ServerUsage {
            cpu_user_s: 0.01,
            cpu_sys_s: 0.01,
            pss_peak_bytes: 5 << 20,
            wall_s: 2.0,
            ..Default::default()
        };
        // A second round of as many responses that sampled nothing: not a
        // server that answered them for free.
        st.rounds.push(st.rounds[0].clone());
        st.rounds[1].server = throng_model::ServerUsage::default();
        let f = step_figures(&st);
        assert_eq!(f.cpu_us_per_request, Some(20.0));
        assert_eq!(f.cpu_utilisation, Some(0.01));
        assert_eq!(f.pss_peak_bytes, Some(5 << 20));
        assert!(f.server_sampled);
        st.rounds.remove(0);
        let f = step_figures(&st);
        assert_eq!((f.cpu_us_per_request, f.cpu_utilisation), (None, None));
        assert_eq!((f.pss_peak_bytes, f.rss_peak_bytes), (None, None));
        assert!(!f.server_sampled);
    }

    #[test]
    fn a_load_run_is_one_command_line() {
        let mut r = RunRecord {
            study: LOAD_STUDY.into(),
            study_toml: "/home/u/target/release/throng load 'http://h/a?b' -c 5 --save".into(),
            ..Default::default()
        };
        assert!(is_load_run(&r));
        assert_eq!(load_command(&r), "throng load 'http://h/a?b' -c 5 --save");
        r.study_toml = "'/opt/my tools/throng' load http://h/".into();
        assert_eq!(load_command(&r), r.study_toml);
        // A lab study named "load" is a study file of several lines.
        r.study_toml = "name = \"load\"\nservers = [\"nginx\"]\n".into();
        assert!(!is_load_run(&r));
        r.study = "quick".into();
        r.study_toml = "throng load http://h/".into();
        assert!(!is_load_run(&r));
        assert_eq!(known_cores(0), None);
        assert_eq!(known_cores(2).as_deref(), Some("2 cores"));
    }

    #[test]
    fn the_mean_latency_weighs_each_round_by_the_samples_behind_its_mean() {
        let round = |count, mean| RoundRecord {
            summary: throng_model::Summary {
                completed: count,
                latency_us: throng_model::Latency {
                    count,
                    mean,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        // (1 × 1,000 + 3 × 3,000) / 4, not (1,000 + 3,000) / 2.
        let mut rounds = vec![round(1, 1_000.0), round(3, 3_000.0)];
        assert_eq!(weighted_mean_latency_us(&rounds), Some(2_500.0));
        // Responses without latency samples have no mean to weigh: their
        // 0 is not a fast answer.
        rounds.push(round(0, 0.0));
        rounds[2].summary.completed = 5;
        assert_eq!(weighted_mean_latency_us(&rounds), Some(2_500.0));
        assert_eq!(weighted_mean_latency_us(&rounds[2..]), None);
        assert_eq!(weighted_mean_latency_us(&[]), None);
    }

    #[test]
    fn sessions_are_medians_sums_and_a_weighted_mean_over_rounds() {
        let round = |per_sec, started, done: u64, p50, p99, think: (u64, f64)| RoundRecord {
            summary: throng_model::Summary {
                sessions: Some(Sessions {
                    sessions_per_sec: per_sec,
                    counts: SessionCounts {
                        started,
                        completed: done,
                        failed: 1,
                        unfinished: started - done - 1,
                        ..Default::default()
                    },
                    duration_us: Latency {
                        count: done,
                        p50,
                        p99,
                        ..Default::default()
                    },
                    think_us: Latency {
                        count: think.0,
                        mean: think.1,
                        ..Default::default()
                    },
                    active_max: started / 10,
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut rounds = vec![
            round(40.0, 100, 90, 2_000, 9_000, (100, 500.0)),
            round(44.0, 120, 110, 3_000, 7_000, (300, 900.0)),
            // No session completed: its zero percentiles stay out.
            round(1.0, 30, 0, 0, 0, (0, 0.0)),
        ];
        let x = session_figures(&rounds).unwrap();
        assert_eq!(x.sessions_per_sec, 40.0);
        assert_eq!(x.arrival_per_sec, None);
        assert_eq!(
            (
                x.counts.started,
                x.counts.completed,
                x.counts.failed,
                x.counts.unfinished,
                x.counts.turned_away
            ),
            (250, 200, 3, 47, 0)
        );
        assert_eq!(
            (x.duration_p50_us, x.duration_p99_us),
            (Some(2_500), Some(8_000))
        );
        // (100 × 500 + 300 × 900) / 400.
        assert_eq!(x.think_mean_us, Some(800.0));
        assert_eq!(x.active_max, 12);
        // A round of plain requests beside them counts for nothing.
        rounds.push(RoundRecord::default());
        assert_eq!(session_figures(&rounds), Some(x));
        assert_eq!(session_figures(&rounds[3..]), None);
        assert_eq!(session_figures(&[]), None);
    }

    #[test]
    fn a_steps_session_counts_read_in_the_json_as_they_always_did() {
        let x = SessionFigures {
            sessions_per_sec: 2.0,
            arrival_per_sec: Some(3.0),
            counts: SessionCounts {
                started: 9,
                completed: 6,
                failed: 1,
                unfinished: 2,
                turned_away: 4,
                late_arrivals: 5,
            },
            duration_p50_us: None,
            duration_p99_us: None,
            think_mean_us: None,
            active_max: 3,
        };
        assert_eq!(
            serde_json::to_string(&x).unwrap(),
            r#"{"sessions_per_sec":2.0,"arrival_per_sec":3.0,"started":9,"completed":6,"failed":1,"unfinished":2,"turned_away":4,"duration_p50_us":null,"duration_p99_us":null,"think_mean_us":null,"active_max":3}"#
        );
    }

    #[test]
    fn rounds_without_a_response_add_no_latency_figures() {
        // A 21 MB transfer: two rounds with transfers of 98–306 ms, and one
        // that ended before any transfer completed.
        let mut st = at("a", "large", 1, 100, 10.0, 22_020_096, None);
        st.rounds[0].summary.latency_us = throng_model::Latency {
            count: 1000,
            min: 98_000,
            p50: 150_000,
            p99: 290_000,
            max: 305_900,
            ..Default::default()
        };
        st.rounds.push(st.rounds[0].clone());
        st.rounds[1].summary.latency_us.p99 = 300_000;
        st.rounds.push(throng_model::RoundRecord {
            summary: throng_model::Summary {
                in_flight_at_end: 100,
                mb_per_sec: 220.0,
                ..Default::default()
            },
            ..Default::default()
        });
        let f = step_figures(&st);
        assert_eq!((f.rounds, f.empty_rounds), (3, 1));
        assert_eq!((f.min_us, f.max_us), (Some(98_000), Some(305_900)));
        assert_eq!((f.p50_us, f.p99_us), (Some(150_000), Some(295_000)));
        // Only empty rounds: no latency at all, rather than zeros.
        st.rounds.drain(..2);
        let f = step_figures(&st);
        assert_eq!((f.rounds, f.empty_rounds), (1, 1));
        assert_eq!((f.min_us, f.max_us, f.p99_us), (None, None, None));
    }
}
