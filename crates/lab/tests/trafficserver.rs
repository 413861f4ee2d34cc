//! Apache Traffic Server in front of nginx, started from the recipes folder
//! the way the lab starts it.

use std::path::Path;

use throng_lab::{Interrupt, LabOptions, Quiet, Recipes, Store, Study};
use throng_model::StepStatus;

fn recipes() -> Recipes {
    Recipes::load(Some(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../servers/recipes"),
    ))
    .unwrap()
}

#[test]
fn trafficserver_in_front_of_nginx_serves_exact_bytes_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let recipes = recipes();
    let toml = "name = \"t\"\nservers = [\"trafficserver\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
                concurrency = [8]\nwarmup_seconds = 0.2\nfeatures = false\n\
                [rounds]\nseconds = 0.5\nwarmup_seconds = 0.1\nmin = 2\nmax = 2\n";
    let study = Study::parse(toml, &recipes).unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let opts = LabOptions {
        workdir: Some(dir.path().to_path_buf()),
        keep_workdir: true,
    };
    let out =
        throng_lab::run_study(&study, &mut store, &opts, &mut Quiet, &Interrupt::new()).unwrap();
    assert!(out.complete);
    let data = store.load_run(out.run_id).unwrap();

    let server = &data.servers[0];
    assert_eq!(server.package, "trafficserver");
    assert!(server.version.starts_with("9."), "{}", server.version);
    let records = server
        .configs
        .iter()
        .find(|c| c.path.ends_with("trafficserver/records.config"))
        .expect("records.config stored with the run");
    assert!(records
        .content
        .contains("CONFIG proxy.config.exec_thread.limit INT 1\n"));

    assert_eq!(data.steps.len(), 1);
    let s = &data.steps[0];
    assert_eq!(s.status, StepStatus::Ok, "{:?} {:?}", s.failure, s.log_tail);
    assert_eq!(s.rounds.len(), 2);
    for r in &s.rounds {
        assert_eq!(r.summary.errors_total, 0);
        assert_eq!(r.summary.status.get(&200), Some(&r.summary.completed));
        // 7-byte body, checksummed against the file.
        assert_eq!(r.summary.body_bytes, 7 * r.summary.completed);
        // traffic_server alone (no traffic_manager, no crash-log helper),
        // nginx's master and worker.
        assert_eq!(r.server.processes, 3, "{:?}", r.server);
    }

    // Everything the server wrote is in its run directory: the cache file
    // and its diagnostics log.
    let rundir = dir
        .path()
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("c1-tiny").join("trafficserver").is_dir())
        .expect("run directory kept")
        .join("c1-tiny")
        .join("trafficserver");
    assert_eq!(
        std::fs::metadata(rundir.join("cache.db")).unwrap().len(),
        64 << 20
    );
    let log = std::fs::read_to_string(rundir.join("error.log")).unwrap();
    assert!(!log.contains("Cache Disabled"), "{log}");
    assert!(!log.contains("ERROR"), "{log}");
}
