//! A/A calibration: the built-in `calibrate` study run through a scripted
//! executor (two entries of one recipe whose slices share the machine's
//! noise agree; a scripted 10% difference is found everywhere), the
//! threshold a stored calibration run hands the next run, and two
//! instances of one recipe running side by side for real.

use std::time::Duration;

use hdrhistogram::Histogram;
use throng_lab::executor::{DoctorPlan, Executor, NotReady, Started};
use throng_lab::group::Group;
use throng_lab::spec::RoundLoad;
use throng_lab::study::{PrecisionRule, StudyServer};
use throng_lab::{
    Event, Interrupt, Measured, Observer, Recipes, RoundError, RoundKind, ServerId, Store, Study,
};
use throng_model::{
    Comparison, Connections, Decision, Diagnosis, Environment, Finding, IntervalKind, Latency,
    RunData, ServerRecord, Summary, Threshold, ThresholdSource,
};
use throng_servers::{RunAs, RunDir, Site, Start};
use throng_stats::calibration::Calibration;
use throng_store::{NewRun, RunWriter};

/// A slice's requests per second, from the server's name and how many
/// slices it has run (its block).
type Script = fn(&str, usize) -> f64;

/// An executor that starts nothing: each slice answers its script.
struct Fake {
    script: Script,
    names: Vec<(ServerId, String)>,
    slices: Vec<(String, usize)>,
    environment: Environment,
    /// Each server's starts so far, by name.
    starts: Vec<String>,
    /// A server's launch (its nth start) that serves at a share of its
    /// script's rate: a slow start.
    slow_launch: Option<(&'static str, usize, f64)>,
}

impl Fake {
    fn new(script: Script) -> Fake {
        Fake {
            script,
            names: Vec::new(),
            slices: Vec::new(),
            environment: Environment::default(),
            starts: Vec::new(),
            slow_launch: None,
        }
    }

    fn name(&self, id: ServerId) -> String {
        let found = self.names.iter().find(|(i, _)| *i == id);
        found.expect("a started server").1.clone()
    }
}

fn measured(rps: f64, concurrency: u32) -> Measured {
    let mut latency = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    latency.record_n(1_000, 100).unwrap();
    Measured {
        summary: Summary {
            completed: rps as u64,
            sent: rps as u64,
            requests_per_sec: rps,
            duration_s: 0.1,
            threads: 1,
            latency_us: Latency {
                count: 100,
                p50: 1_000,
                p99: 1_000,
                max: 1_000,
                ..Latency::default()
            },
            connections: Connections {
                requested: u64::from(concurrency),
                established: u64::from(concurrency),
                ..Connections::default()
            },
            ..Summary::default()
        },
        latency,
        usage: Default::default(),
        ports: None,
    }
}

impl Executor for Fake {
    fn start(&mut self, _: &Group, id: ServerId, s: &StudyServer) -> Result<Started, NotReady> {
        self.names.push((id, s.name.clone()));
        self.starts.push(s.name.clone());
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
        if kind != RoundKind::Slice {
            return Ok(measured(1000.0, load.concurrency));
        }
        let n = match self.slices.iter_mut().find(|(s, _)| *s == name) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.slices.push((name.clone(), 1));
                1
            }
        };
        let starts = self.starts.iter().filter(|s| **s == name).count();
        let share = match self.slow_launch {
            Some((slow, launch, share)) if slow == name && launch == starts => share,
            _ => 1.0,
        };
        Ok(measured((self.script)(&name, n) * share, load.concurrency))
    }

    fn diagnose(&mut self, _: ServerId, _: &RoundLoad) -> Result<Diagnosis, RoundError> {
        Ok(Diagnosis::default())
    }

    fn exited(&mut self, _: ServerId) -> Option<String> {
        None
    }

    fn answers(&mut self, _: ServerId) -> Result<(), String> {
        Ok(())
    }

    fn log_tail(&mut self, _: ServerId) -> String {
        String::new()
    }

    fn stop(&mut self, _: ServerId) {}

    fn oom_kills(&self) -> Option<u64> {
        None
    }

    fn cpus(&self) -> Vec<usize> {
        vec![0, 1]
    }

    fn survey(&mut self, _: &DoctorPlan) -> (Vec<Finding>, Environment) {
        (Vec::new(), self.environment.clone())
    }
}

/// The lab's notes on its decision threshold, as a caller sees them.
#[derive(Default)]
struct Notes(Vec<String>);

impl Observer for Notes {
    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Note(n)
                if n.starts_with("decision threshold") || n.contains("launches differ") =>
            {
                self.0.push(n)
            }
            _ => {}
        }
    }
}

/// Runs `study` through `exec` into `store`; the stored run and the lab's
/// notes.
fn run(study: &Study, exec: &mut Fake, store: &mut Store) -> (RunData, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let rundir = RunDir::create(dir.path(), "throng-lab", 1, false).unwrap();
    let site = Site {
        rundir: &rundir,
        user: None,
    };
    let mut notes = Notes::default();
    let out = throng_lab::run_study_with(study, store, &mut notes, &Interrupt::new(), site, exec)
        .unwrap();
    assert!(out.complete);
    (store.load_run(out.run_id).unwrap(), notes.0)
}

/// The machine's noise, shared by every server measured in the same
/// block: a slow block is slow for both entries of a pair.
fn block_noise(n: usize) -> f64 {
    1.0 + 0.04 * ((n % 7) as f64 - 3.0) / 3.0
}

/// Twins that share each block's noise, with ±0.5% of their own that
/// alternates between blocks.
fn same(server: &str, n: usize) -> f64 {
    let base = if server.starts_with("nginx") {
        20_000.0
    } else {
        9_000.0
    };
    let own = if server.ends_with("-again") && n.is_multiple_of(2) {
        1.005
    } else if server.ends_with("-again") {
        0.995
    } else {
        1.0
    };
    base * block_noise(n) * own
}

/// As `same`, the second entry of each recipe 10% faster.
fn tenth_apart(server: &str, n: usize) -> f64 {
    let more = if server.ends_with("-again") { 1.1 } else { 1.0 };
    same(server, n) * more
}

#[test]
fn calibrate_is_quicks_design_with_each_server_twice() {
    let r = Recipes::builtin();
    let cal = Study::load("calibrate", &r).unwrap();
    let quick = Study::load("quick", &r).unwrap();
    let servers: Vec<(&str, &str)> = cal
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.recipe.name.as_str()))
        .collect();
    assert_eq!(
        servers,
        [
            ("nginx", "nginx"),
            ("nginx-again", "nginx"),
            ("apache2-event", "apache2-event"),
            ("apache2-event-again", "apache2-event"),
        ]
    );
    assert_eq!(
        (&cal.workloads, &cal.cores, &cal.concurrency),
        (&quick.workloads, &quick.cores, &quick.concurrency)
    );
    assert_eq!(
        (cal.round_s, cal.round_warmup_s, cal.warmup_s),
        (quick.round_s, quick.round_warmup_s, quick.warmup_s)
    );
    // Calibration runs quick's design at ten launches, as many blocks a
    // level in each: between quick's least and its most, which it reaches
    // only for the comparisons still wider than what ten launches decide.
    assert_eq!(
        (cal.precision.launches, cal.precision.launch_cap()),
        (10, 10)
    );
    assert!(quick.precision.launches < 10 && 10 < quick.precision.launch_cap());
    assert_eq!(cal.precision.per_launch(), quick.precision.per_launch());
    assert_eq!(cal.precision.max_rounds, 40);
    // Quick decides with what calibration found, else ±5%.
    assert_eq!(cal.precision_rule, PrecisionRule::Pinned(0.005));
    assert_eq!(
        quick.precision_rule,
        PrecisionRule::Calibrated { fallback: 0.05 }
    );
    assert_eq!(quick.precision.target, 0.05);
    assert!(!cal.features && !cal.diagnose);
}

#[test]
fn twins_sharing_the_machines_noise_never_exclude_one_and_a_tenth_apart_always_do() {
    let study = Study::load("calibrate", &Recipes::builtin()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let (same_run, notes) = run(&study, &mut Fake::new(same), &mut store);
    assert_eq!(
        notes,
        ["decision threshold ±0.5%, set by the study".to_string()]
    );
    let c = Calibration::of(&same_run).expect("a calibration run");
    let pairs: Vec<(&str, &str, u32, u32)> = c
        .pairs
        .iter()
        .map(|p| (p.a.as_str(), p.b.as_str(), p.intervals, p.excluding))
        .collect();
    // Four levels and the pooled comparison of each pair.
    assert_eq!(
        pairs,
        [
            ("nginx", "nginx-again", 5, 0),
            ("apache2-event", "apache2-event-again", 5, 0)
        ]
    );
    // Twins whose slices share the noise exactly: every launch's ratio is
    // 1.00, and the interval over launches has no width.
    assert_eq!(format!("{:.4}", c.smallest_decidable().unwrap()), "0.0000");
    // Comparisons across recipes were made and are not the calibration's.
    assert!(same_run
        .comparisons
        .iter()
        .any(|x| x.a == "nginx" && x.b == "apache2-event"));

    let (apart, _) = run(&study, &mut Fake::new(tenth_apart), &mut store);
    let c = Calibration::of(&apart).unwrap();
    assert_eq!((c.intervals(), c.excluding()), (10, 10));
    for p in &c.pairs {
        assert_eq!(format!("{:.3}", p.largest_shift), "0.100", "{p:?}");
    }
}

/// A calibration run stored as the lab stores one: complete, of this
/// machine, its A/A pair of nginx reaching ±3.1% at its widest.
fn store_calibration(store: &mut Store, hostname: &str, complete: bool) -> (i64, f64) {
    let server = |name: &str| ServerRecord {
        name: name.into(),
        recipe: "nginx".into(),
        ..ServerRecord::default()
    };
    let started = 1_790_000_000.0;
    let mut w = RunWriter::begin(
        store,
        NewRun {
            study: "calibrate".into(),
            study_toml: "name = \"calibrate\"\n# A/A\n".into(),
            started_unix_s: started,
            environment: Environment {
                hostname: hostname.into(),
                ..Environment::default()
            },
            doctor: Vec::new(),
            baseline: Some("nginx".into()),
            threshold: None,
            servers: vec![server("nginx"), server("nginx-again")],
        },
    )
    .unwrap();
    let cmp = |level: Option<u32>, lo: f64, hi: f64| Comparison {
        a: "nginx".into(),
        b: "nginx-again".into(),
        workload: "tiny".into(),
        cores: 1,
        concurrency: level,
        rate: None,
        ratio: (lo + hi) / 2.0,
        ci_low: lo,
        ci_high: hi,
        pairs: 80,
        decision: Decision::Undecided,
        interval: IntervalKind::OrderStatistic,
        launch_ratios: Vec::new(),
        next_run: None,
        next_run_runs: None,
        runs_differ: false,
    };
    w.comparisons(&[cmp(Some(10), 0.98, 1.02), cmp(Some(200), 0.969, 1.01)])
        .unwrap();
    w.finish(complete).unwrap();
    (w.id(), started)
}

/// Two servers 4% apart, measured tightly: a threshold of ±3.1% decides
/// them, ±5% calls them equal.
fn four_percent(server: &str, n: usize) -> f64 {
    let more = if server == "b" { 1.04 } else { 1.0 };
    10_000.0 * block_noise(n) * more
}

fn two_servers(rounds: &str) -> Study {
    let text = format!(
        "name = \"two\"\nservers = [{{ name = \"a\", command = [\"/bin/true\"] }}, \
         {{ name = \"b\", command = [\"/bin/true\"] }}]\nworkloads = [\"tiny\"]\ncores = [1]\n\
         concurrency = [10]\nfeatures = false\ndiagnose = false\nwarmup_seconds = 0\n\
         [rounds]\nseconds = 0.1\nmin = 10\nmax = 10\n{rounds}\n"
    );
    Study::parse(&text, &Recipes::builtin()).unwrap()
}

#[test]
fn the_latest_calibration_of_this_machine_sets_the_threshold_unless_the_study_pins_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let calibrated = two_servers("fallback_precision = 0.05");
    let decisions =
        |d: &RunData| -> Vec<Decision> { d.comparisons.iter().map(|c| c.decision).collect() };

    // No calibration yet: the study's fallback, and 4% is equal within it.
    let (first, notes) = run(&calibrated, &mut Fake::new(four_percent), &mut store);
    let default = Threshold {
        value: 0.05,
        source: ThresholdSource::Default,
    };
    assert_eq!(first.run.threshold, Some(default));
    assert_eq!(
        notes,
        ["decision threshold ±5.0%, the study's default: no calibration run of this machine"]
    );
    assert_eq!(decisions(&first), [Decision::Equal, Decision::Equal]);

    // Another machine's calibration, and an interrupted one of this
    // machine, say nothing of this machine.
    store_calibration(&mut store, "elsewhere", true);
    store_calibration(&mut store, "", false);
    let (second, _) = run(&calibrated, &mut Fake::new(four_percent), &mut store);
    assert_eq!(second.run.threshold, Some(default));

    let (cal_id, started) = store_calibration(&mut store, "", true);
    let (third, notes) = run(&calibrated, &mut Fake::new(four_percent), &mut store);
    let t = third.run.threshold.unwrap();
    assert_eq!(format!("{:.4}", t.value), "0.0310");
    let ThresholdSource::Calibration {
        run: from,
        started_unix_s,
        measured,
    } = t.source
    else {
        panic!("{t:?}");
    };
    assert_eq!((from, started_unix_s), (cal_id, started));
    assert_eq!(measured, t.value);
    assert_eq!(
        notes,
        [format!(
            "decision threshold ±3.1%, from calibration run {cal_id}"
        )]
    );
    assert_eq!(decisions(&third), [Decision::Higher, Decision::Higher]);

    // A study's own precision wins over any calibration.
    let pinned = two_servers("precision = 0.05");
    let (fourth, notes) = run(&pinned, &mut Fake::new(four_percent), &mut store);
    assert_eq!(
        fourth.run.threshold,
        Some(Threshold {
            value: 0.05,
            source: ThresholdSource::Study,
        })
    );
    assert_eq!(notes, ["decision threshold ±5.0%, set by the study"]);
    assert_eq!(decisions(&fourth), [Decision::Equal, Decision::Equal]);
}

/// The server's own pid from its pid file, and whether it answers.
fn pid_file(dir: &std::path::Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
        .trim()
        .to_string()
}

#[test]
fn two_entries_of_one_recipe_run_side_by_side() {
    let recipes = Recipes::builtin();
    for (recipe, pid) in [("nginx", "nginx.pid"), ("apache2-event", "apache2.pid")] {
        let r = recipes.get(recipe).unwrap();
        if !r.is_installed() {
            eprintln!("skipped: {recipe} is not installed");
            continue;
        }
        let base = tempfile::tempdir().unwrap();
        let rd = RunDir::create(base.path(), "twins", 0, false).unwrap();
        let docroot = rd.subdir(&["docroot"], None).unwrap();
        std::fs::write(docroot.join("index.html"), "hello\n").unwrap();
        let user = RunAs::unprivileged();
        let site = Site {
            rundir: &rd,
            user: user.as_ref(),
        };
        let again = format!("{recipe}-again");
        let start = |name: &str| {
            throng_servers::start(
                site,
                &Start::one_worker(name, r, "c1-tiny", docroot.clone()),
            )
            .unwrap_or_else(|f| panic!("{name}: {}\n{}", f.message, f.log_tail))
        };
        let mut first = start(recipe);
        let mut second = start(&again);
        // Both up at once, each in its own directory with its own port,
        // pid file, logs and configs.
        assert_ne!(first.port, second.port);
        assert_ne!(first.dir, second.dir);
        assert_eq!(first.dir.file_name().unwrap(), recipe);
        assert_eq!(second.dir.file_name().unwrap(), again.as_str());
        assert_ne!(pid_file(&first.dir, pid), pid_file(&second.dir, pid));
        assert_ne!(first.configs[0].path, second.configs[0].path);
        for s in [&first, &second] {
            let got =
                throng_servers::loopback::get(s.addr(), "/index.html", &[], Duration::from_secs(5))
                    .unwrap();
            assert_eq!((got.status, got.body.as_slice()), (200, &b"hello\n"[..]));
        }
        let (a, b) = (first.processes(), second.processes());
        assert!(a.iter().all(|p| !b.contains(p)), "{a:?} {b:?}");
        first.stop();
        // Stopping one leaves the other serving.
        let still = throng_servers::loopback::get(
            second.addr(),
            "/index.html",
            &[],
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(still.status, 200);
        second.stop();
    }
}

/// B 4% faster than A in this run...
fn b_at_104(server: &str, n: usize) -> f64 {
    let more = if server == "b" { 1.04 } else { 1.0 };
    10_000.0 * block_noise(n) * more
}

/// ...and 12% faster in a run whose machine was in another phase: every
/// launch of the run alike, so no launch inside it can tell.
fn b_at_112(server: &str, n: usize) -> f64 {
    let more = if server == "b" { 1.12 } else { 1.0 };
    10_000.0 * block_noise(n) * more
}

/// Three runs of one study: `scripts` says each run's slices.
fn three_runs(scripts: [Script; 3]) -> Vec<Comparison> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let study = two_servers("launches = 3\nmax_launches = 3\nprecision = 0.05");
    scripts
        .iter()
        .map(|s| {
            let (data, _) = run(&study, &mut Fake::new(*s), &mut store);
            let pooled: Vec<&Comparison> = data
                .comparisons
                .iter()
                .filter(|c| c.concurrency.is_none())
                .collect();
            assert_eq!(pooled.len(), 1);
            pooled[0].clone()
        })
        .collect()
}

#[test]
fn runs_that_differ_from_run_to_run_widen_the_next_runs_range_to_cover_them_and_agreeing_runs_do_not(
) {
    let close = |x: f64, y: f64| assert!((x - y).abs() < 1e-9, "{x} against {y}");
    // Runs alike: every launch of every run says 1.04, and so does the
    // range for the next run, drawn over all three.
    let alike = three_runs([b_at_104, b_at_104, b_at_104]);
    for (i, c) in alike.iter().enumerate() {
        assert_eq!(c.interval, IntervalKind::Launches);
        assert_eq!(c.launch_ratios.len(), 3);
        assert_eq!(
            (c.next_run_runs, c.runs_differ),
            (Some(i as u32 + 1), false)
        );
        let [lo, hi] = c.next_run.unwrap();
        close(lo, 1.04);
        close(hi, 1.04);
    }

    // The middle run 12% apart. The first run alone cannot know; the
    // third, drawn over all three, reaches both figures, by Student's t
    // at 2 degrees of freedom over the runs' own spread.
    let apart = three_runs([b_at_104, b_at_112, b_at_104]);
    let [lo, hi] = apart[0].next_run.unwrap();
    close(lo, 1.04);
    close(hi, 1.04);
    assert_eq!(
        (apart[0].next_run_runs, apart[0].runs_differ),
        (Some(1), false)
    );
    let third = &apart[2];
    assert_eq!((third.next_run_runs, third.runs_differ), (Some(3), true));
    let logs = [1.04f64.ln(), 1.12f64.ln(), 1.04f64.ln()];
    let m = logs.iter().sum::<f64>() / 3.0;
    let var = logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0;
    let half = 4.302652729911275 * (2.0 * var).sqrt();
    let [lo, hi] = third.next_run.unwrap();
    close(lo, (1.04f64.ln() - half).exp());
    close(hi, (1.04f64.ln() + half).exp());
    assert!(lo < 1.04 && hi > 1.12, "{lo}–{hi}");
    // The run's own interval is still this run's: launches alike, 1.04.
    close(third.ci_low, 1.04);
    close(third.ci_high, 1.04);
}

/// A study of `servers` (TOML inline tables) on one level, three launches.
fn launched(name: &str, servers: &str) -> Study {
    launched_on(name, servers, "tiny")
}

/// The same, of `workload`.
fn launched_on(name: &str, servers: &str, workload: &str) -> Study {
    let text = format!(
        "name = \"{name}\"\nservers = [{servers}]\nworkloads = [\"{workload}\"]\ncores = [1]\n\
         concurrency = [10]\nfeatures = false\ndiagnose = false\nwarmup_seconds = 0\n\
         [rounds]\nseconds = 0.1\nmin = 10\nmax = 10\nlaunches = 3\nmax_launches = 3\n\
         precision = 0.05\n"
    );
    Study::parse(&text, &Recipes::builtin()).unwrap()
}

/// The calibration's slices: `x` and `y` steady, each as fast as its
/// twin (its second launch is made slow below).
fn twins_alike(server: &str, n: usize) -> f64 {
    let base = if server.starts_with('x') {
        20_000.0
    } else {
        10_000.0
    };
    base * block_noise(n)
}

/// A run's only comparison over the whole sweep.
fn over_the_sweep(run: &RunData) -> &Comparison {
    let mut pooled = run.comparisons.iter().filter(|c| c.concurrency.is_none());
    let c = pooled.next().expect("a pooled comparison");
    assert!(pooled.next().is_none(), "one pair, one pooled comparison");
    c
}

/// The later run's: `y` at half `x`'s rate in every launch.
fn half(server: &str, n: usize) -> f64 {
    let base = if server == "x" { 20_000.0 } else { 10_000.0 };
    base * block_noise(n)
}

#[test]
fn a_slow_start_the_calibration_saw_widens_a_later_runs_interval_and_range_and_is_named() {
    let close = |x: f64, y: f64| assert!((x - y).abs() < 1e-9, "{x} against {y}");
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let pair = "{ name = \"x\", recipe = \"nginx\" }, { name = \"y\", recipe = \"apache2-event\" }";
    let study = launched("pair", pair);

    // No calibration: three launches alike give no width at all.
    let (alone, _) = run(&study, &mut Fake::new(half), &mut store);
    let c = over_the_sweep(&alone);
    assert_eq!(c.launch_ratios, vec![0.5, 0.5, 0.5]);
    close(c.ci_low, 0.5);
    close(c.next_run.unwrap()[1], 0.5);
    assert!(alone
        .run
        .doctor
        .iter()
        .all(|f| f.check != "launches.spread"));

    // A calibration in which one of y's twins started slow once.
    let cal = launched(
        "cal",
        "{ name = \"x\", recipe = \"nginx\" }, { name = \"x-again\", recipe = \"nginx\" }, \
         { name = \"y\", recipe = \"apache2-event\" }, { name = \"y-again\", recipe = \"apache2-event\" }",
    );
    let mut slow = Fake::new(twins_alike);
    slow.slow_launch = Some(("y-again", 2, 0.7));
    let (calibration, _) = run(&cal, &mut slow, &mut store);
    let twins = calibration
        .comparisons
        .iter()
        .find(|c| c.concurrency.is_none() && c.a == "y" && c.b == "y-again")
        .unwrap();
    assert_eq!(twins.launch_ratios, vec![1.0, 0.7, 1.0]);

    // The same study again: its own launches still agree, but y's pairs
    // are drawn with what the calibration saw of y: half the twins'
    // variance (x's twins add none), at their 2 degrees of freedom.
    let (later, notes) = run(&study, &mut Fake::new(half), &mut store);
    let c = over_the_sweep(&later);
    assert_eq!(c.launch_ratios, vec![0.5, 0.5, 0.5]);
    let logs = [0.0, 0.7f64.ln(), 0.0];
    let m = logs.iter().sum::<f64>() / 3.0;
    let var = logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0 / 2.0;
    let t2 = 4.302652729911275;
    let ci = t2 * (var / 3.0).sqrt();
    close(c.ci_low, (0.5f64.ln() - ci).exp());
    close(c.ci_high, (0.5f64.ln() + ci).exp());
    let next = t2 * (2.0 * var / 3.0).sqrt();
    let [lo, hi] = c.next_run.unwrap();
    close(lo, (0.5f64.ln() - next).exp());
    close(hi, (0.5f64.ln() + next).exp());
    assert_eq!(c.decision, Decision::Lower);
    // The level's own comparison is drawn with the calibration's spread at
    // that level: here the only one, so the same interval.
    let level = later
        .comparisons
        .iter()
        .find(|c| c.concurrency == Some(10))
        .unwrap();
    close(level.ci_low, c.ci_low);
    close(level.ci_high, c.ci_high);
    // Said before the run, with the machine's findings, and on the console.
    let between = ((1.96 * (2.0 * var).sqrt()).exp() - 1.0) * 100.0;
    let said = format!(
        "y's launches differ on this machine (tiny on 1 core): in calibration run {}, its twins' \
         launches ran 0.70–1.00× each other, ±{between:.1}% between two launches; its pairs' \
         intervals and next-run ranges are drawn with that spread",
        calibration.run.id
    );
    let found: Vec<&Finding> = later
        .run
        .doctor
        .iter()
        .filter(|f| f.check == "launches.spread")
        .collect();
    assert_eq!(found.len(), 1, "x's launches agree and are not named");
    assert_eq!(found[0].message, said);
    assert!(notes.contains(&said), "{notes:?}");

    // The same pair serving a page: the calibration measured no page, so
    // its spread bounds nothing here and names no one.
    let page = launched_on("pair-page", pair, "page");
    let (other, notes) = run(&page, &mut Fake::new(half), &mut store);
    let c = over_the_sweep(&other);
    close(c.ci_low, 0.5);
    close(c.ci_high, 0.5);
    assert!(other
        .run
        .doctor
        .iter()
        .all(|f| f.check != "launches.spread"));
    assert!(
        !notes.iter().any(|n| n.contains("launches differ")),
        "{notes:?}"
    );
}
