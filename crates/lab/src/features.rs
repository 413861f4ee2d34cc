//! Seed 004's feature table, verified live: every server is started on its
//! own with a probe configuration (its recipe's config plus basic auth on
//! `/protected/`, a bandwidth limit on `/throttle/` and compression of
//! `/gz.txt`, where the server has such settings) and asked, over
//! loopback, what it does. Nothing is taken from documentation: a "yes"
//! always comes with what was seen.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use base64::Engine as _;
use throng_engine::http1::{ParserConfig, ResponseParser};
use throng_engine::probe;
use throng_model::{FeatureResult, FeatureStatus, FEATURES};

use crate::lab::{free_port, make_dir};

use crate::process::{Launch, ServerProcess};
use crate::recipe::{Recipe, RenderContext};

/// Bandwidth limit configured on `/throttle/`, in KiB/s.
pub const THROTTLE_KIB_S: u64 = 128;
/// Size of the throttled file: four seconds at the configured rate, so
/// the second half of the transfer is past any initial burst (nginx lets
/// one second's worth through at once).
pub const THROTTLE_FILE_BYTES: usize = 4 * THROTTLE_KIB_S as usize * 1024;
/// A measured rate this far above the configured one is "not enforced".
pub const THROTTLE_TOLERANCE: f64 = 0.25;

const AUTH_USER: &str = "throng";
const AUTH_PASSWORD: &str = "probe-secret";
/// The exact bytes of `/range.bin`; the range probe asks for the first 10.
const RANGE_BODY: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
const PROTECTED_BODY: &[u8] = b"protected\n";

/// Which probe configuration a recipe gets, by the server it renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Nginx,
    Lighttpd,
    Apache,
    /// No probe settings: auth, throttling and gzip are not configured.
    Other,
}

impl Flavour {
    pub fn of(recipe: &Recipe) -> Flavour {
        let bin = Path::new(&recipe.binary)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        match bin.as_str() {
            "nginx" => Flavour::Nginx,
            "lighttpd" => Flavour::Lighttpd,
            "apache2" | "httpd" => Flavour::Apache,
            _ => Flavour::Other,
        }
    }
}

/// The recipe's first config file with the probe settings added.
pub fn patch_config(flavour: Flavour, config: &str, rundir: &Path) -> anyhow::Result<String> {
    let htpasswd = rundir.join("htpasswd").display().to_string();
    Ok(match flavour {
        Flavour::Nginx => {
            let anchor = "index index.html;\n";
            let Some(at) = config.find(anchor) else {
                bail!(
                    "nginx config has no `{}` to add probe locations after",
                    anchor.trim()
                );
            };
            let at = at + anchor.len();
            let insert = format!(
                "        gzip on;\n        gzip_types text/plain;\n        gzip_min_length 20;\n\
                 \x20       location /protected/ {{ auth_basic \"throng\"; auth_basic_user_file {htpasswd}; }}\n\
                 \x20       location /throttle/ {{ limit_rate {THROTTLE_KIB_S}k; }}\n"
            );
            format!("{}{insert}{}", &config[..at], &config[at..])
        }
        Flavour::Lighttpd => {
            let anchor = "server.modules = ( ";
            if !config.contains(anchor) {
                bail!("lighttpd config has no `{anchor}` line");
            }
            // mod_auth must come before the static file handler.
            let mut c = config.replacen(
                anchor,
                &format!("{anchor}\"mod_auth\", \"mod_authn_file\", \"mod_deflate\", "),
                1,
            );
            c.push_str(&format!(
                "auth.backend = \"htpasswd\"\n\
                 auth.backend.htpasswd.userfile = \"{htpasswd}\"\n\
                 auth.require = ( \"/protected/\" => ( \"method\" => \"basic\", \"realm\" => \"throng\", \"require\" => \"valid-user\" ) )\n\
                 deflate.mimetypes = ( \"text/plain\" )\n\
                 deflate.allowed-encodings = ( \"gzip\" )\n\
                 $HTTP[\"url\"] =~ \"^/throttle/\" {{ connection.kbytes-per-second = {THROTTLE_KIB_S} }}\n"
            ));
            c
        }
        Flavour::Apache => {
            let m = |name: &str| {
                format!("LoadModule {name}_module /usr/lib/apache2/modules/mod_{name}.so\n")
            };
            let mut c = config.to_string();
            for name in [
                "auth_basic",
                "authn_core",
                "authn_file",
                "authz_user",
                "ratelimit",
                "env",
                "filter",
                "deflate",
            ] {
                if !c.contains(&format!("mod_{name}.so")) {
                    c.push_str(&m(name));
                }
            }
            c.push_str(&format!(
                "<Location \"/protected/\">\n    AuthType Basic\n    AuthName \"throng\"\n    \
                 AuthUserFile \"{htpasswd}\"\n    Require valid-user\n</Location>\n\
                 <Location \"/throttle/\">\n    SetOutputFilter RATE_LIMIT\n    SetEnv rate-limit {THROTTLE_KIB_S}\n</Location>\n\
                 <Location \"/gz.txt\">\n    SetOutputFilter DEFLATE\n</Location>\n"
            ));
            c
        }
        Flavour::Other => config.to_string(),
    })
}

/// Writes the probe document root: what each probe asks for.
pub fn write_docroot(docroot: &Path) -> anyhow::Result<()> {
    let w = |rel: &str, data: &[u8]| -> anyhow::Result<()> {
        let p = docroot.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&p, data).with_context(|| format!("writing {}", p.display()))
    };
    w("index.html", b"hello\n")?;
    w("range.bin", RANGE_BODY)?;
    w("protected/index.html", PROTECTED_BODY)?;
    // Compressible, and longer than any server's minimum for compression.
    w("gz.txt", "throng gzip probe line\n".repeat(200).as_bytes())?;
    // A directory without an index file.
    w("listing/a.txt", b"a\n")?;
    w("listing/b.txt", b"b\n")?;
    let big: Vec<u8> = (0..THROTTLE_FILE_BYTES).map(|i| (i % 251) as u8).collect();
    w("throttle/big.bin", &big)?;
    Ok(())
}

/// `user:apr1-hash` from `htpasswd -nbm` (apr1 MD5 is read by nginx,
/// lighttpd and Apache alike).
pub fn htpasswd_line(user: &str, password: &str) -> anyhow::Result<String> {
    let out = Command::new("htpasswd")
        .args(["-nbm", user, password])
        .output()
        .context("running htpasswd (apt-get install apache2-utils)")?;
    if !out.status.success() {
        bail!("htpasswd failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !line.starts_with(&format!("{user}:$apr1$")) {
        bail!("htpasswd printed {line:?}");
    }
    Ok(line)
}

/// dpkg's Installed-Size (KiB) of a package, in bytes; 0 when unknown.
pub fn installed_bytes(package: &str) -> u64 {
    if package.is_empty() {
        return 0;
    }
    Command::new("dpkg-query")
        .args(["-W", "-f=${Installed-Size}", package])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib * 1024)
        .unwrap_or(0)
}

fn result(name: &str, status: FeatureStatus, evidence: impl Into<String>) -> FeatureResult {
    FeatureResult {
        name: name.to_string(),
        status,
        evidence: evidence.into(),
    }
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn get(port: u16, path: &str, extra: &[(&str, &str)]) -> Result<probe::Fetched, probe::FetchError> {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    probe::fetch(addr(port), req.as_bytes(), false, Duration::from_secs(5))
}

pub fn probe_basic_auth(port: u16) -> FeatureResult {
    let name = "basic_auth";
    let without = match get(port, "/protected/", &[]) {
        Ok(r) => r.status,
        Err(e) => {
            return result(
                name,
                FeatureStatus::Untested,
                format!("request failed: {e}"),
            )
        }
    };
    let token =
        base64::engine::general_purpose::STANDARD.encode(format!("{AUTH_USER}:{AUTH_PASSWORD}"));
    let with = match get(
        port,
        "/protected/",
        &[("Authorization", &format!("Basic {token}"))],
    ) {
        Ok(r) => r,
        Err(e) => {
            return result(
                name,
                FeatureStatus::Untested,
                format!("request failed: {e}"),
            )
        }
    };
    let evidence = format!("{without} without credentials, {} with", with.status);
    if without == 401 && with.status == 200 && with.body == PROTECTED_BODY {
        result(name, FeatureStatus::Yes, evidence)
    } else {
        result(name, FeatureStatus::No, evidence)
    }
}

/// Rate of the second half of a download (bytes/s), past any initial burst.
fn steady_rate(port: u16, path: &str, expect_bytes: usize, limit: Duration) -> anyhow::Result<f64> {
    let mut s = TcpStream::connect_timeout(&addr(port), Duration::from_secs(5))?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )?;
    let deadline = Instant::now() + limit;
    let mut parser = ResponseParser::new(ParserConfig::default());
    let mut body: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut half: Option<Instant> = None;
    let mut half_bytes = 0usize;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("{} of {expect_bytes} bytes after {limit:?}", body.len());
        }
        s.set_read_timeout(Some(left))?;
        let n = s.read(&mut buf)?;
        if n == 0 {
            bail!(
                "connection closed after {} of {expect_bytes} bytes",
                body.len()
            );
        }
        let (_, done) = parser
            .feed_with(&buf[..n], &mut body)
            .map_err(|e| anyhow::anyhow!("invalid response: {e:?}"))?;
        let now = Instant::now();
        if half.is_none() && body.len() >= expect_bytes / 2 {
            half = Some(now);
            half_bytes = body.len();
        }
        if let Some(resp) = done {
            if resp.status != 200 || body.len() != expect_bytes {
                bail!(
                    "status {}, {} bytes instead of 200 and {expect_bytes}",
                    resp.status,
                    body.len()
                );
            }
            let t = now.duration_since(half.unwrap_or(now)).as_secs_f64();
            let bytes = (body.len() - half_bytes) as f64;
            // The whole second half in one read: faster than the clock can tell.
            return Ok(if t > 0.0 { bytes / t } else { f64::INFINITY });
        }
    }
}

pub fn probe_throttling(port: u16) -> FeatureResult {
    let name = "throttling";
    let configured = (THROTTLE_KIB_S * 1024) as f64;
    match steady_rate(
        port,
        "/throttle/big.bin",
        THROTTLE_FILE_BYTES,
        Duration::from_secs(15),
    ) {
        Ok(rate) => {
            let evidence = format!(
                "measured {:.0} KB/s against {:.0} KB/s configured",
                rate / 1000.0,
                configured / 1000.0
            );
            if rate <= configured * (1.0 + THROTTLE_TOLERANCE) {
                result(name, FeatureStatus::Yes, evidence)
            } else {
                result(name, FeatureStatus::No, format!("{evidence}: not enforced"))
            }
        }
        Err(e) => result(
            name,
            FeatureStatus::Untested,
            format!("download failed: {e:#}"),
        ),
    }
}

pub fn probe_gzip(port: u16) -> FeatureResult {
    match get(port, "/gz.txt", &[("Accept-Encoding", "gzip")]) {
        Ok(r) => match r.header("content-encoding") {
            Some(enc) if enc.eq_ignore_ascii_case("gzip") => result(
                "gzip",
                FeatureStatus::Yes,
                format!(
                    "Content-Encoding: gzip, 4600-byte text sent as {} bytes",
                    r.body.len()
                ),
            ),
            other => result(
                "gzip",
                FeatureStatus::No,
                format!(
                    "Accept-Encoding: gzip answered with {} and Content-Encoding {}",
                    r.status,
                    other.unwrap_or("absent")
                ),
            ),
        },
        Err(e) => result(
            "gzip",
            FeatureStatus::Untested,
            format!("request failed: {e}"),
        ),
    }
}

pub fn probe_range(port: u16) -> FeatureResult {
    match get(port, "/range.bin", &[("Range", "bytes=0-9")]) {
        Ok(r) if r.status == 206 && r.body == RANGE_BODY[..10] => result(
            "range",
            FeatureStatus::Yes,
            "Range: bytes=0-9 answered 206 with the exact 10 bytes",
        ),
        Ok(r) => result(
            "range",
            FeatureStatus::No,
            format!(
                "Range: bytes=0-9 answered {} with {} bytes",
                r.status,
                r.body.len()
            ),
        ),
        Err(e) => result(
            "range",
            FeatureStatus::Untested,
            format!("request failed: {e}"),
        ),
    }
}

/// One request on an open connection; the status of its complete response.
fn exchange(s: &mut TcpStream, port: u16, deadline: Instant) -> anyhow::Result<u16> {
    s.write_all(format!("GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes())?;
    let mut parser = ResponseParser::new(ParserConfig::default());
    let mut body: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("no complete response in time");
        }
        s.set_read_timeout(Some(left))?;
        let n = s.read(&mut buf)?;
        if n == 0 {
            bail!("connection closed");
        }
        let (_, done) = parser
            .feed_with(&buf[..n], &mut body)
            .map_err(|e| anyhow::anyhow!("invalid response: {e:?}"))?;
        if let Some(r) = done {
            return Ok(r.status);
        }
    }
}

pub fn probe_keep_alive(port: u16) -> FeatureResult {
    let deadline = Instant::now() + Duration::from_secs(5);
    let run = || -> anyhow::Result<(u16, anyhow::Result<u16>)> {
        let mut s = TcpStream::connect_timeout(&addr(port), Duration::from_secs(5))?;
        let first = exchange(&mut s, port, deadline)?;
        Ok((first, exchange(&mut s, port, deadline)))
    };
    match run() {
        Ok((a, Ok(b))) => result(
            "keep_alive",
            FeatureStatus::Yes,
            format!("two requests on one connection answered {a} and {b}"),
        ),
        Ok((a, Err(e))) => result(
            "keep_alive",
            FeatureStatus::No,
            format!("first request answered {a}, the second on the same connection: {e:#}"),
        ),
        Err(e) => result(
            "keep_alive",
            FeatureStatus::Untested,
            format!("request failed: {e:#}"),
        ),
    }
}

pub fn probe_dir_listing_off(port: u16) -> FeatureResult {
    match get(port, "/listing/", &[]) {
        Ok(r) if r.status == 403 || r.status == 404 => result(
            "dir_listing_off",
            FeatureStatus::Yes,
            format!("GET of a directory without index answered {}", r.status),
        ),
        Ok(r) => {
            let lists = String::from_utf8_lossy(&r.body).contains("a.txt");
            result(
                "dir_listing_off",
                FeatureStatus::No,
                format!(
                    "GET of a directory without index answered {}{}",
                    r.status,
                    if lists { " with a listing" } else { "" }
                ),
            )
        }
        Err(e) => result(
            "dir_listing_off",
            FeatureStatus::Untested,
            format!("request failed: {e}"),
        ),
    }
}

/// From the rendered configuration: the only place the choice is made.
pub fn sendfile_from_config(flavour: Flavour, config: &str) -> FeatureResult {
    let on = |needle: &str| {
        config.lines().any(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase()
                == needle
        })
    };
    let (status, evidence) = match flavour {
        Flavour::Nginx if on("sendfile on;") => (FeatureStatus::Yes, "config: sendfile on"),
        Flavour::Nginx => (
            FeatureStatus::No,
            "config: no `sendfile on` (nginx's default is off)",
        ),
        Flavour::Lighttpd if config.contains("server.network-backend") => (
            FeatureStatus::No,
            "config: server.network-backend set explicitly",
        ),
        Flavour::Lighttpd => (
            FeatureStatus::Yes,
            "config: lighttpd's default network backend (sendfile)",
        ),
        Flavour::Apache if on("enablesendfile on") => {
            (FeatureStatus::Yes, "config: EnableSendfile On")
        }
        Flavour::Apache => (
            FeatureStatus::No,
            "config: no `EnableSendfile On` (Apache's default is off)",
        ),
        Flavour::Other => (FeatureStatus::Untested, "no sendfile setting in the recipe"),
    };
    result("sendfile", status, evidence)
}

/// Uid of a process from /proc/<pid>/status (real uid).
fn uid_of(pid: i32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn chrooted(pid: i32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/root")).is_ok_and(|p| p != Path::new("/"))
}

/// Workers (every process but the leader, or the leader alone when it is
/// the only one) must run as the unprivileged user.
pub fn probe_privilege_drop(tree: &[i32], user: Option<&(String, u32, u32)>) -> FeatureResult {
    let name = "privilege_drop";
    let Some((uname, uid, _)) = user else {
        return result(
            name,
            FeatureStatus::Untested,
            "the lab does not run as root, so there is no privilege to drop",
        );
    };
    let workers: &[i32] = if tree.len() > 1 { &tree[1..] } else { tree };
    let uids: Vec<Option<u32>> = workers.iter().map(|&p| uid_of(p)).collect();
    if workers.is_empty() || uids.iter().any(Option::is_none) {
        return result(
            name,
            FeatureStatus::Untested,
            "the server's processes could not be read",
        );
    }
    let chroot = if workers.iter().any(|&p| chrooted(p)) {
        ", chrooted"
    } else {
        ", not chrooted"
    };
    if uids.iter().all(|u| *u == Some(*uid)) {
        result(
            name,
            FeatureStatus::Yes,
            format!(
                "{} worker process(es) run as {uname} (uid {uid}){chroot}",
                workers.len()
            ),
        )
    } else {
        let list: Vec<String> = uids.iter().map(|u| u.unwrap_or(0).to_string()).collect();
        result(
            name,
            FeatureStatus::No,
            format!("worker uids {}{chroot}", list.join(", ")),
        )
    }
}

/// Servers known to have no per-connection bandwidth limit at all.
fn no_rate_limit(recipe: &Recipe) -> bool {
    let bin = Path::new(&recipe.binary).file_name();
    bin.is_some_and(|b| b == "h2o" || b == "caddy")
}

/// Where and as whom the probe server runs.
#[derive(Debug, Clone)]
pub struct ProbeSetup {
    /// Scratch directory (created; removed by the caller).
    pub dir: PathBuf,
    /// Unprivileged user (name, uid, gid) when the lab runs as root.
    pub user: Option<(String, u32, u32)>,
    pub cpus: Vec<usize>,
}

/// A started probe server and, for caches, its backend.
struct Started {
    procs: Vec<ServerProcess>,
}

impl Drop for Started {
    fn drop(&mut self) {
        for p in self.procs.iter_mut().rev() {
            p.stop(Duration::from_secs(5));
        }
    }
}

fn launch(
    recipe: &Recipe,
    name: &str,
    setup: &ProbeSetup,
    docroot: &Path,
    port: u16,
    backend_port: Option<u16>,
) -> anyhow::Result<(ServerProcess, Flavour, String)> {
    let owner = setup.user.as_ref().map(|(_, u, g)| (*u, *g));
    let rundir = setup.dir.join(name);
    make_dir(&rundir, owner)?;
    let rc = RenderContext {
        port,
        backend_port,
        docroot: docroot.to_path_buf(),
        rundir: rundir.clone(),
        workers: 1,
        concurrency: 16,
        user: setup.user.as_ref().map(|u| u.0.clone()).unwrap_or_default(),
        group: setup.user.as_ref().map(|u| u.0.clone()).unwrap_or_default(),
        as_root: setup.user.is_some(),
    };
    let flavour = Flavour::of(recipe);
    if flavour != Flavour::Other {
        let line = htpasswd_line(AUTH_USER, AUTH_PASSWORD)?;
        std::fs::write(rundir.join("htpasswd"), format!("{line}\n"))?;
    }
    let mut first = String::new();
    for (i, (path, content)) in recipe.render_configs(&rc)?.into_iter().enumerate() {
        let content = if i == 0 {
            let c = patch_config(flavour, &content, &rundir)?;
            first = c.clone();
            c
        } else {
            content
        };
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
    }
    let argv = recipe.render_start(&rc)?;
    let p = ServerProcess::spawn(&Launch {
        name: name.to_string(),
        argv,
        env: recipe.render_env(&rc)?,
        cwd: rundir.clone(),
        cpus: setup.cpus.clone(),
        run_as: if recipe.drop_privileges { owner } else { None },
        log: rundir.join("output.log"),
        stop_signal: recipe.stop_signal(),
    })?;
    Ok((p, flavour, first))
}

fn wait_ready(p: &mut ServerProcess, port: u16, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(e) = p.exited() {
            bail!(
                "{} exited ({e}) before it was ready: {}",
                p.name,
                p.log_tail(&[], 10)
            );
        }
        match get(port, "/index.html", &[]) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                bail!("{} not ready after {within:?}: {e}", p.name)
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Starts the server with the probe configuration and probes every
/// feature, in [`FEATURES`] order. A server that does not start gives
/// "untested" everywhere, with the reason.
pub fn probe_server(
    name: &str,
    recipe: &Recipe,
    backend: Option<&Recipe>,
    setup: &ProbeSetup,
) -> Vec<FeatureResult> {
    match probe_started(name, recipe, backend, setup) {
        Ok(v) => v,
        Err(e) => FEATURES
            .iter()
            .map(|f| {
                result(
                    f,
                    FeatureStatus::Untested,
                    format!("the probe server failed: {e:#}"),
                )
            })
            .collect(),
    }
}

fn probe_started(
    name: &str,
    recipe: &Recipe,
    backend: Option<&Recipe>,
    setup: &ProbeSetup,
) -> anyhow::Result<Vec<FeatureResult>> {
    make_dir(&setup.dir, None)?;
    let docroot = setup.dir.join("docroot");
    make_dir(&docroot, None)?;
    write_docroot(&docroot)?;
    let mut started = Started { procs: Vec::new() };
    let mut backend_port = None;
    let mut backend_flavour = None;
    if let Some(b) = backend {
        let bp = free_port()?;
        let (mut p, fl, _) = launch(b, &format!("{name}-backend"), setup, &docroot, bp, None)?;
        let ready = wait_ready(&mut p, bp, Duration::from_secs(15));
        started.procs.push(p);
        ready?;
        backend_port = Some(bp);
        backend_flavour = Some(fl);
    }
    let port = free_port()?;
    let (mut p, flavour, config) = launch(recipe, name, setup, &docroot, port, backend_port)?;
    let ready = wait_ready(&mut p, port, Duration::from_secs(15));
    let tree = p.tree();
    started.procs.push(p);
    ready?;
    let configured = flavour != Flavour::Other;
    let mut out = Vec::new();
    for f in FEATURES {
        out.push(match *f {
            "basic_auth" if configured => probe_basic_auth(port),
            "throttling" if configured => probe_throttling(port),
            "gzip" if configured => probe_gzip(port),
            "throttling" if no_rate_limit(recipe) => result(
                f,
                FeatureStatus::No,
                format!("{} has no bandwidth limit setting", recipe.name),
            ),
            "basic_auth" | "throttling" | "gzip" => {
                let why = match backend_flavour {
                    Some(_) => "a cache in front: the setting belongs to its backend".to_string(),
                    None => format!("no probe configuration for {}", recipe.name),
                };
                result(f, FeatureStatus::Untested, why)
            }
            "privilege_drop" => probe_privilege_drop(&tree, setup.user.as_ref()),
            "range" => probe_range(port),
            "keep_alive" => probe_keep_alive(port),
            "dir_listing_off" => probe_dir_listing_off(port),
            "sendfile" => sendfile_from_config(flavour, &config),
            "http2" | "tls" => result(f, FeatureStatus::Untested, "untested until TLS load lands"),
            other => result(other, FeatureStatus::Untested, "no probe"),
        });
    }
    Ok(out)
}
