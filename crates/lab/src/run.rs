//! Running a study: the run stored, the machine checked, every server's
//! features probed, then for each core count and workload a group swept
//! (see [`crate::sweep`]), storing as it goes so an interrupted run keeps
//! what it measured.

use std::path::PathBuf;

use throng_model::{ConfigFile, MaxUsers, RunRecord, ServerRecord, StepRecord, StepStatus};
use throng_servers::{RunAs, RunDir, Site};
use throng_store::Store;

use crate::executor::{DoctorPlan, Executor, Local};
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::observer::{Event, Observer};
use crate::study::{plan_cores, CoresPlan, Study};
use crate::sweep::{run_group, Ctx, Sink};
use crate::workload::{self, Workload, WorkloadKind};

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

/// The store as a sweep's sink: rows written as steps end.
struct Stored<'a> {
    store: &'a mut Store,
    run_id: i64,
}

impl Sink for Stored<'_> {
    fn step(&mut self, step: &StepRecord) -> anyhow::Result<()> {
        self.store.add_step(self.run_id, step).map(|_| ())
    }
    fn verdict(&mut self, step: &StepRecord) -> anyhow::Result<()> {
        self.store.update_verdict(self.run_id, step)
    }
    fn configs(&mut self, server: &str, configs: &[ConfigFile]) -> anyhow::Result<()> {
        self.store.add_configs(self.run_id, server, configs)
    }
    fn max_users(&mut self, server: &str, m: &MaxUsers) -> anyhow::Result<()> {
        self.store.add_max_users(self.run_id, server, m)
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
    study.check_installed()?;
    let user = RunAs::unprivileged();
    let base = opts.workdir.clone().unwrap_or_else(std::env::temp_dir);
    // Named before the run has its id: the time in milliseconds keeps two
    // runs of one process apart.
    let stamp = (throng_model::unix_now() * 1000.0) as i64;
    let rundir = RunDir::create(&base, "throng-lab", stamp, opts.keep_workdir)?;
    let site = Site {
        rundir: &rundir,
        user: user.as_ref(),
    };
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
    let cpus = throng_engine::affinity::own_cpus();
    let plans = plan_cores(study.cores.as_deref(), &cpus, study.allow_shared_cores);
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
    let (doctor, environment) = exec.survey(&DoctorPlan {
        connections: study.max_concurrency() as u64,
        close_mode: false,
        client_cpus,
        server_cpus,
    });
    let run = RunRecord {
        id: 0,
        study: study.name.clone(),
        study_toml: study.toml.clone(),
        started_unix_s: throng_model::unix_now(),
        finished_unix_s: None,
        complete: false,
        environment,
        doctor,
    };
    let run_id = store.begin_run(&run)?;
    for s in &study.servers {
        store.add_server(
            run_id,
            &ServerRecord {
                name: s.name.clone(),
                recipe: s.recipe.name.clone(),
                version: s.recipe.version(),
                package: s.recipe.package.clone(),
                model: s.recipe.model.clone(),
                exe_bytes: s.recipe.exe_bytes(),
                installed_bytes: crate::features::installed_bytes(&s.recipe.package),
                ..ServerRecord::default()
            },
        )?;
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
            let found = crate::features::probe_server(site, s, &cpus);
            store.add_features(run_id, &s.name, &found)?;
        }
    }
    let runnable = plans
        .iter()
        .filter(|p| matches!(p, CoresPlan::Run { .. }))
        .count();
    let groups = (runnable * study.workloads.len()) as u64;
    let steps = groups * (study.servers.len() * study.concurrency.len()) as u64;
    let per_round = study.round_s + study.round_warmup_s + 0.1;
    let estimated_s = steps as f64 * study.precision.min_rounds as f64 * per_round
        + groups as f64 * study.servers.len() as f64 * (study.warmup_s + 1.0);
    observer.event(Event::Planned {
        run_id,
        steps,
        estimated_s,
    });
    for p in &plans {
        if let CoresPlan::Skip { cores, reason } = p {
            observer.event(Event::Note(format!("skipped: {reason}")));
            // Stored, so a report shows what was asked for and why it is absent.
            for w in &study.workloads {
                for s in &study.servers {
                    for &c in &study.concurrency {
                        let st = skipped_step(&s.name, *cores, w.name(), c, reason);
                        store.add_step(run_id, &st)?;
                    }
                }
            }
        }
    }
    let mut sink = Stored { store, run_id };
    let mut ctx = Ctx {
        study,
        sink: &mut sink,
        observer,
        interrupt,
        failed_steps: 0,
    };
    let mut docroots: Vec<(WorkloadKind, Workload)> = Vec::new();
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
                        let w = workload::generate(kind, &dir)?;
                        docroots.push((kind, w.clone()));
                        w
                    }
                };
                let group = Group {
                    cores: *cores,
                    server_cpus: server_cpus.clone(),
                    client_cpus: client_cpus.clone(),
                    shared: *shared,
                    workload: w,
                    max_concurrency: study.max_concurrency(),
                };
                run_group(&mut ctx, exec, &group)?;
            }
        }
        Ok(())
    })();
    let complete = result.is_ok() && !interrupt.is_set();
    let failed_steps = ctx.failed_steps;
    sink.store.finish_run(run_id, complete)?;
    result?;
    Ok(Outcome {
        run_id,
        complete,
        failed_steps,
    })
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
