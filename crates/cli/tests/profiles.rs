//! Profiles in the diagnostic window on real nginx, with its defaults and
//! its tuned profile (an open-file cache) on the tiny file: each step
//! stores its folded stacks with kernel frames named; the defaults' stacks
//! hold the open path the tuned server no longer takes; the report draws
//! the flame graphs as files and inline, and splits the CPU per request.

mod support;

use std::time::Duration;

use support::{run_bounded, throng};

const STUDY: &str = r#"
name = "profiled"
servers = ["nginx"]
profiles = ["defaults", "tuned"]
workloads = ["tiny"]
cores = [1]
concurrency = [10]
warmup_seconds = 0.3
features = false

[rounds]
seconds = 0.1
warmup_seconds = 0.02
min = 2
max = 2
step_seconds = 30
"#;

#[test]
fn nginx_steps_store_their_stacks_and_the_report_draws_them() {
    if throng_lab::profile::on_path("nginx").is_none()
        || throng_lab::profile::on_path("perf").is_none()
    {
        println!("skipped: needs nginx and perf");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("profiled.toml");
    std::fs::write(&study, STUDY).unwrap();
    let db = tmp.path().join("p.db");
    let mut lab = throng();
    lab.args(["lab", study.to_str().unwrap(), "--quiet", "--db"])
        .arg(&db);
    let out = run_bounded(lab, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let store = throng_store::Store::open(&db).unwrap();
    let run = store.load_run(1).unwrap();
    assert_eq!(run.steps.len(), 2);
    let stacks = |server: &str| {
        let step = run.steps.iter().find(|s| s.server == server).unwrap();
        let d = step.diagnosis.as_ref().expect("a diagnosis");
        let p = d.profile.as_ref().expect("a profile");
        assert_eq!(p.absent, None, "{server}");
        assert_eq!((p.event.as_str(), p.period_ns), ("cpu-clock", 100_000));
        assert!(
            p.kernel_symbols,
            "{server}: kernel frames are named as root"
        );
        let folded = throng_report::components::folded(p).unwrap();
        let lines: Vec<(String, u64)> = throng_report::components::lines(&folded)
            .map(|(s, n)| (s.to_string(), n))
            .collect();
        assert_eq!(lines.iter().map(|(_, n)| n).sum::<u64>(), p.samples);
        assert!(p.samples > 0);
        // Hardware counters where the machine exposes its PMU; perf's own
        // answer where it does not (a VM such as this project's).
        let c = p.counters.as_ref().expect("counters or why not");
        if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
            assert_eq!(c.absent, None, "{server}");
            assert!(c.cycles > 0 && c.instructions > 0, "{server}: {c:?}");
        } else {
            assert_eq!(
                c.absent.as_deref(),
                Some(
                    "not available on this machine: perf stat: cycles <not supported>, \
                     instructions <not supported>, cache-misses <not supported>"
                ),
                "{server}"
            );
        }
        assert!(
            lines.iter().all(|(s, _)| s.starts_with("nginx;")),
            "{server}"
        );
        assert!(
            lines.iter().any(|(s, _)| s.contains("tcp_sendmsg_[k]")),
            "{server}"
        );
        lines
    };
    let opens = |lines: &[(String, u64)]| -> u64 {
        lines
            .iter()
            .filter(|(s, _)| s.contains(";do_sys_openat2_[k]"))
            .map(|(_, n)| n)
            .sum()
    };
    // nginx opens the file on every request; with its open-file cache it
    // opens none while it serves.
    let defaults = stacks("nginx");
    let tuned = stacks("nginx-tuned");
    assert!(opens(&defaults) > 0, "nginx's stacks hold no open");
    assert_eq!(opens(&tuned), 0);

    let graphs = tmp.path().join("graphs");
    let md = tmp.path().join("p.md");
    let mut report = throng();
    report
        .args(["report", "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&md)
        .arg("--flamegraphs")
        .arg(&graphs);
    let out = run_bounded(report, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().next().unwrap(),
        format!("wrote 3 flame graphs to {}", graphs.display())
    );
    let mut files: Vec<String> = std::fs::read_dir(&graphs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "diff-nginx-tuned-vs-nginx-tiny-1c-c10.svg",
            "nginx-tiny-1c-c10.svg",
            "nginx-tuned-tiny-1c-c10.svg"
        ]
    );
    for f in &files {
        let text = std::fs::read_to_string(graphs.join(f)).unwrap();
        // inferno's SVGs carry the SVG 1.1 doctype.
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&text, options)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg", "{f}");
        // Searchable and zoomable in a browser: its own script, and a frame
        // per stack element, the kernel's among them.
        assert!(doc.descendants().any(|n| n.has_tag_name("script")), "{f}");
        assert!(
            doc.descendants()
                .filter(|n| n.has_tag_name("title"))
                .any(|n| n.text().is_some_and(|t| t.starts_with("tcp_sendmsg "))),
            "{f}"
        );
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("## Where a request's CPU goes"), "{md}");
    // Both profiles hold at least what their syscall counts' calls cost.
    assert!(!md.contains("read its split with care"), "{md}");
    assert!(
        md.contains("nginx: CPU per request: `nginx-tiny-1c-c10.svg`"),
        "{md}"
    );

    let html = tmp.path().join("p.html");
    let mut report = throng();
    report
        .args(["report", "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&html);
    let out = run_bounded(report, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert_eq!(html.matches("<figure class=\"flame\"").count(), 3);
    // Both servers' bars, side by side.
    let bars = html
        .find("<figure class=\"chart\" id=\"cpu-split-tiny-1c\">")
        .expect("the stacked bars");
    let bars = &html[bars..bars + html[bars..].find("</figure>").unwrap()];
    for server in ["nginx (c=10)", "nginx-tuned (c=10)"] {
        assert!(
            bars.contains(&format!("<title>{server}: server code ")),
            "{bars}"
        );
    }
}
