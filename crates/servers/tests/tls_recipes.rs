//! Every installed built-in with a `[tls]` table serves HTTPS/1.1 on the
//! port it is given, and nothing else there: started by the launcher with
//! a self-signed ECDSA P-256 certificate made by the `openssl` command, it
//! answers curl over TLS 1.2 and 1.3 with HTTP/1.1, refuses TLS 1.1 and
//! cleartext, and offers no h2 (but for h2o, which cannot be kept from it
//! and whose notes say so). Caches have no `[tls]` table.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use common::{certificate, gone, missing};
use throng_servers::process::process_tree;
use throng_servers::{loopback, start, Recipe, Recipes, RunAs, RunDir, Site, Start};

const BODY: &str = "hello over tls\n";

/// Whether curl succeeded, and what it printed: the body, then
/// `%{http_code} %{http_version}`.
struct Curl {
    ok: bool,
    out: String,
}

/// `curl -sk` of `/index.html` with `args`, bounded by its own time limit.
fn curl(addr: SocketAddr, args: &[&str]) -> Curl {
    let url = format!("https://{addr}/index.html");
    let out = Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            "5",
            "-w",
            "%{http_code} %{http_version}",
        ])
        .args(args)
        .arg(&url)
        .output()
        .expect("curl runs");
    Curl {
        ok: out.status.success(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// The cipher suite a `curl -v` handshake with `args` settled on.
fn cipher(addr: SocketAddr, args: &[&str]) -> String {
    let url = format!("https://{addr}/index.html");
    let out = Command::new("curl")
        .args(["-skv", "--max-time", "5", "--http1.1", "-o", "/dev/null"])
        .args(args)
        .arg(&url)
        .output()
        .expect("curl runs");
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("* SSL connection using "))
        .and_then(|l| l.split(" / ").nth(1))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn caches_have_no_tls_and_every_other_builtin_checks_over_tls() {
    for r in Recipes::builtin().all() {
        let tls = r.over_tls().unwrap();
        match r.name.as_str() {
            "varnish" | "varnish-apache" | "squid" | "trafficserver" => {
                assert!(tls.is_none(), "{}", r.name)
            }
            _ => {
                let tls = tls.unwrap_or_else(|| panic!("{} has no [tls]", r.name));
                // What the lab runs is a recipe that would load as it is.
                let text = toml::to_string(&tls).unwrap();
                Recipe::parse(&text).unwrap_or_else(|e| panic!("{}: {e:#}", r.name));
            }
        }
    }
}

#[test]
fn every_installed_server_with_tls_serves_https1_only() {
    let base = tempfile::tempdir().unwrap();
    let files = certificate();
    let rd = RunDir::create(base.path(), "tls", 0, false).unwrap();
    let docroot = rd.subdir(&["docroot"], None).unwrap();
    std::fs::write(docroot.join("index.html"), BODY).unwrap();
    let user = RunAs::unprivileged();
    let site = Site {
        rundir: &rd,
        user: user.as_ref(),
    };
    let listen = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut served = Vec::new();
    for recipe in Recipes::builtin().all() {
        let Some(tls) = recipe.over_tls().unwrap() else {
            continue;
        };
        if let Some(why) = missing(recipe, true) {
            eprintln!("skipped {}: {why}", recipe.name);
            continue;
        }
        let s = Start {
            listen,
            tls: Some(&files),
            ..Start::one_worker(&recipe.name, &tls, "tls", docroot.clone())
        };
        let mut running = start(site, &s)
            .unwrap_or_else(|e| panic!("{} over TLS: {}\n{}", recipe.name, e.message, e.log_tail));
        let addr = running.addr();
        assert_eq!(addr, SocketAddr::new(listen, running.port));
        let want = format!("{BODY}200 1.1");
        // HTTPS/1.1 over TLS 1.2 and over TLS 1.3.
        let tls12 = curl(addr, &["--http1.1", "--tlsv1.2", "--tls-max", "1.2"]);
        let tls13 = curl(addr, &["--http1.1", "--tlsv1.3", "--tls-max", "1.3"]);
        // curl offers h2 first: only h2o takes it.
        let h2 = curl(addr, &["--http2", "--tlsv1.2", "--tls-max", "1.3"]);
        // TLS 1.1 is refused, even by a client that would accept it.
        let tls11 = curl(
            addr,
            &[
                "--http1.1",
                "--tlsv1.1",
                "--tls-max",
                "1.1",
                "--ciphers",
                "DEFAULT@SECLEVEL=0",
            ],
        );
        // The client's order of suites decides. AES-256 first over TLS 1.2:
        // Go's crypto/tls (caddy) picks by its own order instead.
        let by_client_12 = cipher(
            addr,
            &[
                "--tlsv1.2",
                "--tls-max",
                "1.2",
                "--ciphers",
                "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256",
            ],
        );
        // AES-128 first, where OpenSSL's own orders start with AES-256.
        let aes128_first_12 = cipher(
            addr,
            &[
                "--tlsv1.2",
                "--tls-max",
                "1.2",
                "--ciphers",
                "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384",
            ],
        );
        let by_client_13 = cipher(
            addr,
            &[
                "--tlsv1.3",
                "--tls13-ciphers",
                "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384",
            ],
        );
        // Cleartext on the same port gets no page.
        let plain = loopback::get(addr, "/index.html", &[], Duration::from_secs(3));
        let pids = running.processes();
        let leader = running.pid();
        running.stop();
        let name = &recipe.name;
        assert!(
            tls12.ok && tls12.out == want,
            "{name} TLS 1.2: {:?}",
            tls12.out
        );
        assert!(
            tls13.ok && tls13.out == want,
            "{name} TLS 1.3: {:?}",
            tls13.out
        );
        let h2_version = if name == "h2o" { "2" } else { "1.1" };
        assert_eq!(h2.out, format!("{BODY}200 {h2_version}"), "{name} --http2");
        assert!(
            !tls11.ok && tls11.out == "000 0",
            "{name} TLS 1.1: {:?}",
            tls11.out
        );
        // Go's crypto/tls (caddy) orders TLS 1.2 suites itself, as caddy's
        // notes say.
        let tls12_suite = if name == "caddy" {
            "ECDHE-ECDSA-AES128-GCM-SHA256"
        } else {
            "ECDHE-ECDSA-AES256-GCM-SHA384"
        };
        assert_eq!(by_client_12, tls12_suite, "{name} TLS 1.2 cipher");
        assert_eq!(
            aes128_first_12, "ECDHE-ECDSA-AES128-GCM-SHA256",
            "{name} TLS 1.2 cipher"
        );
        assert_eq!(
            by_client_13, "TLS_AES_128_GCM_SHA256",
            "{name} TLS 1.3 cipher"
        );
        assert!(
            !matches!(&plain, Ok(r) if r.status == 200),
            "{name} serves cleartext on its TLS port"
        );
        assert!(
            gone(&pids, Duration::from_secs(5)) && process_tree(leader).is_empty(),
            "{name}: processes left after stop"
        );
        served.push(name.clone());
    }
    eprintln!("served over TLS: {}", served.join(", "));
}
