//! The sweep's decisions, checked against a scripted executor: no server
//! starts and no load runs, so rotation order, the precision loop, failing
//! servers, interrupts and the max-users search are tested exactly and in
//! milliseconds. The real executor is covered by the tests against nginx
//! and lighttpd (lab.rs, features.rs).

use std::collections::{BTreeMap, BTreeSet};

use hdrhistogram::Histogram;
use throng_lab::executor::{DoctorPlan, Executor, NotReady, Stage, Started};
use throng_lab::group::Group;
use throng_lab::spec::RoundLoad;
use throng_lab::study::StudyServer;
use throng_lab::{
    Interrupt, Measured, Quiet, Recipes, RoundError, RoundKind, ServerId, Store, Study,
};
use throng_model::{
    Connections, Decision, Diagnosis, Environment, ErrorKind, Finding, Latency, RunData,
    StepStatus, Summary,
};
use throng_servers::{RunDir, Site, StartFailure};

/// What a scripted round answers, from the server, the level and how many
/// rounds that server has run so far.
type Script = Box<dyn FnMut(&str, u32, usize) -> Result<Measured, RoundError>>;

/// A script that also sees the round's length and timeout.
type TimedScript = Box<dyn FnMut(&str, &RoundLoad) -> Measured>;

/// A script that sees which start of its server a slice measures (0 for
/// the first) and how many slices that server has run so far.
type LaunchScript = Box<dyn FnMut(&str, usize, usize) -> Measured>;

/// A script that sees which start of its server a slice measures and the
/// slice's level (its connections).
type LevelScript = Box<dyn FnMut(&str, usize, u32) -> Measured>;

struct Fake {
    /// Every call, in order: "start a", "warmup a c=4", "round a c=4".
    calls: Vec<String>,
    /// Every load round with the measured seconds it asked for:
    /// "warmup a c=4 0.5s", "round a c=4 1s", "search a c=8 1s".
    lengths: Vec<String>,
    script: Script,
    /// Replaces `script` when set.
    timed: Option<TimedScript>,
    /// Replaces `script` for measured slices when set.
    launched: Option<LaunchScript>,
    /// Replaces `script` for measured slices when set.
    leveled: Option<LevelScript>,
    /// Starts of each server so far.
    starts: BTreeMap<String, usize>,
    /// Servers that refuse every start after this many.
    refuse_after_starts: BTreeMap<String, usize>,
    /// Servers whose start fails, with how far they got and the message.
    refuse: BTreeMap<String, (Stage, String)>,
    /// Server -> after how many measured rounds it exits.
    dies_after: BTreeMap<String, usize>,
    /// Servers that do not answer a lone request.
    silent: BTreeSet<String>,
    /// Trigger this interrupt when the nth measured round has run.
    interrupt_at: Option<(usize, Interrupt)>,
    rounds: BTreeMap<String, usize>,
    measured: usize,
    up: BTreeSet<String>,
    /// The machine's CPUs as the executor reports them.
    cpus: Vec<usize>,
    /// Each start with the server and client CPUs it was given.
    placed: Vec<(String, Vec<usize>, Vec<usize>)>,
    /// Each start with the connections the server was configured for.
    configured: Vec<(String, u32)>,
    /// Every load asked for, after its kind: "warmup", "round", "search"
    /// or "diagnose".
    loads: Vec<(&'static str, RoundLoad)>,
    /// Each server's name, by the id the sweep started it as.
    names: BTreeMap<ServerId, String>,
    /// Every round asked for, with its server and its kind, in order.
    kinds: Vec<(String, RoundKind)>,
    /// Each forecast of a level's next slices, with how many measured
    /// slices had been asked before it.
    plans: Vec<(usize, Vec<(String, RoundLoad)>)>,
    /// When set, the servers' core's prices are read (and each reading
    /// logged as a call), a switch this many nanoseconds dearer each
    /// time, from 3000.
    prices: Option<f64>,
    /// A duet's lanes as hosts elsewhere decide them.
    lanes: Option<Vec<throng_lab::group::Lane>>,
}

impl Fake {
    fn new(script: Script) -> Fake {
        Fake {
            calls: Vec::new(),
            lengths: Vec::new(),
            script,
            timed: None,
            launched: None,
            leveled: None,
            starts: BTreeMap::new(),
            refuse_after_starts: BTreeMap::new(),
            refuse: BTreeMap::new(),
            dies_after: BTreeMap::new(),
            silent: BTreeSet::new(),
            interrupt_at: None,
            rounds: BTreeMap::new(),
            measured: 0,
            up: BTreeSet::new(),
            cpus: vec![0, 1],
            placed: Vec::new(),
            configured: Vec::new(),
            loads: Vec::new(),
            names: BTreeMap::new(),
            kinds: Vec::new(),
            plans: Vec::new(),
            prices: None,
            lanes: None,
        }
    }

    fn name(&self, id: ServerId) -> String {
        self.names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| panic!("{id:?} was never started"))
    }

    fn rounds_of(&self, prefix: &str) -> Vec<&str> {
        self.calls
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }
}

impl Executor for Fake {
    fn plan(&mut self, upcoming: &[(ServerId, RoundLoad)]) {
        let asked = self.loads.iter().filter(|(k, _)| *k == "round").count();
        let named = upcoming
            .iter()
            .map(|(id, l)| (self.name(*id), l.clone()))
            .collect();
        self.plans.push((asked, named));
    }

    fn start(
        &mut self,
        group: &Group,
        id: ServerId,
        server: &StudyServer,
    ) -> Result<Started, NotReady> {
        self.names.insert(id, server.name.clone());
        self.calls.push(format!("start {}", server.name));
        self.configured
            .push((server.name.clone(), group.max_concurrency));
        let started = self.starts.entry(server.name.clone()).or_default();
        *started += 1;
        if self
            .refuse_after_starts
            .get(&server.name)
            .is_some_and(|&n| *started > n)
        {
            return Err(NotReady {
                stage: Stage::Start,
                failure: StartFailure {
                    message: "refused".into(),
                    log_tail: String::new(),
                    configs: Vec::new(),
                },
            });
        }
        self.placed.push((
            server.name.clone(),
            group.server_cpus.clone(),
            group.client_cpus.clone(),
        ));
        if let Some((stage, m)) = self.refuse.get(&server.name) {
            return Err(NotReady {
                stage: *stage,
                failure: StartFailure {
                    message: m.clone(),
                    log_tail: format!("{} log\n", server.name),
                    configs: Vec::new(),
                },
            });
        }
        self.up.insert(server.name.clone());
        Ok(Started {
            pid: 0,
            configs: Vec::new(),
        })
    }

    fn round(
        &mut self,
        id: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
    ) -> Result<Measured, RoundError> {
        let name = self.name(id);
        let server = name.as_str();
        self.kinds.push((name.clone(), kind));
        let kind = match kind {
            RoundKind::Warmup => {
                assert_eq!(
                    load.warmup_s, 0.0,
                    "a warmup round with a warmup of its own"
                );
                "warmup"
            }
            RoundKind::Slice => "round",
            RoundKind::Search => "search",
            RoundKind::Diagnosis => panic!("a diagnostic round is asked through diagnose"),
        };
        if kind == "warmup" {
            self.loads.push(("warmup", load.clone()));
            self.calls
                .push(format!("warmup {server} c={}", load.concurrency));
            self.lengths.push(format!(
                "warmup {server} c={} {}s",
                load.concurrency, load.seconds
            ));
            if let Some(t) = &mut self.timed {
                return Ok(t(server, load));
            }
            return (self.script)(server, load.concurrency, 0);
        }
        self.loads.push((kind, load.clone()));
        self.calls
            .push(format!("{kind} {server} c={}", load.concurrency));
        self.lengths.push(format!(
            "{kind} {server} c={} {}s",
            load.concurrency, load.seconds
        ));
        let n = self.rounds.entry(server.to_string()).or_default();
        *n += 1;
        let n = *n;
        self.measured += 1;
        if let Some((at, i)) = &self.interrupt_at {
            if self.measured == *at {
                i.trigger();
            }
        }
        if self.dies_after.get(server) == Some(&n) {
            self.up.remove(server);
        }
        let launch = self.starts.get(server).copied().unwrap_or(1) - 1;
        if let Some(l) = &mut self.launched {
            return Ok(l(server, launch, n));
        }
        if let Some(l) = &mut self.leveled {
            return Ok(l(server, launch, load.concurrency));
        }
        if let Some(t) = &mut self.timed {
            return Ok(t(server, load));
        }
        (self.script)(server, load.concurrency, n)
    }

    fn exited(&mut self, id: ServerId) -> Option<String> {
        (!self.up.contains(&self.name(id))).then(|| "exited (signal: 9 (SIGKILL))".to_string())
    }

    fn answers(&mut self, id: ServerId) -> Result<(), String> {
        if self.silent.contains(&self.name(id)) {
            Err("connect failed: Connection refused".into())
        } else {
            Ok(())
        }
    }

    fn log_tail(&mut self, id: ServerId) -> String {
        format!("{} log\n", self.name(id))
    }

    fn stop(&mut self, id: ServerId) {
        let server = self.name(id);
        self.calls.push(format!("stop {server}"));
        self.up.remove(&server);
    }

    fn open_level(&mut self, loads: &[(ServerId, RoundLoad)]) {
        let names: Vec<String> = loads.iter().map(|(id, _)| self.name(*id)).collect();
        self.calls.push(format!(
            "open {} c={}",
            names.join(","),
            loads[0].1.concurrency
        ));
    }

    fn close_level(&mut self) {
        self.calls.push("close".into());
    }

    fn duet_lanes(&self, _cores: u32) -> Option<Vec<throng_lab::group::Lane>> {
        self.lanes.clone()
    }

    fn rounds_together(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
    ) -> Vec<Result<Measured, RoundError>> {
        let names: Vec<String> = loads
            .iter()
            .map(|(id, l)| format!("{}@{:?}", self.name(*id), l.client_cpus))
            .collect();
        self.calls.push(format!(
            "together {} c={}",
            names.join("+"),
            loads[0].1.concurrency
        ));
        loads
            .iter()
            .map(|&(id, load)| self.round(id, load, RoundKind::Slice))
            .collect()
    }

    fn cpus(&self) -> Vec<usize> {
        self.cpus.clone()
    }

    fn diagnose(&mut self, id: ServerId, load: &RoundLoad) -> Result<Diagnosis, RoundError> {
        let name = self.name(id);
        let server = name.as_str();
        self.loads.push(("diagnose", load.clone()));
        self.calls
            .push(format!("diagnose {server} c={}", load.concurrency));
        self.lengths.push(format!(
            "diagnose {server} c={} {}s",
            load.concurrency, load.seconds
        ));
        if server.starts_with("untraceable") {
            return Err(RoundError::Uncounted(
                "perf stat: permission denied; strace: not found".into(),
            ));
        }
        Ok(Diagnosis {
            tool: "fake".into(),
            seconds: load.seconds,
            requests: 1000,
            syscalls_per_request: [("openat".to_string(), 1.0)].into_iter().collect(),
            ..Diagnosis::default()
        })
    }

    fn oom_kills(&self) -> Option<u64> {
        None
    }

    fn survey(&mut self, _: &DoctorPlan) -> (Vec<Finding>, Environment) {
        self.calls.push("survey".into());
        (Vec::new(), Environment::default())
    }

    fn core_prices(&mut self, cpu: usize) -> Option<throng_servers::prices::Reading> {
        let step = self.prices?;
        let n = self
            .calls
            .iter()
            .filter(|c| c.starts_with("prices"))
            .count();
        self.calls.push(format!("prices cpu{cpu}"));
        Some(throng_servers::prices::Reading {
            loop_ns: 1.0,
            syscall_ns: 200.0,
            switch_ns: 3000.0 + step * n as f64,
        })
    }
}

/// A round at `rps` with these errors and this p99.
fn measured(rps: f64, concurrency: u32, errors: &[(ErrorKind, u64)], p99_us: u64) -> Measured {
    let mut latency = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    latency.record_n(p99_us.max(1), 100).unwrap();
    Measured {
        summary: Summary {
            completed: rps as u64,
            sent: rps as u64,
            requests_per_sec: rps,
            duration_s: 1.0,
            threads: 1,
            errors: ErrorKind::ALL
                .iter()
                .map(|k| {
                    let n = errors.iter().find(|e| e.0 == *k).map_or(0, |e| e.1);
                    (k.name().to_string(), n)
                })
                .collect(),
            errors_total: errors.iter().map(|e| e.1).sum(),
            latency_us: Latency {
                count: 100,
                p50: p99_us,
                p99: p99_us,
                max: p99_us,
                ..Latency::default()
            },
            connections: Connections {
                requested: concurrency as u64,
                established: concurrency as u64,
                ..Connections::default()
            },
            ..Summary::default()
        },
        latency,
        usage: Default::default(),
        ports: None,
    }
}

fn steady(_: &str, c: u32, _: usize) -> Result<Measured, RoundError> {
    Ok(measured(1000.0, c, &[], 1_000))
}

fn study(servers: &[&str], concurrency: &str, rounds: (u32, u32), extra: &str) -> Study {
    let list: Vec<String> = servers
        .iter()
        .map(|s| format!("{{ name = \"{s}\", command = [\"/bin/true\"] }}"))
        .collect();
    let toml = format!(
        "name = \"fake\"\nservers = [{}]\nworkloads = [\"tiny\"]\ncores = [1]\nconcurrency = {concurrency}\n\
         features = false\nallow_shared_cores = true\nwarmup_seconds = 0.5\n{extra}\n\
         [rounds]\nseconds = 1.0\nwarmup_seconds = 0.25\nmin = {}\nmax = {}\nprecision = 0.02\n\
         launches = 1\n",
        list.join(", "),
        rounds.0,
        rounds.1
    );
    Study::parse(&toml, &Recipes::builtin()).unwrap()
}

/// Runs `study` through `exec` and returns what was stored.
fn run(study: &Study, exec: &mut Fake, interrupt: &Interrupt) -> (throng_lab::Outcome, RunData) {
    run_seen(study, exec, interrupt, &mut Quiet)
}

/// As `run`, telling `seen` what the lab tells its caller.
fn run_seen(
    study: &Study,
    exec: &mut Fake,
    interrupt: &Interrupt,
    seen: &mut dyn throng_lab::Observer,
) -> (throng_lab::Outcome, RunData) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let rundir = RunDir::create(dir.path(), "throng-lab", 1, false).unwrap();
    let site = Site {
        rundir: &rundir,
        user: None,
    };
    let out = throng_lab::run_study_with(study, &mut store, seen, interrupt, site, exec).unwrap();
    let data = store.load_run(out.run_id).unwrap();
    (out, data)
}

fn rounds_per_step(data: &RunData) -> Vec<(String, u32, StepStatus, usize)> {
    data.steps
        .iter()
        .map(|s| (s.server.clone(), s.concurrency, s.status, s.rounds.len()))
        .collect()
}

/// The servers of each block, in the order their slices ran.
fn blocks(fake: &Fake, c: u32) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut seen = BTreeSet::new();
    for call in fake.rounds_of("round") {
        let Some(rest) = call.strip_suffix(&format!(" c={c}")) else {
            continue;
        };
        let server = rest.trim_start_matches("round ").to_string();
        if out.is_empty() || !seen.insert(server.clone()) {
            out.push(Vec::new());
            seen = BTreeSet::from([server.clone()]);
        }
        out.last_mut().unwrap().push(server);
    }
    out
}

#[test]
fn each_block_gives_every_server_one_slice_in_a_shuffled_order() {
    let s = study(&["a", "b", "c"], "[4, 8]", (3, 3), "");
    let mut fake = Fake::new(Box::new(steady));
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    let level4: Vec<&str> = fake
        .calls
        .iter()
        .map(String::as_str)
        .filter(|c| !c.starts_with("round"))
        .take_while(|c| !c.ends_with("c=8"))
        .collect();
    // Started, warmed up, connections opened for the level, slices, then a
    // diagnostic round per server on the same connections, then closed.
    assert_eq!(
        level4,
        [
            "survey",
            "start a",
            "start b",
            "start c",
            "warmup a c=4",
            "warmup b c=4",
            "warmup c c=4",
            "open a,b,c c=4",
            "diagnose a c=4",
            "diagnose b c=4",
            "diagnose c c=4",
            "close",
        ]
    );
    let mut orders = BTreeSet::new();
    for c in [4, 8] {
        let b = blocks(&fake, c);
        assert_eq!(b.len(), 3, "{b:?}");
        for block in &b {
            let mut sorted = block.clone();
            sorted.sort();
            assert_eq!(sorted, ["a", "b", "c"]);
            orders.insert(block.clone());
        }
    }
    // Shuffled: not one order repeated six times.
    assert!(orders.len() > 1, "{orders:?}");
    assert_eq!(data.steps.len(), 6);
    for st in &data.steps {
        assert_eq!(st.status, StepStatus::Ok);
        assert_eq!(st.throughput.mean, 1000.0);
        let blocks: Vec<Option<u32>> = st.rounds.iter().map(|r| r.block).collect();
        assert_eq!(blocks, [Some(0), Some(1), Some(2)]);
        let d = st.diagnosis.as_ref().unwrap();
        assert_eq!((d.tool.as_str(), d.requests), ("fake", 1000));
    }
    // Per level, every later server against every earlier one; then each
    // pair over the sweep, both levels pooled.
    let cs: Vec<(String, String, Option<u32>, u32, Decision)> = data
        .comparisons
        .iter()
        .map(|c| (c.a.clone(), c.b.clone(), c.concurrency, c.pairs, c.decision))
        .collect();
    let row = |a: &str, b: &str, c, n, d| (a.to_string(), b.to_string(), c, n, d);
    let u = Decision::Undecided;
    assert_eq!(
        cs,
        [
            row("a", "b", Some(4), 3, u),
            row("a", "c", Some(4), 3, u),
            row("b", "c", Some(4), 3, u),
            row("a", "b", Some(8), 3, u),
            row("a", "c", Some(8), 3, u),
            row("b", "c", Some(8), 3, u),
            row("a", "b", None, 6, Decision::Equal),
            row("a", "c", None, 6, Decision::Equal),
            row("b", "c", None, 6, Decision::Equal),
        ]
    );
    assert!(data.comparisons.iter().all(|c| c.ratio == 1.0));
    assert_eq!(data.run.baseline.as_deref(), Some("a"));
}

#[test]
fn the_baseline_is_compared_first_and_a_diagnosis_that_fails_says_why() {
    let s = study(
        &["a", "untraceable"],
        "[4]",
        (2, 2),
        "baseline = \"untraceable\"",
    );
    let mut fake = Fake::new(Box::new(steady));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(data.run.baseline.as_deref(), Some("untraceable"));
    let c = &data.comparisons[0];
    assert_eq!((c.a.as_str(), c.b.as_str()), ("untraceable", "a"));
    let d = data.steps[1].diagnosis.as_ref().unwrap();
    assert_eq!(
        d.unavailable.as_deref(),
        Some("perf stat: permission denied; strace: not found")
    );
    assert_eq!(data.steps[1].server, "untraceable");
    // No diagnosis at all when the study says so.
    let s = study(&["a", "b"], "[4]", (2, 2), "diagnose = false");
    let mut fake = Fake::new(Box::new(steady));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(fake.rounds_of("diagnose").is_empty());
    assert!(data.steps.iter().all(|s| s.diagnosis.is_none()));
}

#[test]
fn a_level_ends_when_its_comparisons_are_narrow_or_its_rounds_run_out() {
    // Both servers slow down together from block to block, as on a shared
    // machine: each one's own rate wanders ±25%, but b is always 1.5× a.
    let s = study(&["a", "b"], "[10]", (6, 12), "");
    let slowness = [1.0, 0.75, 1.25, 0.8, 1.2, 0.9, 1.1];
    let mut fake = Fake::new(Box::new(move |server, c, n| {
        let base = if server == "a" { 1000.0 } else { 1500.0 };
        Ok(measured(base * slowness[n % 7], c, &[], 1_000))
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        rounds_per_step(&data),
        [
            ("a".to_string(), 10, StepStatus::Ok, 6),
            ("b".to_string(), 10, StepStatus::Ok, 6),
        ]
    );
    let c = &data.comparisons[0];
    for x in [c.ratio, c.ci_low, c.ci_high] {
        assert!((x - 1.5).abs() < 1e-12, "{c:?}");
    }
    assert_eq!(c.pairs, 6);
    assert_eq!(c.decision, Decision::Higher);
    // Each server's own interval is wide, yet no step is noisy: the
    // comparison is what was decided.
    assert!(data.steps[0].throughput.relative_half_width() > 0.1);
    assert!(data.steps.iter().all(|s| s.verdict.is_valid()));

    // Independent noise: the ratios scatter, the level runs to its
    // maximum, and the comparison stays undecided and wide: noisy.
    let mut fake = Fake::new(Box::new(move |server, c, n| {
        let k = if server == "a" { n } else { n + 3 };
        Ok(measured(1000.0 * slowness[k % 7], c, &[], 1_000))
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        rounds_per_step(&data)
            .iter()
            .map(|r| r.3)
            .collect::<Vec<_>>(),
        [12, 12]
    );
    assert_eq!(data.comparisons[0].decision, Decision::Undecided);
    for st in &data.steps {
        assert_eq!(st.verdict.label(), "suspect: noisy");
    }
}

#[test]
fn a_lone_server_ends_by_its_own_interval() {
    let s = study(&["calm"], "[10]", (3, 6), "");
    let mut fake = Fake::new(Box::new(steady));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        rounds_per_step(&data),
        [("calm".to_string(), 10, StepStatus::Ok, 3)]
    );
    assert!(data.steps[0].rounds.iter().all(|r| r.block.is_none()));
    assert!(data.comparisons.is_empty());
    // No connections are kept for one server: there is nothing to pair.
    assert!(fake.rounds_of("open").is_empty());
    let s = study(&["noisy"], "[10]", (3, 6), "");
    let mut fake = Fake::new(Box::new(|_, c, n| {
        Ok(measured([1000.0, 1500.0, 600.0][n % 3], c, &[], 1_000))
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(data.steps[0].rounds.len(), 6);
    assert_eq!(data.steps[0].verdict.label(), "suspect: noisy");
}

#[test]
fn servers_that_fail_are_stored_failed_and_the_others_go_on() {
    let s = study(&["good", "broken", "dies", "mute"], "[4, 8]", (2, 2), "");
    let mut fake = Fake::new(Box::new(|server, c, n| {
        if server == "mute" && n == 1 {
            return Ok(measured(0.0, c, &[], 1_000));
        }
        steady(server, c, n)
    }));
    fake.refuse.insert(
        "broken".into(),
        (Stage::Start, "not ready after 15s: connect failed".into()),
    );
    fake.dies_after.insert("dies".into(), 1);
    fake.silent.insert("mute".into());
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    assert_eq!(out.failed_steps, 6);
    // The three that started share a level until two of them fail.
    assert_eq!(fake.rounds_of("open"), ["open good,dies,mute c=4"]);
    assert_eq!(
        rounds_per_step(&data),
        [
            ("broken".to_string(), 4, StepStatus::Failed, 0),
            ("broken".to_string(), 8, StepStatus::Failed, 0),
            ("dies".to_string(), 4, StepStatus::Failed, 0),
            ("dies".to_string(), 8, StepStatus::Failed, 0),
            ("good".to_string(), 4, StepStatus::Ok, 2),
            ("good".to_string(), 8, StepStatus::Ok, 2),
            ("mute".to_string(), 4, StepStatus::Failed, 0),
            ("mute".to_string(), 8, StepStatus::Failed, 0),
        ]
    );
    let failure = |server: &str, c: u32| {
        let st = data
            .steps
            .iter()
            .find(|s| s.server == server && s.concurrency == c)
            .unwrap();
        (st.failure.clone().unwrap(), st.log_tail.clone().unwrap())
    };
    assert_eq!(
        failure("broken", 8),
        (
            "did not start: not ready after 15s: connect failed".to_string(),
            "broken log\n".to_string()
        )
    );
    assert_eq!(
        failure("dies", 4).0,
        "the server exited (signal: 9 (SIGKILL)) during the round"
    );
    assert_eq!(
        failure("dies", 8).0,
        "failed earlier: the server exited (signal: 9 (SIGKILL)) during the round"
    );
    assert_eq!(
        failure("mute", 4).0,
        "the server stopped answering: no response in a whole round, then connect failed: \
         Connection refused"
    );
    // A failed server is never loaded again.
    assert_eq!(fake.rounds_of("round dies"), ["round dies c=4"]);
    assert_eq!(fake.rounds_of("round mute"), ["round mute c=4"]);
    assert!(fake.rounds_of("round broken").is_empty());
}

#[test]
fn an_interrupt_keeps_what_was_measured_and_marks_the_run_incomplete() {
    let s = study(&["a", "b"], "[4, 8]", (3, 3), "");
    let interrupt = Interrupt::new();
    let mut fake = Fake::new(Box::new(steady));
    fake.interrupt_at = Some((4, interrupt.clone()));
    let (out, data) = run(&s, &mut fake, &interrupt);
    assert!(!out.complete);
    assert!(!data.run.complete);
    // The round that saw the interrupt is dropped; the level's steps are
    // stored as skipped with what they had; no later level starts, and no
    // diagnosis runs.
    let steps = rounds_per_step(&data);
    assert_eq!(steps.len(), 2);
    assert!(steps
        .iter()
        .all(|s| s.1 == 4 && s.2 == StepStatus::Skipped && (1..=2).contains(&s.3)));
    assert_eq!(steps[0].3 + steps[1].3, 3);
    assert_eq!(
        data.steps[0].failure,
        Some(format!("interrupted after {} rounds", steps[0].3))
    );
    assert_eq!(fake.rounds_of("round").len(), 4);
    assert!(fake.rounds_of("diagnose").is_empty());
    assert!(fake.calls.ends_with(&[
        "close".to_string(),
        "stop a".to_string(),
        "stop b".to_string()
    ]));
}

#[test]
fn max_users_steps_up_past_the_sweep_until_a_level_breaks() {
    let s = study(
        &["strong", "weak"],
        "[4, 8]",
        (1, 1),
        "max_users = true\nmax_users_cap = 100\n",
    );
    let mut fake = Fake::new(Box::new(|server, c, _| match (server, c) {
        ("weak", 8) => Ok(measured(900.0, c, &[], 4_000_000)),
        ("strong", c) if c >= 32 => Ok(measured(
            900.0,
            c,
            &[(ErrorKind::Reset, 3), (ErrorKind::Closed, 2)],
            1_000,
        )),
        (_, c) => Ok(measured(1000.0, c, &[], 1_000)),
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    let m = |name: &str| {
        let s = data.servers.iter().find(|s| s.name == name).unwrap();
        assert_eq!(s.max_users.len(), 1);
        let m = &s.max_users[0];
        (m.level, m.broke_at, m.broke_by.clone())
    };
    assert_eq!(m("strong"), (Some(16), Some(32), "5 resets".to_string()));
    assert_eq!(
        m("weak"),
        (
            Some(4),
            Some(8),
            "p99 4.00 s over the 3.0 s patience".to_string()
        )
    );
    // The sweep already broke the weak server: no more load for it.
    assert_eq!(
        fake.rounds_of("search"),
        ["search strong c=16", "search strong c=32"]
    );
}

#[test]
fn each_round_reaches_the_executor_as_its_kind_in_the_order_the_sweep_promises() {
    // Every server is warmed up before any is measured; the levels' slices
    // follow; each server's search comes after the whole sweep.
    let s = study(
        &["a", "b"],
        "[4]",
        (2, 2),
        "max_users = true\nmax_users_cap = 8\ndiagnose = false\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    let (out, _) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    let kinds: Vec<RoundKind> = fake.kinds.iter().map(|(_, k)| *k).collect();
    assert_eq!(
        kinds,
        [
            RoundKind::Warmup,
            RoundKind::Warmup,
            RoundKind::Slice,
            RoundKind::Slice,
            RoundKind::Slice,
            RoundKind::Slice,
            RoundKind::Search,
            RoundKind::Search,
        ]
    );
    let of = |kind: RoundKind| -> Vec<&str> {
        fake.kinds
            .iter()
            .filter(|(_, k)| *k == kind)
            .map(|(server, _)| server.as_str())
            .collect()
    };
    assert_eq!(of(RoundKind::Warmup), ["a", "b"]);
    assert_eq!(of(RoundKind::Search), ["a", "b"]);
    // The search's level is past the sweep's: twice its highest, at the cap.
    assert_eq!(fake.rounds_of("search"), ["search a c=8", "search b c=8"]);
}

#[test]
fn the_search_stops_at_its_cap() {
    let s = study(
        &["a"],
        "[10]",
        (1, 1),
        "max_users = true\nmax_users_cap = 30\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    let m = &data.servers[0].max_users[0];
    assert_eq!(
        (m.level, m.broke_at, m.broke_by.as_str()),
        (Some(30), None, "no failure up to the cap of 30")
    );
    assert_eq!(fake.rounds_of("search"), ["search a c=20", "search a c=30"]);
}

#[test]
fn a_server_that_takes_a_task_per_connection_stops_at_its_share_of_the_task_ids() {
    let mut s = study(
        &["a", "b"],
        "[10]",
        (1, 1),
        "max_users = true\nmax_users_cap = 40\n",
    );
    // 100 task ids: b, which takes one per connection its config allows
    // (twice the level), may be searched to 100 / 2 / 2 = 25 users.
    s.servers[1].recipe.task_per_connection = true;
    s.task_ids = Some(100);
    let mut fake = Fake::new(Box::new(steady));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    let m = |i: usize| {
        let m = &data.servers[i].max_users[0];
        (m.level, m.broke_at, m.broke_by.clone())
    };
    assert_eq!(
        m(0),
        (Some(40), None, "no failure up to the cap of 40".to_string())
    );
    assert_eq!(
        m(1),
        (
            Some(25),
            None,
            "none found up to 25 (its limit here: its config takes a thread or a process for \
             each connection it allows, twice the users searched, and one server may take at \
             most half of the kernel's 100 task ids (kernel.pid_max), which every process and \
             thread of the machine shares)"
                .to_string()
        )
    );
    assert_eq!(
        fake.rounds_of("search"),
        [
            "search a c=20",
            "search a c=40",
            "search b c=20",
            "search b c=25"
        ]
    );
    // Each is configured for its own search, not the other's.
    assert_eq!(
        fake.configured,
        [("a".to_string(), 40), ("b".to_string(), 25)]
    );
}

#[test]
fn a_server_that_fails_verification_started_and_says_so() {
    let s = study(&["good", "wrong"], "[4]", (1, 1), "");
    let mut fake = Fake::new(Box::new(steady));
    fake.refuse.insert(
        "wrong".into(),
        (
            Stage::Verification,
            "GET /index.html: status 404 instead of 200".into(),
        ),
    );
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(out.failed_steps, 1);
    let wrong = data.steps.iter().find(|s| s.server == "wrong").unwrap();
    assert_eq!(
        wrong.failure.as_deref(),
        Some("started but failed verification: GET /index.html: status 404 instead of 200")
    );
    assert_eq!(wrong.log_tail.as_deref(), Some("wrong log\n"));
}

/// The `large` workload's file, as `throng lab` generates it.
const LARGE: f64 = 22_020_096.0;

/// A round of the 21 MB file served at `mb_per_s`, shared by the round's
/// connections: each response takes `concurrency × 21 MB / bandwidth`.
/// Responses slower than the request timeout time out once the round has
/// lasted that long; responses slower than the round are still in flight
/// at its end, having read their share of the bandwidth.
fn transfer(load: &RoundLoad, mb_per_s: f64) -> Measured {
    let c = load.concurrency;
    let response_s = f64::from(c) * LARGE / (mb_per_s * 1e6);
    let timeout_s = load.timeout.as_secs_f64();
    let mut m = measured(0.0, c, &[], 1);
    let s = &mut m.summary;
    s.duration_s = load.seconds;
    s.mb_per_sec = mb_per_s;
    if response_s > timeout_s && load.seconds >= timeout_s {
        m = measured(0.0, c, &[(ErrorKind::Timeout, u64::from(c))], 1);
        m.summary.completed = 0;
        m.summary.latency_us = Latency::default();
    } else if response_s > load.seconds {
        s.completed = 0;
        s.sent = u64::from(c);
        s.in_flight_at_end = u64::from(c);
        s.latency_us = Latency::default();
    } else {
        let completed = u64::from(c) * (load.seconds / response_s).floor() as u64;
        let p99 = (response_s * 1e6) as u64;
        s.completed = completed;
        s.sent = completed + u64::from(c);
        s.in_flight_at_end = u64::from(c);
        s.requests_per_sec = completed as f64 / load.seconds;
        s.body_bytes = completed * LARGE as u64;
        s.latency_us = Latency {
            count: completed,
            min: p99,
            p50: p99,
            p99,
            max: p99,
            ..Latency::default()
        };
    }
    m
}

fn large_study(concurrency: &str, extra: &str) -> Study {
    let toml = format!(
        "name = \"large\"\nservers = [{{ name = \"a\", command = [\"/bin/true\"] }}]\n\
         workloads = [\"large\"]\ncores = [1]\nconcurrency = {concurrency}\nfeatures = false\n\
         allow_shared_cores = true\n{extra}\n\
         [rounds]\nseconds = 1.0\nwarmup_seconds = 0.25\nmin = 1\nmax = 1\nprecision = 0.02\n"
    );
    Study::parse(&toml, &Recipes::builtin()).unwrap()
}

fn search_result(data: &RunData) -> (Option<u32>, Option<u32>, String) {
    let m = &data.servers[0].max_users[0];
    (m.level, m.broke_at, m.broke_by.clone())
}

#[test]
fn large_rounds_last_long_enough_for_the_transfers_the_sweep_measured() {
    // 220.2 MB/s: ten 21 MB responses a second, shared by the connections.
    // The warmup (c=1) shows 0.1 s per response; each level then gets
    // rounds of three response times, never shorter than the study's 1 s.
    let s = large_study(
        "[1, 10]",
        "warmup_seconds = 0.5\nmax_users = true\nmax_users_cap = 40\npatience_seconds = 5.0\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    fake.timed = Some(Box::new(|_, load| transfer(load, 220.20096)));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        fake.lengths,
        [
            "warmup a c=1 0.5s",
            "round a c=1 1s",
            "diagnose a c=1 1s",
            "round a c=10 3s",
            "diagnose a c=10 3s",
            "search a c=20 6s",
            "search a c=40 12s",
        ]
    );
    // 4 s per response at 40 is under the 5 s patience.
    assert_eq!(
        search_result(&data),
        (Some(40), None, "no failure up to the cap of 40".to_string())
    );
    let c10 = &data.steps[1];
    assert_eq!((c10.concurrency, c10.rounds.len()), (10, 1));
    assert_eq!(c10.rounds[0].summary.completed, 30);
    assert_eq!(c10.rounds[0].summary.duration_s, 3.0);
}

#[test]
fn a_round_cut_short_is_measured_again_longer_and_never_breaks_the_server() {
    // No warmup, so the first round has no pace to go by: 1 s, while a
    // response at c=20 takes 2 s. It ends with 20 requests in flight and
    // none timed out: measured again with 6 s rounds (three responses at
    // the bandwidth it saw), not stored, not a failure.
    //
    // The search then asks 12 s at c=40, but there the server's bandwidth
    // drops to a quarter (16 s per response, under the 21 s timeout of a
    // 20 s patience): cut short again, measured again with 48 s rounds,
    // good. At c=80 a response would take 32 s: the round is capped at
    // 60 s, and its requests time out at 21 s, before the round ends:
    // that is the server failing.
    let s = large_study(
        "[20]",
        "warmup_seconds = 0\nmax_users = true\nmax_users_cap = 80\npatience_seconds = 20.0\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    fake.timed = Some(Box::new(|_, load| {
        let mb = if load.concurrency >= 40 {
            55.05024
        } else {
            220.20096
        };
        transfer(load, mb)
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        fake.lengths,
        [
            "round a c=20 1s",
            "round a c=20 6s",
            "diagnose a c=20 6s",
            "search a c=40 12s",
            "search a c=40 48s",
            "search a c=80 60s",
        ]
    );
    assert_eq!(
        search_result(&data),
        (Some(40), Some(80), "80 timeouts".to_string())
    );
    // The step keeps the round that measured something.
    let st = &data.steps[0];
    assert_eq!((st.status, st.rounds.len()), (StepStatus::Ok, 1));
    assert_eq!(st.rounds[0].summary.duration_s, 6.0);
    assert_eq!(st.rounds[0].summary.completed, 60);
}

#[test]
fn a_level_still_cut_short_at_the_longest_round_is_undecided_not_broken() {
    // A 100 s patience: requests may take 101 s before they time out,
    // longer than any round. At c=40 a response takes 90 s; the 60 s cap
    // on round length cannot see one complete, so the search stops there
    // without calling the level broken.
    let s = large_study(
        "[20]",
        "warmup_seconds = 0\nmax_users = true\nmax_users_cap = 80\npatience_seconds = 100.0\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    fake.timed = Some(Box::new(|_, load| {
        let mb = if load.concurrency >= 40 {
            // 40 × 21 MB in 90 s.
            40.0 * LARGE / 90.0 / 1e6
        } else {
            220.20096
        };
        transfer(load, mb)
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        fake.lengths,
        [
            "round a c=20 1s",
            "round a c=20 6s",
            "diagnose a c=20 6s",
            "search a c=40 12s",
            "search a c=40 60s",
        ]
    );
    assert_eq!(
        search_result(&data),
        (
            Some(20),
            None,
            "undecided at 40: no response within 60 s rounds, 40 requests still in flight and \
             none timed out"
                .to_string()
        )
    );
}

/// A duet apart: the hosts' placement, not this machine's CPUs, gives
/// each server its CPUs on the server host (its load comes from client
/// hosts of its own), and both servers' slices are asked at once and
/// paired exactly as at home.
#[test]
fn a_duet_whose_hosts_place_its_lanes_measures_both_at_once_and_pairs_exactly() {
    let s = study(
        &["a", "b"],
        "[4]",
        (6, 6),
        "duet = true\nserver_host = \"ssh://srv\"\nclient_hosts = [\"ssh://c1\", \"ssh://c2\"]",
    );
    let mut fake = Fake::new(Box::new(move |server, c, _| {
        Ok(measured(
            if server == "a" { 1000.0 } else { 1250.0 },
            c,
            &[],
            1_000,
        ))
    }));
    // The server host's CPUs: two lanes of one core and the sampler's.
    fake.cpus = vec![0, 1, 2];
    fake.lanes = Some(
        [vec![0], vec![1]]
            .into_iter()
            .map(|server_cpus| throng_lab::group::Lane {
                server_cpus,
                client_cpus: Vec::new(),
            })
            .collect(),
    );
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        fake.placed,
        [
            ("a".to_string(), vec![0], vec![]),
            ("b".to_string(), vec![1], vec![]),
        ]
    );
    let together: Vec<&str> = fake.rounds_of("together");
    assert_eq!(together, ["together a@[]+b@[] c=4"; 6]);
    let c = &data.comparisons[0];
    assert_eq!((c.pairs, c.decision), (6, Decision::Higher));
    assert!((c.ratio - 1.25).abs() < 1e-12, "{}", c.ratio);
}

#[test]
fn a_duet_measures_two_servers_at_once_on_their_own_cpus() {
    let s = study(&["a", "b"], "[4]", (6, 6), "duet = true");
    let mut fake = Fake::new(Box::new(move |server, c, _| {
        Ok(measured(
            if server == "a" { 1000.0 } else { 1200.0 },
            c,
            &[],
            1_000,
        ))
    }));
    fake.cpus = vec![0, 1, 2, 3, 4, 5];
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    // Each server on a core of its own, each client on two of the others.
    assert_eq!(
        fake.placed,
        [
            ("a".to_string(), vec![0], vec![2, 3]),
            ("b".to_string(), vec![1], vec![4, 5]),
        ]
    );
    let together: Vec<&str> = fake.rounds_of("together");
    assert_eq!(together.len(), 6);
    assert!(together
        .iter()
        .all(|c| *c == "together a@[2, 3]+b@[4, 5] c=4"));
    let st = &data.steps[1];
    assert_eq!(
        (st.server_cpus.as_slice(), st.client_cpus.as_slice()),
        (&[1][..], &[4, 5][..])
    );
    let c = &data.comparisons[0];
    assert_eq!((c.pairs, c.decision), (6, Decision::Higher));
    assert!((c.ratio - 1.2).abs() < 1e-12);

    // Without the CPUs for it, the study is refused before anything runs.
    let mut fake = Fake::new(Box::new(steady));
    fake.cpus = vec![0, 1, 2];
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let rundir = RunDir::create(dir.path(), "throng-lab", 1, false).unwrap();
    let site = Site {
        rundir: &rundir,
        user: None,
    };
    let e = throng_lab::run_study_with(
        &s,
        &mut store,
        &mut Quiet,
        &Interrupt::new(),
        site,
        &mut fake,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "duet = true runs two servers of 1 cores at once, each with its own load generator: \
         that needs 4 CPUs and this machine gives throng 3; remove `duet` to compare them in \
         interleaved slices instead"
    );
    assert!(fake.calls.is_empty());
    assert_eq!(store.latest_run().unwrap(), None);
}

/// Rates that scatter ±40% from round to round, and exactly the requests a
/// counted round asks for: a level measured by its interval would run to
/// its maximum rounds.
fn scattered() -> TimedScript {
    let mut k = 0usize;
    Box::new(move |_, load| {
        k += 1;
        let mut m = measured([1000.0, 1500.0, 600.0][k % 3], load.concurrency, &[], 1_000);
        if let Some(n) = load.requests {
            m.summary.completed = n;
            m.summary.sent = n;
        }
        m
    })
}

fn loads_of<'a>(fake: &'a Fake, kind: &str) -> Vec<&'a RoundLoad> {
    fake.loads
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, l)| l)
        .collect()
}

#[test]
fn a_counted_level_runs_its_rounds_each_completing_an_exact_share() {
    // 600 requests a level over rounds.min = 3 would leave 3 pairs, too
    // few to bound a comparison: rounds of 100 instead, six a level
    // however the rates scatter, and no connections kept between them
    // (each round opens its own, one per request here).
    let s = study(
        &["a", "b"],
        "[4, 8]",
        (3, 10),
        "[load]\nrequests = 600\nkeep_alive = false\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    fake.timed = Some(scattered());
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    assert_eq!(
        rounds_per_step(&data),
        [
            ("a".to_string(), 4, StepStatus::Ok, 6),
            ("a".to_string(), 8, StepStatus::Ok, 6),
            ("b".to_string(), 4, StepStatus::Ok, 6),
            ("b".to_string(), 8, StepStatus::Ok, 6),
        ]
    );
    assert!(fake.rounds_of("open").is_empty());
    let rounds = loads_of(&fake, "round");
    assert_eq!(rounds.len(), 24);
    for l in &rounds {
        assert_eq!(l.requests, Some(100));
        assert_eq!(l.seconds, throng_lab::spec::COUNTED_ROUND_WATCH_S);
        assert!(!l.shape.keep_alive);
        let spec = throng_lab::spec::load_spec(
            throng_lab::spec::targets(([127, 0, 0, 1], 80).into(), &["/".into()]),
            l,
        );
        assert_eq!(spec.stop, throng_engine::Stop::Requests(100));
        assert!(!spec.keep_alive);
    }
    // The warmup of each started server readies it for a time; the
    // diagnosis is one more round of the level's count.
    for l in loads_of(&fake, "warmup") {
        assert_eq!((l.requests, l.seconds, l.concurrency), (None, 0.5, 4));
        assert!(!l.shape.keep_alive);
    }
    let diagnosed = loads_of(&fake, "diagnose");
    assert_eq!(diagnosed.len(), 4);
    assert!(diagnosed.iter().all(|l| l.requests == Some(100)));
    for st in &data.steps {
        let blocks: Vec<Option<u32>> = st.rounds.iter().map(|r| r.block).collect();
        assert_eq!(blocks, (0..6).map(Some).collect::<Vec<_>>());
        assert!(st.rounds.iter().all(|r| r.summary.completed == 100));
    }
    // Still paired, block by block, at each level and over the sweep.
    assert_eq!(data.comparisons.len(), 3);
    assert!(data.comparisons.iter().take(2).all(|c| c.pairs == 6));

    // One server alone: its count of rounds, not its interval, ends it.
    let s = study(&["a"], "[4]", (3, 10), "[load]\nrequests = 300\n");
    let mut fake = Fake::new(Box::new(steady));
    fake.timed = Some(scattered());
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        rounds_per_step(&data),
        [("a".to_string(), 4, StepStatus::Ok, 3)]
    );
    let rounds = loads_of(&fake, "round");
    assert!(rounds
        .iter()
        .all(|l| l.requests == Some(100) && l.shape.keep_alive));
    assert!(data.steps[0]
        .rounds
        .iter()
        .all(|r| r.summary.completed == 100));
}

#[test]
fn each_workload_is_swept_over_its_own_levels_with_its_own_requests() {
    // The study's levels for the tiny file; the page at 2 connections,
    // each request on a connection of its own.
    let toml = "name = \"two\"\nservers = [{ name = \"a\", command = [\"/bin/true\"] }]\n\
                workloads = [\"tiny\", \"page\"]\ncores = [1]\nconcurrency = [4, 8]\n\
                features = false\nallow_shared_cores = true\nwarmup_seconds = 0.5\ndiagnose = false\n\
                [workload.page]\nconcurrency = [2]\nkeep_alive = false\nrequests = 20\n\
                [rounds]\nseconds = 1.0\nwarmup_seconds = 0.25\nmin = 2\nmax = 2\nlaunches = 1\n";
    let s = Study::parse(toml, &Recipes::builtin()).unwrap();
    let mut fake = Fake::new(Box::new(steady));
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    let steps: Vec<(String, u32, usize)> = data
        .steps
        .iter()
        .map(|s| (s.workload.clone(), s.concurrency, s.rounds.len()))
        .collect();
    assert_eq!(
        steps,
        [
            ("page".to_string(), 2, 2),
            ("tiny".to_string(), 4, 2),
            ("tiny".to_string(), 8, 2),
        ]
    );
    let shapes: Vec<(&str, u32, bool, Option<u64>)> = fake
        .loads
        .iter()
        .map(|(k, l)| (*k, l.concurrency, l.shape.keep_alive, l.requests))
        .collect();
    assert_eq!(
        shapes,
        [
            ("warmup", 4, true, None),
            ("round", 4, true, None),
            ("round", 4, true, None),
            ("round", 8, true, None),
            ("round", 8, true, None),
            // The page group's warmup, asked for as one.
            ("warmup", 2, false, None),
            ("round", 2, false, Some(10)),
            ("round", 2, false, Some(10)),
        ]
    );
}

/// Open-model rounds: `a` keeps up with every rate; `b` completes 1500 of
/// the 2000 offered; `c` completes all it is offered at 2000 but sends 2%
/// of them more than 1 ms late.
fn offered() -> TimedScript {
    Box::new(move |server, load| {
        // The warmup, in the closed model.
        let Some(rate) = load.rate else {
            return measured(1000.0, load.concurrency, &[], 1_000);
        };
        let done = match (server, rate) {
            ("b", r) if r >= 2000.0 => 1500.0,
            _ => rate,
        };
        let mut m = measured(done * load.seconds, load.concurrency, &[], 1_000);
        m.summary.model = throng_model::LoadModel::Open;
        m.summary.duration_s = load.seconds;
        m.summary.requests_per_sec = done;
        m.summary.sent = (rate * load.seconds) as u64;
        let late = if server == "c" && rate >= 2000.0 {
            m.summary.sent / 50
        } else {
            0
        };
        m.summary.rate = Some(throng_model::RateReport {
            target: rate,
            late_sends: late,
            ..Default::default()
        });
        m
    })
}

#[test]
fn a_rate_sweep_offers_each_rate_and_stops_a_server_where_it_no_longer_keeps_up() {
    let s = study(
        &["a", "b", "c"],
        "[4]",
        (3, 3),
        "[load]\nrate = \"1000..3000 step 1000\"\n",
    );
    let mut fake = Fake::new(Box::new(steady));
    fake.timed = Some(offered());
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    let steps: Vec<(&str, u32, Option<f64>, StepStatus, usize)> = data
        .steps
        .iter()
        .map(|s| {
            (
                s.server.as_str(),
                s.concurrency,
                s.rate,
                s.status,
                s.rounds.len(),
            )
        })
        .collect();
    let ok = StepStatus::Ok;
    let skipped = StepStatus::Skipped;
    assert_eq!(
        steps,
        [
            ("a", 4, Some(1000.0), ok, 3),
            ("a", 4, Some(2000.0), ok, 3),
            ("a", 4, Some(3000.0), ok, 3),
            ("b", 4, Some(1000.0), ok, 3),
            ("b", 4, Some(2000.0), ok, 3),
            ("b", 4, Some(3000.0), skipped, 0),
            ("c", 4, Some(1000.0), ok, 3),
            ("c", 4, Some(2000.0), ok, 3),
            ("c", 4, Some(3000.0), skipped, 0),
        ]
    );
    let step = |server: &str, rate: f64| {
        data.steps
            .iter()
            .find(|s| s.server == server && s.rate == Some(rate))
            .unwrap()
    };
    for server in ["b", "c"] {
        assert_eq!(
            step(server, 3000.0).failure.as_deref(),
            Some("the server did not keep up at 2000 req/s")
        );
    }
    let b = &step("b", 2000.0).verdict;
    assert!(b.has(throng_model::ReasonCode::Saturated), "{b:?}");
    assert_eq!(
        b.reasons
            .iter()
            .find(|r| r.code == throng_model::ReasonCode::Saturated)
            .unwrap()
            .message,
        "the server did not keep up with 2000 req/s: it completed 1500 req/s of the 2000 \
         offered (75.0%, under 95%); latency here is queueing behind the schedule, and higher \
         rates were not offered"
    );
    let c = &step("c", 2000.0).verdict;
    assert!(
        c.reasons
            .iter()
            .any(|r| r.code == throng_model::ReasonCode::Saturated
                && r.message
                    .contains("120 of 6000 sends (2.0%) left more than 1 ms late")),
        "{c:?}"
    );
    for rate in [1000.0, 3000.0] {
        assert!(!step("a", rate)
            .verdict
            .has(throng_model::ReasonCode::Saturated));
    }
    // Every measured round and diagnosis is offered its level's rate over
    // the one concurrency, on connections of its own; the warmup readies
    // each server in the closed model.
    let rounds = loads_of(&fake, "round");
    // a at three rates, b and c at two, three rounds each.
    assert_eq!(rounds.len(), 3 * 3 + 2 * 2 * 3);
    for l in rounds.iter().chain(&loads_of(&fake, "diagnose")) {
        assert_eq!(l.concurrency, 4);
        assert!(matches!(l.rate, Some(r) if [1000.0, 2000.0, 3000.0].contains(&r)));
    }
    let a_rates: Vec<f64> = fake
        .loads
        .iter()
        .zip(fake.calls.iter().filter(|c| {
            ["warmup", "round", "search", "diagnose"]
                .iter()
                .any(|k| c.starts_with(k))
        }))
        .filter(|((k, _), call)| *k == "round" && call.contains(" a "))
        .map(|((_, l), _)| l.rate.unwrap())
        .collect();
    assert_eq!(
        a_rates,
        [1000.0, 1000.0, 1000.0, 2000.0, 2000.0, 2000.0, 3000.0, 3000.0, 3000.0]
    );
    assert!(loads_of(&fake, "warmup").iter().all(|l| l.rate.is_none()));
    assert!(fake.rounds_of("open").is_empty());
    // Paired per offered rate while two servers or more are offered it,
    // and over the sweep.
    let levels: Vec<(Option<u32>, Option<f64>, &str, &str)> = data
        .comparisons
        .iter()
        .map(|c| (c.concurrency, c.rate, c.a.as_str(), c.b.as_str()))
        .collect();
    assert_eq!(
        levels,
        [
            (Some(4), Some(1000.0), "a", "b"),
            (Some(4), Some(1000.0), "a", "c"),
            (Some(4), Some(1000.0), "b", "c"),
            (Some(4), Some(2000.0), "a", "b"),
            (Some(4), Some(2000.0), "a", "c"),
            (Some(4), Some(2000.0), "b", "c"),
            (None, None, "a", "b"),
            (None, None, "a", "c"),
            (None, None, "b", "c"),
        ]
    );
    let b_over_a = &data.comparisons[3];
    assert!((b_over_a.ratio - 0.75).abs() < 1e-9, "{b_over_a:?}");
}

/// Records the steps whose verdicts were revised after their sweep.
struct Revisions(Vec<(u32, String)>);

impl throng_lab::Observer for Revisions {
    fn event(&mut self, e: throng_lab::Event<'_>) {
        if let throng_lab::Event::Revised(s) = e {
            self.0.push((s.concurrency, s.verdict.label()));
        }
    }
}

#[test]
fn a_verdict_its_sweep_changes_is_told_as_well_as_stored() {
    // Flat throughput from 4 to 16 connections, latency growing with them
    // and the server's CPU at a tenth of its core: the sweep adds
    // `bottleneck_elsewhere` to the level at 16 after its step was told as
    // valid. The observer hears of it, so the console says it too.
    let mut exec = Fake::new(Box::new(|_, c, _| {
        let mut m = measured(1000.0, c, &[], 250 * u64::from(c));
        m.usage.wall_s = 1.0;
        m.usage.cpu_user_s = 0.1;
        Ok(m)
    }));
    let s = study(&["a"], "[4, 16]", (3, 3), "");
    let mut seen = Revisions(Vec::new());
    let (_, data) = run_seen(&s, &mut exec, &Interrupt::new(), &mut seen);
    let stored: Vec<(u32, String)> = data
        .steps
        .iter()
        .filter(|s| s.verdict.has(throng_model::ReasonCode::BottleneckElsewhere))
        .map(|s| (s.concurrency, s.verdict.label()))
        .collect();
    assert_eq!(
        stored.len(),
        1,
        "{:?}",
        data.steps.iter().map(|s| &s.verdict).collect::<Vec<_>>()
    );
    assert_eq!(stored[0].0, 16);
    assert_eq!(seen.0, stored);
}

#[test]
fn the_parity_table_states_the_connection_limit_the_configs_were_given() {
    // Servers are rendered with max(2 × the highest concurrency, 1024);
    // the table said the highest concurrency itself, 16 here. A server
    // whose command takes no limit was said to have it all the same: it
    // has none.
    let toml = "name = \"fake\"\nservers = [{ name = \"a\", command = [\"/bin/true\", \
                \"--max\", \"{{max_connections}}\"] }, { name = \"b\", command = [\"/bin/true\"] }]\n\
                workloads = [\"tiny\"]\ncores = [1]\nconcurrency = [4, 16]\nfeatures = false\n\
                allow_shared_cores = true\n[rounds]\nseconds = 1.0\nmin = 1\nmax = 1\n";
    let s = Study::parse(toml, &Recipes::builtin()).unwrap();
    let mut exec = Fake::new(Box::new(steady));
    let (_, data) = run(&s, &mut exec, &Interrupt::new());
    let limit: Vec<&str> = data
        .servers
        .iter()
        .flat_map(|s| &s.parity)
        .filter(|p| p.setting == throng_model::Setting::MaxConnections)
        .map(|p| p.value.as_str())
        .collect();
    assert_eq!(limit, ["1024", "none set"]);
    assert_eq!(throng_servers::max_connections_for(16), 1024);
    assert_eq!(throng_servers::max_connections_for(5000), 10_000);
}

#[test]
fn a_log_written_where_the_lab_does_not_look_is_not_called_off() {
    // The run directory's logs did not grow: that confirms a config that
    // says off, and leaves standing one that logs elsewhere (/var/log),
    // which "off (live)" used to replace.
    let d = Diagnosis {
        requests: 1000,
        log_bytes_per_request: 0.0,
        ..Diagnosis::default()
    };
    let access = |configured| {
        throng_lab::sweep::live_parity(&d, configured)
            .into_iter()
            .find(|e| e.setting == throng_model::Setting::AccessLog)
            .map(|e| e.value)
    };
    assert_eq!(access(Some("off")), Some("off".to_string()));
    assert_eq!(access(None), Some("off".to_string()));
    assert_eq!(access(Some("on")), None);
    // Growth says on, whatever the config said.
    let d = Diagnosis {
        log_bytes_per_request: 95.0,
        ..d
    };
    let grown = throng_lab::sweep::live_parity(&d, Some("off"));
    assert_eq!(grown[0].value, "on");
}

/// A study of servers `a` and `b` at two levels, in 0.1 s slices, started
/// `launches` times at least and `max` at most, 4 blocks a level each
/// time.
fn launched_study(launches: u32, max: u32) -> Study {
    launched_servers(&["a", "b"], launches, max)
}

fn launched_servers(servers: &[&str], launches: u32, max: u32) -> Study {
    let list: Vec<String> = servers
        .iter()
        .map(|s| format!("{{ name = \"{s}\", command = [\"/bin/true\"] }}"))
        .collect();
    let toml = format!(
        "name = \"launched\"\nservers = [{}]\nworkloads = [\"tiny\"]\ncores = [1]\n\
         concurrency = [10, 20]\nfeatures = false\nallow_shared_cores = true\ndiagnose = false\n\
         warmup_seconds = 0.5\n\
         [rounds]\nseconds = 0.1\nwarmup_seconds = 0\nmin = {}\nmax = 40\nprecision = 0.05\n\
         launches = {launches}\nmax_launches = {max}\n",
        list.join(", "),
        4 * launches
    );
    Study::parse(&toml, &Recipes::builtin()).unwrap()
}

/// ±1% of slice-to-slice scatter that every launch shares, so a launch's
/// median ratio is its true ratio within about half a percent.
fn jitter(n: usize) -> f64 {
    [1.0, 1.01, 0.99, 1.005, 0.995, 1.0][n % 6]
}

/// The pooled comparison of b with a, and each level's.
fn b_over_a(data: &RunData) -> (&throng_model::Comparison, Vec<&throng_model::Comparison>) {
    let pooled = data
        .comparisons
        .iter()
        .find(|c| c.concurrency.is_none())
        .expect("a pooled comparison");
    let levels = data
        .comparisons
        .iter()
        .filter(|c| c.concurrency.is_some())
        .collect();
    (pooled, levels)
}

#[test]
fn launches_that_differ_widen_the_interval_to_cover_them() {
    // b is a's equal in launches 1 and 3 and 12% faster in launch 2, as
    // Apache was in one run of three: every slice of a launch agrees, so
    // one launch alone would give a narrow interval around its own ratio.
    let s = launched_study(3, 3);
    let mut fake = Fake::new(Box::new(steady));
    fake.launched = Some(Box::new(b_faster_in_launch_1));
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    assert_eq!(
        fake.starts,
        BTreeMap::from([("a".into(), 3), ("b".into(), 3)])
    );
    let (pooled, levels) = b_over_a(&data);
    assert_eq!(levels.len(), 2);
    for c in levels.iter().copied().chain([pooled]) {
        assert_eq!(c.interval, throng_model::IntervalKind::Launches, "{c:?}");
        assert_eq!(c.launch_ratios.len(), 3, "{c:?}");
        assert!(
            (c.launch_ratios[1] / c.launch_ratios[0] - 1.12).abs() < 0.012,
            "{c:?}"
        );
        // Student's t with 2 degrees of freedom over ln 1, ln 1.12, ln 1:
        // the geometric mean 1.039, from 0.88 to 1.23: both launches'
        // ratios inside, and nothing decided.
        assert!((c.ratio - 1.12f64.powf(1.0 / 3.0)).abs() < 0.01, "{c:?}");
        assert!(c.ci_low < 0.9 && c.ci_low > 0.86, "{c:?}");
        assert!(c.ci_high > 1.2 && c.ci_high < 1.26, "{c:?}");
        assert_eq!(c.decision, Decision::Undecided, "{c:?}");
        assert_eq!(c.pairs, if c.concurrency.is_some() { 12 } else { 24 });
    }
    // Every round says which launch it measured; blocks are unique in a
    // level across launches.
    for st in &data.steps {
        let launches: Vec<Option<u32>> = st.rounds.iter().map(|r| r.launch).collect();
        let blocks: Vec<Option<u32>> = st.rounds.iter().map(|r| r.block).collect();
        let mut want = vec![Some(0); 4];
        want.extend([Some(1); 4]);
        want.extend([Some(2); 4]);
        assert_eq!(launches, want, "{}", st.server);
        assert_eq!(blocks, (0..12).map(Some).collect::<Vec<_>>());
    }
}

#[test]
fn a_server_whose_launches_differ_beyond_its_slices_is_named() {
    // Three servers; b ran 12% faster in its second start, and only b.
    let s = launched_servers(&["a", "b", "c"], 3, 3);
    let run_b_faster_once = |prices: Option<f64>| {
        let mut fake = Fake::new(Box::new(steady));
        fake.prices = prices;
        fake.launched = Some(Box::new(b_faster_in_launch_1));
        run(&s, &mut fake, &Interrupt::new()).1
    };
    let why_b = |data: &RunData| {
        let b = data.steps.iter().find(|s| s.server == "b").unwrap();
        b.verdict
            .reasons
            .iter()
            .find(|r| r.code == throng_model::ReasonCode::LaunchesDiffer)
            .unwrap()
            .message
            .clone()
    };
    let data = run_b_faster_once(None);
    for st in &data.steps {
        let named = st.verdict.has(throng_model::ReasonCode::LaunchesDiffer);
        assert_eq!(named, st.server == "b", "{}: {:?}", st.server, st.verdict);
    }
    let why = why_b(&data);
    assert!(why.starts_with("its launches differed by 12% ("), "{why}");
    assert!(why.contains("look for what a start leaves behind"), "{why}");

    // The same launches with the servers' core read before each: 3.00,
    // 3.01 and 3.02 µs a switch, the machine held and the start is named;
    // 3.00, 3.30 and 3.60 µs, the machine is named beside it.
    for (step, says) in [
        (
            10.0,
            "cost 3.00–3.02 µs before those launches (within 1%): the machine held",
        ),
        (
            300.0,
            "cost 3.00–3.60 µs before those launches (20% apart): the machine moved too",
        ),
    ] {
        let why = why_b(&run_b_faster_once(Some(step)));
        assert!(why.contains(says), "{why}");
    }
}

#[test]
fn a_machine_that_slowed_every_server_in_a_launch_is_named_beside_the_start() {
    // In the second of three launches the machine slowed every server, a
    // and c by 15% and b by 7%, while the price of a context switch read
    // before each launch held (3.00-3.02 µs). Read against the others,
    // b's second launch was 9% faster: b is named, and its message says
    // every server moved with that launch, so the machine may own part of
    // it. Before, it said the machine held and the start was to blame.
    let s = launched_servers(&["a", "b", "c"], 3, 3);
    let mut fake = Fake::new(Box::new(steady));
    fake.prices = Some(10.0);
    fake.launched = Some(Box::new(|server, launch, n| {
        let rate = match (server, launch) {
            ("b", 1) => 930.0,
            (_, 1) => 850.0,
            _ => 1000.0,
        };
        measured(rate * jitter(n), 10, &[], 1_000)
    }));
    let data = run(&s, &mut fake, &Interrupt::new()).1;
    for st in &data.steps {
        let named = st.verdict.has(throng_model::ReasonCode::LaunchesDiffer);
        assert_eq!(named, st.server == "b", "{}: {:?}", st.server, st.verdict);
    }
    let b = data.steps.iter().find(|s| s.server == "b").unwrap();
    let why = &b
        .verdict
        .reasons
        .iter()
        .find(|r| r.code == throng_model::ReasonCode::LaunchesDiffer)
        .unwrap()
        .message;
    assert!(why.starts_with("its launches differed by 9% ("), "{why}");
    // 1 / 0.85: the launch every server ran 15% slower in.
    assert!(
        why.contains(
            "and while a context switch on the servers' core cost 3.00–3.02 µs before those \
             launches (within 1%), every server's rate moved together by 18% between them: the \
             machine moved in a way the switch's price does not show"
        ),
        "{why}"
    );
    assert!(
        !why.contains("look for what a start leaves behind"),
        "{why}"
    );
}

/// b 12% faster than every other server in its second launch only.
fn b_faster_in_launch_1(server: &str, launch: usize, n: usize) -> Measured {
    let rate = match (server, launch) {
        ("b", 1) => 1120.0,
        _ => 1000.0,
    };
    measured(rate * jitter(n), 10, &[], 1_000)
}

#[test]
fn launches_that_agree_keep_the_interval_narrow() {
    // b is 10% faster than a in every launch: the interval over launches
    // holds 1.10 within a percent, and b is decided faster.
    let s = launched_study(3, 3);
    let mut fake = Fake::new(Box::new(steady));
    fake.launched = Some(Box::new(|server, _, n| {
        let rate = if server == "b" { 1100.0 } else { 1000.0 };
        measured(rate * jitter(n), 10, &[], 1_000)
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    let (pooled, levels) = b_over_a(&data);
    for c in levels.iter().copied().chain([pooled]) {
        assert_eq!(c.interval, throng_model::IntervalKind::Launches, "{c:?}");
        assert!(c.ci_low > 1.09 && c.ci_high < 1.11, "{c:?}");
        assert!(c.ci_low <= 1.1 && c.ci_high >= 1.1 - 0.005, "{c:?}");
        assert_eq!(c.decision, Decision::Higher, "{c:?}");
    }
}

#[test]
fn servers_are_started_again_until_the_comparisons_are_narrow_or_the_launches_run_out() {
    // Identical launches: two are enough, and the servers are started
    // twice.
    let s = launched_study(2, 5);
    let mut fake = Fake::new(Box::new(steady));
    fake.launched = Some(Box::new(|server, _, _| {
        measured(if server == "b" { 900.0 } else { 1000.0 }, 10, &[], 1_000)
    }));
    let (_, data) = run(&s, &mut fake, &Interrupt::new());
    assert_eq!(
        fake.starts,
        BTreeMap::from([("a".into(), 2), ("b".into(), 2)])
    );
    assert!(data.comparisons.iter().all(|c| c.launch_ratios.len() == 2));
    // Launches that alternate by 20%: never narrow, so five, the most.
    let s = launched_study(2, 5);
    let mut fake = Fake::new(Box::new(steady));
    fake.launched = Some(Box::new(|server, launch, _| {
        let b = if launch % 2 == 0 { 900.0 } else { 1100.0 };
        measured(if server == "b" { b } else { 1000.0 }, 10, &[], 1_000)
    }));
    let mut seen = Notes(Vec::new());
    let (_, data) = run_seen(&s, &mut fake, &Interrupt::new(), &mut seen);
    assert_eq!(
        fake.starts,
        BTreeMap::from([("a".into(), 5), ("b".into(), 5)])
    );
    assert!(data.comparisons.iter().all(|c| c.launch_ratios.len() == 5));
    assert_eq!(
        seen.0,
        [
            "tiny on 1 core: launch 2 of at least 2; every server is started again",
            "tiny on 1 core: launch 3 of at most 5: 2 of 2 levels still have a comparison wider \
             than ±5.0%; every server is started again",
            "tiny on 1 core: launch 4 of at most 5: 2 of 2 levels still have a comparison wider \
             than ±5.0%; every server is started again",
            "tiny on 1 core: launch 5 of at most 5: 2 of 2 levels still have a comparison wider \
             than ±5.0%; every server is started again",
        ]
    );
    // Each launch starts and stops every server, later ones in a shuffled
    // order.
    let starts: Vec<&str> = fake
        .calls
        .iter()
        .filter(|c| c.starts_with("start") || c.starts_with("stop"))
        .map(String::as_str)
        .collect();
    assert_eq!(starts.len(), 20);
    assert_eq!(&starts[..2], ["start a", "start b"]);
}

#[test]
fn past_the_least_launches_only_the_wide_comparisons_are_measured_again() {
    // At 10 connections every server serves the same in every launch. At
    // 20, a's second start is 1.2% faster and c's 0.6%: over two launches
    // (Student's t at one degree of freedom, 12.7) b/a is ±7.6%, wider than
    // the ±5% target, and c/a and c/b ±3.8%. So the third launch measures
    // a and b at 20 connections and nothing at 10; over three launches b/a
    // is ±1.7%, and there is no fourth.
    let s = launched_servers(&["a", "b", "c"], 2, 5);
    let mut fake = Fake::new(Box::new(steady));
    fake.leveled = Some(Box::new(|server, launch, c| {
        let up = match (server, c, launch % 2) {
            ("a", 20, 1) => 1.012,
            ("c", 20, 1) => 1.006,
            _ => 1.0,
        };
        measured(1000.0 * up, c, &[], 1_000)
    }));
    let mut seen = Notes(Vec::new());
    let (out, data) = run_seen(&s, &mut fake, &Interrupt::new(), &mut seen);
    assert!(out.complete);
    assert_eq!(
        seen.0,
        [
            "tiny on 1 core: launch 2 of at least 2; every server is started again",
            "tiny on 1 core: launch 3 of at most 5: 1 of 2 levels still have a comparison wider \
             than ±5.0%; every server is started again, and measured again only where a \
             comparison is wide: at 10 connections none, at 20 connections a and b",
        ]
    );
    // Every server is started in each launch, and stays up idle; c is
    // warmed only in the launches that measure it.
    assert_eq!(
        fake.starts,
        BTreeMap::from([("a".into(), 3), ("b".into(), 3), ("c".into(), 3)])
    );
    let warmups = |server: &str| {
        fake.calls
            .iter()
            .filter(|c| c.starts_with(&format!("warmup {server} ")))
            .count()
    };
    assert_eq!((warmups("a"), warmups("b"), warmups("c")), (3, 3, 2));
    // Each step's rounds by launch: four blocks a launch where measured.
    for st in &data.steps {
        let mut launches: BTreeMap<u32, usize> = BTreeMap::new();
        for r in &st.rounds {
            *launches.entry(r.launch.unwrap()).or_default() += 1;
        }
        let want: &[(u32, usize)] = match (st.server.as_str(), st.concurrency) {
            ("a" | "b", 20) => &[(0, 4), (1, 4), (2, 4)],
            _ => &[(0, 4), (1, 4)],
        };
        assert_eq!(
            launches.into_iter().collect::<Vec<_>>(),
            want,
            "{} at {}",
            st.server,
            st.concurrency
        );
    }
    // Each comparison over the launches that measured both its servers.
    let level = |a: &str, b: &str, c: u32| {
        data.comparisons
            .iter()
            .find(|x| x.a == a && x.b == b && x.concurrency == Some(c))
            .unwrap_or_else(|| panic!("{b}/{a} at {c}"))
    };
    let ba = level("a", "b", 20);
    assert_eq!(ba.launch_ratios.len(), 3);
    assert_eq!(ba.pairs, 12);
    // ln ratios 0, −ln 1.012, 0: ±1.7% about their geometric mean.
    let m = (1.0f64 / 1.012).powf(1.0 / 3.0);
    assert!((ba.ratio - m).abs() < 1e-9, "{ba:?}");
    assert!((ba.relative_half_width() - 0.0171).abs() < 0.0005, "{ba:?}");
    for (a, b) in [("a", "c"), ("b", "c")] {
        let x = level(a, b, 20);
        assert_eq!((x.launch_ratios.len(), x.pairs), (2, 8), "{x:?}");
        assert!(x.relative_half_width() < 0.05, "{x:?}");
    }
    for (a, b) in [("a", "b"), ("a", "c"), ("b", "c")] {
        let x = level(a, b, 10);
        assert_eq!((x.launch_ratios.len(), x.ratio), (2, 1.0), "{x:?}");
    }
    // The sweep's comparison is drawn over the launches that measured the
    // pair at every level.
    let pooled = data
        .comparisons
        .iter()
        .find(|x| x.a == "a" && x.b == "b" && x.concurrency.is_none())
        .expect("b/a over the sweep");
    assert_eq!(pooled.launch_ratios.len(), 2, "{pooled:?}");
}

#[test]
fn a_launch_that_measures_some_servers_only_calls_no_server_that_held() {
    // As `lab quick` runs: servers of very different speeds (c ten times a
    // and b), and a third launch that measures all three at 10 connections
    // (c's comparisons still wide there: its second start 1.2% faster)
    // and only a and b at 20 (b/a wide: a's second start 1.2% faster; c's
    // 0.6%, so c/a and c/b are narrow). No start moved any server by the
    // ±5% the study decides at, so no server's launches differ. Read
    // against each block's geometric mean, a block of a and b alone read
    // each at 2.2 times its reading in a full block, and c, its launches
    // measured from their median server, was called: "its launches
    // differed by 47%".
    let s = launched_servers(&["a", "b", "c"], 2, 5);
    let mut fake = Fake::new(Box::new(steady));
    fake.leveled = Some(Box::new(|server, launch, c| {
        let base = if server == "c" { 10_000.0 } else { 1000.0 };
        let up = match (server, c, launch % 2) {
            ("a", 20, 1) => 1.012,
            ("c", 10, 1) => 1.012,
            ("c", 20, 1) => 1.006,
            _ => 1.0,
        };
        measured(base * up, c, &[], 1_000)
    }));
    let mut seen = Notes(Vec::new());
    let (out, data) = run_seen(&s, &mut fake, &Interrupt::new(), &mut seen);
    assert!(out.complete);
    assert_eq!(
        seen.0[1],
        "tiny on 1 core: launch 3 of at most 5: 2 of 2 levels still have a comparison wider \
         than ±5.0%; every server is started again, and measured again only where a \
         comparison is wide: at 10 connections a, b and c, at 20 connections a and b",
        "{:?}",
        seen.0
    );
    for st in &data.steps {
        assert!(
            !st.verdict.has(throng_model::ReasonCode::LaunchesDiffer),
            "{} at {}: {:?}",
            st.server,
            st.concurrency,
            st.verdict
        );
    }
}

/// Every note the lab tells its caller but the one on its decision
/// threshold, which every run starts with.
struct Notes(Vec<String>);

impl throng_lab::Observer for Notes {
    fn event(&mut self, e: throng_lab::Event<'_>) {
        match e {
            throng_lab::Event::Note(n) if !n.starts_with("decision threshold") => self.0.push(n),
            _ => {}
        }
    }
}

#[test]
fn a_server_that_does_not_start_again_fails_its_later_launches_and_says_why() {
    let s = launched_study(3, 3);
    let mut fake = Fake::new(Box::new(steady));
    fake.launched = Some(Box::new(|_, _, n| {
        measured(1000.0 * jitter(n), 10, &[], 1_000)
    }));
    // b refuses its second start.
    fake.refuse_after_starts = BTreeMap::from([("b".to_string(), 1)]);
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    // It is not asked to start a third time, nor warmed up when down.
    assert_eq!(
        fake.starts,
        BTreeMap::from([("a".into(), 3), ("b".into(), 2)])
    );
    assert_eq!(fake.rounds_of("warmup b").len(), 1);
    for st in data.steps.iter().filter(|s| s.server == "b") {
        assert_eq!(st.status, StepStatus::Failed);
        assert_eq!(
            st.failure.as_deref(),
            Some("did not start again for launch 2: did not start: refused")
        );
        // What it measured in its first launch is kept.
        assert_eq!(st.rounds.len(), 4);
    }
    for st in data.steps.iter().filter(|s| s.server == "a") {
        assert_eq!((st.status, st.rounds.len()), (StepStatus::Ok, 12));
    }
}

#[test]
fn a_wide_comparison_that_lost_a_server_starts_nothing_more() {
    // b's launches alternate by 20% against a's, so b/a stays wide; b
    // refuses its third start. Past the least two launches, a is left
    // with nothing to be paired with: no fourth launch starts it again to
    // measure it alone.
    let s = launched_study(2, 5);
    let mut fake = Fake::new(Box::new(steady));
    fake.launched = Some(Box::new(|server, launch, _| {
        let b = if launch % 2 == 0 { 900.0 } else { 1100.0 };
        measured(if server == "b" { b } else { 1000.0 }, 10, &[], 1_000)
    }));
    fake.refuse_after_starts = BTreeMap::from([("b".to_string(), 2)]);
    let mut seen = Notes(Vec::new());
    let (out, data) = run_seen(&s, &mut fake, &Interrupt::new(), &mut seen);
    assert!(out.complete);
    assert_eq!(
        fake.starts,
        BTreeMap::from([("a".into(), 3), ("b".into(), 3)])
    );
    assert_eq!(
        seen.0,
        [
            "tiny on 1 core: launch 2 of at least 2; every server is started again",
            "tiny on 1 core: launch 3 of at most 5: 2 of 2 levels still have a comparison wider \
             than ±5.0%; every server is started again",
        ]
    );
    for st in data.steps.iter().filter(|s| s.server == "a") {
        // Its slices of the third launch, when b could not start, unpaired.
        assert_eq!((st.status, st.rounds.len()), (StepStatus::Ok, 12));
    }
}

/// A round of `c` connections that found the server's tree with these
/// processes and threads and one listener at its end, having had `from`
/// processes (and 25 threads each) during it when that differs.
fn shaped(c: u32, processes: u32, from: Option<u32>) -> Measured {
    let mut m = measured(1000.0, c, &[], 1_000);
    let shape = |p: u32| throng_model::Shape {
        processes: p,
        threads: p * 25,
        listeners: 1,
    };
    m.usage.processes = processes;
    m.usage.threads = processes * 25;
    m.usage.listeners = 1;
    m.usage.shape_range = from.map(|f| throng_model::ShapeRange {
        min: shape(f.min(processes)),
        max: shape(f.max(processes)),
    });
    m
}

#[test]
fn a_server_whose_pool_grows_is_warmed_until_it_holds() {
    // a's pool grows in its first two warmups (2 to 3 children, then 3 to
    // 4) and holds at 4 from then on; b's holds from the start.
    let mut warmups = 0;
    let mut exec = Fake::new(Box::new(move |server, c, n| {
        if server == "b" {
            return Ok(shaped(c, 2, None));
        }
        if n > 0 {
            return Ok(shaped(c, 4, None));
        }
        warmups += 1;
        Ok(match warmups {
            1 => shaped(c, 3, Some(2)),
            2 => shaped(c, 4, Some(3)),
            _ => shaped(c, 4, None),
        })
    }));
    // Six blocks: pairs enough for a comparison to be bounded.
    let s = study(&["a", "b"], "[4]", (6, 6), "");
    let mut notes = Notes(Vec::new());
    let (out, data) = run_seen(&s, &mut exec, &Interrupt::new(), &mut notes);
    assert!(out.complete);
    // The first warmup at the study's 0.5 s, then a round of at least a
    // second while the last one found the pool changing: the second grew
    // it, the third found it as the second left it. b's first warmup was
    // shorter than the second Apache takes between looks at its pool, so
    // one more round makes sure.
    let warmups: Vec<&str> = exec
        .lengths
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("warmup"))
        .collect();
    assert_eq!(
        warmups,
        [
            "warmup a c=4 0.5s",
            "warmup a c=4 1s",
            "warmup a c=4 1s",
            "warmup b c=4 0.5s",
            "warmup b c=4 1s",
        ]
    );
    assert_eq!(
        notes.0,
        [
            "a: 2 more warmup rounds until its shape held, at 4 processes, 100 threads, 1 listening socket",
            "b: 1 more warmup round until its shape held, at 2 processes, 50 threads, 1 listening socket",
        ]
    );
    // Measured after it held: neither step says its shape changed.
    let labels: Vec<(String, String)> = data
        .steps
        .iter()
        .map(|s| (s.server.clone(), s.verdict.label()))
        .collect();
    assert_eq!(
        labels,
        [("a".into(), "valid".into()), ("b".into(), "valid".into())]
    );
}

#[test]
fn a_pool_that_never_holds_is_warmed_five_more_rounds_and_its_steps_say_so() {
    // One child more at every round, warmup or measured.
    let mut children = 1;
    let mut exec = Fake::new(Box::new(move |_, c, _| {
        children += 1;
        Ok(shaped(c, children, Some(children - 1)))
    }));
    let s = study(&["a"], "[4]", (3, 3), "");
    let mut notes = Notes(Vec::new());
    let (_, data) = run_seen(&s, &mut exec, &Interrupt::new(), &mut notes);
    assert_eq!(exec.rounds_of("warmup").len(), 6);
    assert_eq!(
        notes.0,
        [
            "a: its shape still changed after 5 more warmup rounds, now 7 processes, 175 threads, \
          1 listening socket: its steps say shape_changed if it goes on changing"
        ]
    );
    let step = &data.steps[0];
    assert_eq!(step.rounds.len(), 3);
    assert_eq!(step.verdict.label(), "suspect: shape_changed");
    assert!(
        step.verdict.reasons[0].message.starts_with(
            "the server's shape changed during measurement: 7–10 processes, 175–250 threads \
             over 3 rounds, 10 processes and 250 threads at the end:"
        ),
        "{:?}",
        step.verdict
    );
}

#[test]
fn each_block_forecasts_exactly_the_slices_its_level_then_asks_for() {
    // Three servers, two launches of four blocks a level: before each
    // block the level names its remaining slices, in the order it then
    // asks for them, each with the load it then asks for.
    let s = launched_servers(&["a", "b", "c"], 2, 2);
    let mut fake = Fake::new(Box::new(steady));
    let (out, _) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    let asked: Vec<(String, RoundLoad)> = fake
        .kinds
        .iter()
        .filter(|(_, k)| *k == RoundKind::Slice)
        .map(|(n, _)| n.clone())
        .zip(
            fake.loads
                .iter()
                .filter(|(k, _)| *k == "round")
                .map(|(_, l)| l.clone()),
        )
        .collect();
    // Two levels, two launches, four blocks of three slices each.
    assert_eq!(asked.len(), 2 * 2 * 4 * 3);
    assert_eq!(fake.plans.len(), 2 * 2 * 4);
    for (k, (before, forecast)) in fake.plans.iter().enumerate() {
        // Four blocks left at a level's first, one at its last.
        assert_eq!(forecast.len(), 3 * (4 - k % 4), "forecast {k}");
        assert_eq!(
            forecast[..],
            asked[*before..before + forecast.len()],
            "forecast {k}"
        );
    }
}

#[test]
fn the_servers_core_is_read_before_each_launch_while_no_server_runs() {
    let s = launched_study(3, 3);
    let mut fake = Fake::new(Box::new(steady));
    fake.prices = Some(100.0);
    let (out, data) = run(&s, &mut fake, &Interrupt::new());
    assert!(out.complete);
    let p = &data.run.environment.prices;
    let seen: Vec<(u32, u32, &str, u32, f64)> = p
        .iter()
        .map(|r| (r.launch, r.cores, r.workload.as_str(), r.cpu, r.switch_ns))
        .collect();
    assert_eq!(
        seen,
        vec![
            (0, 1, "tiny", 0, 3000.0),
            (1, 1, "tiny", 0, 3100.0),
            (2, 1, "tiny", 0, 3200.0),
        ]
    );
    // Each reading comes before its launch's starts and after the last
    // launch's servers were stopped: no server is on the core it reads.
    let order: Vec<&str> = fake
        .calls
        .iter()
        .map(String::as_str)
        .filter(|c| c.starts_with("prices") || c.starts_with("start") || c.starts_with("stop"))
        .collect();
    let launches: Vec<Vec<&str>> = order
        .split(|c| c.starts_with("prices"))
        .skip(1)
        .map(|chunk| chunk.iter().map(|c| &c[..5]).collect())
        .collect();
    assert_eq!(order[0], "prices cpu0");
    assert_eq!(launches, vec![vec!["start", "start", "stop ", "stop "]; 3]);
}
