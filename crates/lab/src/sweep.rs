//! The sweep of one group: every server started fresh on the group's
//! cores and checked, warmed up, then measured level by level. A level is
//! measured in blocks: each block gives every server one short round (a
//! slice) in a shuffled order, over connections kept open and idle between
//! slices, and the slices of one block are paired (see [`crate::pairs`]).
//! The level ends when every paired comparison is narrow enough, or when
//! its rounds or time run out; a server measured alone ends by its own
//! interval. Then each server gets a diagnostic round, stored apart.
//! A workload whose study asks for a request count per level (`requests`)
//! is measured in the same shuffled blocks, each round completing its
//! share of the requests on connections of its own: the level ends after
//! exactly `rounds.min` blocks, since a count, not a time, is what the
//! study fixed. Everything outside this module's decisions goes through
//! an [`Executor`].

use std::time::{Duration, Instant};

use throng_model::{
    Comparison, ConfigFile, ParityEntry, RoundRecord, Setting, StepRecord, StepStatus, Verdict,
};

use crate::executor::Executor;
use crate::group::Group;
use crate::interrupt::Interrupt;
pub use crate::live::live_parity;
use crate::observer::{Event, Observer};
use crate::pairs::{self, Shuffle};
use crate::precision::Next;
use crate::record::serialize_histogram;
use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::{known_response_bytes, longer_round, round_seconds, secs, Pace, RoundLoad};
use crate::study::{Level, Study};

/// What a sweep writes to: the store in a real study, a list in tests.
pub trait Sink {
    fn step(&mut self, step: &StepRecord) -> anyhow::Result<()>;
    fn verdict(&mut self, step: &StepRecord) -> anyhow::Result<()>;
    fn configs(&mut self, server: &str, configs: &[ConfigFile]) -> anyhow::Result<()>;
    fn max_users(&mut self, server: &str, m: &throng_model::MaxUsers) -> anyhow::Result<()>;
    fn comparisons(&mut self, cs: &[Comparison]) -> anyhow::Result<()>;
    /// A server's settings, replacing what was stored for each setting.
    fn parity(&mut self, server: &str, entries: &[ParityEntry]) -> anyhow::Result<()>;
}

/// Everything a sweep needs besides its executor.
pub struct Ctx<'a> {
    pub study: &'a Study,
    pub sink: &'a mut dyn Sink,
    pub observer: &'a mut dyn Observer,
    pub interrupt: &'a Interrupt,
    /// Steps stored as failed so far.
    pub failed_steps: u32,
    /// Each started server's access log as its configs set it: what the
    /// live check confirms, or leaves standing when it cannot see.
    pub access_logs: Vec<(String, String)>,
}

/// Seconds of load a diagnostic round runs at least.
pub const DIAGNOSE_S: f64 = 0.5;

/// Where a round sits: its load's seed and, when it is paired with the
/// other servers' rounds, its block.
#[derive(Debug, Clone, Copy)]
struct Slice {
    seed: u64,
    block: Option<u32>,
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
    let levels = study.load_of(group.workload.kind).levels();
    // Rounds that end at a request count rather than a time.
    let counted = study.load_of(group.workload.kind).round_requests.is_some();
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
        let mine = group.for_server(idx);
        let unsupported = match &s.unsupported {
            Some(why) => Err(why.clone()),
            None => s.recipe.workload(group.workload.kind).map(|_| ()),
        };
        if let Err(reason) = unsupported {
            for &l in &levels {
                let mut st = level_step(&mine, &s.name, l);
                st.status = StepStatus::Unsupported;
                st.failure = Some(reason.clone());
                record_step(ctx, st, &mut group_steps)?;
            }
            continue;
        }
        match exec.start(&mine, ServerId(idx), s) {
            Ok(started) => {
                ctx.sink.configs(&s.name, &started.configs)?;
                let lab = throng_servers::LabSettings {
                    protocol: s.protocol.description().to_string(),
                    cipher: if s.protocol.tls() {
                        format!(
                            "the server's choice among rustls's TLS 1.3 and 1.2 suites, offered in \
                             rustls's order, a {} certificate",
                            s.certificate.name()
                        )
                    } else {
                        "none (cleartext)".to_string()
                    },
                    ..throng_servers::LabSettings::cleartext(
                        group.cores,
                        mine.server_cpus.clone(),
                        throng_servers::max_connections_for(group.max_concurrency),
                    )
                };
                let parity = throng_servers::parity(&s.recipe, &started.configs, &lab);
                if let Some(e) = parity.iter().find(|e| e.setting == Setting::AccessLog) {
                    ctx.access_logs.retain(|(n, _)| n != &s.name);
                    ctx.access_logs.push((s.name.clone(), e.value.clone()));
                }
                ctx.sink.parity(&s.name, &parity)?;
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
                // Interrupted while it was being waited for: nothing
                // failed, nothing was measured.
                let cut = ctx.interrupt.is_set();
                for &l in &levels {
                    let mut st = level_step(&mine, &s.name, l);
                    if cut {
                        st.status = StepStatus::Skipped;
                        st.failure = Some(throng_servers::launch::ABANDONED.to_string());
                    } else {
                        st.status = StepStatus::Failed;
                        st.failure = Some(msg.clone());
                        st.log_tail = Some(f.failure.log_tail.clone());
                    }
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
        // Timed whatever the rounds are: it readies the server, it does
        // not measure it.
        // In the closed model even before offered rates: it readies the
        // server, at the connections the first level opens.
        let first = Level::closed(levels[0].concurrency);
        let mut load = study.round_load(group, first, 1).timed(study.warmup_s);
        load.warmup_s = 0.0;
        for &idx in &up {
            if ctx.interrupt.is_set() {
                break;
            }
            load.client_cpus = group.client_cpus_of(idx).to_vec();
            match exec.round(ServerId(idx), &load, RoundKind::Warmup) {
                // The warmup's pace sizes the first level's rounds.
                Ok(m) => paces.update(idx, &m.summary),
                Err(e) => failed[idx] = Some(format!("warmup failed: {e}")),
            }
        }
    }
    let order = study.comparison_order();
    let mut compared: Vec<Comparison> = Vec::new();
    // Per server: why it is offered no higher rate, once it did not keep
    // up with one.
    let mut saturated: Vec<Option<String>> = vec![None; study.servers.len()];
    for (level, &lv) in levels.iter().enumerate() {
        for &idx in &up {
            if let Some(why) = &saturated[idx] {
                let mut st = level_step(&group.for_server(idx), &study.servers[idx].name, lv);
                st.status = StepStatus::Skipped;
                st.failure = Some(why.clone());
                record_step(ctx, st, &mut group_steps)?;
            }
        }
        let mut pending: Vec<Pending> = up
            .iter()
            .filter(|&&idx| saturated[idx].is_none())
            .map(|&idx| {
                let mut step = level_step(&group.for_server(idx), &study.servers[idx].name, lv);
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
        // In the study's comparison order, so each pair is (earlier, later).
        pending.sort_by_key(|p| order.iter().position(|&i| i == p.server));
        let level_seed = ((group.cores as u64) << 48) ^ ((level as u64) << 32) ^ 0x7468_726f;
        let live: Vec<(ServerId, RoundLoad)> = pending
            .iter()
            .filter(|p| !p.done)
            .map(|p| {
                let mut load = study.round_load(group, lv, level_seed);
                load.client_cpus = group.client_cpus_of(p.server).to_vec();
                (ServerId(p.server), load)
            })
            .collect();
        // Connections kept between slices run timed windows of the closed
        // model only; a counted or rate round opens its own.
        if live.len() >= 2 && !counted && lv.rate.is_none() {
            exec.open_level(&live);
        }
        let mut shuffle = Shuffle::new(level_seed);
        let mut block = 0u32;
        let mut level_cs: Vec<Comparison> = Vec::new();
        while pending.iter().any(|p| !p.done) && !ctx.interrupt.is_set() {
            // Slices of different servers are paired only while two or more
            // are still measured; a server left alone is judged by its own
            // interval, as a study of one server is.
            let live: Vec<usize> = (0..pending.len()).filter(|&k| !pending[k].done).collect();
            let paired = live.len() >= 2;
            // A duet measures its two servers at once; otherwise each gets a
            // slice in turn, in a shuffled order.
            let mut turn: Vec<usize> = Vec::new();
            if study.duet && live.len() == 2 {
                let slice = Slice {
                    seed: level_seed ^ (u64::from(block) << 8),
                    block: Some(block),
                };
                let [a, b] = pending
                    .get_disjoint_mut([live[0], live[1]])
                    .expect("two distinct steps");
                measure_together(ctx, exec, group, [a, b], &mut failed, &mut paces, slice)?;
            } else {
                turn.extend(0..pending.len());
                shuffle.shuffle(&mut turn);
            }
            for k in turn {
                let p = &mut pending[k];
                if p.done || ctx.interrupt.is_set() {
                    continue;
                }
                let seed = level_seed ^ (u64::from(block) << 8) ^ k as u64;
                let slice = Slice {
                    seed,
                    block: paired.then_some(block),
                };
                measure_round(ctx, exec, group, p, &mut failed, &mut paces, slice)?;
            }
            block += 1;
            if paired {
                let steps: Vec<&StepRecord> = pending
                    .iter()
                    .filter(|p| !p.step.rounds.is_empty())
                    .map(|p| &p.step)
                    .collect();
                level_cs = pairs::compare_level(&steps, study.precision.target);
                let narrow = pairs::all_narrow(&level_cs, study.precision.target);
                let p = &study.precision;
                // The rounds a step has, not the blocks it was given: a block
                // cut short (an interrupt, a round asked again) measured
                // nothing for it, and a step could end "done" without one.
                for x in pending.iter_mut().filter(|x| !x.done) {
                    let spent = x.spent.as_secs_f64();
                    x.done = x.step.rounds.len() >= p.min_rounds as usize
                        && (counted || narrow || block >= p.max_rounds || spent >= p.max_step_s);
                }
            }
        }
        // A server that dropped the keep-alive connections it was loaded
        // on was not spoken to as the others: its protocol row says so.
        for p in pending
            .iter()
            .filter(|p| p.step.status == StepStatus::Ok && !p.step.rounds.is_empty())
        {
            let s = &study.servers[p.server];
            if let Some(e) = crate::live::live_keep_alive(&p.step.rounds, s.protocol.description())
            {
                ctx.sink.parity(&s.name, &[e])?;
            }
        }
        // The diagnostic round comes after the measured ones, on the same
        // connections, and is stored apart from them.
        if study.diagnose && !ctx.interrupt.is_set() {
            for p in pending
                .iter_mut()
                .filter(|p| p.step.status == StepStatus::Ok && !p.step.rounds.is_empty())
            {
                if ctx.interrupt.is_set() {
                    break;
                }
                let measured = RoundLoad {
                    warmup_s: 0.0,
                    client_cpus: group.client_cpus_of(p.server).to_vec(),
                    ..study.round_load(group, lv, level_seed)
                };
                // A counted level's diagnosis is one more round of its
                // count; its counts are per request either way.
                let load = if counted {
                    measured
                } else {
                    measured.timed(p.round_s.unwrap_or(study.round_s).max(DIAGNOSE_S))
                };
                let name = &study.servers[p.server].name;
                let d = exec
                    .diagnose(ServerId(p.server), &load)
                    .unwrap_or_else(|e| throng_model::Diagnosis {
                        unavailable: Some(e.to_string()),
                        ..Default::default()
                    });
                let configured = ctx
                    .access_logs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str());
                ctx.sink.parity(name, &live_parity(&d, configured))?;
                p.step.diagnosis = Some(d);
            }
        }
        exec.close_level();
        if !level_cs.is_empty() {
            ctx.sink.comparisons(&level_cs)?;
            ctx.observer.event(Event::Compared(&level_cs));
        }
        for mut p in pending {
            if !p.done {
                // Interrupted: keep the rounds measured, say why it is short.
                p.step.status = StepStatus::Skipped;
                p.step.failure = Some(format!("interrupted after {} rounds", p.step.rounds.len()));
            }
            p.step.throughput = throng_stats::estimate(&p.rps);
            if !p.step.rounds.is_empty() {
                let target = study.precision.target;
                p.step.verdict = if level_cs.is_empty() {
                    throng_trust::verdict::step_verdict(&p.step, &p.verdicts, target)
                } else {
                    throng_trust::verdict::step_verdict_paired(
                        &p.step,
                        &p.verdicts,
                        target,
                        &level_cs,
                    )
                };
            }
            if p.step.status == StepStatus::Ok {
                if let Some(why) = throng_trust::verdict::saturation(&p.step) {
                    p.step
                        .verdict
                        .push(throng_model::ReasonCode::Saturated, why);
                    if let Some(r) = lv.rate {
                        saturated[p.server] =
                            Some(format!("the server did not keep up at {r} req/s"));
                    }
                }
            }
            if p.step.status == StepStatus::Failed && p.step.log_tail.is_none() {
                p.step.log_tail = Some(exec.log_tail(ServerId(p.server)));
            }
            record_step(ctx, p.step, &mut group_steps)?;
        }
        compared.extend(level_cs);
        if ctx.interrupt.is_set() {
            break;
        }
    }
    // Every pair over the whole sweep: all levels' pairs pooled.
    if !compared.is_empty() {
        let sweeps: Vec<Vec<&StepRecord>> = order
            .iter()
            .map(|&i| {
                group_steps
                    .iter()
                    .filter(|s| s.server == study.servers[i].name && !s.rounds.is_empty())
                    .collect()
            })
            .collect();
        let pooled = pairs::compare_sweep(&sweeps, study.precision.target);
        ctx.sink.comparisons(&pooled)?;
        ctx.observer.event(Event::Compared(&pooled));
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
                    group: &group.for_server(idx),
                    server: ServerId(idx),
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
        exec.stop(ServerId(idx));
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
                ctx.observer.event(Event::Revised(st));
            }
        }
    }
    Ok(())
}

/// What became of a round once measured.
enum Absorbed {
    /// Stored, or the step failed, or the run was interrupted.
    Done,
    /// It ended before any response could complete: measure it again
    /// with this longer load.
    Again(Box<RoundLoad>),
}

/// One measured round of `p`'s server, measured again longer while it
/// ends too early.
fn measure_round(
    ctx: &mut Ctx,
    exec: &mut dyn Executor,
    group: &Group,
    p: &mut Pending,
    failed: &mut [Option<String>],
    paces: &mut Paces,
    slice: Slice,
) -> anyhow::Result<()> {
    let Some(mut load) = prepare(ctx, exec, group, p, failed, paces, slice) else {
        return Ok(());
    };
    loop {
        let t0 = Instant::now();
        let result = exec.round(ServerId(p.server), &load, RoundKind::Slice);
        p.spent += t0.elapsed();
        match absorb(ctx, exec, group, p, failed, paces, slice, &load, result)? {
            Absorbed::Done => return Ok(()),
            Absorbed::Again(longer) => load = *longer,
        }
    }
}

/// The rounds of two servers at the same time, each on its own cores
/// (a duet): both see the same interference at every instant.
#[allow(clippy::too_many_arguments)]
fn measure_together(
    ctx: &mut Ctx,
    exec: &mut dyn Executor,
    group: &Group,
    both: [&mut Pending; 2],
    failed: &mut [Option<String>],
    paces: &mut Paces,
    slice: Slice,
) -> anyhow::Result<()> {
    let [a, b] = both;
    let mut loads = [
        prepare(ctx, exec, group, a, failed, paces, slice),
        prepare(ctx, exec, group, b, failed, paces, slice),
    ];
    while loads.iter().any(Option::is_some) && !ctx.interrupt.is_set() {
        let ids = [ServerId(a.server), ServerId(b.server)];
        let asked: Vec<(ServerId, &RoundLoad)> = ids
            .iter()
            .zip(&loads)
            .filter_map(|(&n, l)| l.as_ref().map(|l| (n, l)))
            .collect();
        let t0 = Instant::now();
        let mut results = exec.rounds_together(&asked).into_iter();
        let elapsed = t0.elapsed();
        for (p, load) in [&mut *a, &mut *b].into_iter().zip(loads.iter_mut()) {
            let Some(l) = load.take() else { continue };
            let r = results.next().unwrap_or(Err(RoundError::NotRunning));
            p.spent += elapsed;
            if let Absorbed::Again(longer) =
                absorb(ctx, exec, group, p, failed, paces, slice, &l, r)?
            {
                *load = Some(*longer);
            }
        }
    }
    Ok(())
}

/// The load of `p`'s next round, or `None` when its server has exited
/// (the step is then failed).
fn prepare(
    ctx: &mut Ctx,
    exec: &mut dyn Executor,
    group: &Group,
    p: &mut Pending,
    failed: &mut [Option<String>],
    paces: &mut Paces,
    slice: Slice,
) -> Option<RoundLoad> {
    let study = ctx.study;
    let name = &study.servers[p.server].name;
    if let Some(e) = exec.exited(ServerId(p.server)) {
        fail(exec, p, failed, format!("the server {e}"));
        return None;
    }
    let c = p.step.concurrency;
    let level = Level {
        concurrency: c,
        rate: p.step.rate,
    };
    let measured = RoundLoad {
        client_cpus: group.client_cpus_of(p.server).to_vec(),
        ..study.round_load(group, level, slice.seed)
    };
    if measured.requests.is_some() {
        return Some(measured);
    }
    // A step's rounds all get the length chosen at its first: the study's,
    // or long enough for each connection to complete a few responses at
    // the pace the server last showed.
    let seconds = match p.round_s {
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
    Some(measured.timed(seconds))
}

/// The step failed: its server is stopped and its later steps in the
/// group fail with it.
fn fail(exec: &mut dyn Executor, p: &mut Pending, failed: &mut [Option<String>], msg: String) {
    p.step.status = StepStatus::Failed;
    p.step.log_tail = Some(exec.log_tail(ServerId(p.server)));
    exec.stop(ServerId(p.server));
    failed[p.server] = Some(format!("failed earlier: {msg}"));
    p.step.failure = Some(msg);
    p.done = true;
}

/// Stores a measured round in its step, or fails the step, or asks for
/// the round again, longer.
#[allow(clippy::too_many_arguments)]
fn absorb(
    ctx: &mut Ctx,
    exec: &mut dyn Executor,
    group: &Group,
    p: &mut Pending,
    failed: &mut [Option<String>],
    paces: &mut Paces,
    slice: Slice,
    load: &RoundLoad,
    result: Result<Measured, RoundError>,
) -> anyhow::Result<Absorbed> {
    let study = ctx.study;
    let name = &study.servers[p.server].name;
    let c = p.step.concurrency;
    if ctx.interrupt.is_set() {
        return Ok(Absorbed::Done);
    }
    let m = match result {
        Ok(m) => m,
        Err(e) => {
            fail(exec, p, failed, e.to_string());
            return Ok(Absorbed::Done);
        }
    };
    if let Some(e) = exec.exited(ServerId(p.server)) {
        fail(exec, p, failed, format!("the server {e} during the round"));
        return Ok(Absorbed::Done);
    }
    paces.update(p.server, &m.summary);
    // A round that ended before any response could complete measured
    // its own length, not the server: measure it again, longer. A counted
    // round ends only when its requests have.
    if load.requests.is_none() && throng_model::max_users::round_too_short(&m.summary) {
        if let Some(next) = longer_round(load.seconds, paces.of[p.server], c) {
            ctx.observer.event(Event::Note(format!(
                "{name} c={c}: the {} round ended before any response ({} requests still in \
                 flight, none timed out); measuring it again with {} rounds",
                secs(load.seconds),
                m.summary.in_flight_at_end,
                secs(next)
            )));
            p.round_s = Some(next);
            return Ok(Absorbed::Again(Box::new(RoundLoad {
                seconds: next,
                ..load.clone()
            })));
        }
    }
    if m.summary.completed == 0 {
        // A round without a response may be a stall of a busy machine; the
        // server has failed only if it does not answer a request on its own.
        if let Err(e) = exec.answers(ServerId(p.server)) {
            fail(
                exec,
                p,
                failed,
                format!("the server stopped answering: no response in a whole round, then {e}"),
            );
            return Ok(Absorbed::Done);
        }
    }
    let rc = throng_trust::verdict::RoundContext {
        server: Some(m.usage.clone()),
        server_cores: Some(group.cores),
        client_threads: m.summary.threads as u32,
        shared_cores: group.shared,
        close_mode: !load.shape.keep_alive,
    };
    // Apart, the client hosts read their own ports; this machine's are no
    // concern of a load that came from elsewhere.
    let verdict = match &m.ports {
        Some(p) => {
            throng_trust::verdict::round_verdict_with(&m.summary, Some(&m.latency), &rc, p.clone())
        }
        None => throng_trust::verdict::round_verdict(&m.summary, Some(&m.latency), &rc),
    };
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
        block: slice.block,
    });
    // Paired slices end together, when their comparisons say (see
    // `run_group`); a lone server ends by its own interval, or at its
    // count of rounds.
    if slice.block.is_none() {
        if load.requests.is_some() {
            p.done = p.step.rounds.len() >= study.precision.min_rounds as usize;
        } else {
            match study.precision.next(&p.rps, p.spent.as_secs_f64()) {
                Next::More => {}
                Next::Converged | Next::Capped => p.done = true,
            }
        }
    }
    Ok(Absorbed::Done)
}

/// A step not measured yet of `server` at `level`.
fn level_step(group: &Group, server: &str, level: Level) -> StepRecord {
    StepRecord {
        rate: level.rate,
        ..group.step(server, level.concurrency)
    }
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
