//! Shared test fixtures: a real nginx on a free loopback port, and running
//! the built `throng` binary with a deadline.

#![allow(dead_code)]

pub mod netns;
pub mod studies;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use throng_testkit::wait::{poll_until, wait_for};

pub fn throng() -> Command {
    Command::new(env!("CARGO_BIN_EXE_throng"))
}

/// What `cmd`, a `throng load` without `--json`, prints, run to success
/// within 60 s.
pub fn summary(cmd: Command) -> String {
    let out = run_bounded(cmd, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The line of a summary for `field` (`spin`, say), if it has one.
pub fn summary_line<'a>(text: &'a str, field: &str) -> Option<&'a str> {
    text.lines().find(|l| {
        l.trim_start()
            .strip_prefix(field)
            .is_some_and(|r| r.starts_with(' '))
    })
}

/// Run a command, killing it if it is not done by `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    run_bounded_mut(&mut cmd, limit)
}

/// `Command::output`, but a command that hangs is killed and fails the test.
pub trait Bounded {
    fn bounded_output(&mut self) -> std::io::Result<Output>;
}

impl Bounded for Command {
    fn bounded_output(&mut self) -> std::io::Result<Output> {
        Ok(run_bounded_mut(self, Duration::from_secs(120)))
    }
}

/// Waits for `child` until `deadline`; past it, kills it (through its
/// handle, so never a process that took its pid) and returns `None`.
pub fn wait_until(child: &mut Child, deadline: Instant) -> Option<std::process::ExitStatus> {
    let status = poll_until(deadline, || child.try_wait().expect("wait"));
    if status.is_none() {
        child.kill().ok();
        let _ = child.wait();
    }
    status
}

fn run_bounded_mut(cmd: &mut Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let deadline = Instant::now() + limit;
    // Drain pipes on threads so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let status = wait_until(&mut child, deadline)
        .unwrap_or_else(|| panic!("command did not finish within {limit:?}: {cmd:?}"));
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

/// Run throng with `args`; return its JSON output (asserting exit 0).
pub fn throng_json(args: &[&str]) -> serde_json::Value {
    throng_json_env(args, &[])
}

/// `throng_json` with `env` set for the run.
pub fn throng_json_env(args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let mut cmd = throng();
    cmd.args(args).arg("--json").envs(env.iter().copied());
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "throng {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Poll until something accepts connections on `addr`, or panic.
///
/// A free port comes from the ephemeral range, so a connect to it while
/// nothing listens yet may pick that very port as its own source and
/// connect to itself (TCP's simultaneous open): that is no listener.
pub fn wait_listening(addr: SocketAddr, limit: Duration) {
    let listens = || {
        TcpStream::connect_timeout(&addr, Duration::from_millis(200))
            .is_ok_and(|s| s.local_addr().ok() != Some(addr))
    };
    assert!(wait_for(limit, listens), "nothing listens on {addr}");
}

/// A real nginx from Debian's package, one worker, on a free loopback port,
/// logging `status bytes_sent` per request to `access_log`.
pub struct Nginx {
    pub port: u16,
    pub dir: tempfile::TempDir,
    /// The master process, leader of a process group of its own (its
    /// workers are in it too).
    child: Child,
    tls: bool,
    /// The master has exited, its group has been cleared, and it has been
    /// reaped: its pid (and so the group's id) may belong to another
    /// process by now.
    reaped: bool,
}

/// What an [`Nginx`]'s one port speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Listen {
    /// HTTP/1.x in cleartext.
    Http,
    /// HTTP/1.x over TLS: ALPN chooses http/1.1, and a handshake that
    /// offers h2 alone ends in an alert.
    Tls,
    /// TLS, ALPN offering h2 and http/1.1 (`listen ... ssl http2`).
    H2,
    /// HTTP/2 in cleartext with prior knowledge only (`listen ... http2`):
    /// an HTTP/1.1 request on it is not answered as one.
    H2c,
}

impl Nginx {
    pub fn start(files: &[(&str, &[u8])]) -> Nginx {
        Nginx::start_logging(files, "$status $bytes_sent")
    }

    /// [`Nginx::start`], its access log written in `format` (nginx's
    /// log_format variables), for tests that need other fields per request.
    pub fn start_logging(files: &[(&str, &[u8])], format: &str) -> Nginx {
        Nginx::start_with(files, format, Listen::Http, "", "")
    }

    /// [`Nginx::start_logging`] over TLS: the test kit's self-signed
    /// ECDSA P-256 certificate for `localhost` and 127.0.0.1, at
    /// [`Nginx::cert`]; TLS 1.2 and 1.3.
    pub fn start_tls(files: &[(&str, &[u8])], format: &str) -> Nginx {
        Nginx::start_with(files, format, Listen::Tls, "", "")
    }

    /// [`Nginx::start_tls`] speaking HTTP/2 as well: ALPN chooses h2 when
    /// the client offers it (nginx prefers it), http/1.1 otherwise.
    pub fn start_h2(files: &[(&str, &[u8])], format: &str) -> Nginx {
        Nginx::start_with(files, format, Listen::H2, "", "")
    }

    /// [`Nginx::start_logging`] speaking HTTP/2 in cleartext, with prior
    /// knowledge (h2c) and nothing else.
    pub fn start_h2c(files: &[(&str, &[u8])], format: &str) -> Nginx {
        Nginx::start_with(files, format, Listen::H2c, "", "")
    }

    /// An nginx on `listen` whose server block also holds `server`
    /// (directives, locations) and whose http block also holds `http`
    /// (more server blocks, say on unix sockets); in both, `{dir}` stands
    /// for the directory of its files, log and sockets.
    pub fn start_conf(
        files: &[(&str, &[u8])],
        format: &str,
        listen: Listen,
        server: &str,
        http: &str,
    ) -> Nginx {
        Nginx::start_with(files, format, listen, server, http)
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    fn start_with(
        files: &[(&str, &[u8])],
        format: &str,
        listen: Listen,
        server: &str,
        http: &str,
    ) -> Nginx {
        let tls = matches!(listen, Listen::Tls | Listen::H2);
        let dir = tempfile::Builder::new()
            .prefix("throng-nginx")
            .tempdir()
            .unwrap();
        // Workers run as an unprivileged user when tests run as root.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = dir.path().join("html");
        std::fs::create_dir(&root).unwrap();
        for (name, body) in files {
            let p = root.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, body).unwrap();
        }
        let d = dir.path().display();
        if tls {
            throng_testkit::cert::localhost_in(dir.path());
        }
        let server = server.replace("{dir}", &d.to_string());
        let http = http.replace("{dir}", &d.to_string());
        // The free port may be taken before nginx binds it (by another
        // test's connection, as its source port): nginx then exits, and
        // starts again on another.
        let mut attempts = 0;
        let (port, child) = loop {
            attempts += 1;
            let port = free_port();
            let listen = if tls {
                let h2 = if listen == Listen::H2 { " http2" } else { "" };
                format!(
                    "127.0.0.1:{port} ssl{h2}; ssl_certificate {d}/cert.pem; \
                     ssl_certificate_key {d}/key.pem; ssl_protocols TLSv1.2 TLSv1.3"
                )
            } else if listen == Listen::H2c {
                format!("127.0.0.1:{port} http2")
            } else {
                format!("127.0.0.1:{port}")
            };
            let conf = format!(
                "worker_processes 1;\ndaemon off;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\n\
                 events {{ worker_connections 4096; }}\n\
                 http {{\n  log_format counts '{format}';\n  access_log {d}/access.log counts;\n\
                   keepalive_requests 1000000;\n  client_body_temp_path {d};\n  proxy_temp_path {d};\n\
                   fastcgi_temp_path {d};\n  uwsgi_temp_path {d};\n  scgi_temp_path {d};\n\
                   server {{ listen {listen}; root {d}/html; {server} }}\n  {http}\n}}\n"
            );
            let conf_path = dir.path().join("nginx.conf");
            std::fs::write(&conf_path, conf).unwrap();
            let mut cmd = Command::new("nginx");
            cmd.arg("-c").arg(&conf_path).arg("-p").arg(dir.path());
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            cmd.process_group(0);
            let mut child = cmd
                .spawn()
                .expect("nginx must be installed (scripts/setup)");
            // nginx writes its pid file once its sockets listen, and not at
            // all when it cannot bind: a connect alone could reach another
            // test's server that won the same port.
            let pid_file = dir.path().join("nginx.pid");
            let outcome = || {
                let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
                if pid.trim() == child.id().to_string() {
                    return Some(true);
                }
                child.try_wait().ok().flatten().map(|_| false)
            };
            let up = poll_until(Instant::now() + Duration::from_secs(10), outcome)
                .expect("nginx wrote no pid file");
            if up {
                wait_listening(
                    SocketAddr::from(([127, 0, 0, 1], port)),
                    Duration::from_secs(10),
                );
                break (port, child);
            }
            let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
            assert!(attempts < 3, "nginx did not start: {log}");
        };
        Nginx {
            port,
            dir,
            child,
            tls,
            reaped: false,
        }
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    pub fn access_log(&self) -> PathBuf {
        self.dir.path().join("access.log")
    }

    /// (status, bytes_sent) per logged request.
    pub fn log_entries(&self) -> Vec<(u16, u64)> {
        read_log(&self.access_log())
    }

    /// The access log's lines once there are `n` (nginx writes each just
    /// after its response), or what there is after a bound: for a test
    /// that reads the log while a load still runs or before it loads the
    /// same nginx again, where [`Nginx::quit_and_read_log`] cannot serve.
    pub fn lines_once_logged(&self, n: usize) -> Vec<String> {
        let read = || {
            std::fs::read_to_string(self.access_log())
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        wait_for(Duration::from_secs(5), || read().len() >= n);
        read()
    }

    /// [`Nginx::quit_and_read_log`], each line as (status, bytes_sent).
    pub fn quit_and_read_entries(self) -> Vec<(u16, u64)> {
        entries(self.quit_and_read_log())
    }

    /// Stops nginx gracefully and returns every line of its access log.
    ///
    /// SIGQUIT asks the master to shut down gracefully: the worker stops
    /// accepting, finishes (and logs) every request it has begun, and
    /// exits; the master exits only after its workers have. Once the
    /// master is gone the log is complete and nothing more can be added
    /// to it, so one read sees every request nginx ever answered, no
    /// more and no fewer. Takes `self`: nginx is not there afterwards.
    pub fn quit_and_read_log(mut self) -> Vec<String> {
        use nix::sys::signal::{kill, Signal};
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        let master = nix::unistd::Pid::from_raw(self.child.id() as i32);
        // Not yet reaped, so the pid is still this master's (at worst a
        // zombie, which ignores the signal).
        kill(master, Signal::SIGQUIT).expect("SIGQUIT to nginx's master");
        let limit = Duration::from_secs(10);
        // Wait for the exit without reaping it (WNOWAIT): the zombie keeps
        // the pid, and so the group, this nginx's until it is reaped.
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        let exited = || match waitid(Id::Pid(master), flags) {
            Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::EINTR) => false,
            Ok(_) => true,
            Err(e) => panic!("waiting for nginx: {e}"),
        };
        // Panicking here leaves it unreaped: Drop kills the group.
        assert!(
            wait_for(limit, exited),
            "nginx did not quit within {limit:?} of SIGQUIT"
        );
        // After a graceful quit no worker is left; after any other death
        // one may be, and the group is still this nginx's to clear.
        let _ = kill(
            nix::unistd::Pid::from_raw(-master.as_raw()),
            Signal::SIGKILL,
        );
        let status = self.child.wait().expect("reap nginx");
        self.reaped = true;
        assert!(
            status.success(),
            "nginx quit with {status}: {}",
            std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
        );
        std::fs::read_to_string(self.access_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

pub fn read_log(p: &Path) -> Vec<(u16, u64)> {
    entries(std::fs::read_to_string(p).unwrap_or_default().lines())
}

/// (status, bytes_sent) per line of a log in [`Nginx::start`]'s format.
pub fn entries<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Vec<(u16, u64)> {
    lines
        .into_iter()
        .map(|l| {
            let l = l.as_ref();
            let mut it = l.split_whitespace();
            (
                it.next().unwrap().parse().unwrap(),
                it.next().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // Once reaped (by `quit_and_read_log`, which cleared the group
        // first), the pid is free for another process (another test's
        // nginx, say): nothing is left to kill, and a signal could reach a
        // stranger.
        if self.reaped {
            return;
        }
        // Unreaped, the master (running or a zombie) still holds the
        // pid, so the group is its own.
        let pgid = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A field of a JSON document that must be there, as an integer.
pub fn u(j: &serde_json::Value, key: &str) -> u64 {
    j.pointer(key)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("{key} missing from {j:#}"))
}

/// Every error counter but the ones named is zero.
pub fn only_errors(j: &serde_json::Value, expected: &[(&str, u64)]) {
    for (name, n) in j["errors"].as_object().expect("errors object") {
        let want = expected
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0, |(_, n)| *n);
        assert_eq!(n.as_u64(), Some(want), "errors.{name} in {j:#}");
    }
    let total: u64 = expected.iter().map(|(_, n)| n).sum();
    assert_eq!(u(j, "/errors_total"), total);
}

/// Runs the study file `study` with `throng lab` into the database `db`
/// within `limit`, then returns `throng report --format json` of it: the
/// lab's own output in the failure message when it fails.
pub fn lab_report(study: &Path, db: &Path, limit: Duration) -> serde_json::Value {
    let mut lab = throng();
    lab.args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
        .arg(db);
    let out = run_bounded(lab, limit);
    assert!(
        out.status.success(),
        "{}\n{}\n{}",
        std::fs::read_to_string(study).unwrap_or_default(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut report = throng();
    report.args(["report", "--format", "json", "--db"]).arg(db);
    let out = run_bounded(report, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A server's feature in a JSON report of a study: its status and its
/// evidence.
pub fn feature(j: &serde_json::Value, server: &str, name: &str) -> (String, String) {
    let s = j["run"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == server)
        .unwrap_or_else(|| panic!("no server {server}"));
    let f = s["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{server}: no feature {name}"));
    (
        f["status"].as_str().unwrap().to_string(),
        f["evidence"].as_str().unwrap().to_string(),
    )
}

/// Stores `run` as a finished run with `comparisons`, through the store's
/// one writer of runs, as a study's run is stored; its id.
pub fn store_run(
    store: &mut throng_store::Store,
    run: &throng_model::RunData,
    comparisons: &[throng_model::Comparison],
) -> i64 {
    let r = &run.run;
    let mut w = throng_store::RunWriter::begin(
        store,
        throng_store::NewRun {
            study: r.study.clone(),
            study_toml: r.study_toml.clone(),
            started_unix_s: r.started_unix_s,
            environment: r.environment.clone(),
            doctor: r.doctor.clone(),
            baseline: r.baseline.clone(),
            threshold: r.threshold,
            servers: run.servers.clone(),
        },
    )
    .unwrap();
    for s in &run.steps {
        w.step(s).unwrap();
    }
    w.comparisons(comparisons).unwrap();
    w.finish(true).unwrap();
    w.id()
}

/// The latest run of `db` as `throng report --format markdown` prints it,
/// the command required to succeed within a minute.
pub fn report_markdown(db: &Path) -> String {
    let mut report = throng();
    report
        .args(["report", "--format", "markdown", "--db"])
        .arg(db);
    let out = run_bounded(report, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
