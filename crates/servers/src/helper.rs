//! Dynamic workloads: the programs behind a server (php-fpm's pool,
//! fcgiwrap, a Node.js app) and the CGI program the lab compiles.
//!
//! A helper runs in the server's run directory, pinned to the server's
//! cores and as the server's unprivileged user, and listens on the unix
//! socket `helper.sock` there; the recipe's per-workload config points the
//! server at that socket. Its processes are sampled with the server's, so
//! the CPU and memory a dynamic page costs are charged to the server that
//! needs them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::process::{Launch, ServerProcess};

/// The file in a workload's document root that the Node.js app serves
/// for every path; the lab writes it when it generates the `app` workload.
pub const APP_BODY_FILE: &str = "app-body.html";

/// The helper's socket, inside the server's run directory.
pub const SOCKET: &str = "helper.sock";

/// A program the server forwards requests to, named in a recipe's
/// `[workloads.NAME]` table and checked when the recipe loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Helper {
    /// Debian's fcgiwrap: runs CGI programs for servers that only speak FastCGI.
    #[serde(rename = "fcgiwrap")]
    FcgiWrap,
    /// Debian's php-fpm, with a static pool started by the lab.
    #[serde(rename = "php-fpm")]
    PhpFpm,
    /// A Node.js HTTP server answering every path with the page.
    #[serde(rename = "node")]
    Node,
}

impl Helper {
    pub fn name(self) -> &'static str {
        match self {
            Helper::FcgiWrap => "fcgiwrap",
            Helper::PhpFpm => "php-fpm",
            Helper::Node => "node",
        }
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            Helper::FcgiWrap => "fcgiwrap",
            Helper::PhpFpm => "php-fpm",
            Helper::Node => "nodejs",
        }
    }

    /// The installed executable, if any. php-fpm's name carries PHP's
    /// version (php-fpm8.2 on Debian 12), so it is looked for by prefix.
    pub fn binary(self) -> Option<PathBuf> {
        match self {
            Helper::FcgiWrap => existing("/usr/sbin/fcgiwrap"),
            Helper::Node => existing("/usr/bin/node").or_else(|| existing("/usr/bin/nodejs")),
            Helper::PhpFpm => {
                let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin")
                    .ok()?
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("php-fpm"))
                    })
                    .collect();
                // The newest PHP when several are installed.
                found.sort();
                found.pop()
            }
        }
    }
}

fn existing(p: &str) -> Option<PathBuf> {
    let p = PathBuf::from(p);
    p.is_file().then_some(p)
}

/// php-fpm's pool: two processes per server core, so a request that waits
/// on nothing but CPU always finds a free child while another is scheduled
/// out; fixed (pm = static) so the pool does not grow during a round.
pub fn pool_size(cores: u32) -> u32 {
    2 * cores.max(1)
}

/// fcgiwrap's preforked processes: one per server core (each runs one CGI
/// program at a time and waits for it).
pub fn fcgiwrap_processes(cores: u32) -> u32 {
    cores.max(1)
}

/// Files to write before a helper starts: path and content.
pub type Files = Vec<(PathBuf, String)>;

/// A helper started for one server.
pub struct RunningHelper {
    pub process: ServerProcess,
    /// Files written for it (its config, its command line), to be stored
    /// with the server's configs; paths are absolute.
    pub configs: Files,
    /// Logs to show when it fails.
    pub logs: Vec<PathBuf>,
}

/// Where and how a helper runs.
#[derive(Debug, Clone)]
pub struct HelperPlan {
    pub helper: Helper,
    /// The server's run directory (the socket and the helper's files go there).
    pub rundir: PathBuf,
    pub docroot: PathBuf,
    pub cores: u32,
    pub cpus: Vec<usize>,
    pub run_as: Option<crate::process::RunAs>,
    /// The futex-hash shim it loads, as the server does.
    pub preload: Option<PathBuf>,
    /// Connection backlog of the socket: the study's highest concurrency.
    pub backlog: u32,
}

impl HelperPlan {
    pub fn socket(&self) -> PathBuf {
        self.rundir.join(SOCKET)
    }

    /// The command and the files it needs, without starting anything.
    pub fn prepare(&self) -> anyhow::Result<(Vec<String>, Files)> {
        let binary = self.helper.binary().with_context(|| {
            format!(
                "{} is not installed (Debian package {})",
                self.helper.name(),
                self.helper.package()
            )
        })?;
        let bin = binary.display().to_string();
        let dir = self.rundir.display().to_string();
        let sock = self.socket().display().to_string();
        Ok(match self.helper {
            Helper::FcgiWrap => (
                vec![
                    bin,
                    "-c".into(),
                    fcgiwrap_processes(self.cores).to_string(),
                    "-s".into(),
                    format!("unix:{sock}"),
                ],
                Vec::new(),
            ),
            Helper::PhpFpm => {
                let conf = self.rundir.join("php-fpm.conf");
                let text = format!(
                    "[global]\n\
                     pid = {dir}/php-fpm.pid\n\
                     error_log = {dir}/php-fpm.log\n\
                     daemonize = no\n\
                     \n\
                     [throng]\n\
                     listen = {sock}\n\
                     listen.mode = 0660\n\
                     listen.backlog = {backlog}\n\
                     pm = static\n\
                     pm.max_children = {pool}\n\
                     pm.max_requests = 0\n\
                     catch_workers_output = yes\n",
                    backlog = self.backlog.max(511),
                    pool = pool_size(self.cores),
                );
                (
                    vec![
                        bin,
                        "-F".into(),
                        "-y".into(),
                        conf.display().to_string(),
                        "-p".into(),
                        dir,
                    ],
                    vec![(conf, text)],
                )
            }
            Helper::Node => {
                let script = self.rundir.join("app.js");
                let body = self.docroot.join(APP_BODY_FILE);
                (
                    vec![
                        bin,
                        script.display().to_string(),
                        body.display().to_string(),
                        sock,
                    ],
                    vec![(script, APP_JS.to_string())],
                )
            }
        })
    }

    /// Starts the helper and waits until its socket exists.
    pub fn start(&self, within: Duration) -> anyhow::Result<RunningHelper> {
        let (argv, files) = self.prepare()?;
        for (path, text) in &files {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        let _ = std::fs::remove_file(self.socket());
        let name = self.helper.name();
        let log = self.rundir.join(format!("{name}.out"));
        let mut configs = files;
        configs.push((self.rundir.join(format!("{name}.command")), argv.join(" ")));
        let launch = Launch {
            name: name.to_string(),
            argv,
            env: vec![("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into())],
            cwd: self.rundir.clone(),
            cpus: self.cpus.clone(),
            run_as: self.run_as.clone(),
            log: log.clone(),
            stop_signal: nix::sys::signal::Signal::SIGTERM,
            preload: self.preload.clone(),
        };
        let mut process = ServerProcess::spawn(&launch)?;
        let mut logs = vec![log];
        if self.helper == Helper::PhpFpm {
            logs.push(self.rundir.join("php-fpm.log"));
        }
        let deadline = Instant::now() + within;
        loop {
            if let Some(e) = process.exited() {
                let tail = process.log_tail(&logs, 10);
                bail!("{name} exited ({e}) before its socket appeared:\n{tail}");
            }
            if self.socket().exists() {
                break;
            }
            if Instant::now() >= deadline {
                process.stop(Duration::from_secs(2));
                bail!(
                    "{name} did not create {} within {within:?}",
                    self.socket().display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(RunningHelper {
            process,
            configs,
            logs,
        })
    }
}

/// The app: the page's bytes for every request, kept alive like the
/// servers in front of it.
const APP_JS: &str = r#"'use strict';
const fs = require('fs');
const http = require('http');
const [bodyFile, socket] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile);
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60000;
server.maxRequestsPerSocket = 0;
server.listen(socket);
process.on('SIGTERM', () => process.exit(0));
"#;

/// The CGI program: a fixed body, so every response can be checked.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_and_commands_are_sized_by_cores() {
        assert_eq!((pool_size(1), pool_size(4)), (2, 8));
        let plan = |helper| HelperPlan {
            helper,
            rundir: PathBuf::from("/run/x"),
            docroot: PathBuf::from("/srv/d"),
            cores: 3,
            cpus: vec![0],
            run_as: None,
            preload: None,
            backlog: 100,
        };
        let (argv, files) = plan(Helper::PhpFpm).prepare().unwrap();
        assert_eq!(
            argv[1..],
            ["-F", "-y", "/run/x/php-fpm.conf", "-p", "/run/x"]
        );
        assert!(files[0].1.contains("pm = static\npm.max_children = 6\n"));
        assert!(files[0].1.contains("listen = /run/x/helper.sock\n"));
        assert!(files[0].1.contains("listen.backlog = 511\n"));
        let (argv, _) = plan(Helper::FcgiWrap).prepare().unwrap();
        assert_eq!(argv[1..], ["-c", "3", "-s", "unix:/run/x/helper.sock"]);
        let (argv, files) = plan(Helper::Node).prepare().unwrap();
        assert_eq!(
            argv[1..],
            [
                "/run/x/app.js",
                "/srv/d/app-body.html",
                "/run/x/helper.sock"
            ]
        );
        assert_eq!(files[0].0, PathBuf::from("/run/x/app.js"));
        // A helper's name is checked when its recipe loads, not at start.
        let err = crate::recipe::Recipe::parse(
            "name = \"x\"\nbinary = \"/x\"\nstart = [\"/x\"]\n[workloads.php]\nhelper = \"fpm\"\n",
        )
        .unwrap_err();
        assert!(
            format!("{err:#}")
                .contains("unknown variant `fpm`, expected one of `fcgiwrap`, `php-fpm`, `node`"),
            "{err:#}"
        );
    }
}
