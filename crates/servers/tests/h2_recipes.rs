//! Every installed built-in with an `[h2]` table serves HTTP/2 over TLS and
//! still HTTPS/1.1 on the one port it is given, with the `[tls]` table's
//! TLS versions; every one with an `[h2c]` table serves HTTP/2 over
//! cleartext to a client with prior knowledge, and HTTP/1.1 beside it but
//! for nginx, which cannot and whose notes say so. Started by the launcher,
//! which waits until each answers, with curl (built with nghttp2) as the
//! client. Apache's prefork MPM and the caches have neither table.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{certificate, gone, missing};
use throng_servers::launch::TlsFiles;
use throng_servers::process::process_tree;
use throng_servers::{loopback, start, Recipe, Recipes, RunAs, RunDir, Site, Start};

const BODY: &str = "hello over http/2\n";

/// The built-ins that serve HTTP/2, over TLS and over cleartext alike.
const HTTP2: [&str; 6] = [
    "nginx",
    "lighttpd",
    "apache2-worker",
    "apache2-event",
    "h2o",
    "caddy",
];

/// Whether curl succeeded, and what it printed: the body, then
/// `%{http_code} %{http_version}`.
#[derive(Debug)]
struct Curl {
    ok: bool,
    out: String,
}

/// `curl -sk` of `url` with `args`, bounded by its own time limit.
fn curl(url: &str, args: &[&str]) -> Curl {
    let out = Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            "5",
            "-w",
            "%{http_code} %{http_version}",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs");
    Curl {
        ok: out.status.success(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// Why curl cannot be the HTTP/2 client here, if it cannot.
fn no_http2_curl() -> Option<String> {
    let out = match Command::new("curl").arg("--version").output() {
        Ok(out) => out,
        Err(e) => return Some(format!("curl does not run: {e}")),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let features = text.lines().find(|l| l.starts_with("Features:"));
    match features {
        Some(f) if f.split_whitespace().any(|w| w == "HTTP2") => None,
        _ => Some("curl was built without HTTP/2 (nghttp2)".to_string()),
    }
}

/// Starts `recipe` as `name` with the launcher, over TLS with `tls`.
fn serve(
    site: Site,
    docroot: &std::path::Path,
    name: &str,
    recipe: &Recipe,
    tls: Option<&TlsFiles>,
) -> throng_servers::Running {
    let group = if tls.is_some() { "h2" } else { "h2c" };
    let s = Start {
        tls,
        ..Start::one_worker(name, recipe, group, docroot.to_path_buf())
    };
    start(site, &s).unwrap_or_else(|e| panic!("{name}: {}\n{}", e.message, e.log_tail))
}

/// Stops `running` and checks nothing of it is left.
fn stop(name: &str, mut running: throng_servers::Running) {
    let pids = running.processes();
    let leader = running.pid();
    running.stop();
    assert!(
        gone(&pids, Duration::from_secs(5)) && process_tree(leader).is_empty(),
        "{name}: processes left after stop"
    );
}

#[test]
fn only_servers_with_http2_have_h2_and_h2c_and_what_the_lab_runs_loads() {
    for r in Recipes::builtin().all() {
        let serves = HTTP2.contains(&r.name.as_str());
        for (what, over) in [("[h2]", r.over_h2()), ("[h2c]", r.over_h2c())] {
            match over.unwrap() {
                Some(over) => {
                    assert!(serves, "{} has {what}", r.name);
                    // What the lab runs is a recipe that would load as it is.
                    let text = toml::to_string(&over).unwrap();
                    let back = Recipe::parse(&text).unwrap_or_else(|e| panic!("{}: {e:#}", r.name));
                    assert_eq!(back, over, "{} {what}", r.name);
                }
                None => assert!(!serves, "{} has no {what}", r.name),
            }
        }
    }
}

#[test]
fn every_installed_server_with_h2_serves_h2_and_https1_on_one_port() {
    if let Some(why) = no_http2_curl() {
        eprintln!("skipped: {why}");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let files = certificate();
    let rd = RunDir::create(base.path(), "h2", 0, false).unwrap();
    let docroot = rd.subdir(&["docroot"], None).unwrap();
    std::fs::write(docroot.join("index.html"), BODY).unwrap();
    let user = RunAs::unprivileged();
    let site = Site {
        rundir: &rd,
        user: user.as_ref(),
    };
    let mut served = Vec::new();
    for recipe in Recipes::builtin().all() {
        let Some(h2) = recipe.over_h2().unwrap() else {
            continue;
        };
        let name = &recipe.name;
        if let Some(why) = missing(recipe, true) {
            eprintln!("skipped {name}: {why}");
            continue;
        }
        let running = serve(site, &docroot, name, &h2, Some(&files));
        let addr = running.addr();
        let url = format!("https://{addr}/index.html");
        // curl offers h2, then http/1.1: HTTP/2 over TLS 1.2 and 1.3.
        let h2_12 = curl(&url, &["--http2", "--tlsv1.2", "--tls-max", "1.2"]);
        let h2_13 = curl(&url, &["--http2", "--tlsv1.3", "--tls-max", "1.3"]);
        // A client that offers only http/1.1 still gets it.
        let https1 = curl(&url, &["--http1.1"]);
        // The [tls] table's versions: TLS 1.1 is refused to h2 as well.
        let tls11 = curl(
            &url,
            &[
                "--http2",
                "--tlsv1.1",
                "--tls-max",
                "1.1",
                "--ciphers",
                "DEFAULT@SECLEVEL=0",
            ],
        );
        // Cleartext on the same port gets no page.
        let plain = loopback::get(addr, "/index.html", &[], Duration::from_secs(3));
        stop(name, running);
        for (what, got) in [("TLS 1.2", &h2_12), ("TLS 1.3", &h2_13)] {
            assert!(got.ok, "{name} h2 over {what}: {got:?}");
            assert_eq!(got.out, format!("{BODY}200 2"), "{name} h2 over {what}");
        }
        assert!(https1.ok, "{name} --http1.1: {https1:?}");
        assert_eq!(https1.out, format!("{BODY}200 1.1"), "{name} --http1.1");
        assert!(
            !tls11.ok && tls11.out == "000 0",
            "{name} TLS 1.1: {tls11:?}"
        );
        assert!(
            !matches!(&plain, Ok(r) if r.status == 200),
            "{name} serves cleartext on its h2 port"
        );
        served.push(name.clone());
    }
    eprintln!("served over h2: {}", served.join(", "));
}

#[test]
fn every_installed_server_with_h2c_serves_it_with_prior_knowledge() {
    if let Some(why) = no_http2_curl() {
        eprintln!("skipped: {why}");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let rd = RunDir::create(base.path(), "h2c", 0, false).unwrap();
    let docroot = rd.subdir(&["docroot"], None).unwrap();
    std::fs::write(docroot.join("index.html"), BODY).unwrap();
    let user = RunAs::unprivileged();
    let site = Site {
        rundir: &rd,
        user: user.as_ref(),
    };
    let mut served = Vec::new();
    for recipe in Recipes::builtin().all() {
        let Some(h2c) = recipe.over_h2c().unwrap() else {
            continue;
        };
        let name = &recipe.name;
        if let Some(why) = missing(recipe, false) {
            eprintln!("skipped {name}: {why}");
            continue;
        }
        let running = serve(site, &docroot, name, &h2c, None);
        let url = format!("http://{}/index.html", running.addr());
        let prior = curl(&url, &["--http2-prior-knowledge"]);
        let http1 = curl(&url, &["--http1.1"]);
        stop(name, running);
        assert!(prior.ok, "{name} h2c: {prior:?}");
        assert_eq!(prior.out, format!("{BODY}200 2"), "{name} h2c");
        if name == "nginx" {
            // nginx 1.22 serves HTTP/2 alone on an h2c port: an HTTP/1.1
            // request gets a GOAWAY frame, no response.
            assert!(
                !http1.ok && http1.out == "000 0",
                "{name} --http1.1: {http1:?}"
            );
            let notes = &recipe.h2c.as_ref().unwrap().notes;
            assert!(notes.contains("serves no HTTP/1.1 on an h2c port"));
        } else {
            assert!(http1.ok, "{name} --http1.1: {http1:?}");
            assert_eq!(http1.out, format!("{BODY}200 1.1"), "{name} --http1.1");
        }
        served.push(name.clone());
    }
    eprintln!("served over h2c: {}", served.join(", "));
}
