//! A database written by throng before its crates were split (the study
//! beside it, run with nginx and lighttpd on this project's machine) opens
//! with today's store and reads back exactly: the stored names of statuses,
//! verdict codes and features are the ones the typed model reads.

use std::path::Path;

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use throng_model::{Feature, FeatureStatus, ReasonCode, StepStatus};
use throng_store::Store;

fn fixture() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/written-before-the-split.db"),
        &db,
    )
    .unwrap();
    let store = Store::open(&db).unwrap();
    (dir, store)
}

#[test]
fn a_database_from_before_the_split_reads_back_exactly() {
    let (_dir, store) = fixture();
    // Migrated on opening: written at version 2, read at today's.
    assert_eq!(
        store.schema_version().unwrap(),
        throng_store::SCHEMA_VERSION
    );
    assert_eq!(store.latest_run().unwrap(), Some(1));
    let run = store.load_run(1).unwrap();
    // Written before profiles, parity, diagnoses and paired comparisons.
    assert!(run.comparisons.is_empty());
    assert!(run
        .servers
        .iter()
        .all(|s| s.profile == "defaults" && s.parity.is_empty()));
    assert!(run
        .steps
        .iter()
        .all(|s| s.diagnosis.is_none() && s.rounds.iter().all(|r| r.block.is_none())));
    assert_eq!(run.run.study, "old-main");
    assert!(run.run.complete);
    assert_eq!(
        run.run.study_toml,
        include_str!("fixtures/written-before-the-split.toml")
    );

    let servers: Vec<(&str, &str)> = run
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.version.as_str()))
        .collect();
    assert_eq!(servers, [("nginx", "1.22.1"), ("lighttpd", "1.4.69")]);
    for s in &run.servers {
        let names: Vec<Feature> = s.features.iter().map(|f| f.name).collect();
        assert_eq!(names, Feature::ALL, "{}", s.name);
        let status = |f: Feature| s.features.iter().find(|x| x.name == f).unwrap().status;
        assert_eq!(status(Feature::BasicAuth), FeatureStatus::Yes);
        assert_eq!(status(Feature::Tls), FeatureStatus::Untested);
        assert_eq!(s.max_users.len(), 1);
        let m = &s.max_users[0];
        assert_eq!(
            (
                m.cores,
                m.workload.as_str(),
                m.level,
                m.broke_at,
                m.broke_by.as_str()
            ),
            (1, "tiny", Some(32), None, "no failure up to the cap of 32")
        );
    }
    assert_eq!(
        run.servers.iter().map(|s| s.configs.len()).sum::<usize>(),
        4
    );

    // Steps and their rounds, with the exact counts that were measured.
    let completed: Vec<(&str, u32, Vec<u64>)> = run
        .steps
        .iter()
        .map(|s| {
            (
                s.server.as_str(),
                s.concurrency,
                s.rounds.iter().map(|r| r.summary.completed).collect(),
            )
        })
        .collect();
    assert_eq!(
        completed,
        [
            ("lighttpd", 4, vec![13803, 16884]),
            ("lighttpd", 8, vec![18262, 17573]),
            ("nginx", 4, vec![10059, 11530]),
            ("nginx", 8, vec![10949, 16825]),
        ]
    );
    for s in &run.steps {
        assert_eq!(s.status, StepStatus::Ok);
        let codes: Vec<ReasonCode> = s.verdict.reasons.iter().map(|r| r.code).collect();
        assert_eq!(codes, [ReasonCode::ClientBound, ReasonCode::Noisy]);
        for r in &s.rounds {
            assert_eq!(r.summary.errors_total, 0);
            let h: Histogram<u64> = Deserializer::new()
                .deserialize(&mut &r.histogram[..])
                .unwrap();
            assert_eq!(h.len(), r.summary.completed);
        }
    }
}

/// Two runs `throng load --save` stored before the summary's model, I/O
/// backend and run kind were typed (a closed load, and an open one that
/// warned of late sends), written by that build against a local server.
fn saved_loads() -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("loads.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/saved-loads-before-the-typed-model.db"),
        &db,
    )
    .unwrap();
    let store = Store::open(&db).unwrap();
    (dir, db, store)
}

#[test]
fn saved_loads_from_before_the_typed_model_read_back_exactly() {
    use throng_model::{IoBackend, LoadModel, RunKind};
    let (_dir, db, store) = saved_loads();
    let closed = store.load_run(1).unwrap();
    let open = store.load_run(2).unwrap();
    let command = |r: &throng_model::RunData| match r.run.kind() {
        RunKind::Load { command } => command.to_string(),
        RunKind::Study { name, .. } => panic!("run of study {name}"),
    };
    assert_eq!(
        command(&closed),
        "/work/main/target/release/throng load http://127.0.0.1:18777/ -n 50 -c 2 -t 1 --save \
         --db /tmp/oldmain/load-before-typed.db"
    );
    assert!(command(&open).contains("--rate 20"));
    let c = &closed.steps[0].rounds[0].summary;
    let o = &open.steps[0].rounds[0].summary;
    assert_eq!(
        (c.model, c.io, c.completed, o.model, o.io, o.completed),
        (
            LoadModel::Closed,
            Some(IoBackend::Uring),
            50,
            LoadModel::Open,
            Some(IoBackend::Uring),
            20
        )
    );
    // Worded then, kept in its words: no code is guessed from them.
    assert!(c.warnings.is_empty());
    assert!(
        matches!(&o.warnings[..], [throng_model::Warning::Worded(w)]
            if w.starts_with("1 of 20 sends (5.0%) went out more than 1 ms after")),
        "{:?}",
        o.warnings
    );

    // Every stored summary reads into the typed model and back to the
    // very document that was stored.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT summary FROM rounds ORDER BY step_id")
        .unwrap();
    let stored: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(stored.len(), 2);
    for (raw, s) in stored.iter().zip([c, o]) {
        let raw: serde_json::Value = serde_json::from_str(raw).unwrap();
        assert_eq!(serde_json::to_value(s).unwrap(), raw);
    }
}
