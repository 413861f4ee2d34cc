//! Tuned profiles on the real servers from Debian's packages: every
//! installed built-in starts and serves with its tuned profile, nginx's
//! changes its syscalls as its notes say, and the parity of what ran comes
//! from the configs the launcher wrote.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use throng_model::{Setting, Source};
use throng_servers::syscalls::{Counter, Tool};
use throng_servers::{
    log_bytes, loopback, parity, start, LabSettings, Profile, Recipes, RunAs, RunDir, Running,
    Site, Start,
};

const BODY: &str = "hello\n";

/// A run directory with a document root holding index.html.
fn rundir(base: &Path) -> (RunDir, PathBuf) {
    let rd = RunDir::create(base, "profiles", 0, false).unwrap();
    let docroot = rd.subdir(&["docroot"], None).unwrap();
    std::fs::write(docroot.join("index.html"), BODY).unwrap();
    (rd, docroot)
}

/// Starts a built-in recipe (and its backend) with `profile`, on one core
/// so one worker serves every request.
fn serve(rd: &RunDir, docroot: &Path, name: &str, profile: Profile) -> Running {
    let recipes = Recipes::builtin();
    let recipe = recipes.get(name).unwrap().profiled(profile).unwrap();
    let backend = recipe
        .backend
        .as_ref()
        .map(|b| recipes.get(b).unwrap().clone());
    let user = RunAs::unprivileged();
    let site = Site {
        rundir: rd,
        user: user.as_ref(),
    };
    let s = Start {
        backend: backend.as_ref(),
        ..Start::one_worker(name, &recipe, profile.name(), docroot.to_path_buf())
    };
    start(site, &s)
        .unwrap_or_else(|e| panic!("{name} {}: {}\n{}", profile.name(), e.message, e.log_tail))
}

fn get_index(addr: SocketAddr) -> Vec<u8> {
    let r = loopback::get(addr, "/index.html", &[], Duration::from_secs(5)).unwrap();
    assert_eq!(r.status, 200);
    r.body
}

#[test]
fn every_installed_server_serves_with_its_tuned_profile() {
    let base = tempfile::tempdir().unwrap();
    let (rd, docroot) = rundir(base.path());
    for recipe in Recipes::builtin().all() {
        let installed = recipe.is_installed()
            && recipe
                .backend
                .as_ref()
                .is_none_or(|b| Recipes::builtin().get(b).unwrap().is_installed());
        if !installed {
            eprintln!("skipped {}: not installed", recipe.name);
            continue;
        }
        let mut running = serve(&rd, &docroot, &recipe.name, Profile::Tuned);
        assert_eq!(
            get_index(running.addr()),
            BODY.as_bytes(),
            "{}",
            recipe.name
        );
        running.stop();
    }
}

#[test]
fn nginx_tuned_sends_from_its_open_file_cache_with_sendfile() {
    if !Recipes::builtin().get("nginx").unwrap().is_installed() {
        eprintln!("skipped: nginx is not installed");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let (rd, docroot) = rundir(base.path());
    let lab = LabSettings::cleartext(1, vec![], 1024);
    const REQUESTS: u64 = 50;
    for profile in Profile::ALL {
        let mut running = serve(&rd, &docroot, "nginx", profile);
        // The first request fills the open-file cache.
        get_index(running.addr());
        let log_before = log_bytes(&running.dir);
        let counter = Counter::attach(&running.processes()).unwrap();
        for _ in 0..REQUESTS {
            get_index(running.addr());
        }
        let counts = counter.finish().unwrap();
        let (opens, sendfiles) = (counts.by_name["openat"], counts.by_name["sendfile"]);
        match profile {
            Profile::Defaults => assert!(opens >= REQUESTS && sendfiles == 0, "{counts:?}"),
            Profile::Tuned => assert!(opens == 0 && sendfiles >= REQUESTS, "{counts:?}"),
        }
        // No access log: nothing grew.
        assert_eq!(log_bytes(&running.dir), log_before);
        let recipe = Recipes::builtin()
            .get("nginx")
            .unwrap()
            .profiled(profile)
            .unwrap();
        let entries = parity(&recipe, &running.configs, &lab);
        let sendfile = entries
            .iter()
            .find(|e| e.setting == Setting::Sendfile)
            .unwrap();
        let want = match profile {
            Profile::Defaults => ("off", Source::Default),
            Profile::Tuned => ("on", Source::Config),
        };
        assert_eq!((sendfile.value.as_str(), sendfile.source), want);
        running.stop();
    }
}

/// The same requests make the same syscalls counted on nginx's cgroup as
/// counted on its threads; with its defaults it opens the file on each.
#[test]
fn nginx_counted_on_its_cgroup_makes_the_syscalls_counted_on_its_threads() {
    if !Recipes::builtin().get("nginx").unwrap().is_installed() {
        eprintln!("skipped: nginx is not installed");
        return;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let perf = std::env::split_paths(&path).any(|d| d.join("perf").is_file());
    if !perf || !throng_servers::cgroup::writable() {
        eprintln!("skipped: no perf, or no writable cgroup2 hierarchy");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let (rd, docroot) = rundir(base.path());
    const REQUESTS: u64 = 50;
    let mut running = serve(&rd, &docroot, "nginx", Profile::Defaults);
    get_index(running.addr());
    // nginx closes a connection after the client has read its answer
    // (its lingering close): a count is ended only once every socket the
    // requests opened is closed again, or one close can fall after it.
    let open_files = |pids: &[i32]| -> usize {
        pids.iter()
            .filter_map(|p| std::fs::read_dir(format!("/proc/{p}/fd")).ok())
            .map(|d| d.count())
            .sum()
    };
    let count = |tool| {
        let pids = running.processes();
        let before = open_files(&pids);
        let counter = Counter::attach_using(&pids, tool).unwrap();
        for _ in 0..REQUESTS {
            get_index(running.addr());
        }
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while open_files(&pids) > before && std::time::Instant::now() < until {
            std::thread::yield_now();
        }
        counter.finish().unwrap()
    };
    let threads = count(Tool::Perf);
    let group = count(Tool::PerfCgroup);
    assert_eq!(group.tool, "perf stat (cgroup)");
    assert_eq!(group.by_name["openat"], REQUESTS, "{group:?}");
    for name in [
        "openat",
        "newfstatat",
        "pread64",
        "accept4",
        "writev",
        "close",
    ] {
        assert_eq!(
            group.by_name[name], threads.by_name[name],
            "{name}: {group:?} {threads:?}"
        );
    }
    running.stop();
}
