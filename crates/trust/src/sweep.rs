//! Verdicts over a server's whole sweep, which no single step can give: a
//! rate that stays flat while connections double and latency grows with
//! them, from a server whose CPU was well below its cores, says the limit
//! lies somewhere else. Judged after the sweep, over consecutive levels.

use std::collections::BTreeMap;

use throng_model::{ReasonCode, StepRecord, StepStatus};

use crate::denied::server_cpu_denied_s;

/// Throughput gaining less than this while concurrency grows is "flat".
pub const FLAT_GAIN: f64 = 0.10;
/// Concurrency must grow at least this much between two steps to compare
/// them (sweeps usually double it).
pub const MIN_CONCURRENCY_GROWTH: f64 = 1.5;
/// Latency must grow by at least this fraction of the concurrency growth:
/// with flat throughput, Little's law makes it grow in proportion.
pub const LATENCY_TRACKS: f64 = 0.5;
/// A server using less than this share of its cores is "well below" them.
pub const SERVER_CPU_LOW: f64 = 0.70;

/// Adds `bottleneck_elsewhere` to steps of one (server, cores, workload)
/// sweep where throughput stays flat from the previous concurrency while
/// latency grows with concurrency and the server's CPU is well below its
/// cores: something other than the server's CPU sets the limit.
pub fn sweep_verdicts(steps: &mut [StepRecord]) {
    let mut sweeps: BTreeMap<(String, u32, String), Vec<usize>> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        // Levels of offered rate share their concurrency: there is no
        // growth of connections to judge throughput against.
        if s.status == StepStatus::Ok && !s.rounds.is_empty() && s.rate.is_none() {
            sweeps
                .entry((s.server.clone(), s.cores, s.workload.clone()))
                .or_default()
                .push(i);
        }
    }
    for idx in sweeps.into_values() {
        let mut idx = idx;
        idx.sort_by_key(|&i| steps[i].concurrency);
        for w in idx.windows(2) {
            let (a, b) = (&steps[w[0]], &steps[w[1]]);
            if let Some(msg) = bottleneck_elsewhere(a, b) {
                let step = &mut steps[w[1]];
                if !step
                    .verdict
                    .reasons
                    .iter()
                    .any(|r| r.code == ReasonCode::BottleneckElsewhere)
                {
                    step.verdict.push(ReasonCode::BottleneckElsewhere, msg);
                }
            }
        }
    }
}

fn bottleneck_elsewhere(a: &StepRecord, b: &StepRecord) -> Option<String> {
    if a.concurrency == 0 || a.throughput.mean <= 0.0 || b.cores == 0 {
        return None;
    }
    let growth = b.concurrency as f64 / a.concurrency as f64;
    if growth < MIN_CONCURRENCY_GROWTH {
        return None;
    }
    let gain = b.throughput.mean / a.throughput.mean - 1.0;
    if gain >= FLAT_GAIN {
        return None;
    }
    let (la, lb) = (a.p50_us()?, b.p50_us()?);
    if la == 0 {
        return None;
    }
    let lat_growth = lb as f64 / la as f64;
    if lat_growth - 1.0 < LATENCY_TRACKS * (growth - 1.0) {
        return None;
    }
    let used = b.median_of(|r| r.server.cpu_utilisation())?;
    if used >= SERVER_CPU_LOW * b.cores as f64 {
        return None;
    }
    // CPU the server wanted and others got was its limit too: its cores
    // were busy, not idle (the rounds' `server_starved` says by whom).
    let denied = b
        .median_of(|r| {
            if r.server.wall_s > 0.0 {
                server_cpu_denied_s(&r.server) / r.server.wall_s
            } else {
                0.0
            }
        })
        .unwrap_or(0.0);
    if used + denied >= SERVER_CPU_LOW * b.cores as f64 {
        return None;
    }
    Some(format!(
        "throughput flat ({:.0} → {:.0} req/s, {:+.0}%) from {} to {} connections while \
         median latency grew {la} → {lb} µs and the server used {used:.2} of its {} cores: \
         the limit is elsewhere (client, network, a lock, a fixed delay), not the server's CPU",
        a.throughput.mean,
        b.throughput.mean,
        gain * 100.0,
        a.concurrency,
        b.concurrency,
        b.cores
    ))
}
