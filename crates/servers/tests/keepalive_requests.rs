//! Every installed built-in serves as many requests on a keep-alive
//! connection as its parity table says, to the request: nginx counts a
//! connection's requests from its first, Apache and lighttpd from its
//! second, so the same number in their configs served 1,024 requests on
//! nginx and 1,025 on the others, while the table showed them equal.

mod common;

use throng_engine::{Control, LoadSpec, Stop, Target};
use throng_model::Setting;
use throng_servers::{parity, start, LabSettings, Recipes, RunAs, RunDir, Running, Site, Start};

/// Connections one client needed for `requests` requests, one at a time.
fn connects(running: &Running, requests: u64) -> u64 {
    let mut spec = LoadSpec::new(vec![Target::http(running.addr(), "/index.html")]);
    spec.connections = 1;
    spec.threads = 1;
    spec.stop = Stop::Requests(requests);
    let r = throng_engine::run(&spec, &Control::new()).unwrap();
    assert_eq!(
        (r.counts.completed, r.counts.errors_total()),
        (requests, 0),
        "{:?}",
        r.counts.errors
    );
    assert_eq!(r.counts.status, [(200, requests)]);
    r.counts.connects
}

#[test]
fn each_server_serves_the_requests_a_connection_its_parity_table_says() {
    let base = tempfile::tempdir().unwrap();
    let rd = RunDir::create(base.path(), "keepalive", 0, false).unwrap();
    let docroot = rd.subdir(&["docroot"], None).unwrap();
    std::fs::write(docroot.join("index.html"), "hello\n").unwrap();
    let recipes = Recipes::builtin();
    let user = RunAs::unprivileged();
    let site = Site {
        rundir: &rd,
        user: user.as_ref(),
    };
    let lab = LabSettings::cleartext(1, vec![], 16);
    let mut limited = 0;
    for (recipe, backend) in common::installed(&recipes) {
        let s = Start {
            backend,
            ..Start::one_worker(&recipe.name, recipe, "keepalive", docroot.clone())
        };
        let mut running = start(site, &s)
            .unwrap_or_else(|e| panic!("{}: {}\n{}", recipe.name, e.message, e.log_tail));
        let said = parity(recipe, &running.configs, &lab)
            .into_iter()
            .find(|e| e.setting == Setting::KeepAliveRequests)
            .unwrap()
            .value;
        // With a limit of L: 2L requests on 2 connections, and the next on
        // a third. One more or one less would fail either count.
        let seen = match said.parse::<u64>() {
            Ok(limit) => {
                limited += 1;
                let two = connects(&running, 2 * limit);
                let three = connects(&running, 2 * limit + 1);
                ((two, three), (2, 3))
            }
            Err(_) => {
                assert_eq!(said, "unlimited", "{}", recipe.name);
                ((connects(&running, 2_049), 0), (1, 0))
            }
        };
        running.stop();
        assert_eq!(seen.0, seen.1, "{}: parity says {said}", recipe.name);
    }
    // nginx is installed wherever the tests run (scripts/setup).
    assert!(limited >= 1, "no server with a request limit was checked");
}
