//! Running a study: for each core count and workload, every server is
//! started fresh on its cores, checked (ready, pinned, every URL answered
//! exactly), warmed up, then swept over the concurrency levels. Rounds of a
//! level are interleaved across servers with a rotating order, so slow
//! drift of the machine spreads over all of them instead of favouring the
//! one measured first.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use throng_engine::probe;
use throng_engine::{LoadResult, LoadSpec, Order, Stop, Target};
use throng_model::{
    ConfigFile, RoundRecord, RunRecord, ServerRecord, ServerUsage, StepRecord, StepStatus, Verdict,
};

use crate::interrupt::Interrupt;
use crate::process::{self, Launch, ServerProcess};
use crate::recipe::{Recipe, RenderContext};
use crate::sample::Sampler;
use crate::stats::{estimate, Next};
use crate::store::Store;
use crate::study::{plan_cores, CoresPlan, Study, StudyServer};
use crate::workload::{self, Workload, WorkloadKind};

/// What the lab tells its caller as it goes. The lab itself never prints.
#[derive(Debug)]
pub enum Event<'a> {
    /// The run is stored under this id; `steps` will be reported.
    Planned {
        run_id: i64,
        steps: u64,
        estimated_s: f64,
    },
    /// Something the user must know (skipped core counts, ...).
    Note(String),
    /// A server is up for a group; `pid` leads its process group.
    ServerStarted {
        server: &'a str,
        cores: u32,
        workload: &'a str,
        pid: i32,
    },
    /// A server failed; its remaining steps in the group are recorded failed.
    ServerFailed {
        server: &'a str,
        cores: u32,
        workload: &'a str,
        message: &'a str,
    },
    /// One measured round.
    Round {
        server: &'a str,
        concurrency: u32,
        index: u32,
        result: &'a LoadResult,
        usage: &'a ServerUsage,
    },
    /// A finished (or failed) step, as stored.
    Step(&'a StepRecord),
}

pub trait Observer {
    fn event(&mut self, e: Event<'_>);
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {
    fn event(&mut self, _: Event<'_>) {}
}

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

/// The run directory: removed on drop unless asked to keep it.
struct RunDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub(crate) fn make_dir(p: &Path, owner: Option<(u32, u32)>) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(p, Some(uid), Some(gid))?;
    }
    Ok(())
}

/// The machine checks and the environment, from the trust crate.
fn doctor_and_environment(
    study: &Study,
    first: Option<&CoresPlan>,
) -> (Vec<throng_model::Finding>, throng_model::Environment) {
    let (server_cpus, client_cpus) = match first {
        Some(CoresPlan::Run {
            server_cpus,
            client_cpus,
            ..
        }) => (server_cpus.clone(), client_cpus.clone()),
        _ => (Vec::new(), Vec::new()),
    };
    let plan = throng_trust::doctor::Plan {
        connections: study.max_concurrency() as u64,
        close_mode: false,
        client_cpus,
        server_cpus,
    };
    (
        throng_trust::doctor::check(&plan),
        throng_trust::doctor::environment(),
    )
}

/// One server started for one group (cores × workload).
struct Running {
    idx: usize,
    port: u16,
    proc: ServerProcess,
    backend: Option<ServerProcess>,
    /// Error logs to show when it fails.
    logs: Vec<PathBuf>,
    failed: Option<String>,
}

impl Running {
    fn processes(&self) -> Vec<i32> {
        let mut v = self.proc.tree();
        if let Some(b) = &self.backend {
            v.extend(b.tree());
        }
        v
    }
    fn log_tail(&self) -> String {
        let mut t = self.proc.log_tail(&self.logs, 20);
        if let Some(b) = &self.backend {
            t.push_str(&b.log_tail(&[], 10));
        }
        t
    }
    fn stop(&mut self) {
        self.proc.stop(Duration::from_secs(5));
        if let Some(b) = &mut self.backend {
            b.stop(Duration::from_secs(5));
        }
    }
    fn exited(&mut self) -> Option<String> {
        if let Some(e) = self.proc.exited() {
            return Some(format!("exited ({e})"));
        }
        if let Some(b) = &mut self.backend {
            if let Some(e) = b.exited() {
                return Some(format!("its backend exited ({e})"));
            }
        }
        None
    }
}

struct Ctx<'a> {
    study: &'a Study,
    store: &'a mut Store,
    run_id: i64,
    observer: &'a mut dyn Observer,
    interrupt: &'a Interrupt,
    root: PathBuf,
    user: Option<(String, u32, u32)>,
    failed_steps: u32,
}

/// Runs a study to the end (or until interrupted), storing as it goes.
pub fn run_study(
    study: &Study,
    store: &mut Store,
    opts: &LabOptions,
    observer: &mut dyn Observer,
    interrupt: &Interrupt,
) -> anyhow::Result<Outcome> {
    let missing = study.missing_servers();
    if !missing.is_empty() {
        bail!(
            "the study needs servers that are not installed:\n  {}",
            missing.join("\n  ")
        );
    }
    let cpus = process::own_cpus();
    let plans = plan_cores(study.cores.as_deref(), &cpus, study.allow_shared_cores);
    let (doctor, environment) = doctor_and_environment(
        study,
        plans.iter().find(|p| matches!(p, CoresPlan::Run { .. })),
    );
    let run = RunRecord {
        id: 0,
        study: study.name.clone(),
        study_toml: study.toml.clone(),
        started_unix_s: now_unix(),
        finished_unix_s: None,
        complete: false,
        environment,
        doctor,
    };
    let run_id = store.begin_run(&run)?;
    let user = process::unprivileged_user();
    let base = opts.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let rundir = RunDir {
        path: base.join(format!("throng-lab-{}-{run_id}", std::process::id())),
        keep: opts.keep_workdir,
    };
    make_dir(&rundir.path, None)?;

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
    // Seed 004's feature table: each server probed live on an instance of
    // its own, before any load.
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
            let setup = crate::features::ProbeSetup {
                dir: rundir.path.join("features").join(&s.name),
                user: user.clone(),
                cpus: cpus.clone(),
            };
            let found =
                crate::features::probe_server(&s.name, &s.recipe, s.backend.as_ref(), &setup);
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
    let mut ctx = Ctx {
        study,
        store,
        run_id,
        observer,
        interrupt,
        root: rundir.path.clone(),
        user,
        failed_steps: 0,
    };
    ctx.observer.event(Event::Planned {
        run_id,
        steps,
        estimated_s,
    });
    for p in &plans {
        if let CoresPlan::Skip { cores, reason } = p {
            ctx.observer
                .event(Event::Note(format!("skipped: {reason}")));
            // Stored, so a report shows what was asked for and why it is absent.
            for w in &study.workloads {
                for s in &study.servers {
                    for &c in &study.concurrency {
                        let st = skipped_step(&s.name, *cores, w.name(), c, reason);
                        ctx.store.add_step(run_id, &st)?;
                    }
                }
            }
        }
    }
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
                        let dir = ctx.root.join(format!("docroot-{}", kind.name()));
                        make_dir(&dir, None)?;
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
                };
                run_group(&mut ctx, &group)?;
            }
        }
        Ok(())
    })();
    let complete = result.is_ok() && !interrupt.is_set();
    let failed_steps = ctx.failed_steps;
    ctx.store.finish_run(run_id, complete)?;
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
        server: server.to_string(),
        cores,
        workload: workload.to_string(),
        concurrency,
        status: StepStatus::Skipped,
        failure: Some(reason.to_string()),
        log_tail: None,
        server_cpus: Vec::new(),
        client_cpus: Vec::new(),
        shared_cores: false,
        throughput: Default::default(),
        rounds: Vec::new(),
        verdict: Verdict::valid(),
    }
}

struct Group {
    cores: u32,
    server_cpus: Vec<usize>,
    client_cpus: Vec<usize>,
    shared: bool,
    workload: Workload,
}

impl Group {
    fn step(&self, server: &str, concurrency: u32) -> StepRecord {
        StepRecord {
            server: server.to_string(),
            cores: self.cores,
            workload: self.workload.kind.name().to_string(),
            concurrency,
            status: StepStatus::Ok,
            failure: None,
            log_tail: None,
            server_cpus: self.server_cpus.clone(),
            client_cpus: self.client_cpus.clone(),
            shared_cores: self.shared,
            throughput: Default::default(),
            rounds: Vec::new(),
            verdict: Verdict::valid(),
        }
    }
}

fn launch_recipe(
    ctx: &Ctx,
    group: &Group,
    name: &str,
    recipe: &Recipe,
    port: u16,
    backend_port: Option<u16>,
) -> anyhow::Result<(ServerProcess, Vec<ConfigFile>, Vec<PathBuf>)> {
    let dir = ctx
        .root
        .join(format!("c{}-{}", group.cores, group.workload.kind.name()))
        .join(name);
    let owner = ctx.user.as_ref().map(|(_, u, g)| (*u, *g));
    make_dir(dir.parent().unwrap_or(&dir), None)?;
    make_dir(&dir, owner)?;
    let rc = RenderContext {
        port,
        backend_port,
        docroot: group.workload.docroot.clone(),
        rundir: dir.clone(),
        workers: group.cores,
        concurrency: ctx.study.max_concurrency(),
        user: ctx.user.as_ref().map(|u| u.0.clone()).unwrap_or_default(),
        group: ctx.user.as_ref().map(|u| u.0.clone()).unwrap_or_default(),
        as_root: ctx.user.is_some(),
    };
    let mut configs = Vec::new();
    for (path, content) in recipe.render_configs(&rc)? {
        std::fs::write(&path, &content).with_context(|| format!("writing {}", path.display()))?;
        let rel = path
            .strip_prefix(&ctx.root)
            .unwrap_or(&path)
            .display()
            .to_string();
        configs.push(ConfigFile { path: rel, content });
    }
    let argv = recipe.render_start(&rc)?;
    configs.push(ConfigFile {
        path: format!(
            "{}/command",
            dir.strip_prefix(&ctx.root).unwrap_or(&dir).display()
        ),
        content: argv.join(" "),
    });
    let launch = Launch {
        name: name.to_string(),
        argv,
        env: recipe.render_env(&rc)?,
        cwd: dir.clone(),
        cpus: group.server_cpus.clone(),
        run_as: if recipe.drop_privileges { owner } else { None },
        log: dir.join("output.log"),
        stop_signal: recipe.stop_signal(),
    };
    let p = ServerProcess::spawn(&launch)?;
    Ok((p, configs, vec![dir.join("error.log")]))
}

/// Starts the program the server's config for this workload points at.
fn start_helper(
    ctx: &Ctx,
    group: &Group,
    s: &StudyServer,
) -> anyhow::Result<Option<crate::dynamic::Started>> {
    let Ok(Some(w)) = s.recipe.workload(group.workload.kind) else {
        return Ok(None);
    };
    let Some(name) = &w.helper else {
        return Ok(None);
    };
    let helper = crate::dynamic::Helper::parse(name)?;
    // The same directory launch_recipe renders the server's configs into.
    let dir = ctx
        .root
        .join(format!("c{}-{}", group.cores, group.workload.kind.name()))
        .join(&s.name);
    let owner = ctx.user.as_ref().map(|(_, u, g)| (*u, *g));
    make_dir(dir.parent().unwrap_or(&dir), None)?;
    make_dir(&dir, owner)?;
    let plan = crate::dynamic::HelperPlan {
        helper,
        rundir: dir,
        docroot: group.workload.docroot.clone(),
        cores: group.cores,
        cpus: group.server_cpus.clone(),
        run_as: owner,
        backlog: ctx.study.max_concurrency(),
    };
    Ok(Some(plan.start(Duration::from_secs(15))?))
}

fn request_bytes(port: u16, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").into_bytes()
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Waits until the server answers an HTTP request (any complete response).
fn wait_ready(r: &mut Running, path: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    let req = request_bytes(r.port, path);
    loop {
        if let Some(e) = r.exited() {
            bail!("{e} before it was ready");
        }
        match probe::fetch(addr(r.port), &req, false, Duration::from_millis(500)) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => bail!("not ready after {within:?}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Every URL's status, headers and exact body, before any load.
pub fn verify(port: u16, w: &Workload) -> anyhow::Result<()> {
    let timeout = w.kind.request_timeout();
    for (path, file) in &w.files {
        let want = std::fs::read(file)?;
        let got = probe::fetch(addr(port), &request_bytes(port, path), false, timeout)
            .with_context(|| format!("GET {path}"))?;
        if got.status != 200 {
            bail!("GET {path}: status {} instead of 200", got.status);
        }
        if let Some(enc) = got.header("content-encoding") {
            bail!("GET {path}: compressed ({enc}) although the workload does not ask for it");
        }
        if let Some(len) = got.header("content-length") {
            if len.trim() != want.len().to_string() {
                bail!("GET {path}: Content-Length {len} instead of {}", want.len());
            }
        }
        if got.body != want {
            bail!(
                "GET {path}: body of {} bytes differs from the {}-byte file",
                got.body.len(),
                want.len()
            );
        }
    }
    // Dynamic workloads: bodies only the server's software determines.
    for (path, content_type) in &w.checked {
        crate::dynamic::verify_stable(port, path, content_type, timeout)?;
    }
    Ok(())
}

fn start_server(
    ctx: &mut Ctx,
    group: &Group,
    idx: usize,
    s: &StudyServer,
) -> Result<Running, (String, String)> {
    let port = free_port().map_err(|e| (e.to_string(), String::new()))?;
    let mut configs = Vec::new();
    let mut logs = Vec::new();
    let mut backend = None;
    let mut backend_port = None;
    if let Some(b) = &s.backend {
        let bp = free_port().map_err(|e| (e.to_string(), String::new()))?;
        let (p, c, l) = launch_recipe(ctx, group, &format!("{}-backend", s.name), b, bp, None)
            .map_err(|e| (format!("{e:#}"), String::new()))?;
        let mut br = Running {
            idx,
            port: bp,
            proc: p,
            backend: None,
            logs: l.clone(),
            failed: None,
        };
        configs.extend(c);
        logs.extend(l);
        if let Err(e) = wait_ready(&mut br, "/", Duration::from_secs(15)) {
            let tail = br.log_tail();
            br.stop();
            return Err((format!("backend {}: {e:#}", b.name), tail));
        }
        backend = Some(br.proc);
        backend_port = Some(bp);
    }
    // Dynamic workloads: the recipe's config for the workload, and the
    // program behind the server, started first in the server's run
    // directory and kept in the backend's place so that it is pinned,
    // sampled and stopped with the server.
    let recipe = s
        .recipe
        .for_workload(group.workload.kind)
        .map_err(|e| (format!("{e:#}"), String::new()))?;
    if backend.is_none() {
        if let Some(h) =
            start_helper(ctx, group, s).map_err(|e| (format!("{e:#}"), String::new()))?
        {
            configs.extend(h.configs.iter().map(|(path, content)| {
                ConfigFile {
                    path: path
                        .strip_prefix(&ctx.root)
                        .unwrap_or(path)
                        .display()
                        .to_string(),
                    content: content.clone(),
                }
            }));
            logs.extend(h.logs);
            backend = Some(h.process);
        }
    }
    let (p, c, l) = launch_recipe(ctx, group, &s.name, &recipe, port, backend_port)
        .map_err(|e| (format!("{e:#}"), String::new()))?;
    configs.extend(c);
    logs.extend(l);
    let _ = ctx.store.add_configs(ctx.run_id, &s.name, &configs);
    let mut r = Running {
        idx,
        port,
        proc: p,
        backend,
        logs,
        failed: None,
    };
    let first = group.workload.files[0].0.clone();
    let checks = (|| -> anyhow::Result<()> {
        wait_ready(&mut r, &first, Duration::from_secs(15))?;
        process::check_pinning(&r.processes(), &group.server_cpus)
            .context("pinning did not take effect")?;
        verify(port, &group.workload).context("verification failed")?;
        Ok(())
    })();
    match checks {
        Ok(()) => Ok(r),
        Err(e) => {
            let tail = r.log_tail();
            r.stop();
            Err((format!("{e:#}"), tail))
        }
    }
}

fn targets(port: u16, w: &Workload) -> Vec<Target> {
    w.paths()
        .into_iter()
        .map(|path| Target {
            addr: addr(port),
            host_header: format!("127.0.0.1:{port}"),
            url: format!("http://127.0.0.1:{port}{path}"),
            path,
        })
        .collect()
}

fn spec(
    study: &Study,
    group: &Group,
    port: u16,
    concurrency: u32,
    seconds: f64,
    warmup: f64,
    seed: u64,
) -> LoadSpec {
    let mut spec = LoadSpec::new(targets(port, &group.workload));
    spec.connections = concurrency as usize;
    spec.threads = group.client_cpus.len().clamp(1, concurrency as usize);
    spec.cpus = group.client_cpus.clone();
    spec.stop = Stop::Duration(Duration::from_secs_f64(seconds));
    spec.warmup = Duration::from_secs_f64(warmup);
    spec.timeout = group.workload.kind.request_timeout();
    spec.order = if group.workload.kind.random_order() {
        Order::Random
    } else {
        Order::Sequential
    };
    spec.checksum = true;
    spec.seed = seed;
    spec.coalesce = study.client_naps;
    spec
}

fn serialize_histogram(h: &hdrhistogram::Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    // The serializer only fails on I/O into the Vec, which cannot fail.
    let _ = V2DeflateSerializer::new().serialize(h, &mut out);
    out
}

/// A step in progress for one server at one concurrency.
struct Pending {
    step: StepRecord,
    verdicts: Vec<Verdict>,
    rps: Vec<f64>,
    /// Time spent in this step's own rounds: other servers' rounds in
    /// between do not count against its cap.
    spent: Duration,
    done: bool,
}

fn run_group(ctx: &mut Ctx, group: &Group) -> anyhow::Result<()> {
    let study = ctx.study;
    let wname = group.workload.kind.name();
    let mut running: Vec<Running> = Vec::new();
    let mut group_steps: Vec<StepRecord> = Vec::new();
    // Servers start one after the other; all stay up for the whole group,
    // idle on the same cores while another one is measured.
    for (idx, s) in study.servers.iter().enumerate() {
        if ctx.interrupt.is_set() {
            break;
        }
        // Dynamic workloads: a server that cannot serve one shows that,
        // not a number.
        if let Err(reason) = s.recipe.workload(group.workload.kind) {
            for &c in &study.concurrency {
                let mut st = group.step(&s.name, c);
                st.status = StepStatus::Unsupported;
                st.failure = Some(reason.clone());
                record_step(ctx, st, &mut group_steps)?;
            }
            continue;
        }
        match start_server(ctx, group, idx, s) {
            Ok(r) => {
                ctx.observer.event(Event::ServerStarted {
                    server: &s.name,
                    cores: group.cores,
                    workload: wname,
                    pid: r.proc.pid(),
                });
                running.push(r);
            }
            Err((msg, tail)) => {
                let msg = format!("did not start: {msg}");
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
                    st.log_tail = Some(tail.clone());
                    record_step(ctx, st, &mut group_steps)?;
                }
            }
        }
    }
    let first_c = study.concurrency[0];
    for r in running.iter_mut() {
        if ctx.interrupt.is_set() || study.warmup_s <= 0.0 {
            break;
        }
        let sp = spec(study, group, r.port, first_c, study.warmup_s, 0.0, 1);
        let control = ctx.interrupt.control();
        if let Err(e) = throng_engine::run(&sp, &control) {
            r.failed = Some(format!("warmup failed: {e}"));
        }
    }
    for (ci, &c) in study.concurrency.iter().enumerate() {
        let mut pending: Vec<(usize, Pending)> = Vec::new();
        for (ri, r) in running.iter().enumerate() {
            let name = &study.servers[r.idx].name;
            let mut step = group.step(name, c);
            if let Some(f) = &r.failed {
                step.status = StepStatus::Failed;
                step.failure = Some(f.clone());
            }
            let done = r.failed.is_some();
            pending.push((
                ri,
                Pending {
                    step,
                    verdicts: vec![],
                    rps: vec![],
                    spent: Duration::ZERO,
                    done,
                },
            ));
        }
        let mut round = 0u32;
        while pending.iter().any(|(_, p)| !p.done) && !ctx.interrupt.is_set() {
            let n = pending.len();
            for k in 0..n {
                // Rotate the order each round: server i goes first in round i.
                let j = (k + round as usize) % n;
                if pending[j].1.done || ctx.interrupt.is_set() {
                    continue;
                }
                let ri = pending[j].0;
                let r = &mut running[ri];
                let p = &mut pending[j].1;
                measure_round(ctx, group, r, p, c, round, ci)?;
            }
            round += 1;
        }
        for (ri, mut p) in pending {
            if !p.done {
                // Interrupted: keep the rounds measured, say why it is short.
                p.step.status = StepStatus::Skipped;
                p.step.failure = Some(format!("interrupted after {} rounds", p.step.rounds.len()));
            }
            finish_step(&mut p, study.precision.target);
            if p.step.status == StepStatus::Failed && p.step.log_tail.is_none() {
                p.step.log_tail = Some(running[ri].log_tail());
            }
            record_step(ctx, p.step, &mut group_steps)?;
        }
        if ctx.interrupt.is_set() {
            break;
        }
    }
    if let Some(cap) = study.max_users_cap {
        search_max_users(ctx, group, &mut running, &group_steps, cap)?;
    }
    for r in running.iter_mut() {
        r.stop();
    }
    // Sweep-level verdicts need the whole sweep of each server.
    for s in &study.servers {
        let mut sweep: Vec<StepRecord> = group_steps
            .iter()
            .filter(|x| x.server == s.name)
            .cloned()
            .collect();
        let before: Vec<Verdict> = sweep.iter().map(|x| x.verdict.clone()).collect();
        sweep_verdicts(&mut sweep);
        for (st, b) in sweep.iter().zip(before) {
            if st.verdict != b {
                ctx.store.update_verdict(ctx.run_id, st)?;
            }
        }
    }
    Ok(())
}

/// Max users of every server of the group, from its sweep and, when the
/// sweep did not break it, by stepping up past it.
fn search_max_users(
    ctx: &mut Ctx,
    group: &Group,
    running: &mut [Running],
    group_steps: &[StepRecord],
    cap: u32,
) -> anyhow::Result<()> {
    let study = ctx.study;
    let opts = crate::maxusers::SearchOptions {
        patience: Duration::from_secs_f64(study.patience_s),
        cap,
        round_s: study.round_s,
        warmup_s: study.round_warmup_s,
        client_cpus: group.client_cpus.clone(),
        random_order: group.workload.kind.random_order(),
        client_naps: study.client_naps,
    };
    for (idx, s) in study.servers.iter().enumerate() {
        if ctx.interrupt.is_set() {
            return Ok(());
        }
        let sweep: Vec<StepRecord> = group_steps
            .iter()
            .filter(|x| x.server == s.name)
            .cloned()
            .collect();
        let control = ctx.interrupt.control();
        let m = match running
            .iter_mut()
            .find(|r| r.idx == idx && r.failed.is_none())
        {
            Some(r) => {
                let t = targets(r.port, &group.workload);
                crate::maxusers::search(&t, &sweep, &opts, &control, &mut || r.exited())
            }
            None => crate::maxusers::search(&[], &sweep, &opts, &control, &mut || {
                Some("was not running".to_string())
            }),
        };
        if ctx.interrupt.is_set() {
            return Ok(());
        }
        ctx.store.add_max_users(ctx.run_id, &s.name, &m)?;
    }
    Ok(())
}

fn measure_round(
    ctx: &mut Ctx,
    group: &Group,
    r: &mut Running,
    p: &mut Pending,
    concurrency: u32,
    round: u32,
    level: usize,
) -> anyhow::Result<()> {
    let study = ctx.study;
    let name = study.servers[r.idx].name.clone();
    if let Some(e) = r.exited() {
        fail(r, p, format!("the server {e}"));
        return Ok(());
    }
    let seed = ((level as u64) << 32) ^ round as u64 ^ 0x7468_726f;
    let sp = spec(
        study,
        group,
        r.port,
        concurrency,
        study.round_s,
        study.round_warmup_s,
        seed,
    );
    let control = ctx.interrupt.control();
    let leader = r.proc.pid();
    let sampler = Sampler::start_after(
        leader,
        r.backend.as_ref().map(|b| b.pid()),
        &group.client_cpus,
        Duration::from_secs_f64(study.round_warmup_s),
        Duration::from_millis(100),
    );
    let t0 = Instant::now();
    let result = throng_engine::run(&sp, &control);
    let usage = sampler.finish();
    p.spent += t0.elapsed();
    if ctx.interrupt.is_set() {
        return Ok(());
    }
    let result = match result {
        Ok(res) => res,
        Err(e) => {
            fail(r, p, format!("the load engine failed: {e}"));
            return Ok(());
        }
    };
    if let Some(e) = r.exited() {
        fail(r, p, format!("the server {e} during the round"));
        return Ok(());
    }
    if result.summary.completed == 0 {
        // A round without a response may be a stall of a busy machine; the
        // server has failed only if it does not answer a request on its own.
        let path = &group.workload.files[0].0;
        let req = request_bytes(r.port, path);
        if let Err(e) = probe::fetch(addr(r.port), &req, false, Duration::from_secs(5)) {
            fail(
                r,
                p,
                format!("the server stopped answering: no response in a whole round, then {e}"),
            );
            return Ok(());
        }
    }
    let rc = throng_trust::verdict::RoundContext {
        server: Some(usage.clone()),
        server_cores: Some(group.cores),
        client_threads: sp.threads as u32,
        shared_cores: group.shared,
        close_mode: false,
    };
    let verdict = throng_trust::verdict::round_verdict(&result.summary, Some(&result.latency), &rc);
    ctx.observer.event(Event::Round {
        server: &name,
        concurrency,
        index: p.step.rounds.len() as u32,
        result: &result,
        usage: &usage,
    });
    p.rps.push(result.summary.requests_per_sec);
    p.verdicts.push(verdict);
    p.step.rounds.push(RoundRecord {
        index: p.step.rounds.len() as u32,
        summary: result.summary.clone(),
        server: usage,
        histogram: serialize_histogram(&result.latency),
    });
    match study.precision.next(&p.rps, p.spent.as_secs_f64()) {
        Next::More => {}
        Next::Converged | Next::Capped => p.done = true,
    }
    Ok(())
}

fn fail(r: &mut Running, p: &mut Pending, msg: String) {
    p.step.status = StepStatus::Failed;
    p.step.failure = Some(msg.clone());
    p.step.log_tail = Some(r.log_tail());
    p.done = true;
    r.stop();
    r.failed = Some(format!("failed earlier: {msg}"));
}

fn finish_step(p: &mut Pending, precision: f64) {
    p.step.throughput = estimate(&p.rps);
    if !p.step.rounds.is_empty() {
        p.step.verdict = step_verdict(&p.step, &p.verdicts, precision);
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
    ctx.store.add_step(ctx.run_id, &step)?;
    ctx.observer.event(Event::Step(&step));
    group_steps.push(step);
    Ok(())
}

/// Step verdict from the trust crate.
fn step_verdict(step: &StepRecord, rounds: &[Verdict], precision: f64) -> Verdict {
    throng_trust::verdict::step_verdict(step, rounds, precision)
}

fn sweep_verdicts(steps: &mut [StepRecord]) {
    throng_trust::verdict::sweep_verdicts(steps)
}

/// Seed 004's "max users": the highest concurrency of a sweep with no
/// errors and a p99 under 3 s.
pub fn max_users(steps: &[StepRecord]) -> Option<u32> {
    steps
        .iter()
        .filter(|s| s.status == StepStatus::Ok && !s.rounds.is_empty())
        .filter(|s| s.rounds.iter().all(|r| r.summary.errors_total == 0))
        .filter(|s| s.p99_us().is_some_and(|p| p < 3_000_000))
        .map(|s| s.concurrency)
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Estimate, Latency, Summary};

    fn step(concurrency: u32, errors: u64, p99_us: u64, status: StepStatus) -> StepRecord {
        let round = RoundRecord {
            index: 0,
            summary: Summary {
                errors_total: errors,
                latency_us: Latency {
                    p99: p99_us,
                    ..Latency::default()
                },
                ..Summary::default()
            },
            ..RoundRecord::default()
        };
        StepRecord {
            server: "nginx".into(),
            cores: 1,
            workload: "small-files".into(),
            concurrency,
            status,
            failure: None,
            log_tail: None,
            server_cpus: vec![0],
            client_cpus: vec![1],
            shared_cores: false,
            throughput: Estimate::default(),
            rounds: vec![round],
            verdict: Verdict::valid(),
        }
    }

    #[test]
    fn max_users_is_the_highest_clean_level() {
        let steps = [
            step(10, 0, 1_000, StepStatus::Ok),
            step(100, 0, 2_999_999, StepStatus::Ok),
            step(250, 3, 10_000, StepStatus::Ok),
            step(500, 0, 3_000_000, StepStatus::Ok),
            step(1000, 0, 1_000, StepStatus::Failed),
        ];
        assert_eq!(max_users(&steps), Some(100));
        assert_eq!(max_users(&steps[2..]), None);
    }

    #[test]
    fn requests_name_the_host_and_port() {
        assert_eq!(
            request_bytes(8080, "/a.html"),
            b"GET /a.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
    }
}
