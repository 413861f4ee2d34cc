//! End-to-end studies against real servers from Debian's packages (nginx
//! and lighttpd), on this machine's first two CPUs: server on CPU 0, load
//! generator on CPU 1.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::serialization::Deserializer;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use throng_lab::{Event, Interrupt, LabOptions, Observer, Recipes, Store, Study};
use throng_model::{Setting, Source, StepStatus};
use throng_servers::process::{is_alive, process_tree};

/// Runs are serialised: two studies at once would share the two CPUs.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[derive(Default)]
struct Record {
    /// (server, concurrency, round index) -> (completed, requests/s, errors).
    rounds: BTreeMap<(String, u32, u32), (u64, f64, u64)>,
    /// Every process of every server, seen just after it started.
    pids: Vec<i32>,
    leaders: BTreeMap<String, i32>,
    /// Every start of every server, in order: (server, leader).
    starts: Vec<(String, i32)>,
    steps: Vec<(String, u32, StepStatus)>,
    kill_on_first_round_of: Option<String>,
    interrupt_after_steps: Option<(usize, Interrupt)>,
    interrupt_on_first_round: Option<Interrupt>,
}

impl Observer for Record {
    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::ServerStarted { server, pid, .. } => {
                self.pids.extend(process_tree(pid));
                self.leaders.insert(server.to_string(), pid);
                self.starts.push((server.to_string(), pid));
            }
            Event::Round {
                server,
                concurrency,
                index,
                summary,
                ..
            } => {
                let s = summary;
                self.rounds.insert(
                    (server.to_string(), concurrency, index),
                    (s.completed, s.requests_per_sec, s.errors_total),
                );
                if let Some(i) = self.interrupt_on_first_round.take() {
                    i.trigger();
                }
                if self.kill_on_first_round_of.as_deref() == Some(server) {
                    self.kill_on_first_round_of = None;
                    let _ = killpg(Pid::from_raw(self.leaders[server]), Signal::SIGKILL);
                }
            }
            Event::Step(s) => {
                self.steps.push((s.server.clone(), s.concurrency, s.status));
                if let Some((n, i)) = &self.interrupt_after_steps {
                    if self.steps.len() == *n {
                        i.trigger();
                    }
                }
            }
            _ => {}
        }
    }
}

/// A study of one start of each server: a level's rounds are then its
/// blocks, in the order they ran.
fn study(servers: &str, concurrency: &str, rounds: u32) -> String {
    launched(servers, concurrency, rounds, 1)
}

/// The live feature probes and the diagnostic rounds are left out: these
/// tests assert neither, and each would start or load every server again.
fn launched(servers: &str, concurrency: &str, rounds: u32, launches: u32) -> String {
    format!(
        "name = \"test\"\nservers = {servers}\nworkloads = [\"tiny\"]\ncores = [1]\nconcurrency = {concurrency}\n\
         warmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n[rounds]\nseconds = 0.3\nwarmup_seconds = 0.1\nmin = {rounds}\nmax = {rounds}\n\
         launches = {launches}\nmax_launches = {launches}\n"
    )
}

fn run(toml: &str, db: &Path, rec: &mut Record, interrupt: &Interrupt) -> throng_lab::Outcome {
    let recipes = Recipes::builtin();
    let study = Study::parse(toml, &recipes).unwrap();
    let mut store = Store::open(db).unwrap();
    let opts = LabOptions {
        workdir: Some(db.parent().unwrap().to_path_buf()),
        keep_workdir: false,
    };
    throng_lab::run_study(&study, &mut store, &opts, rec, interrupt).unwrap()
}

fn assert_no_leftovers(rec: &Record, dir: &Path) {
    assert!(
        rec.pids.len() >= 3,
        "servers' processes were seen: {:?}",
        rec.pids
    );
    for p in &rec.pids {
        assert!(!is_alive(*p), "server process {p} survived the study");
    }
    // The run directory (configs, logs) is removed unless asked to keep it.
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("throng-lab-"))
        .collect();
    assert!(left.is_empty());
}

#[test]
fn two_servers_two_levels_end_to_end() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut rec = Record::default();
    let out = run(
        &study("[\"nginx\", \"lighttpd\"]", "[4, 16]", 3),
        &db,
        &mut rec,
        &Interrupt::new(),
    );
    assert!(out.complete);
    assert_eq!(out.failed_steps, 0);
    assert_no_leftovers(&rec, dir.path());

    let store = Store::open(&db).unwrap();
    assert_eq!(store.latest_run().unwrap(), Some(out.run_id));
    let data = store.load_run(out.run_id).unwrap();
    assert!(data.run.complete);
    assert!(data.run.finished_unix_s.is_some());
    assert_eq!(data.run.study, "test");
    assert!(data.run.environment.cpus_online >= 2);

    assert_eq!(data.servers.len(), 2);
    let nginx = &data.servers[0];
    // The package dpkg says installed the executable (nginx on Debian 12),
    // not the recipe's metapackage (nginx-light).
    let owner = std::process::Command::new("dpkg-query")
        .args(["-S", "/usr/sbin/nginx"])
        .output()
        .unwrap();
    let owner = String::from_utf8_lossy(&owner.stdout);
    let owner = owner.split(':').next().unwrap().trim();
    assert_eq!(
        (nginx.name.as_str(), nginx.package.as_str()),
        ("nginx", owner)
    );
    assert!(nginx.version.starts_with("1."));
    let files: Vec<&str> = nginx.configs.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(files, ["c1-tiny/nginx/nginx.conf", "c1-tiny/nginx/command"]);
    assert!(nginx.configs[0].content.contains("worker_processes 1;\n"));
    assert!(nginx.configs[0]
        .content
        .contains("keepalive_requests 1024;\n"));
    assert_eq!(
        data.servers[1].configs[0].path,
        "c1-tiny/lighttpd/lighttpd.conf"
    );

    let keys: Vec<(&str, u32)> = data
        .steps
        .iter()
        .map(|s| (s.server.as_str(), s.concurrency))
        .collect();
    assert_eq!(
        keys,
        [
            ("lighttpd", 4),
            ("lighttpd", 16),
            ("nginx", 4),
            ("nginx", 16)
        ]
    );
    assert_eq!(rec.rounds.len(), 12);
    for s in &data.steps {
        assert_eq!(s.status, StepStatus::Ok, "{:?}", s.failure);
        assert_eq!((s.cores, s.workload.as_str()), (1, "tiny"));
        assert_eq!((s.server_cpus.len(), s.client_cpus.len()), (1, 1));
        assert_ne!(s.server_cpus, s.client_cpus);
        assert!(!s.shared_cores);
        assert_eq!(s.rounds.len(), 3);
        assert_eq!(s.throughput.n, 3);
        let mut rps = Vec::new();
        for (i, r) in s.rounds.iter().enumerate() {
            assert_eq!(r.index, i as u32);
            let (completed, req_s, errors) =
                rec.rounds[&(s.server.clone(), s.concurrency, i as u32)];
            assert_eq!(r.summary.completed, completed);
            assert_eq!(r.summary.requests_per_sec, req_s);
            assert_eq!(r.summary.errors_total, errors);
            assert_eq!(errors, 0);
            assert!(r.summary.coalesce, "naps are the engine's default");
            assert_eq!(r.summary.status.get(&200), Some(&completed));
            assert_eq!(r.summary.connections.requested, s.concurrency as u64);
            // 7-byte body per response.
            assert_eq!(r.summary.body_bytes, 7 * completed);
            let h: hdrhistogram::Histogram<u64> = Deserializer::new()
                .deserialize(&mut r.histogram.as_slice())
                .unwrap();
            assert_eq!(h.len(), r.summary.latency_us.count);
            assert_eq!(h.value_at_quantile(0.99), r.summary.latency_us.p99);
            // nginx: master and one worker; lighttpd: one process, as max-worker = 1.
            let procs = if s.server == "nginx" { 2 } else { 1 };
            assert_eq!(r.server.processes, procs, "{:?}", r.server);
            assert!(
                r.server.rss_peak_bytes >= r.server.rss_end_bytes && r.server.pss_end_bytes > 0
            );
            rps.push(req_s);
        }
        // Ticks are 10 ms: one short round of a starved server may see none,
        // three rounds of thousands of requests cannot.
        let cpu: f64 = s
            .rounds
            .iter()
            .map(|r| r.server.cpu_user_s + r.server.cpu_sys_s)
            .sum();
        assert!(cpu > 0.0, "{s:?}");
        let mean = rps.iter().sum::<f64>() / 3.0;
        assert!((s.throughput.mean - mean).abs() < 1e-6);
    }
}

#[test]
fn a_core_count_that_leaves_the_load_no_cpu_is_skipped_and_stored() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut rec = Record::default();
    let cpus = throng_engine::affinity::own_cpus().len();
    // A count the machine lacks is no skip: the study is refused whole.
    let lacking = study("[\"lighttpd\"]", "[4]", 2).replace("cores = [1]", "cores = [1, 512]");
    assert_eq!(
        Study::parse(&lacking, &Recipes::builtin())
            .unwrap_err()
            .to_string(),
        format!("cores: 512 server cores asked for, but this machine gives throng {cpus} CPUs")
    );
    let toml =
        study("[\"lighttpd\"]", "[4]", 2).replace("cores = [1]", &format!("cores = [1, {cpus}]"));
    let out = run(&toml, &db, &mut rec, &Interrupt::new());
    assert!(out.complete);
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    let steps: Vec<(u32, StepStatus, usize)> = data
        .steps
        .iter()
        .map(|s| (s.cores, s.status, s.rounds.len()))
        .collect();
    assert_eq!(
        steps,
        [
            (1, StepStatus::Ok, 2),
            (cpus as u32, StepStatus::Skipped, 0)
        ]
    );
    assert_eq!(
        data.steps[1].failure.as_deref().unwrap(),
        format!(
            "{cpus} server cores would leave none of the {cpus} CPUs to the load generator \
             (set allow_shared_cores = true to share them, marked in the results)"
        )
    );
}

#[test]
fn client_naps_off_reaches_every_round() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut rec = Record::default();
    let toml =
        study("[\"lighttpd\"]", "[4, 64]", 2).replace("[rounds]", "client_naps = false\n[rounds]");
    let out = run(&toml, &db, &mut rec, &Interrupt::new());
    assert!(out.complete);
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    assert!(data.run.study_toml.contains("client_naps = false"));
    let rounds: Vec<(u32, bool, u64)> = data
        .steps
        .iter()
        .flat_map(|s| {
            s.rounds
                .iter()
                .map(move |r| (s.concurrency, r.summary.coalesce, r.summary.client_naps))
        })
        .collect();
    assert_eq!(
        rounds,
        [(4, false, 0), (4, false, 0), (64, false, 0), (64, false, 0)]
    );
}

#[test]
fn killed_server_is_recorded_failed_and_the_study_goes_on() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut rec = Record {
        kill_on_first_round_of: Some("nginx".into()),
        ..Record::default()
    };
    let out = run(
        &study("[\"nginx\", \"lighttpd\"]", "[4, 8, 16]", 2),
        &db,
        &mut rec,
        &Interrupt::new(),
    );
    assert!(out.complete, "a failed server does not stop the study");
    assert_eq!(out.failed_steps, 3);
    assert_no_leftovers(&rec, dir.path());
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    let status: Vec<(&str, u32, StepStatus, usize)> = data
        .steps
        .iter()
        .map(|s| (s.server.as_str(), s.concurrency, s.status, s.rounds.len()))
        .collect();
    assert_eq!(
        status,
        [
            ("lighttpd", 4, StepStatus::Ok, 2),
            ("lighttpd", 8, StepStatus::Ok, 2),
            ("lighttpd", 16, StepStatus::Ok, 2),
            // The round measured before the kill is kept.
            ("nginx", 4, StepStatus::Failed, 1),
            ("nginx", 8, StepStatus::Failed, 0),
            ("nginx", 16, StepStatus::Failed, 0),
        ]
    );
    let failed = &data.steps[3];
    let why = failed.failure.as_deref().unwrap();
    assert!(why.starts_with("the server exited (signal: 9"), "{why}");
    assert!(failed.log_tail.as_deref().unwrap().contains("output.log"));
    assert!(data.steps[4]
        .failure
        .as_deref()
        .unwrap()
        .starts_with("failed earlier: the server exited"));
}

#[test]
fn each_launch_starts_every_server_again_and_leaves_nothing_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut rec = Record::default();
    let out = run(
        &launched("[\"nginx\", \"lighttpd\"]", "[4, 8]", 4, 2),
        &db,
        &mut rec,
        &Interrupt::new(),
    );
    assert!(out.complete);
    assert_no_leftovers(&rec, dir.path());
    // Two starts of each, each a new process group.
    let starts: Vec<&str> = rec.starts.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(starts.len(), 4);
    assert_eq!(&starts[..2], ["nginx", "lighttpd"]);
    for server in ["nginx", "lighttpd"] {
        let leaders: Vec<i32> = rec
            .starts
            .iter()
            .filter(|(s, _)| s == server)
            .map(|&(_, p)| p)
            .collect();
        assert_eq!(leaders.len(), 2, "{server}");
        assert_ne!(leaders[0], leaders[1], "{server}");
    }
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    // 4 blocks a level over 2 launches: 2 in each, the launch stored with
    // every round, and each level compared over both launches.
    for s in &data.steps {
        assert_eq!(s.status, StepStatus::Ok, "{:?}", s.failure);
        let launches: Vec<Option<u32>> = s.rounds.iter().map(|r| r.launch).collect();
        assert_eq!(
            launches,
            [Some(0), Some(0), Some(1), Some(1)],
            "{}",
            s.server
        );
        let blocks: Vec<Option<u32>> = s.rounds.iter().map(|r| r.block).collect();
        assert_eq!(blocks, [Some(0), Some(1), Some(2), Some(3)]);
        assert!(s.rounds.iter().all(|r| r.summary.errors_total == 0));
    }
    assert_eq!(data.comparisons.len(), 3);
    for c in &data.comparisons {
        // Drawn over the two launches: bounded, or left unbounded where
        // two launches of a debug build on a noisy host differ more than
        // two can bound (1.83 and 1.21 once), never over pairs alone.
        assert!(
            matches!(
                c.interval,
                throng_model::IntervalKind::Launches | throng_model::IntervalKind::Unbounded
            ),
            "{c:?}"
        );
        assert_eq!(c.launch_ratios.len(), 2, "{c:?}");
        assert_eq!(c.pairs, if c.concurrency.is_some() { 4 } else { 8 });
    }
}

#[test]
fn interrupted_run_keeps_its_steps_and_is_incomplete() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let interrupt = Interrupt::new();
    let mut rec = Record {
        interrupt_after_steps: Some((2, interrupt.clone())),
        ..Record::default()
    };
    let out = run(
        &study("[\"nginx\", \"lighttpd\"]", "[4, 8, 16]", 2),
        &db,
        &mut rec,
        &interrupt,
    );
    assert!(!out.complete);
    assert_no_leftovers(&rec, dir.path());
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    assert!(!data.run.complete);
    // The first level of both servers finished; the interrupt came as the
    // second was recorded, so nothing after it was measured.
    let keys: Vec<(&str, u32, StepStatus)> = data
        .steps
        .iter()
        .map(|s| (s.server.as_str(), s.concurrency, s.status))
        .collect();
    assert_eq!(
        keys,
        [
            ("lighttpd", 4, StepStatus::Ok),
            ("nginx", 4, StepStatus::Ok)
        ]
    );
    assert_eq!(rec.rounds.len(), 4);
}

/// Interrupted after the first server's round of a paired block: the other
/// server measured nothing, and its step says so. The block was counted
/// all the same, and the step was stored ok, and valid, with no round.
#[test]
fn a_paired_step_cut_off_before_its_round_is_stored_as_interrupted() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let interrupt = Interrupt::new();
    let mut rec = Record {
        interrupt_on_first_round: Some(interrupt.clone()),
        ..Record::default()
    };
    let toml = study("[\"nginx\", \"lighttpd\"]", "[4]", 1).replace("warmup_seconds = 0.2\n", "");
    let out = run(&toml, &db, &mut rec, &interrupt);
    assert!(!out.complete);
    assert_no_leftovers(&rec, dir.path());
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    assert_eq!(data.steps.len(), 2);
    let measured: Vec<_> = data.steps.iter().filter(|s| !s.rounds.is_empty()).collect();
    let cut: Vec<_> = data.steps.iter().filter(|s| s.rounds.is_empty()).collect();
    assert_eq!((measured.len(), cut.len()), (1, 1), "{:?}", data.steps);
    assert_eq!(measured[0].status, StepStatus::Ok);
    assert_eq!(cut[0].status, StepStatus::Skipped);
    assert_eq!(
        cut[0].failure.as_deref(),
        Some("interrupted after 0 rounds")
    );
}

#[test]
fn a_command_server_that_serves_the_wrong_files_fails_verification() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    // Serves its own run directory, which has no index.html.
    let servers = r#"[{ name = "py", command = ["/usr/bin/python3", "-m", "http.server", "{{port}}", "--bind", "127.0.0.1", "--directory", "{{rundir}}"] }, "lighttpd"]"#;
    let mut rec = Record::default();
    let out = run(&study(servers, "[4]", 2), &db, &mut rec, &Interrupt::new());
    assert!(out.complete);
    assert_eq!(out.failed_steps, 1);
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    let py = data.steps.iter().find(|s| s.server == "py").unwrap();
    assert_eq!(py.status, StepStatus::Failed);
    assert_eq!(
        py.failure.as_deref().unwrap(),
        "started but failed verification: GET /index.html: status 404 instead of 200"
    );
    assert!(py.rounds.is_empty());
    let l = data.steps.iter().find(|s| s.server == "lighttpd").unwrap();
    assert_eq!((l.status, l.rounds.len()), (StepStatus::Ok, 2));
    assert_eq!(data.servers[0].configs[0].path, "c1-tiny/py/command");
}

#[test]
fn a_server_that_drops_keep_alive_has_its_protocol_row_say_so() {
    // Python's http.server answers HTTP/1.0 and closes each connection:
    // every answer it gave carried a connect, where lighttpd's did not.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let servers = r#"[{ name = "py", command = ["/usr/bin/python3", "-m", "http.server", "{{port}}", "--bind", "127.0.0.1", "--directory", "{{docroot}}"] }, "lighttpd"]"#;
    let mut rec = Record::default();
    let out = run(&study(servers, "[2]", 2), &db, &mut rec, &Interrupt::new());
    assert!(out.complete);
    let data = Store::open(&db).unwrap().load_run(out.run_id).unwrap();
    let protocol = |name: &str| {
        let s = data.servers.iter().find(|s| s.name == name).unwrap();
        s.parity
            .iter()
            .find(|e| e.setting == Setting::Protocol)
            .unwrap()
            .clone()
    };
    let py = protocol("py");
    let step = data.steps.iter().find(|s| s.server == "py").unwrap();
    assert_eq!(step.status, StepStatus::Ok, "{:?}", step.failure);
    let completed: u64 = step.rounds.iter().map(|r| r.summary.completed).sum();
    let reconnects: u64 = step
        .rounds
        .iter()
        .map(|r| r.summary.connections.reconnects)
        .sum();
    assert_eq!(
        (py.value.as_str(), py.source),
        ("HTTP/1.1 cleartext, keep-alive not kept", Source::Live),
        "{py:?}"
    );
    assert!(
        py.detail.starts_with(&format!(
            "the client reconnected {reconnects} times for {completed} answers"
        )),
        "{py:?}"
    );
    let l = protocol("lighttpd");
    assert_eq!(
        (l.value.as_str(), l.source),
        ("HTTP/1.1 cleartext", Source::Lab)
    );
}

#[test]
fn a_missing_server_fails_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gone.toml"),
        "name = \"gone\"\npackage = \"gone-httpd\"\nbinary = \"/nonexistent/gone\"\nstart = [\"/nonexistent/gone\"]\n",
    )
    .unwrap();
    let recipes = Recipes::load(Some(dir.path())).unwrap();
    let study = Study::parse(&study("[\"nginx\", \"gone\"]", "[4]", 2), &recipes).unwrap();
    let db = dir.path().join("t.db");
    let mut store = Store::open(&db).unwrap();
    let e = throng_lab::run_study(
        &study,
        &mut store,
        &LabOptions::default(),
        &mut Record::default(),
        &Interrupt::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "study test cannot start its servers: gone: /nonexistent/gone is not installed (apt-get install gone-httpd)"
    );
    assert_eq!(store.list_runs().unwrap().len(), 0);
}
