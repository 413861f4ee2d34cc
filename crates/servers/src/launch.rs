//! The one way a server under test is started: its recipe rendered into a
//! fresh directory of the run directory, the program behind it (a backend
//! for a cache, or a helper for a dynamic workload) started first, the
//! server started pinned and as the unprivileged user, and readiness
//! awaited. The lab's groups and the feature probes both start servers
//! through [`start`], so a server is configured the same way wherever it
//! is measured.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use throng_engine::probe::FetchError;
use throng_model::ConfigFile;

use crate::helper::{Helper, HelperPlan};
use crate::loopback;
use crate::process::{Launch, RunAs, ServerProcess};
use crate::recipe::{Recipe, RenderContext};
use crate::rundir::RunDir;
use crate::sockets::{self, Listener};

/// How long a backend, a helper or a server may take to become ready.
pub const READY_WITHIN: Duration = Duration::from_secs(15);
/// How long a server may take to stop before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Edits the first rendered config file of every recipe started (the
/// server's and its backend's) before it is written: the feature probes
/// add their locations. Gets the recipe, the text and the directory.
pub type Patch<'a> = &'a dyn Fn(&Recipe, &str, &Path) -> anyhow::Result<String>;

/// One server to start.
pub struct Start<'a> {
    /// Name in the study; its directory and process names come from it.
    pub name: &'a str,
    /// The recipe, already specialised for the workload.
    pub recipe: &'a Recipe,
    /// A cache's backend, started first on a port of its own.
    pub backend: Option<&'a Recipe>,
    /// The program behind a dynamic workload, started first in the
    /// server's directory, or in its backend's when it has one: a cache
    /// passes the workload to its backend, which serves it through this.
    pub helper: Option<Helper>,
    /// Directory inside the run directory that holds this server's
    /// directory (one per group, e.g. `c1-tiny`).
    pub group_dir: &'a str,
    pub docroot: PathBuf,
    /// Server cores: worker processes or threads.
    pub workers: u32,
    /// Highest concurrency it must accept.
    pub concurrency: u32,
    /// CPUs the server and everything behind it are pinned to.
    pub cpus: Vec<usize>,
    /// The address the server listens on, and readiness is awaited on:
    /// loopback, or the server host's address on the benchmark network when
    /// clients on other hosts load it. A backend always listens on loopback,
    /// since it runs on the same host as the server in front of it.
    pub listen: IpAddr,
    /// The path readiness is awaited on.
    pub ready_path: &'a str,
    pub patch: Option<Patch<'a>>,
    /// Serve TLS with this certificate: written into the server's
    /// directory as `tls-cert.pem` and `tls-key.pem` (where the recipe's
    /// `[tls]` config reads them) before the server starts, and trusted by
    /// every request made to it from then on.
    pub tls: Option<&'a TlsFiles>,
}

impl<'a> Start<'a> {
    /// A server of one worker for up to 16 connections on 127.0.0.1,
    /// unpinned, ready once `/index.html` is answered, with nothing in
    /// front, behind or patched: what checks and probes start, each
    /// changing what it needs.
    pub fn one_worker(
        name: &'a str,
        recipe: &'a Recipe,
        group_dir: &'a str,
        docroot: PathBuf,
    ) -> Start<'a> {
        Start {
            name,
            recipe,
            backend: None,
            helper: None,
            group_dir,
            docroot,
            workers: 1,
            concurrency: 16,
            cpus: vec![],
            listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
            ready_path: "/index.html",
            patch: None,
            tls: None,
        }
    }
}

/// A certificate (with the server's address among its names) and its key,
/// in PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl TlsFiles {
    /// How requests reach a server with this certificate at `ip`: trusting
    /// it alone, by the address it is reached at.
    pub fn target(&self, ip: IpAddr) -> anyhow::Result<throng_engine::probe::TlsTarget> {
        let spec = throng_engine::tls::TlsSpec {
            ca_pem: Some(self.cert_pem.clone()),
            ..throng_engine::tls::TlsSpec::default()
        };
        Ok(throng_engine::probe::TlsTarget {
            config: spec.client_config()?,
            name: rustls_name(ip),
        })
    }
}

fn rustls_name(ip: IpAddr) -> throng_engine::tls::ServerName<'static> {
    throng_engine::tls::ServerName::IpAddress(ip.into())
}

/// Where and as whom servers start.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    pub rundir: &'a RunDir,
    pub user: Option<&'a RunAs>,
}

/// A server that did not start: what went wrong, the end of its logs, and
/// the configs it was given (stored with the results all the same).
#[derive(Debug)]
pub struct StartFailure {
    pub message: String,
    pub log_tail: String,
    pub configs: Vec<ConfigFile>,
}

/// A server that is up and answering, with whatever runs behind it.
pub struct Running {
    pub name: String,
    pub listen: IpAddr,
    pub port: u16,
    server: ServerProcess,
    /// The backend and the helper behind it, or the helper alone.
    behind: Vec<ServerProcess>,
    /// Every config file written, relative to the run directory.
    pub configs: Vec<ConfigFile>,
    /// Error logs to show when it fails.
    logs: Vec<PathBuf>,
    /// The server's directory (its first config was rendered there).
    pub dir: PathBuf,
    /// Over TLS: how every request to it is made.
    pub tls: Option<throng_engine::probe::TlsTarget>,
    /// Its cleartext port speaks HTTP/2 alone (nginx's `listen ...
    /// http2`): its checks go over h2c.
    pub h2c_only: bool,
}

impl Running {
    /// Where the server listens: what every request to it connects to.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.listen, self.port)
    }

    /// The leader of the server's process group.
    pub fn pid(&self) -> i32 {
        self.server.pid()
    }

    /// The leaders of the groups behind it: its backend's and helper's.
    pub fn behind_pids(&self) -> Vec<i32> {
        self.behind.iter().map(ServerProcess::pid).collect()
    }

    /// Every process of the server and of what runs behind it.
    pub fn processes(&self) -> Vec<i32> {
        let mut v = self.server.tree();
        for b in &self.behind {
            v.extend(b.tree());
        }
        v
    }

    pub fn log_tail(&self) -> String {
        let mut t = self.server.log_tail(&self.logs, 20);
        for b in &self.behind {
            t.push_str(&b.log_tail(&[], 10));
        }
        t
    }

    /// `None` while the server and what runs behind it are up; how one of
    /// them ended otherwise.
    pub fn exited(&mut self) -> Option<String> {
        if let Some(e) = self.server.exited() {
            return Some(format!("exited ({e})"));
        }
        for b in &mut self.behind {
            if let Some(e) = b.exited() {
                return Some(format!("its backend exited ({e})"));
            }
        }
        None
    }

    pub fn stop(&mut self) {
        self.server.stop(STOP_GRACE);
        for b in &mut self.behind {
            b.stop(STOP_GRACE);
        }
    }

    /// Where requests to it go, and over TLS how.
    pub fn endpoint(&self) -> loopback::Endpoint {
        loopback::Endpoint {
            addr: self.addr(),
            tls: self.tls.clone(),
            h2c_only: self.h2c_only,
        }
    }
}

/// Set once the run is interrupted: a server being waited for is waited
/// for no longer. Ctrl-C was otherwise held for up to `READY_WITHIN`, and
/// the step then stored as a server that did not start.
static ABANDON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops every wait for a server to be ready, now and from now on. Safe to
/// call from any thread.
pub fn abandon_waits() {
    ABANDON.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The message a wait ended by [`abandon_waits`] fails with.
pub const ABANDONED: &str = "interrupted before it was ready";

/// The port chosen for a server was taken by another program before the
/// server could listen on it: what answers there is not the server.
#[derive(Debug, thiserror::Error)]
#[error("another program took {0} before the server could listen on it")]
pub struct PortTaken(pub SocketAddr);

/// How many ports a server is started on before a port taken every time
/// is its failure.
const PORT_TRIES: u32 = 3;

fn wait_ready(
    p: &mut ServerProcess,
    addr: SocketAddr,
    tls: Option<&throng_engine::probe::TlsTarget>,
    path: &str,
    within: Duration,
) -> anyhow::Result<bool> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(e) = p.exited() {
            bail!("exited ({e}) before it was ready");
        }
        if ABANDON.load(std::sync::atomic::Ordering::Relaxed) {
            bail!("{ABANDONED}");
        }
        // Before each try, and again once it was answered: another program
        // may start listening there at any time until the server does.
        let taken = |p: &ServerProcess| {
            // The tables first: a listener the server makes meanwhile is
            // then in a process the tree finds.
            let sockets = sockets::listening_sockets();
            sockets::who_listens(addr, &sockets, &p.tree()) == Listener::Other
        };
        if taken(p) {
            return Err(PortTaken(addr).into());
        }
        let attempt = Duration::from_millis(500);
        let answered = match loopback::get_over(addr, tls, path, &[], attempt) {
            Ok(_) => Ok(false),
            // Listening, but no HTTP/1.1 answer: a cleartext port may speak
            // HTTP/2 alone (a recipe over h2c).
            Err(e @ (FetchError::Connect(_) | FetchError::ConnectTimeout)) => Err(e),
            Err(e) if tls.is_some() => Err(e),
            Err(e) => loopback::h2c_get(addr, path, attempt)
                .map(|_| true)
                .map_err(|_| e),
        };
        match answered {
            Ok(_) if taken(p) => return Err(PortTaken(addr).into()),
            Ok(h2c_only) => return Ok(h2c_only),
            Err(e) if Instant::now() >= deadline => bail!("not ready after {within:?}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

struct Launched {
    process: ServerProcess,
    logs: Vec<PathBuf>,
    addr: SocketAddr,
}

/// One process of a start: the server itself, or the backend in front of
/// which it caches, each a recipe of its own rendered into a directory of
/// its own, under the same start.
#[derive(Clone, Copy)]
struct Instance<'a> {
    site: Site<'a>,
    start: &'a Start<'a>,
    recipe: &'a Recipe,
    name: &'a str,
    dir: &'a Path,
}

/// Renders the instance's recipe into its directory and starts it there,
/// listening on `addr`.
fn launch(
    i: &Instance,
    addr: SocketAddr,
    backend_port: Option<u16>,
    configs: &mut Vec<ConfigFile>,
) -> anyhow::Result<Launched> {
    let Instance {
        site,
        start: s,
        recipe,
        name,
        dir,
    } = *i;
    let rc = RenderContext {
        listen: addr.ip(),
        port: addr.port(),
        backend_port,
        docroot: s.docroot.clone(),
        rundir: dir.to_path_buf(),
        workers: s.workers,
        concurrency: s.concurrency,
        user: site.user.map(|u| u.name.clone()).unwrap_or_default(),
        group: site.user.map(|u| u.group.clone()).unwrap_or_default(),
        as_root: site.user.is_some(),
    };
    for (i, (path, content)) in recipe.render_configs(&rc)?.into_iter().enumerate() {
        let content = match (i, s.patch) {
            (0, Some(patch)) => patch(recipe, &content, dir)?,
            _ => content,
        };
        std::fs::write(&path, &content).with_context(|| format!("writing {}", path.display()))?;
        configs.push(ConfigFile {
            path: site.rundir.relative(&path),
            content,
        });
    }
    let argv = recipe.render_start(&rc)?;
    configs.push(ConfigFile {
        path: format!("{}/command", site.rundir.relative(dir)),
        content: argv.join(" "),
    });
    let process = ServerProcess::spawn(&Launch {
        name: name.to_string(),
        argv,
        env: recipe.render_env(&rc)?,
        cwd: dir.to_path_buf(),
        cpus: s.cpus.clone(),
        run_as: if recipe.drop_privileges {
            site.user.cloned()
        } else {
            None
        },
        log: dir.join("output.log"),
        stop_signal: recipe.stop_signal(),
        preload: site.rundir.futex_shim().map(Path::to_path_buf),
    })?;
    Ok(Launched {
        process,
        logs: vec![dir.join("error.log")],
        addr,
    })
}

/// Starts a server (and its backend or helper) and waits until it answers.
pub fn start(site: Site, s: &Start) -> Result<Running, StartFailure> {
    let mut configs = Vec::new();
    let fail = |e: anyhow::Error, tail: String, configs: Vec<ConfigFile>| StartFailure {
        message: format!("{e:#}"),
        log_tail: tail,
        configs,
    };
    let mut behind = Vec::new();
    let mut logs = Vec::new();
    let mut backend_port = None;
    if let Some(b) = s.backend {
        let name = format!("{}-backend", s.name);
        let dir = match site.rundir.subdir(&[s.group_dir, &name], site.user) {
            Ok(d) => d,
            Err(e) => return Err(fail(e, String::new(), configs)),
        };
        // The backend serves a dynamic workload, so its helper runs in
        // the backend's directory, where the backend's config points.
        if let Some(helper) = s.helper {
            match start_helper(site, s, helper, &dir, &mut configs) {
                Ok(h) => {
                    logs.extend(h.logs);
                    behind.push(h.process);
                }
                Err(e) => return Err(fail(e, String::new(), configs)),
            }
        }
        let result = (|| {
            // The cache in front reaches its backend on loopback, wherever
            // the cache itself listens.
            let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
            let on = On {
                ip,
                backend_port: None,
                tls: None,
                path: "/",
            };
            let backend = Instance {
                site,
                start: s,
                recipe: b,
                name: &name,
                dir: &dir,
            };
            match launch_ready(&backend, &on, &mut configs, loopback::free_port)? {
                Ready::Up(l, _) => {
                    let port = l.addr.port();
                    Ok(Ok((l, port)))
                }
                Ready::Not(e, mut l) => {
                    let tail = l.process.log_tail(&l.logs, 20);
                    l.process.stop(STOP_GRACE);
                    Ok(Err((e.context(format!("backend {}", b.name)), tail)))
                }
            }
        })();
        match result {
            Ok(Ok((l, port))) => {
                logs.extend(l.logs);
                behind.push(l.process);
                backend_port = Some(port);
            }
            Ok(Err((e, tail))) => return Err(fail(e, tail, configs)),
            Err(e) => return Err(fail(e, String::new(), configs)),
        }
    }
    let dir = match site.rundir.subdir(&[s.group_dir, s.name], site.user) {
        Ok(d) => d,
        Err(e) => return Err(fail(e, String::new(), configs)),
    };
    let tls = match s.tls.map(|t| write_tls(&dir, t, s.listen)).transpose() {
        Ok(t) => t,
        Err(e) => return Err(fail(e, String::new(), configs)),
    };
    if let (None, Some(helper)) = (s.backend, s.helper) {
        match start_helper(site, s, helper, &dir, &mut configs) {
            Ok(h) => {
                logs.extend(h.logs);
                behind.push(h.process);
            }
            Err(e) => return Err(fail(e, String::new(), configs)),
        }
    }
    let on = On {
        ip: s.listen,
        backend_port,
        tls: tls.as_ref(),
        path: s.ready_path,
    };
    let server = Instance {
        site,
        start: s,
        recipe: s.recipe,
        name: s.name,
        dir: &dir,
    };
    let (addr, h2c_only, not_ready, l) =
        match launch_ready(&server, &on, &mut configs, loopback::free_port) {
            Ok(Ready::Up(l, h2c_only)) => (l.addr, h2c_only, None, l),
            Ok(Ready::Not(e, l)) => (l.addr, false, Some(e), l),
            Err(e) => {
                let tail = behind
                    .first()
                    .map(|b| b.log_tail(&logs, 10))
                    .unwrap_or_default();
                return Err(fail(e, tail, configs));
            }
        };
    logs.extend(l.logs);
    let r = Running {
        name: s.name.to_string(),
        listen: s.listen,
        port: addr.port(),
        server: l.process,
        behind,
        configs,
        logs,
        dir,
        tls,
        h2c_only,
    };
    match not_ready {
        None => Ok(r),
        Some(e) => Err(r.fail(e)),
    }
}

/// Starts `helper` in `dir` for the start's document root, cores and
/// connections, its files added to `configs`.
fn start_helper(
    site: Site,
    s: &Start,
    helper: Helper,
    dir: &Path,
    configs: &mut Vec<ConfigFile>,
) -> anyhow::Result<crate::helper::RunningHelper> {
    let plan = HelperPlan {
        helper,
        rundir: dir.to_path_buf(),
        docroot: s.docroot.clone(),
        cores: s.workers,
        cpus: s.cpus.clone(),
        run_as: site.user.cloned(),
        preload: site.rundir.futex_shim().map(Path::to_path_buf),
        backlog: s.concurrency,
    };
    let h = plan.start(READY_WITHIN)?;
    configs.extend(h.configs.iter().map(|(path, content)| ConfigFile {
        path: site.rundir.relative(path),
        content: content.clone(),
    }));
    Ok(h)
}

/// Where a recipe is started and how its readiness is asked.
struct On<'a> {
    ip: IpAddr,
    backend_port: Option<u16>,
    tls: Option<&'a throng_engine::probe::TlsTarget>,
    path: &'a str,
}

/// A recipe started: answering at its address (over h2c alone when
/// `true`), or not, and why.
enum Ready {
    Up(Launched, bool),
    Not(anyhow::Error, Launched),
}

/// Starts the instance on a port of `on.ip` that `free_port` chose and
/// waits until it answers. A port another program took before the recipe could
/// listen on it is given up (the recipe stopped, its configs taken back)
/// for another, up to `PORT_TRIES` ports. Fails only when the recipe
/// cannot be launched.
fn launch_ready(
    i: &Instance,
    on: &On,
    configs: &mut Vec<ConfigFile>,
    mut free_port: impl FnMut(IpAddr) -> anyhow::Result<u16>,
) -> anyhow::Result<Ready> {
    let mut tries = 0;
    loop {
        tries += 1;
        let addr = SocketAddr::new(on.ip, free_port(on.ip)?);
        let before = configs.len();
        let mut l = launch(i, addr, on.backend_port, configs)?;
        match wait_ready(&mut l.process, addr, on.tls, on.path, READY_WITHIN) {
            Ok(h2c_only) => return Ok(Ready::Up(l, h2c_only)),
            Err(e) if e.is::<PortTaken>() && tries < PORT_TRIES => {
                l.process.stop(STOP_GRACE);
                configs.truncate(before);
            }
            Err(e) => return Ok(Ready::Not(e, l)),
        }
    }
}

/// The certificate and key where a recipe's `[tls]` config reads them.
/// Readable by all: a server that drops privileges may read its key after,
/// and the pair is made for this run alone.
fn write_tls(
    dir: &std::path::Path,
    t: &TlsFiles,
    ip: IpAddr,
) -> anyhow::Result<throng_engine::probe::TlsTarget> {
    use std::os::unix::fs::PermissionsExt;
    for (name, pem) in [("tls-cert.pem", &t.cert_pem), ("tls-key.pem", &t.key_pem)] {
        let path = dir.join(name);
        std::fs::write(&path, pem).with_context(|| format!("writing {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    t.target(ip)
}

impl Running {
    /// Stops the server and turns `e` into a start failure with its logs.
    pub fn fail(mut self, e: anyhow::Error) -> StartFailure {
        let log_tail = self.log_tail();
        self.stop();
        StartFailure {
            message: format!("{e:#}"),
            log_tail,
            configs: std::mem::take(&mut self.configs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use crate::Recipes;

    /// Another program on a port: it answers every request with a 200 of
    /// its own, until dropped.
    struct Squatter {
        addr: SocketAddr,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Squatter {
        fn start() -> Squatter {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let halt = stop.clone();
            let thread = std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if halt.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    let Ok(mut c) = conn else { continue };
                    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut buf = [0u8; 4096];
                    if c.read(&mut buf).is_ok_and(|n| n > 0) {
                        let _ = c.write_all(
                            b"HTTP/1.1 200 OK\r\nServer: squatter\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno",
                        );
                    }
                }
            });
            Squatter {
                addr,
                stop,
                thread: Some(thread),
            }
        }
    }

    impl Drop for Squatter {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = std::net::TcpStream::connect(self.addr);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// What nginx became on ports of which the first `squat` were taken,
    /// the configs written, the squatters planted, and the directory that
    /// holds its docroot (kept while the test looks).
    type Launch = (
        Ready,
        Vec<ConfigFile>,
        Vec<Squatter>,
        (RunDir, tempfile::TempDir),
    );

    fn launch_nginx(squat: usize) -> Option<Launch> {
        let recipes = Recipes::builtin();
        let recipe = recipes.get("nginx").unwrap();
        if !recipe.is_installed() {
            eprintln!("skipped: nginx is not installed");
            return None;
        }
        let base = tempfile::tempdir().unwrap();
        let rd = RunDir::create(base.path(), "taken", 0, false).unwrap();
        let docroot = rd.subdir(&["docroot"], None).unwrap();
        std::fs::write(docroot.join("index.html"), "hello\n").unwrap();
        let user = RunAs::unprivileged();
        let site = Site {
            rundir: &rd,
            user: user.as_ref(),
        };
        let s = Start::one_worker("nginx", recipe, "taken", docroot);
        let dir = rd.subdir(&["taken", "nginx"], user.as_ref()).unwrap();
        let on = On {
            ip: s.listen,
            backend_port: None,
            tls: None,
            path: s.ready_path,
        };
        let mut squatters = Vec::new();
        let mut configs = Vec::new();
        // The first `squat` ports chosen are another program's by the time
        // nginx starts: the race a free port loses.
        let pick = |ip: IpAddr| {
            if squatters.len() < squat {
                let sq = Squatter::start();
                let port = sq.addr.port();
                squatters.push(sq);
                Ok(port)
            } else {
                loopback::free_port(ip)
            }
        };
        let nginx = Instance {
            site,
            start: &s,
            recipe,
            name: "nginx",
            dir: &dir,
        };
        let ready = launch_ready(&nginx, &on, &mut configs, pick).unwrap();
        Some((ready, configs, squatters, (rd, base)))
    }

    #[test]
    fn a_port_another_program_took_is_given_up_for_another() {
        let Some((ready, configs, squatters, _base)) = launch_nginx(2) else {
            return;
        };
        let Ready::Up(mut l, _) = ready else {
            panic!("nginx did not start on a third port");
        };
        let answer = loopback::get(l.addr, "/index.html", &[], Duration::from_secs(5));
        let tree = l.process.tree();
        let listener = sockets::who_listens(l.addr, &sockets::listening_sockets(), &tree);
        l.process.stop(STOP_GRACE);
        assert_eq!(squatters.len(), 2);
        assert!(squatters.iter().all(|s| s.addr != l.addr));
        assert_eq!(listener, Listener::Server);
        let answer = answer.unwrap();
        assert_eq!(
            (answer.status, answer.body.as_slice()),
            (200, &b"hello\n"[..])
        );
        // The configs of the ports given up were taken back: one config,
        // naming the address nginx listens on, and one command.
        assert_eq!(configs.len(), 2, "{configs:?}");
        assert!(configs[0].content.contains(&format!("listen {};", l.addr)));
        for sq in &squatters {
            let gone = sq.addr.to_string();
            assert!(configs.iter().all(|c| !c.content.contains(&gone)));
        }
    }

    #[test]
    fn a_port_taken_every_time_fails_and_says_so() {
        let Some((ready, _, squatters, _base)) = launch_nginx(PORT_TRIES as usize) else {
            return;
        };
        let Ready::Not(e, mut l) = ready else {
            panic!("nginx counted as ready on another program's port");
        };
        l.process.stop(STOP_GRACE);
        assert_eq!(squatters.len(), PORT_TRIES as usize);
        assert_eq!(l.addr, squatters[2].addr);
        assert_eq!(
            format!("{e:#}"),
            format!(
                "another program took {} before the server could listen on it",
                l.addr
            )
        );
    }
}
