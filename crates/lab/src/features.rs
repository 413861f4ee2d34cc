//! ACME's feature table (basic auth, throttling, chroot, ...), verified
//! live: every server is started on its own with a probe configuration
//! (its recipe's config plus the recipe's `[probe]` settings: basic auth on
//! `/protected/`, a bandwidth limit on `/throttle/` and compression of
//! `/gz.txt`, where the server has such settings) and asked, over
//! loopback, what it does. Nothing is taken from documentation: a "yes"
//! always comes with what was seen.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use base64::Engine as _;
use throng_engine::http1::{ParserConfig, ResponseParser};
use throng_engine::probe::{FetchError, Fetched};
use throng_model::{Feature, FeatureResult, FeatureStatus};
use throng_servers::launch::{self, Site, Start};
use throng_servers::loopback;
use throng_servers::probe::ProbeValues;
use throng_servers::Recipe;

use crate::study::StudyServer;

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

/// The package dpkg says installed `binary`, when it knows: the recipe's
/// package can be a metapackage (nginx-light, 93 KiB) or hold only the
/// configs (apache2, where the server is apache2-bin), and its size then
/// said nothing of the server's.
pub fn owning_package(binary: &str) -> Option<String> {
    if !binary.starts_with('/') {
        return None;
    }
    let out = Command::new("dpkg-query")
        .args(["-S", binary])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // "nginx: /usr/sbin/nginx", or "pkg:amd64: /path"; a diversion's
    // lines say so and are not an owner.
    text.lines()
        .filter(|l| !l.starts_with("diversion "))
        .find_map(|l| l.strip_suffix(binary)?.strip_suffix(": "))
        .map(|pkg| pkg.split(':').next().unwrap_or(pkg).trim().to_string())
        .filter(|pkg| !pkg.is_empty() && !pkg.contains(','))
}

/// The package that installed a recipe's server on this machine, as every
/// report and `throng servers` name it: dpkg's owner of its binary, else
/// the package the recipe installs it with.
pub fn installed_package(recipe: &Recipe) -> String {
    owning_package(&recipe.binary).unwrap_or_else(|| recipe.package.clone())
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

fn result(name: Feature, status: FeatureStatus, evidence: impl Into<String>) -> FeatureResult {
    FeatureResult::new(name, status, evidence)
}

fn get(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Result<Fetched, FetchError> {
    loopback::get(addr, path, extra, Duration::from_secs(5))
}

pub fn probe_basic_auth(addr: SocketAddr) -> FeatureResult {
    let name = Feature::BasicAuth;
    let without = match get(addr, "/protected/", &[]) {
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
        addr,
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
fn steady_rate(
    addr: SocketAddr,
    path: &str,
    expect_bytes: usize,
    limit: Duration,
) -> anyhow::Result<f64> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.write_all(&loopback::request(addr, path, &[("Connection", "close")]))?;
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

pub fn probe_throttling(addr: SocketAddr) -> FeatureResult {
    let name = Feature::Throttling;
    let configured = (THROTTLE_KIB_S * 1024) as f64;
    match steady_rate(
        addr,
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

pub fn probe_gzip(addr: SocketAddr) -> FeatureResult {
    match get(addr, "/gz.txt", &[("Accept-Encoding", "gzip")]) {
        Ok(r) => match r.header("content-encoding") {
            Some(enc) if enc.eq_ignore_ascii_case("gzip") => result(
                Feature::Gzip,
                FeatureStatus::Yes,
                format!(
                    "Content-Encoding: gzip, 4600-byte text sent as {} bytes",
                    r.body.len()
                ),
            ),
            other => result(
                Feature::Gzip,
                FeatureStatus::No,
                format!(
                    "Accept-Encoding: gzip answered with {} and Content-Encoding {}",
                    r.status,
                    other.unwrap_or("absent")
                ),
            ),
        },
        Err(e) => result(
            Feature::Gzip,
            FeatureStatus::Untested,
            format!("request failed: {e}"),
        ),
    }
}

pub fn probe_range(addr: SocketAddr) -> FeatureResult {
    match get(addr, "/range.bin", &[("Range", "bytes=0-9")]) {
        Ok(r) if r.status == 206 && r.body == RANGE_BODY[..10] => result(
            Feature::Range,
            FeatureStatus::Yes,
            "Range: bytes=0-9 answered 206 with the exact 10 bytes",
        ),
        Ok(r) => result(
            Feature::Range,
            FeatureStatus::No,
            format!(
                "Range: bytes=0-9 answered {} with {} bytes",
                r.status,
                r.body.len()
            ),
        ),
        Err(e) => result(
            Feature::Range,
            FeatureStatus::Untested,
            format!("request failed: {e}"),
        ),
    }
}

/// One request on an open connection; the status of its complete response.
fn exchange(s: &mut TcpStream, addr: SocketAddr, deadline: Instant) -> anyhow::Result<u16> {
    s.write_all(&loopback::request(addr, "/index.html", &[]))?;
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

pub fn probe_keep_alive(addr: SocketAddr) -> FeatureResult {
    let deadline = Instant::now() + Duration::from_secs(5);
    let run = || -> anyhow::Result<(u16, anyhow::Result<u16>)> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        let first = exchange(&mut s, addr, deadline)?;
        Ok((first, exchange(&mut s, addr, deadline)))
    };
    match run() {
        Ok((a, Ok(b))) => result(
            Feature::KeepAlive,
            FeatureStatus::Yes,
            format!("two requests on one connection answered {a} and {b}"),
        ),
        Ok((a, Err(e))) => result(
            Feature::KeepAlive,
            FeatureStatus::No,
            format!("first request answered {a}, the second on the same connection: {e:#}"),
        ),
        Err(e) => result(
            Feature::KeepAlive,
            FeatureStatus::Untested,
            format!("request failed: {e:#}"),
        ),
    }
}

pub fn probe_dir_listing_off(addr: SocketAddr) -> FeatureResult {
    match get(addr, "/listing/", &[]) {
        Ok(r) if r.status == 403 || r.status == 404 => result(
            Feature::DirListingOff,
            FeatureStatus::Yes,
            format!("GET of a directory without index answered {}", r.status),
        ),
        Ok(r) => {
            let lists = String::from_utf8_lossy(&r.body).contains("a.txt");
            result(
                Feature::DirListingOff,
                FeatureStatus::No,
                format!(
                    "GET of a directory without index answered {}{}",
                    r.status,
                    if lists { " with a listing" } else { "" }
                ),
            )
        }
        Err(e) => result(
            Feature::DirListingOff,
            FeatureStatus::Untested,
            format!("request failed: {e}"),
        ),
    }
}

/// From the rendered configuration: the only place the choice is made.
/// A server with no such setting (h2o, Varnish) answers from its recipe's
/// parity entry, the same documented default the settings table shows, so
/// the two tables of a report cannot disagree on it.
pub fn sendfile_from_config(recipe: &Recipe, config: &str) -> FeatureResult {
    if let Some(a) = recipe.probe.sendfile(config) {
        return result(Feature::Sendfile, a.status, a.evidence.clone());
    }
    match recipe.parity.get("sendfile") {
        Some(rule) if rule.after.is_none() && rule.value.is_none() => {
            let status = match rule.default.as_str() {
                "on" => FeatureStatus::Yes,
                "off" => FeatureStatus::No,
                _ => FeatureStatus::Untested,
            };
            result(Feature::Sendfile, status, rule.doc.clone())
        }
        _ => result(
            Feature::Sendfile,
            FeatureStatus::Untested,
            "no sendfile setting in the recipe",
        ),
    }
}

/// Starts the server with the probe configuration and probes every
/// feature, in [`Feature::ALL`] order. A server that does not start gives
/// "untested" everywhere, with the reason.
pub fn probe_server(site: Site, server: &StudyServer, cpus: &[usize]) -> Vec<FeatureResult> {
    match probe_started(site, server, cpus) {
        Ok(v) => v,
        Err(e) => Feature::ALL
            .iter()
            .map(|&f| {
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
    site: Site,
    server: &StudyServer,
    cpus: &[usize],
) -> anyhow::Result<Vec<FeatureResult>> {
    if server.protocol != crate::study::Protocol::Http1 {
        return probe_protocol(site, server, cpus);
    }
    let docroot = site.rundir.subdir(&["features-docroot"], None)?;
    write_docroot(&docroot)?;
    let recipe = &server.recipe;
    let htpasswd = htpasswd_line(AUTH_USER, AUTH_PASSWORD)?;
    let patch = |r: &Recipe, config: &str, dir: &Path| -> anyhow::Result<String> {
        if !r.probe.configures() {
            return Ok(config.to_string());
        }
        let file = dir.join("htpasswd");
        std::fs::write(&file, format!("{htpasswd}\n"))
            .with_context(|| format!("writing {}", file.display()))?;
        let values = ProbeValues {
            htpasswd: &file,
            throttle_kib_s: THROTTLE_KIB_S,
        };
        r.probe.apply(config, &values)
    };
    let start = Start {
        backend: server.backend.as_ref(),
        cpus: cpus.to_vec(),
        patch: Some(&patch),
        ..Start::one_worker(&server.name, recipe, "features", docroot)
    };
    let mut running = launch::start(site, &start)
        .map_err(|f| anyhow::anyhow!("{}{}", f.message, tail_note(&f.log_tail)))?;
    let addr = running.addr();
    let tree = running.processes();
    let config = running
        .configs
        .iter()
        .find(|c| c.path.starts_with(&format!("features/{}/", server.name)))
        .map(|c| c.content.clone())
        .unwrap_or_default();
    let configured = recipe.probe.configures();
    let mut out = Vec::new();
    for f in Feature::ALL {
        out.push(match f {
            Feature::BasicAuth if configured => probe_basic_auth(addr),
            Feature::Throttling if configured => probe_throttling(addr),
            Feature::Gzip if configured => probe_gzip(addr),
            // Untested, not no: a server can have a limit its recipe does
            // not set (h2o's throttle-response, set per response by a
            // header).
            Feature::Throttling if !recipe.probe.bandwidth_limit => result(
                f,
                FeatureStatus::Untested,
                format!("throng's {} recipe sets no bandwidth limit", recipe.name),
            ),
            Feature::BasicAuth | Feature::Throttling | Feature::Gzip => {
                let why = match &server.backend {
                    Some(_) => "a cache in front: the setting belongs to its backend".to_string(),
                    None => format!("no probe configuration for {}", recipe.name),
                };
                result(f, FeatureStatus::Untested, why)
            }
            Feature::PrivilegeDrop => {
                let mut r = crate::privilege::probe(addr, &tree, site.user);
                // Unprivileged from the start, by the lab's hand: what ran
                // is no measure of the server's own privilege drop (Caddy
                // has none).
                if recipe.drop_privileges && site.user.is_some() {
                    r.evidence.push_str(&format!(
                        "; started so by throng, {} not being started as root",
                        recipe.name
                    ));
                }
                r
            }
            Feature::Range => probe_range(addr),
            Feature::KeepAlive => probe_keep_alive(addr),
            Feature::DirListingOff => probe_dir_listing_off(addr),
            Feature::Sendfile => sendfile_from_config(recipe, &config),
            Feature::Http2 => match (recipe.over_h2(), recipe.over_h2c()) {
                (Ok(None), Ok(None)) => result(
                    f,
                    FeatureStatus::No,
                    format!("throng's recipe for {} serves no HTTP/2", recipe.name),
                ),
                _ => result(
                    f,
                    FeatureStatus::Untested,
                    format!(
                        "{} serves HTTP/2 in throng's recipe: add \"h2\" or \"h2c\" to the \
                         study's `protocols` to measure and probe it",
                        recipe.name
                    ),
                ),
            },
            Feature::Tls => match recipe.over_tls() {
                Ok(Some(_)) => result(
                    f,
                    FeatureStatus::Untested,
                    format!(
                        "{} serves TLS in throng's recipe: add \"https1\" to the study's \
                         `protocols` to measure and probe it",
                        recipe.name
                    ),
                ),
                _ => result(
                    f,
                    FeatureStatus::No,
                    format!("throng's recipe for {} serves no TLS", recipe.name),
                ),
            },
        });
    }
    running.stop();
    Ok(out)
}

/// A server over TLS, HTTP/2 or HTTP/3: started as the study runs it (over
/// TLS with the run's kind of certificate), and one real exchange says
/// what it speaks: the handshake's version, cipher and ALPN for TLS, a GET
/// answered over HTTP/2 for h2 and h2c, one over HTTP/3 for h3. Every other feature is the
/// cleartext server's: probed on the study's own cleartext server, or,
/// when the study runs none, on its recipe over cleartext here.
fn probe_protocol(
    site: Site,
    server: &StudyServer,
    cpus: &[usize],
) -> anyhow::Result<Vec<FeatureResult>> {
    let proto = server.protocol;
    let mine =
        |f: Feature| (f == Feature::Tls && proto.tls()) || (f == Feature::Http2 && proto.h2());
    // The feature table has no HTTP/3 column: an h3 server's TLS row is
    // its QUIC side's, and a recipe without HTTP/3 still serves TLS.
    let absent = match proto {
        crate::study::Protocol::H3 => FeatureStatus::Untested,
        _ => FeatureStatus::No,
    };
    let mut live: Vec<FeatureResult> = match &server.unsupported {
        Some(why) => Feature::ALL
            .iter()
            .filter(|&&f| mine(f))
            .map(|&f| result(f, absent, why.clone()))
            .collect(),
        None => probe_live(site, server, cpus)?,
    };
    // Without a cleartext server in the study, nothing else probes the
    // rest: its recipe over cleartext does, and the evidence says where.
    let mut cleartext = match &server.cleartext {
        Some(recipe) => {
            let plain = StudyServer {
                recipe: recipe.clone(),
                protocol: crate::study::Protocol::Http1,
                unsupported: None,
                cleartext: None,
                ..server.clone()
            };
            Some(probe_server(site, &plain, cpus))
        }
        None => None,
    };
    let mut out = Vec::new();
    for f in Feature::ALL {
        if let Some(k) = live.iter().position(|r| r.name == f) {
            out.push(live.remove(k));
            continue;
        }
        match cleartext
            .as_mut()
            .and_then(|c| c.iter().position(|r| r.name == f).map(|k| c.remove(k)))
        {
            Some(mut r) => {
                r.evidence.push_str(
                    " (probed on the same recipe over cleartext HTTP/1.1, which the study \
                     does not measure)",
                );
                out.push(r);
            }
            None => out.push(result(
                f,
                FeatureStatus::Untested,
                "the same server as over cleartext HTTP/1.1: probed there",
            )),
        }
    }
    Ok(out)
}

fn probe_live(
    site: Site,
    server: &StudyServer,
    cpus: &[usize],
) -> anyhow::Result<Vec<FeatureResult>> {
    let proto = server.protocol;
    let docroot = site.rundir.subdir(&["features-docroot"], None)?;
    write_docroot(&docroot)?;
    let ip: std::net::IpAddr = Ipv4Addr::LOCALHOST.into();
    let files = match proto.tls() {
        true => Some(crate::certs::for_address(ip, server.certificate)?),
        false => None,
    };
    let start = Start {
        backend: server.backend.as_ref(),
        cpus: cpus.to_vec(),
        listen: ip,
        tls: files.as_ref(),
        ..Start::one_worker(&server.name, &server.recipe, "features", docroot)
    };
    let mut running = launch::start(site, &start)
        .map_err(|f| anyhow::anyhow!("{}{}", f.message, tail_note(&f.log_tail)))?;
    let addr = running.addr();
    let wait = Duration::from_secs(5);
    if proto == crate::study::Protocol::H3 {
        let found = crate::h3::probe(addr, files.as_ref().map(|f| f.cert_pem.clone()), wait);
        running.stop();
        return Ok(vec![found]);
    }
    let mut out = Vec::new();
    let tls_spec = files.as_ref().map(|f| throng_engine::tls::TlsSpec {
        ca_pem: Some(f.cert_pem.clone()),
        alpn: vec![proto.alpn().to_string()],
        resume: true,
        ..throng_engine::tls::TlsSpec::default()
    });
    if let Some(spec) = &tls_spec {
        // Two handshakes with one session cache: the second says whether
        // the server resumes sessions as its recipe leaves it to.
        let config = spec.client_config()?;
        let shake = || {
            std::net::TcpStream::connect_timeout(&addr, wait)
                .map_err(|e| e.to_string())
                .and_then(|s| {
                    throng_engine::tls::handshake_with(
                        config.clone(),
                        &addr.to_string(),
                        s,
                        wait,
                        Some(Duration::from_millis(200)),
                    )
                })
        };
        let shook = shake();
        let again = shook.as_ref().ok().map(|_| shake());
        out.push(match shook {
            Ok(n) => result(
                Feature::Tls,
                FeatureStatus::Yes,
                format!(
                    "handshake: {} {}, ALPN {}; {}; OCSP stapling untested (the run's \
                     certificate is self-signed, with no responder to staple)",
                    n.version,
                    n.cipher,
                    n.alpn.as_deref().unwrap_or("none"),
                    match again {
                        Some(Ok(m)) if m.resumed => "a second handshake resumed the session",
                        Some(Ok(_)) => "a second handshake was not resumed",
                        _ => "a second handshake failed",
                    }
                ),
            ),
            Err(e) => result(
                Feature::Tls,
                FeatureStatus::No,
                format!("handshake failed: {e}"),
            ),
        });
    }
    if proto.h2() {
        let target = match &tls_spec {
            Some(spec) => Some(throng_engine::probe::TlsTarget {
                config: spec.client_config()?,
                name: throng_engine::tls::server_name(&addr.to_string())
                    .map_err(|e| anyhow::anyhow!(e))?,
            }),
            None => None,
        };
        let how = if proto.tls() {
            "over TLS, ALPN h2"
        } else {
            "over cleartext with prior knowledge (h2c)"
        };
        let got = throng_engine::probe::fetch_h2(
            addr,
            target.as_ref(),
            &addr.to_string(),
            "/index.html",
            &[],
            wait,
        );
        out.push(match got {
            Ok(r) => result(
                Feature::Http2,
                FeatureStatus::Yes,
                format!("GET /index.html answered {} over HTTP/2 {how}", r.status),
            ),
            Err(e) => result(
                Feature::Http2,
                FeatureStatus::No,
                format!("GET /index.html over HTTP/2 {how} failed: {e}"),
            ),
        });
    }
    running.stop();
    Ok(out)
}

fn tail_note(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", tail.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_is_owned_by_the_package_dpkg_names() {
        // Every Debian machine has dpkg itself installed by dpkg.
        assert_eq!(owning_package("/usr/bin/dpkg").as_deref(), Some("dpkg"));
        assert_eq!(owning_package("/nonexistent/server"), None);
        assert_eq!(owning_package("nginx"), None);
    }

    #[test]
    fn a_server_without_a_sendfile_setting_answers_from_its_documented_default() {
        let recipes = throng_servers::Recipes::builtin();
        for name in ["h2o", "varnish"] {
            let r = recipes.get(name).unwrap();
            let f = sendfile_from_config(r, "");
            assert_eq!(f.status, FeatureStatus::No, "{name}");
            assert_eq!(f.evidence, r.parity["sendfile"].doc, "{name}");
        }
        let nginx = recipes.get("nginx").unwrap();
        assert_eq!(
            sendfile_from_config(nginx, "sendfile on;\n").status,
            FeatureStatus::Yes
        );
    }
}
