//! Verdicts: whether a measured number can be believed.
//!
//! Each rule is a pure function of what was measured (a [`Summary`], its
//! latency histogram, the server's usage) and says "suspect" with a reason
//! the reader can act on. docs/trust.md lists every rule, what fires it and
//! the fix.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use throng_model::{
    Comparison, Decision, ErrorKind, ReasonCode, ServerUsage, StepRecord, Summary, Verdict,
};

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
    /// The capacities known of the path to the server (`link_bound`):
    /// none on one machine's loopback unless the study states one.
    pub links: Vec<crate::path::LinkCapacity>,
}

/// A client thread running, or runnable and waiting for a CPU, more than
/// this share of the round spent almost no time waiting for the server:
/// the server could have answered faster than it was asked.
pub const CLIENT_BUSY: f64 = 0.90;
/// The server counts as saturated above this share of its cores; below it,
/// it had idle CPU the client did not use.
pub const SERVER_SATURATED: f64 = 0.90;
/// Share of the run the client's threads spent runnable but waiting for a
/// CPU above which the client was starved: its own CPU time then looks low,
/// yet it could not send or read any faster (a shared core, a CPU quota).
pub const CLIENT_STARVED: f64 = 0.10;
/// Share of the server's cores (round wall time × cores) the server may be
/// denied, waiting while other processes ran on its cores or while the
/// hypervisor stole them, before its number is suspect. The figures are
/// counted in 10 ms ticks (/proc/stat), so on a 5 s round on one core a few
/// ticks of sampling are about 1%, and kernel threads take well under 1% of
/// a quiet core: 5% is clearly above that noise, and a server denied more
/// than 5% of its CPU is measured further below its capacity than the ±2%
/// precision the report draws conclusions at.
pub const SERVER_STARVED: f64 = 0.05;
/// Ephemeral ports held in TIME_WAIT at the end of a round above this share
/// of the range: the run is near the point where connect() fails. connect()
/// starts at a random port and probes until one is free, so with half the
/// range held it probes twice on average; and as TIME_WAIT lasts 60 s, a
/// round that holds half the range is one doubling of its rate or its
/// length away from holding all of it.
pub const PORTS_SHARE: f64 = 0.5;

/// A client machine's ephemeral ports as a round ends: what the `ports`
/// rule judges besides the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortUse {
    /// Ports in `net.ipv4.ip_local_port_range`; `None`: unknown.
    pub range: Option<u64>,
    /// Ports of that range held by sockets in TIME_WAIT (see
    /// [`crate::snapshot::time_wait_ports`]); `None`: not read.
    pub time_wait: Option<u64>,
    /// The client host they were read on, when the load came from other
    /// hosts (each reads its own, since ports are a client's); `None`:
    /// this machine.
    #[serde(default)]
    pub host: Option<String>,
}

impl PortUse {
    /// Reads both from /proc now: call it as the round ends (TIME_WAIT
    /// lasts 60 s, so a few milliseconds later reads the same).
    pub fn read() -> PortUse {
        let range = crate::snapshot::ephemeral_range();
        PortUse {
            range: range.map(|(lo, hi)| u64::from(hi - lo) + 1),
            time_wait: range.and_then(|(lo, hi)| crate::snapshot::read_time_wait_ports(lo, hi)),
            host: None,
        }
    }

    /// Of several client hosts' port use, the one closest to running out
    /// (the largest share held): the host a `ports` verdict names.
    pub fn worst(all: impl IntoIterator<Item = PortUse>) -> PortUse {
        let share = |p: &PortUse| match (p.range.filter(|r| *r > 0), p.time_wait) {
            (Some(r), Some(t)) => t as f64 / r as f64,
            _ => -1.0,
        };
        all.into_iter()
            .max_by(|a, b| share(a).total_cmp(&share(b)))
            .unwrap_or_default()
    }
}

/// Verdict on one load run or one lab round, made as the round ends: reads
/// the ephemeral port range and the ports held in TIME_WAIT from /proc
/// ([`PortUse::read`]) for the `ports` rule, when the round opened
/// connections as it went.
pub fn round_verdict(
    summary: &Summary,
    latency: Option<&Histogram<u64>>,
    ctx: &RoundContext,
) -> Verdict {
    let ports = if churns(summary, ctx) {
        PortUse::read()
    } else {
        PortUse::default()
    };
    round_verdict_with(summary, latency, ctx, ports)
}

/// [`round_verdict`] with the ports given: a pure function.
pub fn round_verdict_with(
    summary: &Summary,
    latency: Option<&Histogram<u64>>,
    ctx: &RoundContext,
    ports: PortUse,
) -> Verdict {
    let mut v = Verdict::valid();
    client_bound(&mut v, summary, ctx);
    errors(&mut v, summary);
    drift(&mut v, summary);
    if let Some(h) = latency {
        delayed_ack(&mut v, h, summary, ctx);
    }
    self::ports(&mut v, summary, ctx, ports);
    connections(&mut v, summary);
    short_round(&mut v, summary);
    server_starved(&mut v, ctx);
    crate::path::link_bound(&mut v, summary, &ctx.links);
    crate::path::retransmits(
        &mut v,
        summary,
        ctx.server.as_ref().and_then(|u| u.tcp.as_ref()),
    );
    interrupted(&mut v, summary);
    if ctx.shared_cores {
        v.push(
            ReasonCode::SharedCores,
            "client and server ran on shared cores: each took CPU from the other, \
             so the number measures both",
        );
    }
    v
}

/// A run stopped by a signal measured less than it was asked to: its
/// figures are real but cover only part of the run, so it must never read
/// as a complete one.
fn interrupted(v: &mut Verdict, s: &Summary) {
    if s.interrupted {
        v.push(
            ReasonCode::Interrupted,
            format!(
                "the run was stopped after {:.1} s: its figures cover only that part of it",
                s.duration_s
            ),
        );
    }
}

fn client_bound(v: &mut Verdict, s: &Summary, ctx: &RoundContext) {
    if s.duration_s <= 0.0 {
        return;
    }
    // A load from several hosts is judged host by host: one saturated
    // client among idle ones disappears in the merged average.
    let mut judged: Vec<(String, Vec<String>)> = if s.per_host.is_empty() {
        let threads = if ctx.client_threads > 0 {
            ctx.client_threads as u64
        } else {
            s.threads.max(1)
        };
        vec![(
            String::new(),
            client_causes(threads, s.duration_s, &s.client_cpu_s),
        )]
    } else {
        s.per_host
            .iter()
            .map(|h| {
                (
                    format!("client host {}: ", h.host),
                    client_causes(h.threads.max(1), h.duration_s, &h.client_cpu_s),
                )
            })
            .collect()
    };
    // Users arrive on the client's own schedule, whatever the server does
    // (an arrival that finds every user busy is turned away, not held):
    // arrivals taken late are the client's doing alone, as a stalled or
    // starved thread's.
    let late_arrivals = s
        .sessions
        .as_ref()
        .filter(|x| x.arrival_per_sec.is_some())
        .map(|x| {
            (
                x.counts.late_arrivals,
                x.counts.started + x.counts.turned_away,
            )
        })
        .filter(|&(n, all)| all > 0 && n as f64 / all as f64 > LATE_SEND_SHARE)
        .map(|(n, all)| {
            format!(
                "the load generator started {n} of {all} arrivals ({:.1}%) more than 1 ms after \
                 their time",
                n as f64 / all as f64 * 100.0
            )
        });
    if let (Some(l), true) = (late_arrivals, s.per_host.is_empty()) {
        judged[0].1.push(l);
    }
    if judged.iter().all(|(_, c)| c.is_empty()) {
        // Late sends, if any, were not the client's doing: connections
        // waiting for a server that stopped answering send late too.
        return;
    }
    // A server still starting processes or threads held the load back
    // itself, whatever the client's CPU says: it names the server.
    if let Some(why) = ctx.server.as_ref().and_then(crate::shape::grew_in_round) {
        v.push(ReasonCode::ShapeChanged, why);
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
    // What the busy or starved client did to an open-model schedule.
    let late = s
        .rate
        .as_ref()
        .filter(|_| s.sent > 0)
        .map(|r| (r.late_sends, r.late_sends as f64 / s.sent as f64))
        .filter(|(_, share)| *share > LATE_SEND_SHARE)
        .map(|(n, share)| {
            format!(
                ", and {n} of {} sends ({:.1}%) left more than 1 ms late",
                s.sent,
                share * 100.0
            )
        })
        .unwrap_or_default();
    for (who, causes) in judged.iter().filter(|(_, c)| !c.is_empty()) {
        v.push(
            ReasonCode::ClientBound,
            format!(
                "{who}{} {server}{late}: the result is a lower bound on the server, not its \
                 capacity; give the client more threads or cores",
                causes.join(" and ")
            ),
        );
    }
}

/// Why one client (a machine's load threads over a round) held the load
/// back, if it did: busy, or busy and waiting for a CPU with no idle time
/// left, or starved of CPU.
fn client_causes(threads: u64, duration_s: f64, cpu: &throng_model::CpuTime) -> Vec<String> {
    let mut causes = Vec::new();
    if duration_s <= 0.0 {
        return causes;
    }
    // The client's own figures, per thread over the round: running, and
    // runnable but waiting for a CPU. The rest of the time it was idle,
    // waiting for the server.
    let span = duration_s * threads as f64;
    // Time spun waiting for responses (`--spin`), or for a schedule's
    // next instant where a sleep costs more, is the client idle by
    // another means: it would have slept.
    let busy = (cpu.user + cpu.sys - cpu.spun).max(0.0) / span;
    let waited = cpu.runqueue / span;
    if busy >= CLIENT_BUSY {
        causes.push(format!(
            "the load generator's {threads} thread(s) were {:.0}% busy",
            busy * 100.0
        ));
    } else if busy + waited >= CLIENT_BUSY && waited < CLIENT_STARVED {
        causes.push(format!(
            "the load generator's {threads} thread(s) were {:.0}% busy and {:.0}% waiting for \
             a CPU, never idle waiting for the server",
            busy * 100.0,
            waited * 100.0
        ));
    }
    if waited >= CLIENT_STARVED {
        causes.push(format!(
            "the load generator's thread(s) waited {:.0}% of the run for a CPU (a shared core \
             or a CPU quota)",
            waited * 100.0
        ));
    }
    causes
}

fn server_starved(v: &mut Verdict, ctx: &RoundContext) {
    let Some(u) = &ctx.server else {
        return;
    };
    if u.wall_s <= 0.0 {
        return;
    }
    let cores = ctx.server_cores.filter(|c| *c > 0).unwrap_or(1);
    let denied = server_cpu_denied_s(u);
    let share = denied / (u.wall_s * cores as f64);
    if share <= SERVER_STARVED {
        return;
    }
    let mut how = Vec::new();
    // Named only where its share of the denial shows at the message's
    // precision: a few milliseconds of waiting beside a second stolen
    // read "waited 0.00 s", a cause that was none.
    if u.runqueue_s.min(u.others_cpu_s) >= 0.005 {
        how.push(format!(
            "its threads waited {:.2} s for a CPU while other processes ran {:.2} s on its cores",
            u.runqueue_s, u.others_cpu_s
        ));
    }
    if u.steal_s > 0.0 {
        how.push(format!("the hypervisor stole {:.2} s", u.steal_s));
    }
    v.push(
        ReasonCode::ServerStarved,
        format!(
            "the server was denied up to {denied:.2} s of CPU on its {cores} core(s) in {:.1} s \
             ({:.0}%): {}; it was measured below its capacity. Keep other work off the \
             server's cores (throng doctor names busy processes); in a VM, give it dedicated \
             host cores",
            u.wall_s,
            share * 100.0,
            how.join(" and ")
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
    // Users think between pages: their connections sit idle by design.
    if s.sessions.is_some() || conns == 0 || s.completed >= conns || s.duration_s <= 0.0 {
        return;
    }
    // Errors or missing connections explain missing responses better, and
    // have rules of their own.
    if s.errors_total > 0 || s.connections.established < conns {
        return;
    }
    // Connected but never through TLS: no response was slow, none began.
    if s.completed == 0 && s.tls.as_ref().is_some_and(|t| t.handshakes == 0) {
        v.push(
            ReasonCode::ShortRound,
            format!(
                "no TLS handshake finished on {conns} connections in {:.1} s: the server \
                 accepted them but did not complete TLS, so nothing here measures its HTTP",
                s.duration_s
            ),
        );
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
        .filter(|(code, _)| !(200..400).contains(*code))
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

/// The delayed-ACK rule (delayed_ack.rs), with what it needs of the
/// round's context: how busy the client's threads were, and whether the
/// server's cores were saturated.
fn delayed_ack(v: &mut Verdict, h: &Histogram<u64>, s: &Summary, ctx: &RoundContext) {
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
    crate::delayed_ack::delayed_ack(v, h, s, client_busy, server_saturated);
}

/// The round kept opening connections: `--close`, or a server that closed
/// keep-alive connections. Only then can ports run short during it.
fn churns(s: &Summary, ctx: &RoundContext) -> bool {
    ctx.close_mode || opens_connections(s.keep_alive, s.connections.reconnects)
}

/// A load that opened connections as it went (without keep-alive, or
/// reconnecting `reconnects` times): the only kind whose port use is worth
/// reading ([`PortUse::read`]) as it ends.
pub fn opens_connections(keep_alive: bool, reconnects: u64) -> bool {
    !keep_alive || reconnects > 0
}

fn ports(v: &mut Verdict, s: &Summary, ctx: &RoundContext, p: PortUse) {
    let exhausted = s.error_count(ErrorKind::AddrUnavailable);
    if exhausted > 0 {
        // connect() itself said so, in any mode.
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
    if !churns(s, ctx) {
        return;
    }
    let (Some(range), Some(held)) = (p.range.filter(|r| *r > 0), p.time_wait) else {
        return;
    };
    let share = held as f64 / range as f64;
    if share <= PORTS_SHARE {
        return;
    }
    let whose = p
        .host
        .as_ref()
        .map(|h| format!("client host {h}: "))
        .unwrap_or_default();
    v.push(
        ReasonCode::Ports,
        format!(
            "{whose}{held} of the {range} ephemeral ports ({:.0}%) were held in TIME_WAIT as the \
             round ended, at {:.0} new connections/s: connect() searches past them for a free \
             port, and a longer or faster run runs out; widen ip_local_port_range, enable \
             tcp_tw_reuse, or use keep-alive",
            share * 100.0,
            s.connections.per_sec
        ),
    );
}

fn connections(v: &mut Verdict, s: &Summary) {
    // Users open their burst connections only when a page needs them, so
    // what they could not have is users: arrivals that found every user
    // slot busy, which offered less load than the rate labelled.
    if let Some(x) = &s.sessions {
        if x.counts.turned_away > 0 {
            v.push(
                ReasonCode::Connections,
                format!(
                    "{} of {} arriving users were turned away, all {} user slots being busy: \
                     the arrival rate measured is lower than the one labelled; allow more users",
                    x.counts.turned_away,
                    x.counts.started + x.counts.turned_away,
                    x.users
                ),
            );
        }
        return;
    }
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
/// half-width, e.g. 0.02) after the rounds were run. A step measured in
/// interleaved slices is judged by its paired comparisons instead, with
/// [`step_verdict_paired`].
pub fn step_verdict(step: &StepRecord, round_verdicts: &[Verdict], precision: f64) -> Verdict {
    let mut v = rounds_verdict(step, round_verdicts);
    crate::shape::shape_changed(&mut v, step);
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

/// Share of a paired step's slices in which `client_bound` or
/// `server_starved` must hold for the step to carry it.
pub const PACE_SHARE: f64 = 0.25;

/// Verdict on a step whose server was compared with others in paired
/// slices: `noisy` only when one of its comparisons at this level is still
/// undecided and wider than `precision` at the end of its budget. A shared
/// machine makes every server's own requests per second wander by ±10–20%
/// from second to second; what a reader needs is whether the comparison
/// holds, and pairing slices close in time cancels that shared slowness.
pub fn step_verdict_paired(
    step: &StepRecord,
    round_verdicts: &[Verdict],
    precision: f64,
    comparisons: &[Comparison],
) -> Verdict {
    let mut v = rounds_verdict(step, round_verdicts);
    // Who set the pace is judged from CPU shares and bytes per second, and
    // over one 0.1 s slice those swing by several percent: a slice or two in
    // forty that looks client-bound, starved or at the link says little
    // about the step. These count when they held in `PACE_SHARE` of slices.
    let n = round_verdicts.len();
    v.reasons.retain(|r| {
        if !matches!(
            r.code,
            ReasonCode::ClientBound | ReasonCode::ServerStarved | ReasonCode::LinkBound
        ) {
            return true;
        }
        let k = round_verdicts.iter().filter(|rv| rv.has(r.code)).count();
        k as f64 >= PACE_SHARE * n as f64
    });
    crate::shape::shape_changed(&mut v, step);
    let open: Vec<&Comparison> = comparisons
        .iter()
        .filter(|c| {
            (c.a == step.server || c.b == step.server)
                && c.concurrency == Some(step.concurrency)
                && c.rate == step.rate
                && c.cores == step.cores
                && c.workload == step.workload
                && c.decision == Decision::Undecided
                && (!c.bounded() || c.relative_half_width() > precision)
        })
        .collect();
    // An unbounded comparison is wider than any bound: it is named first.
    let width = |c: &Comparison| {
        if c.bounded() {
            c.relative_half_width()
        } else {
            f64::INFINITY
        }
    };
    if let Some(widest) = open.iter().max_by(|x, y| width(x).total_cmp(&width(y))) {
        let other = if widest.a == step.server {
            &widest.b
        } else {
            &widest.a
        };
        let spread = if widest.bounded() {
            format!(
                "(95% interval {:.3}–{:.3}, ±{:.1}% after {} pairs), above the ±{:.1}% target",
                widest.ci_low,
                widest.ci_high,
                widest.relative_half_width() * 100.0,
                widest.pairs,
                precision * 100.0
            )
        } else {
            format!("({})", widest.unbounded_words())
        };
        v.push(
            ReasonCode::Noisy,
            format!(
                "{} of its comparisons stayed undecided; the widest, with {other}: {}/{} = {:.3} \
                 {spread}; quiet the machine (see throng doctor) or give the step more time",
                open.len(),
                widest.b,
                widest.a,
                widest.ratio,
            ),
        );
    }
    v
}

/// The reasons of a step's rounds, one per code, and shared cores.
fn rounds_verdict(step: &StepRecord, round_verdicts: &[Verdict]) -> Verdict {
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
            // The message is the first such round's, its figures too: a
            // step whose rounds differ is not summed up by one of them.
            let msg = if n > 1 && k > 1 {
                format!("{} (in {k} of {n} rounds; figures of the first)", r.message)
            } else if n > 1 {
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
    v
}

pub use crate::delayed_ack::{
    DELAYED_ACK_MAX_BUSY, DELAYED_ACK_SHARE, DELAYED_ACK_SPIKE, DELAYED_ACK_WINDOWS_US,
    MIN_RESPONSES,
};
pub use crate::denied::server_cpu_denied_s;
pub use crate::launches::launches_differ;
pub use crate::saturation::{saturation, schedule_not_kept, KEEP_UP_SHARE, LATE_SEND_SHARE};
pub use crate::shape::shape_changed;
pub use crate::sweep::{
    sweep_verdicts, FLAT_GAIN, LATENCY_TRACKS, MIN_CONCURRENCY_GROWTH, SERVER_CPU_LOW,
};
