//! Running a study: the run stored, the machine checked, every server's
//! features probed, then for each core count and workload a group swept
//! (see [`crate::sweep`]), storing as it goes so an interrupted run keeps
//! what it measured.

use std::path::PathBuf;

use anyhow::Context;

use throng_model::{
    Comparison, ConfigFile, MaxUsers, ParityEntry, ServerRecord, StepRecord, StepStatus,
};
use throng_servers::{RunAs, RunDir, Site};
use throng_store::{NewRun, RunWriter, Store};

use crate::executor::{DoctorPlan, Executor, Local};
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::observer::{Event, Observer};
use crate::study::{plan_cores, CoresPlan, Study};
use crate::sweep::{run_group, Ctx, Sink};
use crate::workload::{self, Workload, WorkloadId};

#[derive(Debug, Clone, Default)]
pub struct LabOptions {
    /// Where run directories (configs, logs, document roots) are created;
    /// default: the system temporary directory.
    pub workdir: Option<PathBuf>,
    /// Keep the run directory afterwards (for looking at logs).
    pub keep_workdir: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub run_id: i64,
    pub complete: bool,
    /// Steps stored with status failed.
    pub failed_steps: u32,
}

/// The run being written as a sweep's sink: rows written as steps end.
impl Sink for RunWriter<'_> {
    fn step(&mut self, step: &StepRecord) -> anyhow::Result<()> {
        RunWriter::step(self, step).map(|_| ())
    }
    fn verdict(&mut self, step: &StepRecord) -> anyhow::Result<()> {
        RunWriter::verdict(self, step)
    }
    fn configs(&mut self, server: &str, configs: &[ConfigFile]) -> anyhow::Result<()> {
        RunWriter::configs(self, server, configs)
    }
    fn max_users(&mut self, server: &str, m: &MaxUsers) -> anyhow::Result<()> {
        RunWriter::max_users(self, server, m)
    }
    fn comparisons(&mut self, cs: &[Comparison]) -> anyhow::Result<()> {
        RunWriter::comparisons(self, cs)
    }
    fn parity(&mut self, server: &str, entries: &[ParityEntry]) -> anyhow::Result<()> {
        RunWriter::parity(self, server, entries)
    }
    fn prices(&mut self, p: &throng_model::CorePrices) -> anyhow::Result<()> {
        RunWriter::prices(self, p)
    }
}

/// Runs a study to the end (or until interrupted) on this machine,
/// storing as it goes.
pub fn run_study(
    study: &Study,
    store: &mut Store,
    opts: &LabOptions,
    observer: &mut dyn Observer,
    interrupt: &Interrupt,
) -> anyhow::Result<Outcome> {
    // Servers on another host are checked there, when the study opens.
    if study.hosts.server.is_local() {
        study.check_installed()?;
    }
    let user = RunAs::unprivileged();
    let base = opts.workdir.clone().unwrap_or_else(std::env::temp_dir);
    if let (Some(u), true) = (&user, study.hosts.server.is_local()) {
        if let Some((dir, mode)) = u.cannot_reach(&base) {
            anyhow::bail!(
                "--workdir {}: {} (mode {mode:o}) does not let {}, whom the servers run as, \
                 pass through to their configs and documents; give a --workdir it can reach, \
                 such as one under /tmp, or `chmod o+x {}`",
                base.display(),
                dir.display(),
                u.name,
                dir.display()
            );
        }
    }
    // Named before the run has its id: the time in milliseconds keeps two
    // runs of one process apart.
    let stamp = (throng_model::unix_now() * 1000.0) as i64;
    let mut rundir = RunDir::create(&base, "throng-lab", stamp, opts.keep_workdir)?;
    if study.hosts.server.is_local() {
        crate::futex::prepare(study.futex_global, &mut rundir)?;
    }
    let site = Site {
        rundir: &rundir,
        user: user.as_ref(),
    };
    if !study.hosts.is_local() {
        let mut exec = crate::apart::Apart::connect(study, interrupt, opts.keep_workdir)?;
        return run_study_with(study, store, observer, interrupt, site, &mut exec);
    }
    let mut exec = Local::new(site, interrupt);
    run_study_with(study, store, observer, interrupt, site, &mut exec)
}

/// [`run_study`] with the executor chosen by the caller: the sweep's tests
/// pass a scripted one. `site` is where servers and document roots go.
pub fn run_study_with(
    study: &Study,
    store: &mut Store,
    observer: &mut dyn Observer,
    interrupt: &Interrupt,
    site: Site,
    exec: &mut dyn Executor,
) -> anyhow::Result<Outcome> {
    let rundir = site.rundir;
    let cpus = exec.cpus();
    study.check_duet(cpus.len())?;
    let plans = if exec.clients_apart() {
        crate::study::plan_cores_apart(study.cores.as_deref(), &cpus)
    } else {
        plan_cores(study.cores.as_deref(), &cpus, study.allow_shared_cores)
    };
    let (server_cpus, client_cpus) = plans
        .iter()
        .find_map(|p| match p {
            CoresPlan::Run {
                server_cpus,
                client_cpus,
                ..
            } => Some((server_cpus.clone(), client_cpus.clone())),
            CoresPlan::Skip { .. } => None,
        })
        .unwrap_or_default();
    let (mut doctor, environment) = exec.survey(&DoctorPlan {
        connections: study.max_concurrency() as u64,
        close_mode: study.close_mode(),
        client_cpus,
        server_cpus,
    });
    // Chosen before the run is begun, so a run never takes its own
    // comparisons for a calibration.
    let threshold = crate::calibration::threshold(study.precision_rule, store, &environment)?;
    let earlier = crate::reruns::Earlier::load(store, study, &environment)?;
    // Said before the run, with the machine's other findings: a server
    // whose starts differ more than the study decides on.
    let spread = earlier.spreads.findings(threshold.value);
    doctor.extend(spread.iter().cloned());
    let host = if study.hosts.server.is_local() {
        crate::futex::Host::Here(throng_servers::futex::private_hash_slots())
    } else {
        crate::futex::Host::Apart
    };
    doctor.push(crate::futex::finding(study.futex_global, host));
    let links = crate::study::path_links(study.link_capacity, &environment.hosts);
    let mut decided = study.clone();
    decided.precision.target = threshold.value;
    let study = &decided;
    let servers = study
        .servers
        .iter()
        .map(|s| {
            // This machine's dpkg knows only this machine's servers.
            let package = if study.hosts.server.is_local() {
                crate::features::installed_package(&s.recipe)
            } else {
                s.recipe.package.clone()
            };
            ServerRecord {
                name: s.name.clone(),
                recipe: s.recipe.name.clone(),
                version: s.recipe.version(),
                package: package.clone(),
                model: s.recipe.model.clone(),
                exe_bytes: s.recipe.exe_bytes(),
                installed_bytes: crate::features::installed_bytes(&package),
                profile: s.profile,
                ..ServerRecord::default()
            }
        })
        .collect();
    let mut run = RunWriter::begin(
        store,
        NewRun {
            study: study.name.clone(),
            study_toml: study.toml.clone(),
            started_unix_s: throng_model::unix_now(),
            environment,
            doctor,
            baseline: Some(study.servers[study.baseline].name.clone()),
            threshold: Some(threshold),
            servers,
        },
    )?;
    let run_id = run.id();
    // Planned before the feature probes, so the estimate covers them.
    let runnable = plans
        .iter()
        .filter(|p| matches!(p, CoresPlan::Run { .. }))
        .count();
    let groups = (runnable * study.workloads.len()) as u64;
    let steps = (runnable * study.servers.len()) as u64 * study.levels_per_cores();
    observer.event(Event::Planned {
        run_id,
        steps,
        // The longer end: what to plan for. `estimate` gives both.
        estimated_s: estimate_groups(study, groups).max_s,
    });
    observer.event(Event::Note(crate::calibration::note(&threshold)));
    if let Some(note) = earlier.note() {
        observer.event(Event::Note(note));
    }
    for f in &spread {
        observer.event(Event::Note(f.message.clone()));
    }
    // Apart, every CPU of the server host serves: "auto" sweeps them all.
    let auto = crate::study::auto_cores_note(study.cores.as_deref(), &cpus);
    if let Some(note) = auto.filter(|_| !exec.clients_apart()) {
        observer.event(Event::Note(note));
    }
    for note in study.loads.iter().filter_map(|w| w.split_note.as_ref()) {
        observer.event(Event::Note(note.clone()));
    }
    // ACME's feature table: each server probed live on an instance of its
    // own, before any load.
    if study.features {
        let cpus = plans
            .iter()
            .find_map(|p| match p {
                CoresPlan::Run { server_cpus, .. } => Some(server_cpus.clone()),
                CoresPlan::Skip { .. } => None,
            })
            .unwrap_or_default();
        for s in &study.servers {
            if interrupt.is_set() {
                break;
            }
            let found = exec.probe_features(site, s, &cpus);
            run.features(&s.name, &found)?;
        }
    }
    for p in &plans {
        if let CoresPlan::Skip { cores, reason } = p {
            observer.event(Event::Note(format!("skipped: {reason}")));
            // Stored, so a report shows what was asked for and why it is absent.
            for w in &study.workloads {
                for s in &study.servers {
                    for l in study.load_of(*w).levels() {
                        let st = StepRecord {
                            rate: l.rate,
                            ..skipped_step(&s.name, *cores, w.name(), l.concurrency, reason)
                        };
                        run.step(&st)?;
                    }
                }
            }
        }
    }
    let mut ctx = Ctx {
        study,
        sink: &mut run,
        observer,
        interrupt,
        failed_steps: 0,
        access_logs: Vec::new(),
        earlier: &earlier,
        links,
    };
    let mut docroots: Vec<(WorkloadId, Workload)> = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        for p in &plans {
            let CoresPlan::Run {
                cores,
                server_cpus,
                client_cpus,
                shared,
            } = p
            else {
                continue;
            };
            for &kind in &study.workloads {
                if interrupt.is_set() {
                    return Ok(());
                }
                let w = match docroots.iter().find(|(k, _)| *k == kind) {
                    Some((_, w)) => w.clone(),
                    None => {
                        let dir = rundir.subdir(&[&format!("docroot-{}", kind.name())], None)?;
                        let w = match kind {
                            WorkloadId::Builtin(k) => workload::generate(k, &dir)?,
                            WorkloadId::Own(name) => study
                                .sites
                                .iter()
                                .find(|s| s.id == kind)
                                .with_context(|| format!("workload {name}: no site"))?
                                .copy_into(&dir)?,
                        };
                        docroots.push((kind, w.clone()));
                        w
                    }
                };
                let lanes = if let Some(lanes) = exec.duet_lanes(*cores).filter(|_| study.duet) {
                    lanes
                } else if study.duet {
                    let all: Vec<usize> = server_cpus.iter().chain(client_cpus).copied().collect();
                    crate::group::duet_lanes(*cores, &all).with_context(|| {
                        format!("duet: {} CPUs cannot hold two servers of {cores} cores and their clients", all.len())
                    })?
                } else {
                    Vec::new()
                };
                let group = Group {
                    cores: *cores,
                    server_cpus: server_cpus.clone(),
                    client_cpus: client_cpus.clone(),
                    shared: *shared,
                    workload: w,
                    max_concurrency: study.max_concurrency(),
                    lanes,
                };
                run_group(&mut ctx, exec, &group)?;
            }
        }
        Ok(())
    })();
    let complete = result.is_ok() && !interrupt.is_set();
    let failed_steps = ctx.failed_steps;
    run.finish(complete)?;
    result?;
    Ok(Outcome {
        run_id,
        complete,
        failed_steps,
    })
}

/// Seconds the feature probes take per server: a start of its own, the
/// 512 KiB download at 128 KiB/s, the other requests, the stop.
pub const FEATURE_PROBE_S: f64 = 8.0;

/// Seconds to start a server for a group (its backend or helper too),
/// await its readiness, check its pinning and every URL, and stop it at the
/// group's end.
pub const SERVER_START_S: f64 = 1.5;

/// Seconds a round takes besides its measured time and its own warmup:
/// the drain of the connections kept between slices, the sampler's last
/// read, the verdict. bench/slices.sh on a 2-CPU machine: 200 slices of
/// 0.1 s (+0.02 s warmup) took 6.1 s more than 20 of 1 s, about 14 ms
/// each; `quick` ran 40 slices in each step's 5 s then, 0.125 s each.
pub const ROUND_OVERHEAD_S: f64 = 0.01;

/// Seconds a diagnostic round costs besides its load: perf's start, and
/// its stop, which reads the tracepoint formats (1–2 s measured here).
pub const DIAGNOSE_OVERHEAD_S: f64 = 1.5;

/// How long a study should take, as a range: the precision loop may stop a
/// step at its minimum rounds or run it to its maximum (or its time cap),
/// and the max-users search may end at its first level or go to its cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEstimate {
    pub min_s: f64,
    pub max_s: f64,
}

/// The estimate for `study` on this machine's CPUs.
pub fn estimate(study: &Study) -> RunEstimate {
    let cpus = throng_engine::affinity::own_cpus();
    let runnable = plan_cores(study.cores.as_deref(), &cpus, study.allow_shared_cores)
        .iter()
        .filter(|p| matches!(p, CoresPlan::Run { .. }))
        .count();
    estimate_groups(study, (runnable * study.workloads.len()) as u64)
}

/// The estimate for `study` with `groups` groups (core counts that run ×
/// workloads). Rounds lengthened for slow responses (large files at high
/// concurrency) are not known before they are measured and are not in it;
/// nor is how long a round of a request count takes: `[rounds] seconds`
/// stands in for it.
pub fn estimate_groups(study: &Study, groups: u64) -> RunEstimate {
    let servers = study.servers.len() as f64;
    let groups = groups as f64;
    let round = study.round_s + study.round_warmup_s + ROUND_OVERHEAD_S;
    let p = &study.precision;
    // A step stops at its minimum rounds at best; at worst at its maximum,
    // or earlier when its own rounds pass its time cap. Over launches, a
    // timed step gets its share of blocks in each of its least launches at
    // best, in each of its most at worst. A counted step runs its rounds
    // exactly.
    let (min_rounds, max_rounds) = if p.launched() {
        let per = f64::from(p.per_launch());
        (per * f64::from(p.launches), per * f64::from(p.launch_cap()))
    } else {
        let min = f64::from(p.min_rounds);
        let by_time = (p.max_step_s / round).ceil().max(min);
        (min, f64::from(p.max_rounds).min(by_time))
    };
    let per_cores = groups / study.workloads.len().max(1) as f64;
    let (mut timed_steps, mut counted_rounds) = (0.0, 0.0);
    // Starts of every server per group: the least and the most.
    let (mut starts_min, mut starts_max) = (0.0, 0.0);
    for w in &study.loads {
        let n = per_cores * servers * w.levels().len() as f64;
        let g = per_cores * servers;
        match w.counted_rounds {
            Some(rounds) => {
                counted_rounds += n * f64::from(rounds);
                let launches = p.counted_shares(rounds).len() as f64;
                starts_min += g * launches;
                starts_max += g * launches;
            }
            None => {
                timed_steps += n;
                starts_min += g * f64::from(p.launches.max(1));
                starts_max += g * f64::from(p.launch_cap());
            }
        }
    }
    let steps: f64 = study
        .loads
        .iter()
        .map(|w| per_cores * servers * w.levels().len() as f64)
        .sum();
    // Per started server: its start and checks, then its warmup round.
    let warmup = if study.warmup_s > 0.0 {
        study.warmup_s + ROUND_OVERHEAD_S
    } else {
        0.0
    };
    let probes = if study.features {
        servers * FEATURE_PROBE_S
    } else {
        0.0
    };
    let fixed_min = starts_min * (SERVER_START_S + warmup) + probes;
    let fixed_max = starts_max * (SERVER_START_S + warmup) + probes;
    // Each server's search doubles from the sweep's highest level to its
    // own cap, one round a level; it may stop at the first.
    let top = study
        .loads
        .iter()
        .flat_map(|w| w.concurrency.iter().copied())
        .max()
        .unwrap_or(1);
    let levels_of = |cap: u32| {
        let (mut n, mut level) = (0u32, top);
        while level < cap {
            level = level.saturating_mul(2).min(cap);
            n += 1;
        }
        f64::from(n)
    };
    let searched: Vec<f64> = study
        .servers
        .iter()
        .filter_map(|s| study.users_cap(s))
        .map(|c| levels_of(c.users))
        .collect();
    let search_min = searched.iter().map(|n| n.min(1.0)).sum::<f64>();
    let search_max = searched.iter().sum::<f64>();
    let search = groups * round;
    let diagnose = if study.diagnose {
        steps * (study.round_s.max(crate::sweep::DIAGNOSE_S) + DIAGNOSE_OVERHEAD_S)
    } else {
        0.0
    };
    RunEstimate {
        min_s: fixed_min
            + diagnose
            + (timed_steps * min_rounds + counted_rounds) * round
            + search * search_min,
        max_s: fixed_max
            + diagnose
            + (timed_steps * max_rounds + counted_rounds) * round
            + search * search_max,
    }
}

fn skipped_step(
    server: &str,
    cores: u32,
    workload: &str,
    concurrency: u32,
    reason: &str,
) -> StepRecord {
    StepRecord {
        status: StepStatus::Skipped,
        failure: Some(reason.to_string()),
        ..StepRecord::new(server, cores, workload, concurrency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recipes;

    #[test]
    fn the_estimate_counts_starts_warmups_probes_searches_and_extra_rounds() {
        let r = Recipes::builtin();
        // quick: 4 servers, 4 levels, one group; 0.1 s slices with 0.02 s
        // of warmup, 4 blocks a level in each launch, 6 launches at least
        // and 16 at most, every server started and warmed up in each at
        // most (a launch past the sixth measures only what is still wide);
        // features and diagnoses (in the first launch) on.
        let quick = Study::load("quick", &r).unwrap();
        let e = estimate_groups(&quick, 1);
        let round = 0.1 + 0.02 + ROUND_OVERHEAD_S;
        let start = SERVER_START_S + 1.0 + ROUND_OVERHEAD_S;
        let once = 4.0 * FEATURE_PROBE_S + 16.0 * (quick.round_s.max(0.5) + DIAGNOSE_OVERHEAD_S);
        assert!(
            (e.min_s - (once + 6.0 * 4.0 * start + 16.0 * 24.0 * round)).abs() < 1e-9,
            "{e:?}"
        );
        assert!(
            (e.max_s - (once + 16.0 * 4.0 * start + 16.0 * 64.0 * round)).abs() < 1e-9,
            "{e:?}"
        );
        // The same in one launch: 24 to 64 slices a step, as its precision
        // loop decides, every server started once.
        let one = Study::load("quick", &r).unwrap();
        let one = Study {
            precision: crate::precision::Precision {
                launches: 1,
                max_launches: 1,
                ..one.precision
            },
            ..one
        };
        let e = estimate_groups(&one, 1);
        assert!(
            (e.min_s - (once + 4.0 * start + 16.0 * 24.0 * round)).abs() < 1e-9,
            "{e:?}"
        );
        assert!(
            (e.max_s - (once + 4.0 * start + 16.0 * 64.0 * round)).abs() < 1e-9,
            "{e:?}"
        );
        // Two workloads and a search that doubles from the sweep's highest
        // level, 100, to its cap of 300 (200, 300): one level at least, two
        // at most. One launch: 2 s rounds with 0.5 s of warmup, 3 to 8
        // rounds, but the 12 s time cap ends a step after 5 of them.
        let searched = Study::parse(
            "name = 's'\nservers = ['nginx', 'lighttpd']\nworkloads = ['tiny', 'large']\n\
             cores = [1]\nconcurrency = [10, 100]\nfeatures = false\nwarmup_seconds = 0\ndiagnose = false\n\
             max_users = true\nmax_users_cap = 300\n\
             [rounds]\nseconds = 2.0\nwarmup_seconds = 0.5\nmin = 3\nmax = 8\nstep_seconds = 12.0\n\
             launches = 1\n",
            &r,
        )
        .unwrap();
        let e = estimate_groups(&searched, 2);
        let round = 2.0 + 0.5 + ROUND_OVERHEAD_S;
        let fixed = 2.0 * 2.0 * SERVER_START_S;
        let steps = 2.0 * 2.0 * 2.0;
        assert!(
            (e.min_s - (fixed + steps * 3.0 * round + 4.0 * round)).abs() < 1e-9,
            "{e:?}"
        );
        assert!(
            (e.max_s - (fixed + steps * 5.0 * round + 2.0 * 4.0 * round)).abs() < 1e-9,
            "{e:?}"
        );
    }
}
