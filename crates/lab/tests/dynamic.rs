//! End-to-end studies of the dynamic workloads (cgi, php, app) against
//! real servers and helpers from Debian's packages (fcgiwrap, php-fpm,
//! nodejs): exact bodies under load, helpers' processes counted with the
//! server's, and a server that cannot serve a workload shown as such.

use std::collections::BTreeMap;
use std::path::Path;

use throng_engine::ErrorKind;
use throng_lab::{Event, Interrupt, LabOptions, Observer, Recipes, Store, Study};
use throng_model::{RunData, StepRecord, StepStatus};
use throng_servers::process::{is_alive, process_tree};

/// Runs are serialised: two studies at once would share the two CPUs.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[derive(Default)]
struct Record {
    /// The run directories' parent: helpers' command lines name it.
    dir: String,
    /// Every process of every server and helper, seen as it started.
    pids: Vec<i32>,
    /// Process names of each server's tree just after it started.
    started: BTreeMap<String, Vec<String>>,
    /// Process names of each server's helper (its own process group).
    helpers: BTreeMap<String, Vec<String>>,
    /// Processes sampled in each round of each server.
    processes: BTreeMap<String, Vec<u32>>,
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Leaders of the helpers started for `server`: their command line names
/// a file in the server's run directory.
fn helper_leaders(dir: &str, server: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(dir) && cmd.contains(&format!("/{server}/")) && !cmd.contains("cgid.sock") {
            out.push(pid);
        }
    }
    out
}

impl Observer for Record {
    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::ServerStarted { server, pid, .. } => {
                let tree = process_tree(pid);
                self.pids.extend(&tree);
                self.started
                    .insert(server.to_string(), tree.iter().map(|p| comm(*p)).collect());
                let mut names = Vec::new();
                for leader in helper_leaders(&self.dir, server) {
                    if tree.contains(&leader) {
                        continue;
                    }
                    for p in process_tree(leader) {
                        self.pids.push(p);
                        names.push(comm(p));
                    }
                }
                self.helpers.insert(server.to_string(), names);
            }
            Event::Round { server, usage, .. } => {
                self.processes
                    .entry(server.to_string())
                    .or_default()
                    .push(usage.processes);
            }
            _ => {}
        }
    }
}

/// A study of the servers at one level. These tests check bodies and the
/// processes behind a server, not its features nor its syscalls: the live
/// feature probes and the diagnostic rounds would start and load every
/// server again for nothing they assert.
fn study(servers: &str, workload: &str, concurrency: u32) -> String {
    format!(
        "name = \"dynamic\"\nservers = {servers}\nworkloads = [\"{workload}\"]\ncores = [1]\n\
         concurrency = [{concurrency}]\nwarmup_seconds = 0.2\n\
         features = false\ndiagnose = false\n\
         [rounds]\nseconds = 0.4\nwarmup_seconds = 0.1\nmin = 2\nmax = 2\n"
    )
}

fn run(toml: &str, dir: &Path, rec: &mut Record) -> RunData {
    let recipes = Recipes::builtin();
    let study = Study::parse(toml, &recipes).unwrap();
    let db = dir.join("t.db");
    let mut store = Store::open(&db).unwrap();
    let opts = LabOptions {
        workdir: Some(dir.to_path_buf()),
        keep_workdir: false,
    };
    let out = throng_lab::run_study(&study, &mut store, &opts, rec, &Interrupt::new()).unwrap();
    assert!(out.complete);
    for p in &rec.pids {
        assert!(!is_alive(*p), "process {p} survived the study");
    }
    store.load_run(out.run_id).unwrap()
}

/// Every round answered, every response 200 with the expected size and
/// checksum, and `body` bytes per response when the body is known.
fn assert_exact(step: &StepRecord, body: Option<u64>) {
    assert_eq!(
        step.status,
        StepStatus::Ok,
        "{}: {:?}",
        step.server,
        step.failure
    );
    assert_eq!(step.rounds.len(), 2, "{}", step.server);
    for r in &step.rounds {
        let s = &r.summary;
        assert!(
            s.completed >= 20,
            "{}: {} responses",
            step.server,
            s.completed
        );
        assert_eq!(s.errors_total, 0, "{}: {:?}", step.server, s.errors);
        assert_eq!(s.error_count(ErrorKind::SizeMismatch), 0);
        assert_eq!(s.error_count(ErrorKind::ChecksumMismatch), 0);
        let statuses: Vec<(u16, u64)> = s.status.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(statuses, [(200, s.completed)], "{}", step.server);
        if let Some(b) = body {
            assert_eq!(s.body_bytes, s.completed * b, "{}", step.server);
        }
    }
}

fn step<'a>(data: &'a RunData, server: &str) -> &'a StepRecord {
    data.steps.iter().find(|s| s.server == server).unwrap()
}

#[test]
fn cgi_gives_exact_bodies_on_every_server_and_varnish_is_unsupported() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Record {
        dir: dir.path().display().to_string(),
        ..Record::default()
    };
    let data = run(
        &study(
            r#"["nginx", "lighttpd", "apache2-event", "h2o", "caddy", "varnish"]"#,
            "cgi",
            4,
        ),
        dir.path(),
        &mut rec,
    );
    for server in ["nginx", "lighttpd", "apache2-event", "h2o", "caddy"] {
        assert_exact(step(&data, server), Some(b"Hello, world!\n".len() as u64));
    }
    let v = step(&data, "varnish");
    assert_eq!(v.status, StepStatus::Unsupported);
    assert!(v.rounds.is_empty());
    assert!(
        v.failure
            .as_deref()
            .unwrap()
            .contains("dynamic pages are measured on the servers"),
        "{:?}",
        v.failure
    );
    // nginx and caddy reach CGI through fcgiwrap (one process per core),
    // counted with theirs; the others run CGI in their own tree.
    assert_eq!(rec.started["nginx"], ["nginx", "nginx"]);
    assert_eq!(rec.helpers["nginx"], ["fcgiwrap"]);
    assert_eq!(rec.helpers["caddy"], ["fcgiwrap"]);
    // nginx's master and worker and fcgiwrap, at each round's last sample;
    // a CGI child fcgiwrap forked for a request may still be there then.
    for n in &rec.processes["nginx"] {
        assert!((3..=4).contains(n), "{:?}", rec.processes);
    }
    assert_eq!(rec.processes["nginx"].len(), 2);
    for server in ["lighttpd", "apache2-event", "h2o"] {
        assert_eq!(rec.helpers[server], Vec::<String>::new(), "{server}");
    }
    // The helper's command is stored with the server's configs.
    let nginx = data.servers.iter().find(|s| s.name == "nginx").unwrap();
    let cmd = nginx
        .configs
        .iter()
        .find(|c| c.path == "c1-cgi/nginx/fcgiwrap.command")
        .unwrap();
    assert!(
        cmd.content.starts_with("/usr/sbin/fcgiwrap -c 1 -s unix:/")
            && cmd.content.ends_with("/c1-cgi/nginx/helper.sock"),
        "{}",
        cmd.content
    );
    let conf = &nginx
        .configs
        .iter()
        .find(|c| c.path.ends_with("nginx.conf"))
        .unwrap()
        .content;
    assert!(conf.contains("fastcgi_pass unix:"), "{conf}");
}

#[test]
fn php_pool_is_counted_with_the_server_and_bodies_are_exact() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Record {
        dir: dir.path().display().to_string(),
        ..Record::default()
    };
    let data = run(
        &study(
            r#"["nginx", "lighttpd", "apache2-event", "h2o", "caddy"]"#,
            "php",
            4,
        ),
        dir.path(),
        &mut rec,
    );
    for server in ["nginx", "lighttpd", "apache2-event", "h2o", "caddy"] {
        // Two URLs of different sizes: the templated page and phpinfo().
        assert_exact(step(&data, server), None);
    }
    // nginx: master and one worker; php-fpm: master and a pool of 2 × 1
    // core, sampled as the server's.
    assert_eq!(rec.started["nginx"], ["nginx", "nginx"]);
    assert_eq!(
        rec.helpers["nginx"],
        ["php-fpm8.2", "php-fpm8.2", "php-fpm8.2"]
    );
    assert_eq!(rec.processes["nginx"], [5, 5]);
    for r in &step(&data, "nginx").rounds {
        assert_eq!(r.server.processes, 5, "{:?}", r.server);
    }
    let nginx = data.servers.iter().find(|s| s.name == "nginx").unwrap();
    let pool = nginx
        .configs
        .iter()
        .find(|c| c.path == "c1-php/nginx/php-fpm.conf")
        .unwrap();
    assert!(pool.content.contains("pm = static\npm.max_children = 2\n"));
}

#[test]
fn app_is_proxied_with_the_page_body() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Record {
        dir: dir.path().display().to_string(),
        ..Record::default()
    };
    let data = run(
        &study(
            r#"["nginx", "lighttpd", "apache2-event", "h2o", "caddy"]"#,
            "app",
            4,
        ),
        dir.path(),
        &mut rec,
    );
    for server in ["nginx", "lighttpd", "apache2-event", "h2o", "caddy"] {
        assert_exact(step(&data, server), Some(6451));
    }
    assert_eq!(rec.helpers["nginx"], ["node"]);
    assert_eq!(rec.processes["nginx"], [3, 3]);
}
