//! The sweep of one group: every server started fresh on the group's
//! cores and checked, warmed up, then measured level by level. Rounds of a
//! level are interleaved across servers with a rotating order, so slow
//! drift of the machine spreads over all of them instead of favouring the
//! one measured first; each server's step ends when the precision rule
//! says so. Everything outside this module's decisions goes through an
//! [`Executor`].

use std::time::{Duration, Instant};

use throng_model::{ConfigFile, RoundRecord, StepRecord, StepStatus, Verdict};

use crate::executor::{Executor, Measured};
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::observer::{Event, Observer};
use crate::precision::Next;
use crate::record::serialize_histogram;
use crate::spec::{known_response_bytes, longer_round, round_seconds, secs, Pace, RoundLoad};
use crate::study::Study;

/// What a sweep writes to: the store in a real study, a list in tests.
pub trait Sink {
    fn step(&mut self, step: &StepRecord) -> anyhow::Result<()>;
    fn verdict(&mut self, step: &StepRecord) -> anyhow::Result<()>;
    fn configs(&mut self, server: &str, configs: &[ConfigFile]) -> anyhow::Result<()>;
    fn max_users(&mut self, server: &str, m: &throng_model::MaxUsers) -> anyhow::Result<()>;
}

/// Everything a sweep needs besides its executor.
pub struct Ctx<'a> {
    pub study: &'a Study,
    pub sink: &'a mut dyn Sink,
    pub observer: &'a mut dyn Observer,
    pub interrupt: &'a Interrupt,
    /// Steps stored as failed so far.
    pub failed_steps: u32,
}

/// A step in progress for one server at one concurrency.
struct Pending {
    server: usize,
    step: StepRecord,
    verdicts: Vec<Verdict>,
    rps: Vec<f64>,
    /// Time spent in this step's own rounds: other servers' rounds in
    /// between do not count against its cap.
    spent: Duration,
    /// Measured seconds of this step's rounds, chosen at its first round
    /// from the server's pace (longer when responses take long).
    round_s: Option<f64>,
    done: bool,
}

/// What the sweep knows of each server's pace and the workload's size, to
/// make rounds long enough for the responses they measure.
struct Paces {
    /// Per server of the study: the pace of its last round, warmup included.
    of: Vec<Option<Pace>>,
    /// The workload's mean response body, when its files say.
    known: Option<f64>,
}

impl Paces {
    fn update(&mut self, server: usize, s: &throng_model::Summary) {
        if let Some(p) = Pace::of(s, self.known) {
            self.of[server] = Some(p);
        }
    }
}

/// Sweeps `group` over the study's servers and levels, storing each step
/// as it ends.
pub fn run_group(ctx: &mut Ctx, exec: &mut dyn Executor, group: &Group) -> anyhow::Result<()> {
    let study = ctx.study;
    let wname = group.workload.kind.name();
    let mut up: Vec<usize> = Vec::new();
    let mut failed: Vec<Option<String>> = vec![None; study.servers.len()];
    let mut group_steps: Vec<StepRecord> = Vec::new();
    // Servers start one after the other; all stay up for the whole group,
    // idle on the same cores while another one is measured.
    for (idx, s) in study.servers.iter().enumerate() {
        if ctx.interrupt.is_set() {
            break;
        }
        // A server that cannot serve a dynamic workload shows that, not a
        // number.
        if let Err(reason) = s.recipe.workload(group.workload.kind) {
            for &c in &study.concurrency {
                let mut st = group.step(&s.name, c);
                st.status = StepStatus::Unsupported;
                st.failure = Some(reason.clone());
                record_step(ctx, st, &mut group_steps)?;
            }
            continue;
        }
        match exec.start(group, s) {
            Ok(started) => {
                ctx.sink.configs(&s.name, &started.configs)?;
                ctx.observer.event(Event::ServerStarted {
                    server: &s.name,
                    cores: group.cores,
                    workload: wname,
                    pid: started.pid,
                });
                up.push(idx);
            }
            Err(f) => {
                ctx.sink.configs(&s.name, &f.failure.configs)?;
                let msg = f.message();
                ctx.observer.event(Event::ServerFailed {
                    server: &s.name,
                    cores: group.cores,
                    workload: wname,
                    message: &msg,
                });
                for &c in &study.concurrency {
                    let mut st = group.step(&s.name, c);
                    st.status = StepStatus::Failed;
                    st.failure = Some(msg.clone());
                    st.log_tail = Some(f.failure.log_tail.clone());
                    record_step(ctx, st, &mut group_steps)?;
                }
            }
        }
    }
    let mut paces = Paces {
        of: vec![None; study.servers.len()],
        known: known_response_bytes(&group.workload),
    };
    if study.warmup_s > 0.0 {
        let mut load = RoundLoad::measured(study, group, study.concurrency[0], 1);
        load.seconds = study.warmup_s;
        load.warmup_s = 0.0;
        for &idx in &up {
            if ctx.interrupt.is_set() {
                break;
            }
            match exec.round(&study.servers[idx].name, &load, false) {
                // The warmup's pace sizes the first level's rounds.
                Ok(m) => paces.update(idx, &m.summary),
                Err(e) => failed[idx] = Some(format!("warmup failed: {e}")),
            }
        }
    }
    for (level, &c) in study.concurrency.iter().enumerate() {
        let mut pending: Vec<Pending> = up
            .iter()
            .map(|&idx| {
                let mut step = group.step(&study.servers[idx].name, c);
                if let Some(f) = &failed[idx] {
                    step.status = StepStatus::Failed;
                    step.failure = Some(f.clone());
                }
                Pending {
                    server: idx,
                    step,
                    verdicts: vec![],
                    rps: vec![],
                    spent: Duration::ZERO,
                    round_s: None,
                    done: failed[idx].is_some(),
                }
            })
            .collect();
        let mut round = 0usize;
        while pending.iter().any(|p| !p.done) && !ctx.interrupt.is_set() {
            let n = pending.len();
            for k in 0..n {
                // Rotate the order each round: server i goes first in round i.
                let p = &mut pending[(k + round) % n];
                if p.done || ctx.interrupt.is_set() {
                    continue;
                }
                let seed = ((level as u64) << 32) ^ round as u64 ^ 0x7468_726f;
                measure_round(ctx, exec, group, p, &mut failed, &mut paces, seed)?;
            }
            round += 1;
        }
        for mut p in pending {
            if !p.done {
                // Interrupted: keep the rounds measured, say why it is short.
                p.step.status = StepStatus::Skipped;
                p.step.failure = Some(format!("interrupted after {} rounds", p.step.rounds.len()));
            }
            p.step.throughput = throng_stats::estimate(&p.rps);
            if !p.step.rounds.is_empty() {
                p.step.verdict = throng_trust::verdict::step_verdict(
                    &p.step,
                    &p.verdicts,
                    study.precision.target,
                );
            }
            if p.step.status == StepStatus::Failed && p.step.log_tail.is_none() {
                p.step.log_tail = Some(exec.log_tail(&study.servers[p.server].name));
            }
            record_step(ctx, p.step, &mut group_steps)?;
        }
        if ctx.interrupt.is_set() {
            break;
        }
    }
    if let Some(cap) = study.max_users_cap {
        for (idx, s) in study.servers.iter().enumerate() {
            if ctx.interrupt.is_set() {
                break;
            }
            let sweep: Vec<StepRecord> = group_steps
                .iter()
                .filter(|x| x.server == s.name)
                .cloned()
                .collect();
            let alive = up.contains(&idx) && failed[idx].is_none();
            let m = crate::maxusers::search(
                exec,
                &crate::maxusers::Search {
                    study,
                    group,
                    server: &s.name,
                    alive,
                    sweep: &sweep,
                    cap,
                    pace: paces.of[idx],
                },
                ctx.interrupt,
            );
            if ctx.interrupt.is_set() {
                break;
            }
            ctx.sink.max_users(&s.name, &m)?;
        }
    }
    for &idx in &up {
        exec.stop(&study.servers[idx].name);
    }
    // Sweep-level verdicts need the whole sweep of each server.
    for s in &study.servers {
        let mut sweep: Vec<StepRecord> = group_steps
            .iter()
            .filter(|x| x.server == s.name)
            .cloned()
            .collect();
        let before: Vec<Verdict> = sweep.iter().map(|x| x.verdict.clone()).collect();
        throng_trust::verdict::sweep_verdicts(&mut sweep);
        for (st, b) in sweep.iter().zip(before) {
            if st.verdict != b {
                ctx.sink.verdict(st)?;
            }
        }
    }
    Ok(())
}

fn measure_round(
    ctx: &mut Ctx,
    exec: &mut dyn Executor,
    group: &Group,
    p: &mut Pending,
    failed: &mut [Option<String>],
    paces: &mut Paces,
    seed: u64,
) -> anyhow::Result<()> {
    let study = ctx.study;
    let name = &study.servers[p.server].name;
    let fail =
        |p: &mut Pending, failed: &mut [Option<String>], exec: &mut dyn Executor, msg: String| {
            p.step.status = StepStatus::Failed;
            p.step.log_tail = Some(exec.log_tail(name));
            exec.stop(name);
            failed[p.server] = Some(format!("failed earlier: {msg}"));
            p.step.failure = Some(msg);
            p.done = true;
        };
    if let Some(e) = exec.exited(name) {
        fail(p, failed, exec, format!("the server {e}"));
        return Ok(());
    }
    let c = p.step.concurrency;
    // A step's rounds all get the length chosen at its first: the study's,
    // or long enough for each connection to complete a few responses at
    // the pace the server last showed.
    let mut seconds = match p.round_s {
        Some(s) => s,
        None => {
            let s = round_seconds(study.round_s, paces.of[p.server], c);
            if s > study.round_s {
                if let Some(pace) = paces.of[p.server] {
                    ctx.observer.event(Event::Note(format!(
                        "{name} c={c}: {} rounds instead of {}, so that each connection can complete \
                         a few responses of about {:.1} s at {:.1} MB/s",
                        secs(s),
                        secs(study.round_s),
                        pace.response_s(c),
                        pace.bytes_per_s / 1e6
                    )));
                }
            }
            p.round_s = Some(s);
            s
        }
    };
    let m: Measured = loop {
        let load = RoundLoad {
            seconds,
            ..RoundLoad::measured(study, group, c, seed)
        };
        let t0 = Instant::now();
        let result = exec.round(name, &load, true);
        p.spent += t0.elapsed();
        if ctx.interrupt.is_set() {
            return Ok(());
        }
        let m = match result {
            Ok(m) => m,
            Err(e) => {
                fail(p, failed, exec, e);
                return Ok(());
            }
        };
        if let Some(e) = exec.exited(name) {
            fail(p, failed, exec, format!("the server {e} during the round"));
            return Ok(());
        }
        paces.update(p.server, &m.summary);
        // A round that ended before any response could complete measured
        // its own length, not the server: measure it again, longer.
        if throng_model::max_users::round_too_short(&m.summary) {
            if let Some(next) = longer_round(seconds, paces.of[p.server], c) {
                ctx.observer.event(Event::Note(format!(
                    "{name} c={c}: the {} round ended before any response ({} requests still in \
                     flight, none timed out); measuring it again with {} rounds",
                    secs(seconds),
                    m.summary.in_flight_at_end,
                    secs(next)
                )));
                seconds = next;
                p.round_s = Some(next);
                continue;
            }
        }
        break m;
    };
    if m.summary.completed == 0 {
        // A round without a response may be a stall of a busy machine; the
        // server has failed only if it does not answer a request on its own.
        if let Err(e) = exec.answers(name) {
            fail(
                p,
                failed,
                exec,
                format!("the server stopped answering: no response in a whole round, then {e}"),
            );
            return Ok(());
        }
    }
    let rc = throng_trust::verdict::RoundContext {
        server: Some(m.usage.clone()),
        server_cores: Some(group.cores),
        client_threads: m.summary.threads as u32,
        shared_cores: group.shared,
        close_mode: false,
    };
    let verdict = throng_trust::verdict::round_verdict(&m.summary, Some(&m.latency), &rc);
    let index = p.step.rounds.len() as u32;
    ctx.observer.event(Event::Round {
        server: name,
        concurrency: c,
        index,
        summary: &m.summary,
        usage: &m.usage,
    });
    p.rps.push(m.summary.requests_per_sec);
    p.verdicts.push(verdict);
    p.step.rounds.push(RoundRecord {
        index,
        histogram: serialize_histogram(&m.latency),
        summary: m.summary,
        server: m.usage,
        block: None,
    });
    match study.precision.next(&p.rps, p.spent.as_secs_f64()) {
        Next::More => {}
        Next::Converged | Next::Capped => p.done = true,
    }
    Ok(())
}

fn record_step(
    ctx: &mut Ctx,
    step: StepRecord,
    group_steps: &mut Vec<StepRecord>,
) -> anyhow::Result<()> {
    if step.status == StepStatus::Failed {
        ctx.failed_steps += 1;
    }
    ctx.sink.step(&step)?;
    ctx.observer.event(Event::Step(&step));
    group_steps.push(step);
    Ok(())
}
