//! `throng lab` and `throng servers` as a user runs them.

mod support;
use support::Bounded;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use throng_testkit::wait::wait_for;

const THRONG: &str = env!("CARGO_BIN_EXE_throng");

/// Processes (not zombies) working in a directory under `needle`: every
/// server process runs in its run directory, whatever its command line says.
fn processes_mentioning(needle: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
        if cwd.starts_with(needle) && !zombie {
            out.push((pid, cmd));
        }
    }
    out
}

/// One launch of each server, so each level's steps are printed as the
/// level ends while the servers stay up for the next (with launches, every
/// step ends with the last launch, at the run's end); no diagnostic
/// rounds, which only lengthen it.
fn write_study(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("study.toml");
    std::fs::write(
        &p,
        "name = \"ctrl-c\"\nservers = [\"nginx\", \"lighttpd\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
         concurrency = [4, 8, 16, 32]\nwarmup_seconds = 0.2\ndiagnose = false\n[rounds]\nseconds = 0.5\n\
         warmup_seconds = 0.1\nmin = 3\nmax = 3\nlaunches = 1\n",
    )
    .unwrap();
    p
}

#[test]
fn ctrl_c_leaves_no_server_behind_and_marks_the_run_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let study = write_study(dir.path());
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut child = Command::new(THRONG)
        .args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
        .arg(dir.path().join("t.db"))
        .arg("--workdir")
        .arg(&work)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Wait for the first finished step: servers are up and measuring.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut lines = Vec::new();
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap();
        let is_step = line.contains("c=4");
        lines.push(line);
        if is_step {
            break;
        }
    }
    let needle = work.to_str().unwrap().to_string();
    let servers = processes_mentioning(&needle);
    assert_eq!(
        servers.len(),
        3,
        "nginx master and worker, lighttpd: {servers:?}"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = support::wait_until(&mut child, Instant::now() + Duration::from_secs(30))
        .unwrap_or_else(|| panic!("throng did not exit after Ctrl-C"));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "stdout {lines:?} stderr {err}");
    assert!(
        err.contains("interrupted: run 1 keeps what it measured and is marked incomplete"),
        "{err}"
    );
    // Servers' workers may take a moment to notice their master is gone.
    wait_for(Duration::from_secs(5), || {
        processes_mentioning(&needle).is_empty()
    });
    assert_eq!(processes_mentioning(&needle), []);
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "run directory removed"
    );
}

/// Ctrl-C while the lab waits for a server that never listens: the wait
/// ends at once and the step says it was interrupted. It was held for the
/// whole readiness bound (15 s) and stored as a server that did not start.
#[test]
fn ctrl_c_ends_the_wait_for_a_server_to_be_ready() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    // A server that never binds its port; its docroot argument lets the test
    // find it among the processes.
    std::fs::write(
        &study,
        "name='x'\nservers=[{ name = 'mute', command = ['/usr/bin/python3', '-c', \
         'import time; time.sleep(60)', '{{docroot}}'] }]\n\
         workloads=['tiny']\ncores=[1]\nconcurrency=[2]\nfeatures=false\ndiagnose=false\n",
    )
    .unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let db = dir.path().join("t.db");
    let mut child = Command::new(THRONG)
        .args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
        .arg(&db)
        .arg("--workdir")
        .arg(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let needle = work.to_str().unwrap().to_string();
    assert!(
        wait_for(Duration::from_secs(30), || {
            !processes_mentioning(&needle).is_empty()
        }),
        "the server never started"
    );
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = support::wait_until(&mut child, sent + Duration::from_secs(10))
        .unwrap_or_else(|| panic!("throng still waited for the server after Ctrl-C"));
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let data = throng_store::Store::open(&db).unwrap().load_run(1).unwrap();
    assert_eq!(data.steps.len(), 1);
    assert_eq!(data.steps[0].status, throng_model::StepStatus::Skipped);
    assert_eq!(
        data.steps[0].failure.as_deref(),
        Some("interrupted before it was ready")
    );
    assert_eq!(processes_mentioning(&needle), []);
}

#[test]
fn servers_lists_every_recipe() {
    let mut cmd = Command::new(THRONG);
    cmd.arg("servers");
    let out = support::run_bounded(cmd, Duration::from_secs(60));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for r in [
        "nginx",
        "lighttpd",
        "apache2-prefork",
        "apache2-worker",
        "apache2-event",
        "h2o",
        "caddy",
        "node",
        "varnish",
        "squid",
        "trafficserver",
    ] {
        assert!(text.contains(&format!(" {r} ")), "{r} missing in\n{text}");
    }
    // The package each report names: dpkg's owner of the binary, not the
    // metapackage (nginx-light) or the configs' package (apache2) the
    // recipe installs it with.
    let package = |recipe: &str| {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("│ {recipe} ")))
            .unwrap();
        row.trim_end_matches('│')
            .rsplit('┆')
            .next()
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(package("nginx"), "nginx");
    assert_eq!(package("apache2-event"), "apache2-bin");
}

#[test]
fn a_study_with_a_missing_server_fails_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let recipes = dir.path().join("recipes");
    std::fs::create_dir(&recipes).unwrap();
    std::fs::write(
        recipes.join("gone.toml"),
        "name = \"gone\"\npackage = \"gone-httpd\"\nbinary = \"/nonexistent/gone\"\nstart = [\"/nonexistent/gone\"]\n",
    )
    .unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name='x'\nservers=['gone']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n",
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let out = Command::new(THRONG)
        .args([
            "lab",
            study.to_str().unwrap(),
            "--recipes",
            recipes.to_str().unwrap(),
            "--db",
        ])
        .arg(&db)
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "throng: study x cannot start its servers: gone: /nonexistent/gone is not installed (apt-get install gone-httpd)\n"
    );
    assert!(
        !db.exists(),
        "no database is created for a study that cannot start"
    );
    // What cannot be run says why, not "not installed"; a NUL byte is
    // refused when the study loads, not when the server starts.
    for (command, want) in [
        (
            "'./mysrv'",
            "mine: ./mysrv is not an absolute path".to_string(),
        ),
        (
            "'/etc/passwd'",
            "mine: /etc/passwd is not an executable file".to_string(),
        ),
    ] {
        std::fs::write(
            &study,
            format!(
                "name='x'\nservers=[{{ name = 'mine', command = [{command}] }}]\n\
                 workloads=['tiny']\ncores=[1]\nconcurrency=[1]\n"
            ),
        )
        .unwrap();
        let out = Command::new(THRONG)
            .args(["lab", study.to_str().unwrap(), "--db"])
            .arg(&db)
            .bounded_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("throng: study x cannot start its servers: {want}\n")
        );
    }
    std::fs::write(
        &study,
        "name='x'\nservers=[{ name = 'mine', command = ['/bin/true', \"a\\u0000b\"] }]\n\
         workloads=['tiny']\ncores=[1]\nconcurrency=[1]\n",
    )
    .unwrap();
    let out = Command::new(THRONG)
        .args(["lab", study.to_str().unwrap(), "--db"])
        .arg(&db)
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .ends_with("server mine: `command`: \"a\\0b\" holds a NUL byte, which no argument can\n"));
    assert!(!db.exists());
    // A --db in a folder that does not exist is refused as load refuses it:
    // the lab used to make the folder.
    let missing = dir.path().join("none").join("t.db");
    let out = Command::new(THRONG)
        .args(["lab", "quick", "--db"])
        .arg(&missing)
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!missing.parent().unwrap().exists());
}

/// A study refused by a check made once the database is open (its hosts)
/// leaves no database behind when it made it.
#[test]
fn a_study_refused_after_the_database_opened_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name='x'\nservers=['nginx']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n\
         client_hosts = ['ssh://127.0.0.1:1']\nserver_address = '::1'\n",
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let out = Command::new(THRONG)
        .args(["lab", study.to_str().unwrap(), "--db"])
        .arg(&db)
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "throng: server_address ::1 is a loopback address, which client hosts cannot reach\n"
    );
    for leftover in ["t.db", "t.db-wal", "t.db-shm"] {
        assert!(!dir.path().join(leftover).exists(), "{leftover}");
    }
}

#[test]
fn strict_exits_1_when_a_step_is_suspect() {
    // Server and client on the same two cores: every step is suspect
    // (shared_cores) by construction, whatever the machine's noise.
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("shared.toml");
    std::fs::write(
        &study,
        "name = \"shared\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [2]\n\
         concurrency = [4]\nwarmup_seconds = 0.2\nallow_shared_cores = true\n\
         [rounds]\nseconds = 0.3\nwarmup_seconds = 0.1\nmin = 3\nmax = 3\n",
    )
    .unwrap();
    let run = |strict: bool| {
        let mut cmd = Command::new(THRONG);
        cmd.args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
            .arg(dir.path().join(format!("strict-{strict}.db")));
        if strict {
            cmd.arg("--strict");
        }
        cmd.stdin(Stdio::null());
        let out = support::run_bounded(cmd, Duration::from_secs(120));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (plain, _) = run(false);
    assert_eq!(plain, Some(0));
    let (strict, stderr) = run(true);
    assert_eq!(strict, Some(1), "{stderr}");
    assert!(
        stderr.contains("--strict: 1 of 1 steps are suspect"),
        "{stderr}"
    );
}

#[test]
fn names_that_would_leave_the_run_directory_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    for (name, shown) in [
        ("../../x", "\"../../x\""),
        ("/tmp/x", "\"/tmp/x\""),
        ("a/b", "\"a/b\""),
        ("..", "\"..\""),
    ] {
        let study = dir.path().join("s.toml");
        std::fs::write(
            &study,
            format!(
                "name='x'\nservers=[{{ name = '{name}', command = ['/bin/true'] }}]\n\
                 workloads=['tiny']\ncores=[1]\nconcurrency=[1]\n"
            ),
        )
        .unwrap();
        let db = dir.path().join("t.db");
        let out = Command::new(THRONG)
            .args([
                "lab",
                study.to_str().unwrap(),
                "--workdir",
                work.to_str().unwrap(),
            ])
            .arg("--db")
            .arg(&db)
            .bounded_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err,
            format!(
                "throng: study {}: server name {shown} must start with a lowercase letter or \
                 digit and hold only lowercase letters, digits, '.', '_' and '-'\n",
                study.display()
            ),
            "{name}"
        );
        assert!(!db.exists(), "{name}: no database for a refused study");
        assert!(
            !work.exists(),
            "{name}: no run directory for a refused study"
        );
    }
}

/// `throng lab STUDY` with `args` and a database and work directory of
/// its own in `dir`: its exit code and stderr, after checking that it
/// left neither behind.
fn refused_before_anything_starts(
    dir: &Path,
    study: &Path,
    args: &[&str],
) -> (Option<i32>, String) {
    let db = dir.join("refused.db");
    let work = dir.join("refused-work");
    let out = Command::new(THRONG)
        .args(["lab", study.to_str().unwrap(), "--quiet"])
        .args(args)
        .arg("--db")
        .arg(&db)
        .arg("--workdir")
        .arg(&work)
        .bounded_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!db.exists(), "no database, so no run stored: {err}");
    assert!(!work.exists(), "no run directory: {err}");
    assert!(out.stdout.is_empty(), "{out:?}");
    (out.status.code(), err)
}

#[test]
fn a_work_directory_or_a_level_that_cannot_run_is_refused_and_no_run_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name = 'x'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [4]\nfeatures = false\n",
    )
    .unwrap();
    // Written into every server's config, a ';' ended nginx's `pid`
    // directive and began another: the run was stored, its steps failed.
    let bad = dir.path().join("w;d");
    let db = dir.path().join("t.db");
    let out = Command::new(THRONG)
        .args(["lab", study.to_str().unwrap(), "--quiet", "--workdir"])
        .arg(&bad)
        .arg("--db")
        .arg(&db)
        .bounded_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "throng: --workdir {:?} holds ';', which a server's config cannot carry as it is: \
             use a path of letters, digits and '/', '.', '_', '-', '+', '@', ',' or '~'\n",
            bad.to_str().unwrap()
        )
    );
    assert!(!db.exists() && !bad.exists());
    // More connections than the open-file limit lets the load open: it
    // failed every round of the level, after the servers had started.
    std::fs::write(
        &study,
        "name = 'x'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [4, 1000000]\nfeatures = false\n",
    )
    .unwrap();
    let (code, err) = refused_before_anything_starts(dir.path(), &study, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with(
            "throng: [workload.tiny] concurrency 1000000 opens 1000000 connections, and the \
             open-file limit lets the load generator open at most "
        ),
        "{err}"
    );
}

#[test]
fn a_command_the_servers_user_cannot_reach_is_refused_before_anything_starts() {
    use std::os::unix::fs::PermissionsExt;
    let Some(user) = throng_servers::process::RunAs::unprivileged() else {
        eprintln!("skipped: servers drop to an unprivileged user only when throng runs as root");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A folder only root may enter, as /root is, holding the command.
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let bin = private.join("mysrv");
    std::fs::write(&bin, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        format!(
            "name='x'\nservers=[{{ name = 'mine', command = ['{}'] }}]\n\
             workloads=['tiny']\ncores=[1]\nconcurrency=[1]\n",
            bin.display()
        ),
    )
    .unwrap();
    let (code, err) = refused_before_anything_starts(dir.path(), &study, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "throng: mine: {} is under {} (mode 700), which {u}, whom the server runs as, cannot \
             pass through; install it elsewhere or give its path in a folder {u} can reach\n",
            bin.display(),
            private.display(),
            u = user.name
        )
    );
}

#[test]
fn a_core_count_the_machine_lacks_is_refused_and_no_run_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name = 'x'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1, 64]\n\
         concurrency = [4]\nfeatures = false\n",
    )
    .unwrap();
    let cpus = throng_engine::affinity::own_cpus().len();
    assert!(cpus < 64, "the test needs a machine of fewer than 64 CPUs");
    assert_eq!(
        refused_before_anything_starts(dir.path(), &study, &[]),
        (
            Some(2),
            format!(
                "throng: study {}: cores: 64 server cores asked for, but this machine gives \
                 throng {cpus} CPUs\n",
                study.display()
            )
        )
    );
}

#[test]
fn a_recipe_that_cannot_render_or_parse_is_refused_at_its_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let recipes = dir.path().join("recipes");
    std::fs::create_dir(&recipes).unwrap();
    let recipe = recipes.join("mine.toml");
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name = 'x'\nservers = ['mine']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [4]\nfeatures = false\n",
    )
    .unwrap();
    let args = ["--recipes", recipes.to_str().unwrap()];
    let head = "name = \"mine\"\nbinary = \"/usr/sbin/nginx\"\n\
                start = [\"{{binary}}\", \"-c\", \"{{rundir}}/nginx.conf\", \"-g\", \"daemon off;\"]\n";
    // Rendered only when the server starts, after the run is stored: a
    // typo there failed every step of the server.
    std::fs::write(
        &recipe,
        format!(
            "{head}[[configs]]\nfile = \"nginx.conf\"\ntemplate = '''\n\
             worker_processes {{{{workers}}}};\n\
             events {{ worker_connections {{{{max_conections}}}}; }}\n\
             http {{ server {{ listen {{{{listen_url_host}}}}:{{{{port}}}}; root {{{{docroot}}}}; }} }}\n\
             '''\n"
        ),
    )
    .unwrap();
    assert_eq!(
        refused_before_anything_starts(dir.path(), &study, &args),
        (
            Some(2),
            format!(
                "throng: {}:8:29: recipe mine: [[configs]] nginx.conf: unknown placeholder \
                 {{{{max_conections}}}} (known: listen, listen_url_host, port, backend_port, \
                 docroot, rundir, workers, user, group, max_connections, nofile, \
                 threads_per_child, max_request_workers, start_servers, binary, dynamic)\n",
                recipe.display()
            )
        )
    );
    std::fs::write(&recipe, format!("{head}[[configs]\n")).unwrap();
    assert_eq!(
        refused_before_anything_starts(dir.path(), &study, &args),
        (
            Some(2),
            format!(
                "throng: {}:4:10: invalid table header, expected `.`, `]]`\n",
                recipe.display()
            )
        )
    );
}
