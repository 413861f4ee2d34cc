//! Builders of the stored documents, deterministic to the last figure, for
//! the tests of what reads them (reports, verdicts, the store).

use std::collections::BTreeMap;

use serde::de::value::{Error, StrDeserializer};
use serde::de::DeserializeOwned;

use throng_model::{
    ConfigFile, Latency, RoundRecord, ServerRecord, ServerUsage, StepRecord, StepStatus, Summary,
    Verdict,
};

/// A closed-model keep-alive round of 2 s at `rps`, every response a 200
/// of `body_per_req` body bytes and 200 of head, its latencies spread
/// around `p50` and `p99` (µs), the server at `pss` bytes.
pub fn round(index: u32, rps: f64, body_per_req: u64, p50: u64, p99: u64, pss: u64) -> RoundRecord {
    let duration = 2.0;
    let completed = (rps * duration).round() as u64;
    let body = completed * body_per_req;
    let mut status = BTreeMap::new();
    status.insert(200, completed);
    RoundRecord {
        index,
        summary: Summary {
            schema: 1,
            model: named("closed"),
            urls: 1,
            threads: 1,
            keep_alive: true,
            started_unix_s: 1_700_000_000.0 + f64::from(index) * 3.0,
            duration_s: duration,
            completed,
            sent: completed,
            requests_per_sec: rps,
            bytes_read: body + completed * 200,
            body_bytes: body,
            mb_per_sec: body as f64 / duration / 1e6,
            latency_us: Latency {
                count: completed,
                min: p50 / 4,
                mean: p50 as f64 * 1.1,
                stdev: p50 as f64 / 3.0,
                p50,
                p75: p50 * 3 / 2,
                p90: p50 * 2,
                p99,
                p999: p99 * 2,
                p9999: p99 * 3,
                max: p99 * 4,
            },
            status,
            ..Summary::default()
        },
        server: ServerUsage {
            cpu_user_s: completed as f64 * 12e-6,
            cpu_sys_s: completed as f64 * 20e-6,
            rss_peak_bytes: pss * 2,
            rss_end_bytes: pss * 2,
            pss_peak_bytes: pss,
            pss_end_bytes: pss,
            processes: 2,
            threads: 2,
            wall_s: duration,
            ..ServerUsage::default()
        },
        histogram: Vec::new(),
        block: None,
        launch: None,
    }
}

/// A valid step of five [`round`]s around `base_rps`, with a fixed
/// relative jitter, `conc` connections on `cores` server cores and the
/// client on the next core. Its throughput estimate is left empty: the
/// statistics that make one are not the model's.
pub fn step(
    server: &str,
    cores: u32,
    workload: &str,
    conc: u32,
    base_rps: f64,
    body: u64,
    pss: u64,
) -> StepRecord {
    let jitter = [-0.012, 0.004, 0.008, -0.003, 0.006];
    let rounds: Vec<RoundRecord> = jitter
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let rps = (base_rps * (1.0 + j)).round();
            let p50 = (f64::from(conc) / rps * 1e6) as u64;
            round(i as u32, rps, body, p50, p50 * 3 + 200, pss)
        })
        .collect();
    StepRecord {
        server: server.into(),
        cores,
        workload: workload.into(),
        concurrency: conc,
        rate: None,
        status: StepStatus::Ok,
        failure: None,
        log_tail: None,
        server_cpus: (0..cores as usize).collect(),
        client_cpus: vec![cores as usize],
        shared_cores: false,
        throughput: Default::default(),
        rounds,
        verdict: Verdict::valid(),
        diagnosis: None,
    }
}

/// A server as a run records it, with its one configuration file.
pub fn server(name: &str, version: &str, model: &str, exe: u64, config: &str) -> ServerRecord {
    ServerRecord {
        name: name.into(),
        recipe: name.into(),
        version: version.into(),
        package: name.into(),
        model: model.into(),
        exe_bytes: exe,
        configs: vec![ConfigFile {
            path: format!("/run/throng/{name}/{name}.conf"),
            content: config.into(),
        }],
        ..ServerRecord::default()
    }
}

/// A value by the name a stored document gives it (the load model's
/// "closed"), read as the store reads it: the builders write the stored
/// schema, whatever type the summary holds the value in.
fn named<T: DeserializeOwned>(name: &str) -> T {
    T::deserialize(StrDeserializer::<Error>::new(name)).expect("a stored name")
}

/// B over A at 1 core of the tiny workload, at level `concurrency` (`None`:
/// the sweep pooled), its ratio inside the order-statistic interval
/// `lo`–`hi` from `pairs` pairs, decided `decision`; no launches.
pub fn comparison(
    a: &str,
    b: &str,
    concurrency: Option<u32>,
    [ratio, lo, hi]: [f64; 3],
    pairs: u32,
    decision: throng_model::Decision,
) -> throng_model::Comparison {
    throng_model::Comparison {
        a: a.into(),
        b: b.into(),
        workload: "tiny".into(),
        cores: 1,
        concurrency,
        rate: None,
        ratio,
        ci_low: lo,
        ci_high: hi,
        pairs,
        decision,
        interval: throng_model::IntervalKind::OrderStatistic,
        launch_ratios: Vec::new(),
        next_run: None,
        next_run_runs: None,
        runs_differ: false,
    }
}
