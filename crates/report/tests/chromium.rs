//! The HTML report opened in a real browser (Debian's chromium, headless):
//! it renders without console errors, hostile strings stay text, and a
//! screenshot is taken in light and dark mode.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use throng_report::{Exporter, HtmlExporter};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs chromium in its own process group, bounded in time; the whole group
/// is killed afterwards so no renderer or zygote outlives the test.
fn chromium(profile: &Path, extra: &[&str], url: &str) -> Output {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium"
    );
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,2400",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let child = cmd.spawn().expect("start chromium");
    let pgid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    let out = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
    // SAFETY: plain kill(2) on the group we created; ESRCH when it is gone.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    out.expect("chromium did not finish within 90 s")
        .expect("wait for chromium")
}

fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            (l.contains("CONSOLE") && (l.contains("error") || l.contains("Error")))
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("net::ERR_")
        })
        .collect()
}

fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (be(16), be(20))
}

fn shots_dir() -> PathBuf {
    // Kept after the test so the pictures can be looked at.
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn report_renders_in_chromium_without_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("report.html");
    std::fs::write(&html, HtmlExporter.export(&common::rich_run()).unwrap()).unwrap();
    let url = format!("file://{}", html.display());

    let dom = chromium(&tmp.path().join("p1"), &["--dump-dom"], &url);
    assert!(dom.status.success(), "chromium failed: {dom:?}");
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let stderr = String::from_utf8_lossy(&dom.stderr);
    assert_eq!(console_errors(&stderr), Vec::<&str>::new());
    // Rendered: every chart is an SVG element in the DOM, the tables are there.
    assert_eq!(dom_text.matches("<svg ").count(), 10);
    assert!(dom_text.contains("<h2 id=\"summary\">Summary</h2>"));
    // The hostile banner, config and error text are text, not elements.
    assert!(!dom_text.to_ascii_lowercase().contains("<script"));
    assert!(!dom_text.contains("<img"));
    assert!(dom_text.contains("&lt;script&gt;alert('x')&lt;/script&gt;"));

    let shots = shots_dir();
    for (name, extra) in [
        ("light.png", vec![]),
        (
            "dark.png",
            vec![
                "--force-dark-mode",
                "--blink-settings=preferredColorScheme=0",
            ],
        ),
    ] {
        let png = shots.join(name);
        let _ = std::fs::remove_file(&png);
        let mut args = vec![format!("--screenshot={}", png.display())];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = chromium(&tmp.path().join(name), &args, &url);
        assert!(out.status.success(), "chromium failed: {out:?}");
        assert_eq!(
            console_errors(&String::from_utf8_lossy(&out.stderr)),
            Vec::<&str>::new()
        );
        assert_eq!(png_size(&png), (1280, 2400));
    }
}
