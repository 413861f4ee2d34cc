//! `throng lab calibrate` as a user finds it: named among the built-in
//! studies, and a study's precision refused in one line when it is neither
//! a share nor "calibrated".

mod support;

use std::time::Duration;

use support::{run_bounded, throng};

#[test]
fn the_built_in_studies_name_calibrate() {
    let out = run_bounded(
        {
            let mut c = throng();
            c.args(["lab", "--help"]);
            c
        },
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    // The help lists every built-in study after its options, each with its
    // description.
    assert!(help.contains("\nBuilt-in studies:\n"), "{help}");
    assert!(
        help.contains(
            "\n  calibrate     A/A calibration: nginx and apache2 (event) each against itself, \
             on quick's design"
        ),
        "{help}"
    );

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut lab = throng();
    lab.args(["lab", "no-such-study", "--quiet", "--db"])
        .arg(&db);
    let out = run_bounded(lab, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "throng: no study named \"no-such-study\": built-in studies are quick, static-sweep, \
         acme, ladder, shootout, sessions, site-visits, calibrate, or give a TOML file\n"
    );
    assert!(!db.exists());
}

#[test]
fn a_precision_that_is_neither_a_share_nor_calibrated_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    let db = dir.path().join("t.db");
    let head = "name = 'x'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
                concurrency = [10]\nfeatures = false\n[rounds]\n";
    for (rounds, why) in [
        (
            "precision = 'auto'\n",
            "STUDY:8:13: precision = \"auto\": give a share such as 0.05, or \"calibrated\"",
        ),
        (
            "precision = 0.05\nfallback_precision = 0.05\n",
            "study STUDY: rounds: fallback_precision is the threshold when no calibration run exists; \
             precision = a number pins the threshold, so give one or the other",
        ),
    ] {
        std::fs::write(&study, format!("{head}{rounds}")).unwrap();
        let mut lab = throng();
        lab.args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
            .arg(&db);
        let out = run_bounded(lab, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr).replace(study.to_str().unwrap(), "STUDY");
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err, format!("throng: {why}\n"));
        assert!(!db.exists());
    }
}
