//! A site of the user's own in a study: its folder copied into the run,
//! every URL verified against its file, then loaded as a URL list, as
//! Seravo's article ran siege over the list of a mirrored site.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{run_bounded, throng};

/// Sizes chosen apart, so that a round's body bytes say which files it got.
const INDEX: usize = 1000;
const CSS: usize = 200;
const PNG: usize = 3000;
const SPACED: usize = 500;

fn make_site(root: &Path) {
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("img")).unwrap();
    let text = |n: usize, c: u8| vec![c; n];
    std::fs::write(root.join("index.html"), text(INDEX, b'i')).unwrap();
    std::fs::write(root.join("a/b.css"), text(CSS, b'c')).unwrap();
    // Every byte value, so that a server that rewrites a body is caught.
    let png: Vec<u8> = (0..PNG).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(root.join("img/x.png"), png).unwrap();
    std::fs::write(root.join("my page.html"), text(SPACED, b's')).unwrap();
}

/// Runs `study` with nginx and returns every round's summary of its one
/// step, after checking the step is ok at concurrency 2.
fn rounds_of(dir: &Path, study: &str) -> Vec<serde_json::Value> {
    let path = dir.join("study.toml");
    std::fs::write(&path, study).unwrap();
    let db = dir.join("t.db");
    let _ = std::fs::remove_file(&db);
    let j = support::lab_report(&path, &db, Duration::from_secs(120));
    let steps = j["run"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    let step = &steps[0];
    assert_eq!(step["status"], "ok", "{step}");
    assert_eq!(step["workload"], "mirror", "{step}");
    assert_eq!(step["concurrency"], 2, "{step}");
    step["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].clone())
        .collect()
}

fn study(rest: &str) -> String {
    format!(
        "name = \"own-site\"\nservers = [\"nginx\"]\nworkloads = [\"mirror\"]\ncores = [1]\n\
         concurrency = [2]\nwarmup_seconds = 0\nfeatures = false\ndiagnose = false\n\
         [load]\nrequests = 300\n\
         [rounds]\nmin = 3\nmax = 3\nwarmup_seconds = 0\n{rest}"
    )
}

#[test]
fn a_mirrored_site_is_served_and_loaded_as_its_url_list() {
    let dir = tempfile::tempdir().unwrap();
    make_site(&dir.path().join("site"));
    std::fs::write(
        dir.path().join("paths.txt"),
        "# three of the four files, in the order siege would walk them\n\
         /index.html\n/img/x.png\n\n/my page.html\n",
    )
    .unwrap();
    let rounds = rounds_of(
        dir.path(),
        &study(
            "[workload.mirror]\ndocroot = \"site\"\nurls = \"paths.txt\"\norder = \"sequential\"\n\
             concurrency = [2]\n",
        ),
    );
    assert_eq!(rounds.len(), 3);
    // One client thread walks the list in turn for both connections,
    // afresh each round: 100 requests are 34 of the first URL and 33 of
    // each other.
    let exact = (34 * INDEX + 33 * PNG + 33 * SPACED) as u64;
    for s in &rounds {
        assert_eq!(s["completed"], 100, "{s}");
        assert_eq!(s["errors_total"], 0, "{s}");
        assert_eq!(s["body_bytes"], exact, "{s}");
    }
}

#[test]
fn without_a_url_list_every_file_of_the_site_is_requested() {
    let dir = tempfile::tempdir().unwrap();
    make_site(&dir.path().join("site"));
    let rounds = rounds_of(
        dir.path(),
        &study("[workload.mirror]\ndocroot = \"site\"\n"),
    );
    // Sorted: a/b.css, img/x.png, index.html, my page.html; 100 requests
    // are 25 of each.
    let exact = (25 * (CSS + PNG + INDEX + SPACED)) as u64;
    for s in &rounds {
        assert_eq!(s["completed"], 100, "{s}");
        assert_eq!(s["errors_total"], 0, "{s}");
        assert_eq!(s["body_bytes"], exact, "{s}");
    }
}

#[test]
fn a_site_that_cannot_be_copied_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    make_site(&site);
    std::os::unix::fs::symlink("/etc/passwd", site.join("a/passwd")).unwrap();
    std::fs::write(dir.path().join("paths.txt"), "/index.html\n").unwrap();
    std::fs::write(dir.path().join("out.txt"), "/index.html\n/a/../../x\n").unwrap();
    let cases = [
        (
            "[workload.mirror]\ndocroot = \"site\"\n".to_string(),
            "[workload.mirror] docroot: site/a/passwd is a symbolic link; copy what it points to \
             into the site"
                .to_string(),
        ),
        (
            format!(
                "[workload.mirror]\ndocroot = \"{}\"\nurls = \"paths.txt\"\n",
                dir.path().join("site/img").display()
            ),
            "[workload.mirror] urls: paths.txt line 1: /index.html: no file ".to_string()
                + &dir.path().join("site/img/index.html").display().to_string(),
        ),
        (
            format!(
                "[workload.mirror]\ndocroot = \"{}\"\nurls = \"out.txt\"\n",
                dir.path().join("site/img").display()
            ),
            "[workload.mirror] urls: out.txt line 2: \"/a/../../x\" has a .. segment".to_string(),
        ),
        (
            "[workload.mirror]\nurls = \"paths.txt\"\n".to_string(),
            "[workload.mirror] urls: a URL list belongs to a site of your own; give its folder \
             as `docroot`"
                .to_string(),
        ),
    ];
    for (rest, message) in cases {
        let study_path = dir.path().join("s.toml");
        std::fs::write(&study_path, study(&rest)).unwrap();
        let db = dir.path().join("t.db");
        let work = dir.path().join("work");
        let mut lab = throng();
        lab.args(["lab", study_path.to_str().unwrap(), "--db"])
            .arg(&db)
            .arg("--workdir")
            .arg(&work);
        let out = run_bounded(lab, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(2), "{rest}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("throng: study {}: {message}\n", study_path.display()),
            "{rest}"
        );
        assert!(!db.exists(), "{rest}: no database for a refused study");
        assert!(
            !work.exists(),
            "{rest}: no run directory for a refused study"
        );
    }
}
