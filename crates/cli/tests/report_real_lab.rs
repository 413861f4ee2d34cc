//! The README's main job end to end: `throng lab quick` on real servers,
//! then `throng report`, and the article opened in headless Chromium.

#[path = "../../report/tests/browser/mod.rs"]
mod browser;
mod support;

use std::time::Duration;

use support::{run_bounded, throng};

#[test]
fn lab_quick_report_renders_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("quick.db");
    let db = db.to_str().unwrap();

    let mut lab = throng();
    lab.args(["lab", "quick", "--quiet", "--db", db]);
    let out = run_bounded(lab, Duration::from_secs(480));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lab quick failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 4 servers × 4 concurrency levels, one line per step (and one more
    // for a step whose verdict its sweep revised); six pairs of servers
    // compared at each level and over the sweep.
    let steps = stdout
        .lines()
        .filter(|l| l.contains(" tiny ") && !l.contains("95% CI") && !l.contains(" verdict now "))
        .count();
    assert_eq!(steps, 16, "{stdout}");
    let compared = stdout.lines().filter(|l| l.contains("95% CI")).count();
    assert_eq!(compared, 30, "{stdout}");
    // Every interval drawn over quick's launches: six to sixteen starts of
    // every server, those past six only for comparisons still wide.
    let launched = stdout
        .lines()
        .filter(|l| (6..=16).any(|n| l.contains(&format!("over {n} launches)"))))
        .count();
    assert_eq!(launched, 30, "{stdout}");
    assert!(stdout.contains("run 1 stored"), "{stdout}");

    let html = tmp.path().join("quick.html");
    let mut report = throng();
    report.args(["report", "--db", db, "-o", html.to_str().unwrap()]);
    let out = run_bounded(report, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let url = format!("file://{}", html.display());
    let dom = browser::chromium(&tmp.path().join("profile"), &["--dump-dom"], &url);
    assert!(dom.status.success(), "chromium failed: {dom:?}");
    assert_eq!(
        browser::console_errors(&String::from_utf8_lossy(&dom.stderr)),
        Vec::<&str>::new()
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    for server in ["nginx", "lighttpd", "apache2-event", "h2o"] {
        assert!(
            dom.contains(&format!("<td class=\"t\">{server}</td>")),
            "{server} missing from the summary"
        );
    }
    // The article opens with each server's paired ratio against nginx.
    for server in ["lighttpd", "apache2-event", "h2o"] {
        assert!(
            dom.contains(&format!("{server}: ")) && dom.contains("× nginx's requests per second"),
            "no ratio for {server}"
        );
    }
    let summary = dom.find("× nginx's requests per second").unwrap();
    let table = dom.find("<td class=\"t\">nginx</td>").unwrap();
    assert!(summary < table, "the ratios come before the summary table");
    // The forest plot of the pooled ratios and the one of the group's
    // levels; throughput, latency, memory, time per 100k requests, CPU per
    // request: one core count, one workload; and the profiles' CPU per
    // request by component, where perf sampled the servers (the flame
    // graphs are documents of their own, not in this DOM).
    let profiled = throng_lab::profile::on_path("perf").is_some();
    assert_eq!(dom.matches("<svg ").count(), 7 + usize::from(profiled));
    assert!(!dom.to_ascii_lowercase().contains("<script"));

    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("lab-quick.png");
    let _ = std::fs::remove_file(&png);
    let shot = browser::chromium(
        &tmp.path().join("profile2"),
        &[&format!("--screenshot={}", png.display())],
        &url,
    );
    assert!(shot.status.success(), "chromium failed: {shot:?}");
    assert_eq!(browser::png_size(&png), (1280, 2400));
}
