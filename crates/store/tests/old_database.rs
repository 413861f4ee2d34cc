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
