//! Verdicts: whether a measured number can be believed.
//!
//! Each rule is a pure function of what was measured (a [`Summary`], its
//! latency histogram, the server's usage) and says "suspect" with a reason
//! the reader can act on. docs/trust.md lists every rule, what fires it and
//! the fix.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use throng_model::{ErrorKind, ReasonCode, ServerUsage, StepRecord, StepStatus, Summary, Verdict};

use crate::doctor::TIME_WAIT_S;

/// What the verdict needs to know besides the summary itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundContext {
    /// The server's process tree over the round; `None` for `throng load`
    /// against a server throng did not start.
    pub server: Option<ServerUsage>,
    /// Cores the server was given.
    pub server_cores: Option<u32>,
    /// Load-generator threads; 0 means "as in the summary".
    pub client_threads: u32,
    /// Client and server had CPUs in common.
    pub shared_cores: bool,
    /// `Connection: close`: a new connection per request.
    pub close_mode: bool,
}

/// A client thread busier than this spends no time waiting for the server:
/// the server could have answered faster than it was asked.
pub const CLIENT_BUSY: f64 = 0.90;
/// The server counts as saturated above this share of its cores; below it,
/// it had idle CPU the client did not use.
pub const SERVER_SATURATED: f64 = 0.90;
/// Share of the run the client's threads spent runnable but waiting for a
/// CPU above which the client was starved: its own CPU time then looks low,
/// yet it could not send or read any faster (a shared core, a CPU quota).
pub const CLIENT_STARVED: f64 = 0.10;
/// In the open model, more than 1% of sends later than 1 ms after their
/// schedule means the generator could not keep the rate it claims.
pub const LATE_SEND_SHARE: f64 = 0.01;
/// Delayed-ACK timers: Linux's minimum (40 ms) and the classic 200 ms (BSD,
/// Windows, Linux's maximum), as µs windows around them. The upper edges are
/// wide because the timer fires on a jiffy: on a HZ=250 kernel a 40 ms
/// delayed ACK is observed at 44–48 ms, on HZ=100 up to 50 ms.
pub const DELAYED_ACK_WINDOWS_US: [(u64, u64); 2] = [(38_000, 52_000), (195_000, 220_000)];
/// Share of responses inside a window that makes it a finding: a few
/// percent is already a visible tail and a systematic, not random, delay.
pub const DELAYED_ACK_SHARE: f64 = 0.05;
/// The window must hold this many times the responses of the bands of twice
/// its width on either side: a spike at the timer, not a broad distribution
/// that happens to cover it.
pub const DELAYED_ACK_SPIKE: f64 = 2.0;
/// Below this many responses, a share is not a pattern.
pub const MIN_RESPONSES: u64 = 100;
/// Predicted TIME_WAIT ports above this share of the ephemeral range: the
/// run is near the point where connect() fails or waits.
pub const PORTS_SHARE: f64 = 0.5;
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

/// Verdict on one load run or one lab round. Reads the ephemeral port range
/// from /proc for the `ports` rule.
pub fn round_verdict(
    summary: &Summary,
    latency: Option<&Histogram<u64>>,
    ctx: &RoundContext,
) -> Verdict {
    let ports = crate::snapshot::read_sysctl("net.ipv4.ip_local_port_range").and_then(|v| {
        let r: Vec<u64> = v
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        match r.as_slice() {
            [lo, hi] if hi >= lo => Some(hi - lo + 1),
            _ => None,
        }
    });
    round_verdict_with(summary, latency, ctx, ports)
}

/// [`round_verdict`] with the ephemeral port range given (`None`: unknown).
pub fn round_verdict_with(
    summary: &Summary,
    latency: Option<&Histogram<u64>>,
    ctx: &RoundContext,
    ephemeral_ports: Option<u64>,
) -> Verdict {
    let mut v = Verdict::valid();
    client_bound(&mut v, summary, ctx);
    errors(&mut v, summary);
    drift(&mut v, summary);
    if let Some(h) = latency {
        delayed_ack(&mut v, h, summary, ctx);
    }
    ports(&mut v, summary, ctx, ephemeral_ports);
    connections(&mut v, summary);
    short_round(&mut v, summary);
    if ctx.shared_cores {
        v.push(
            ReasonCode::SharedCores,
            "client and server ran on shared cores: each took CPU from the other, \
             so the number measures both",
        );
    }
    v
}

fn client_bound(v: &mut Verdict, s: &Summary, ctx: &RoundContext) {
    if s.duration_s <= 0.0 {
        return;
    }
    let threads = if ctx.client_threads > 0 {
        ctx.client_threads as u64
    } else {
        s.threads.max(1)
    };
    let busy = (s.client_cpu_s.user + s.client_cpu_s.sys) / (s.duration_s * threads as f64);
    let late = s
        .rate
        .as_ref()
        .filter(|_| s.sent > 0)
        .map(|r| (r.late_sends, r.late_sends as f64 / s.sent as f64));
    let mut causes = Vec::new();
    if busy >= CLIENT_BUSY {
        causes.push(format!(
            "the load generator's {threads} thread(s) were {:.0}% busy",
            busy * 100.0
        ));
    }
    let starved = s.client_cpu_s.runqueue / (s.duration_s * threads as f64);
    if starved >= CLIENT_STARVED {
        causes.push(format!(
            "the load generator's thread(s) waited {:.0}% of the run for a CPU (a shared core \
             or a CPU quota)",
            starved * 100.0
        ));
    }
    if let Some((n, share)) = late.filter(|(_, share)| *share > LATE_SEND_SHARE) {
        causes.push(format!(
            "{n} of {} sends ({:.1}%) left more than 1 ms late",
            s.sent,
            share * 100.0
        ));
    }
    if causes.is_empty() {
        return;
    }
    let server = match (&ctx.server, ctx.server_cores) {
        (Some(u), Some(cores)) if cores > 0 => {
            let used = u.cpu_utilisation();
            if used >= SERVER_SATURATED * cores as f64 {
                // Both sides saturated: the server's capacity was reached.
                return;
            }
            format!("while the server used {used:.2} of its {cores} cores")
        }
        _ => "(server CPU unknown)".to_string(),
    };
    v.push(
        ReasonCode::ClientBound,
        format!(
            "{} {server}: the result is a lower bound on the server, not its capacity; \
             give the client more threads or cores",
            causes.join(" and ")
        ),
    );
}

/// Fewer responses than connections: most connections never finished one
/// response in the measured window, so requests per second counts whole
/// responses that happened to end inside it (a 21 MB file at 200
/// connections can give 0 req/s while moving 1 GB/s). Bytes per second is
/// still right; the rate of requests is not.
fn short_round(v: &mut Verdict, s: &Summary) {
    let conns = s.connections.requested;
    if conns == 0 || s.completed >= conns || s.duration_s <= 0.0 {
        return;
    }
    // Errors or missing connections explain missing responses better, and
    // have rules of their own.
    if s.errors_total > 0 || s.connections.established < conns {
        return;
    }
    v.push(
        ReasonCode::ShortRound,
        format!(
            "only {} responses completed for {conns} connections in {:.1} s: responses take \
             longer than the round, so req/s is not meaningful (MB/s is); use longer rounds",
            s.completed, s.duration_s
        ),
    );
}

fn is_drift(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::SizeMismatch | ErrorKind::ChecksumMismatch)
}

fn errors(v: &mut Verdict, s: &Summary) {
    let counts: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| !is_drift(**k))
        .filter_map(|k| {
            let n = s.error_count(*k);
            (n > 0).then(|| format!("{} {n}", k.name()))
        })
        .collect();
    if counts.is_empty() {
        return;
    }
    let total: u64 = ErrorKind::ALL
        .iter()
        .filter(|k| !is_drift(**k))
        .map(|k| s.error_count(*k))
        .sum();
    let statuses: Vec<String> = s
        .status
        .iter()
        .filter(|(code, _)| !code.starts_with('2') && !code.starts_with('3'))
        .map(|(code, n)| format!("{code}×{n}"))
        .collect();
    let statuses = if statuses.is_empty() {
        String::new()
    } else {
        format!("; statuses {}", statuses.join(", "))
    };
    v.push(
        ReasonCode::Errors,
        format!(
            "{total} errors ({}){statuses}: failed requests are often cheaper than real ones, \
             so the throughput is not the server's",
            counts.join(", ")
        ),
    );
}

fn drift(v: &mut Verdict, s: &Summary) {
    let size = s.error_count(ErrorKind::SizeMismatch);
    let sum = s.error_count(ErrorKind::ChecksumMismatch);
    if size + sum == 0 {
        return;
    }
    v.push(
        ReasonCode::Drift,
        format!(
            "responses changed during load ({size} of another size, {sum} with another \
             checksum, of {} completed): the server did not serve the same thing throughout",
            s.completed
        ),
    );
}

/// When every response sits at the timer (the median is in the window), a
/// timer stall and plain queueing look alike in one run: 10,000 connections
/// on a server doing 40,000 req/s also wait ~250 ms each (Little's law). A
/// timer leaves both sides idle, queueing keeps them busy: above this share
/// of the client's threads (or a saturated server), it is queueing.
pub const DELAYED_ACK_MAX_BUSY: f64 = 0.5;

fn delayed_ack(v: &mut Verdict, h: &Histogram<u64>, s: &Summary, ctx: &RoundContext) {
    let total = h.len();
    if total < MIN_RESPONSES {
        return;
    }
    let median = h.value_at_quantile(0.5);
    let threads = if ctx.client_threads > 0 {
        ctx.client_threads as f64
    } else {
        s.threads.max(1) as f64
    };
    let client_busy = if s.duration_s > 0.0 {
        (s.client_cpu_s.user + s.client_cpu_s.sys) / (s.duration_s * threads)
    } else {
        0.0
    };
    let server_saturated = match (&ctx.server, ctx.server_cores) {
        (Some(u), Some(cores)) if cores > 0 => {
            u.cpu_utilisation() >= SERVER_SATURATED * cores as f64
        }
        _ => false,
    };
    for (lo, hi) in DELAYED_ACK_WINDOWS_US {
        if (lo..=hi).contains(&median) && (client_busy >= DELAYED_ACK_MAX_BUSY || server_saturated)
        {
            continue;
        }
        let width = hi - lo;
        let inside = h.count_between(lo, hi);
        // Neighbouring bands, each twice the window's width, not touching it.
        let below = h.count_between(lo.saturating_sub(2 * width), lo.saturating_sub(1000));
        let above = h.count_between(hi + 1000, hi + 2 * width);
        let share = inside as f64 / total as f64;
        if share >= DELAYED_ACK_SHARE && inside as f64 >= DELAYED_ACK_SPIKE * (below + above) as f64
        {
            v.push(
                ReasonCode::DelayedAck,
                format!(
                    "{:.1}% of responses ({inside} of {total}) took {}–{} ms, a spike at the \
                     delayed-ACK timer ({} around it): the server likely writes a response \
                     in several small segments with Nagle on; it should set TCP_NODELAY or \
                     send headers and body in one write",
                    share * 100.0,
                    lo / 1000,
                    hi / 1000,
                    below + above
                ),
            );
            return;
        }
    }
}

fn ports(v: &mut Verdict, s: &Summary, ctx: &RoundContext, range: Option<u64>) {
    let exhausted = s.error_count(ErrorKind::AddrUnavailable);
    if exhausted > 0 {
        // connect() itself said so: no prediction needed, in any mode.
        v.push(
            ReasonCode::Ports,
            format!(
                "{exhausted} connects failed with EADDRNOTAVAIL: the ephemeral ports ran out \
                 (closed connections hold theirs for {TIME_WAIT_S} s in TIME_WAIT); widen \
                 ip_local_port_range, enable tcp_tw_reuse, or use keep-alive"
            ),
        );
        return;
    }
    if !ctx.close_mode && s.keep_alive {
        return;
    }
    let Some(range) = range.filter(|r| *r > 0) else {
        return;
    };
    let waiting = s.connections.per_sec * TIME_WAIT_S;
    let share = waiting / range as f64;
    if share <= PORTS_SHARE {
        return;
    }
    v.push(
        ReasonCode::Ports,
        format!(
            "{:.0} new connections/s × {TIME_WAIT_S} s in TIME_WAIT ≈ {waiting:.0} ports, {:.0}% \
             of the {range} ephemeral ports: a longer run at this rate runs out of ports; \
             widen ip_local_port_range, enable tcp_tw_reuse, or use keep-alive",
            s.connections.per_sec,
            share * 100.0
        ),
    );
}

fn connections(v: &mut Verdict, s: &Summary) {
    let c = &s.connections;
    if c.established < c.requested {
        v.push(
            ReasonCode::Connections,
            format!(
                "{} of {} requested connections were established: the concurrency \
                 measured is lower than the one labelled",
                c.established, c.requested
            ),
        );
    }
}

/// Verdict on a step: its rounds' reasons, one per code, plus `noisy` when
/// the throughput's confidence interval is wider than `precision` (relative
/// half-width, e.g. 0.02) after the rounds were run.
pub fn step_verdict(step: &StepRecord, round_verdicts: &[Verdict], precision: f64) -> Verdict {
    let mut v = Verdict::valid();
    let n = round_verdicts.len();
    let mut seen: BTreeMap<ReasonCode, usize> = BTreeMap::new();
    for rv in round_verdicts {
        for r in &rv.reasons {
            *seen.entry(r.code).or_default() += 1;
        }
    }
    for rv in round_verdicts {
        for r in &rv.reasons {
            if v.reasons.iter().any(|x| x.code == r.code) {
                continue;
            }
            let k = seen[&r.code];
            let msg = if n > 1 {
                format!("{} (in {k} of {n} rounds)", r.message)
            } else {
                r.message.clone()
            };
            v.push(r.code, msg);
        }
    }
    if step.shared_cores && !v.has(ReasonCode::SharedCores) {
        v.push(
            ReasonCode::SharedCores,
            "client and server ran on shared cores: each took CPU from the other, \
             so the number measures both",
        );
    }
    let t = &step.throughput;
    let hw = t.relative_half_width();
    if t.n >= 2 && hw > precision {
        v.push(
            ReasonCode::Noisy,
            format!(
                "throughput varied from round to round: 95% interval ±{:.1}% after {} rounds, \
                 above the ±{:.1}% target; quiet the machine (see throng doctor) or add rounds",
                hw * 100.0,
                t.n,
                precision * 100.0
            ),
        );
    }
    v
}

/// Adds `bottleneck_elsewhere` to steps of one (server, cores, workload)
/// sweep where throughput stays flat from the previous concurrency while
/// latency grows with concurrency and the server's CPU is well below its
/// cores: something other than the server's CPU sets the limit.
pub fn sweep_verdicts(steps: &mut [StepRecord]) {
    let mut sweeps: BTreeMap<(String, u32, String), Vec<usize>> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        if s.status == StepStatus::Ok && !s.rounds.is_empty() {
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
