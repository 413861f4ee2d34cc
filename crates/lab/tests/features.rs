//! Feature probes, caches in front and the max-users search against real
//! servers from Debian's packages (nginx, lighttpd, squid).

use std::collections::BTreeMap;
use std::path::Path;

use throng_lab::features::{probe_server, THROTTLE_KIB_S, THROTTLE_TOLERANCE};
use throng_lab::study::StudyServer;
use throng_lab::{Interrupt, LabOptions, Quiet, Recipes, Store, Study};
use throng_model::{Feature, FeatureResult, FeatureStatus, StepStatus};
use throng_servers::{RunAs, RunDir, Site};

/// Runs are serialised: two servers under load at once would share the CPUs.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Probes a built-in recipe's server on CPU 0, in a run directory of its
/// own under `dir`.
fn probe(name: &str, dir: &Path) -> Vec<FeatureResult> {
    let r = Recipes::builtin();
    let recipe = r.get(name).unwrap().clone();
    let backend = recipe.backend.as_ref().map(|b| r.get(b).unwrap().clone());
    let server = StudyServer {
        name: name.to_string(),
        recipe,
        backend,
        profile: throng_servers::Profile::Defaults,
        protocol: throng_lab::study::Protocol::Http1,
        unsupported: None,
        certificate: Default::default(),
        cleartext: None,
    };
    let user = RunAs::unprivileged();
    let rundir = RunDir::create(dir, "probe", 0, false).unwrap();
    let site = Site {
        rundir: &rundir,
        user: user.as_ref(),
    };
    probe_server(site, &server, &[0])
}

fn by_name(v: &[FeatureResult]) -> BTreeMap<&str, (FeatureStatus, &str)> {
    v.iter()
        .map(|f| (f.name.name(), (f.status, f.evidence.as_str())))
        .collect()
}

fn rate_in_evidence(e: &str) -> f64 {
    // "measured N KB/s against M KB/s configured"
    e.strip_prefix("measured ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rate in {e:?}"))
}

fn check_common(f: &BTreeMap<&str, (FeatureStatus, &str)>) {
    assert_eq!(
        f["basic_auth"],
        (FeatureStatus::Yes, "401 without credentials, 200 with")
    );
    assert_eq!(
        f["range"],
        (
            FeatureStatus::Yes,
            "Range: bytes=0-9 answered 206 with the exact 10 bytes"
        )
    );
    assert_eq!(
        f["keep_alive"],
        (
            FeatureStatus::Yes,
            "two requests on one connection answered 200 and 200"
        )
    );
    assert_eq!(f["gzip"].0, FeatureStatus::Yes, "{}", f["gzip"].1);
    // Probed on the cleartext HTTP/1.1 server: measuring HTTP/2 is
    // `protocols`' work too.
    assert_eq!(f["http2"].0, FeatureStatus::Untested, "{}", f["http2"].1);
    assert!(
        f["http2"].1.contains("add \"h2\" or \"h2c\""),
        "{}",
        f["http2"].1
    );
    // Probed on the cleartext server: measuring TLS is `protocols`' work.
    assert_eq!(f["tls"].0, FeatureStatus::Untested, "{}", f["tls"].1);
    assert!(f["tls"].1.contains("add \"https1\""), "{}", f["tls"].1);
    let (st, ev) = f["throttling"];
    assert_eq!(st, FeatureStatus::Yes, "{ev}");
    let configured = (THROTTLE_KIB_S * 1024) as f64 / 1000.0;
    let measured = rate_in_evidence(ev);
    assert!(
        (measured - configured).abs() <= configured * THROTTLE_TOLERANCE,
        "{ev}"
    );
    if RunAs::unprivileged().is_some() {
        let (st, ev) = f["privilege_drop"];
        assert_eq!(st, FeatureStatus::Yes, "{ev}");
        assert!(ev.starts_with("requests served by pid "), "{ev}");
        assert!(ev.contains(" as www-data (uid 33), not chrooted"), "{ev}");
    }
}

#[test]
fn nginx_features_are_probed_live() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let v = probe("nginx", dir.path());
    assert_eq!(v.iter().map(|f| f.name).collect::<Vec<_>>(), Feature::ALL);
    let f = by_name(&v);
    check_common(&f);
    assert_eq!(
        f["dir_listing_off"],
        (
            FeatureStatus::Yes,
            "GET of a directory without index answered 403"
        )
    );
    assert_eq!(
        f["sendfile"],
        (
            FeatureStatus::No,
            "config: no `sendfile on` (nginx's default is off)"
        )
    );
}

#[test]
fn a_study_over_tls_alone_probes_the_rest_over_cleartext() {
    // Without "http1" among the protocols, no cleartext server of the
    // study probes range, basic auth or gzip: the TLS server's table once
    // said they were "probed there", on a server the study never ran.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let recipes = Recipes::builtin();
    let study = Study::parse(
        "name = 'tls-only'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [2]\nprotocols = ['https1']\n",
        &recipes,
    )
    .unwrap();
    let server = &study.servers[0];
    assert!(server.cleartext.is_some());
    let user = RunAs::unprivileged();
    let rundir = RunDir::create(dir.path(), "probe", 0, false).unwrap();
    let site = Site {
        rundir: &rundir,
        user: user.as_ref(),
    };
    let found = probe_server(site, server, &[0]);
    let f = by_name(&found);
    let elsewhere = " (probed on the same recipe over cleartext HTTP/1.1, which the study \
                     does not measure)";
    assert_eq!(
        f["basic_auth"],
        (
            FeatureStatus::Yes,
            format!("401 without credentials, 200 with{elsewhere}").as_str()
        )
    );
    assert_eq!(f["range"].0, FeatureStatus::Yes, "{}", f["range"].1);
    assert!(f["range"].1.ends_with(elsewhere), "{}", f["range"].1);
    // Its own protocol's feature is the TLS server's, from a handshake.
    assert_eq!(f["tls"].0, FeatureStatus::Yes, "{}", f["tls"].1);
    assert!(f["tls"].1.starts_with("handshake: "), "{}", f["tls"].1);
    assert!(found.iter().all(|r| !r.evidence.contains("probed there")));
    // With "http1" too, the cleartext server probes them, as before.
    let both = Study::parse(
        "name = 'both'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [2]\nprotocols = ['http1', 'https1']\n",
        &recipes,
    )
    .unwrap();
    assert!(both.servers.iter().all(|s| s.cleartext.is_none()));
}

#[test]
fn lighttpd_features_are_probed_live() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let v = probe("lighttpd", dir.path());
    let f = by_name(&v);
    check_common(&f);
    assert_eq!(
        f["dir_listing_off"],
        (
            FeatureStatus::Yes,
            "GET of a directory without index answered 403"
        )
    );
    assert_eq!(f["sendfile"].0, FeatureStatus::Yes);
}

#[test]
fn h2o_keeps_no_process_as_root() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if RunAs::unprivileged().is_none() {
        eprintln!("skipped: the lab does not run as root, so nothing is dropped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let v = probe("h2o", dir.path());
    let f = by_name(&v);
    let (st, ev) = f["privilege_drop"];
    assert_eq!(st, FeatureStatus::Yes, "{ev}");
    assert!(ev.starts_with("requests served by pid "), "{ev}");
    // Started unprivileged by the lab, and said so: it is not h2o's own
    // privilege drop that ran.
    assert!(
        ev.ends_with(
            " as www-data (uid 33), not chrooted; started so by throng, h2o not being started \
             as root"
        ),
        "{ev}"
    );
    // h2o's throttle-response is not what the recipe sets: untested, and
    // said why (it was said to be no).
    assert_eq!(
        f["throttling"],
        (
            FeatureStatus::Untested,
            "throng's h2o recipe sets no bandwidth limit"
        )
    );
}

#[test]
fn varnish_serves_as_its_own_unprivileged_user() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if RunAs::unprivileged().is_none() {
        eprintln!("skipped: the lab does not run as root, so nothing is dropped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let v = probe("varnish", dir.path());
    let (st, ev) = by_name(&v)["privilege_drop"];
    // Varnish's cache child runs as vcache, not www-data: still dropped.
    assert_eq!(st, FeatureStatus::Yes, "{ev}");
    assert!(ev.contains(" as vcache (uid "), "{ev}");
}

#[test]
fn nginx_names_its_root_master() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if RunAs::unprivileged().is_none() {
        eprintln!("skipped: the lab does not run as root, so nothing is dropped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let v = probe("nginx", dir.path());
    let (st, ev) = by_name(&v)["privilege_drop"];
    assert_eq!(st, FeatureStatus::Yes, "{ev}");
    assert!(ev.ends_with(" of the tree runs as root"), "{ev}");
}

fn run_study(toml: &str, dir: &Path) -> throng_model::RunData {
    let recipes = Recipes::load(Some(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../servers/recipes"),
    ))
    .unwrap();
    let study = Study::parse(toml, &recipes).unwrap();
    let db = dir.join("t.db");
    let mut store = Store::open(&db).unwrap();
    let opts = LabOptions {
        workdir: Some(dir.to_path_buf()),
        keep_workdir: false,
    };
    let out =
        throng_lab::run_study(&study, &mut store, &opts, &mut Quiet, &Interrupt::new()).unwrap();
    assert!(out.complete);
    store.load_run(out.run_id).unwrap()
}

#[test]
fn squid_in_front_of_nginx_serves_exact_bytes_under_load() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let toml = "name = \"t\"\nservers = [\"squid\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
                concurrency = [8]\nwarmup_seconds = 0.2\nfeatures = false\n\
                [rounds]\nseconds = 0.5\nwarmup_seconds = 0.1\nmin = 2\nmax = 2\n";
    let data = run_study(toml, dir.path());
    assert_eq!(data.servers[0].package, "squid");
    assert!(data.servers[0].features.is_empty());
    assert_eq!(data.steps.len(), 1);
    let s = &data.steps[0];
    assert_eq!(s.status, StepStatus::Ok, "{:?} {:?}", s.failure, s.log_tail);
    assert_eq!(s.rounds.len(), 2);
    for r in &s.rounds {
        assert_eq!(r.summary.errors_total, 0);
        assert_eq!(r.summary.status.get(&200), Some(&r.summary.completed));
        // 7-byte body, checksummed against the file.
        assert_eq!(r.summary.body_bytes, 7 * r.summary.completed);
        // squid's master and kid, nginx's master and worker.
        assert_eq!(r.server.processes, 4, "{:?}", r.server);
    }
}

/// A server that keeps at most 8 connections open and resets any more.
const EIGHT_CONNECTIONS: &str = r#"
import os, socket, sys, threading
root, port = sys.argv[1], int(sys.argv[2])
active, lock = [0], threading.Condition()
def serve(c):
    try:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            path = head.split(b" ")[1].decode()
            with open(os.path.join(root, path.lstrip("/")), "rb") as f:
                body = f.read()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except OSError:
        pass
    finally:
        c.close()
        with lock:
            active[0] -= 1
            lock.notify_all()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(1024)
while True:
    c, _ = s.accept()
    with lock:
        # A previous level's connections are closed by the client just
        # before the next level opens its own, and their threads see it a
        # moment later: wait that moment before calling the server full.
        lock.wait_for(lambda: active[0] < 8, timeout=0.2)
        full = active[0] >= 8
        if not full:
            active[0] += 1
    if full:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        c.close()
    else:
        threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

#[test]
fn max_users_search_stops_where_the_server_breaks() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("eight.py");
    std::fs::write(&script, EIGHT_CONNECTIONS).unwrap();
    let toml = format!(
        "name = \"t\"\nservers = [{{ name = \"eight\", command = [\"/usr/bin/python3\", \"{}\", \"{{{{docroot}}}}\", \"{{{{port}}}}\"] }}]\n\
         workloads = [\"tiny\"]\ncores = [1]\nconcurrency = [2, 4]\nwarmup_seconds = 0.2\nfeatures = false\n\
         max_users = true\npatience_seconds = 1.0\nmax_users_cap = 64\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.1\nmin = 1\nmax = 1\n",
        script.display()
    );
    let data = run_study(&toml, dir.path());
    assert!(data.steps.iter().all(|s| s.status == StepStatus::Ok));
    let m = &data.servers[0].max_users;
    assert_eq!(m.len(), 1);
    let m = &m[0];
    assert_eq!(
        (m.cores, m.workload.as_str(), m.patience_s),
        (1, "tiny", 1.0)
    );
    // 4 from the sweep, then 8 good, 16 reset.
    assert_eq!((m.level, m.broke_at), (Some(8), Some(16)), "{}", m.broke_by);
    assert!(m.broke_by.ends_with(" resets"), "{}", m.broke_by);
}

/// Answers the lab's readiness and verification requests with the file,
/// and every later one with another body, the same each time.
const RIGHT_THEN_OTHER: &str = r#"
import os, socket, sys, threading
root, port = sys.argv[1], int(sys.argv[2])
count, lock = [0], threading.Lock()
def serve(c):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            path = head.split(b" ")[1].decode()
            with lock:
                count[0] += 1
                n = count[0]
            if n <= 2:
                with open(os.path.join(root, path.lstrip("/")), "rb") as f:
                    body = f.read()
            else:
                body = b"ok"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(128)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// The load holds every answer to the file itself, not to the first answer
/// it got: a server that passed the check and then sent another body was
/// measured as valid.
#[test]
fn a_server_that_answers_the_check_right_and_the_load_otherwise_is_caught() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("other.py");
    std::fs::write(&script, RIGHT_THEN_OTHER).unwrap();
    let toml = format!(
        "name = \"t\"\nservers = [{{ name = \"other\", command = [\"/usr/bin/python3\", \"{}\", \"{{{{docroot}}}}\", \"{{{{port}}}}\"] }}]\n\
         workloads = [\"tiny\"]\ncores = [1]\nconcurrency = [2]\nwarmup_seconds = 0.2\nfeatures = false\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.1\nmin = 1\nmax = 1\n",
        script.display()
    );
    let data = run_study(&toml, dir.path());
    let step = &data.steps[0];
    let round = &step.rounds[0].summary;
    assert!(round.completed > 0);
    assert_eq!(round.body_bytes, 2 * round.completed);
    assert_eq!(
        round.errors.get("size_mismatch").copied(),
        Some(round.completed),
        "{:?}",
        round.errors
    );
    assert!(
        step.verdict.has(throng_model::ReasonCode::Drift),
        "{:?}",
        step.verdict
    );
}
