//! Headless Chromium for report tests: run it bounded, read its console.
//! Shared by this crate's tests and the CLI's real-lab report test.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs chromium in its own process group, bounded in time; the whole group
/// is killed afterwards so no renderer or zygote outlives the test.
pub fn chromium(profile: &Path, extra: &[&str], url: &str) -> Output {
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

pub fn console_errors(stderr: &str) -> Vec<&str> {
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

pub fn png_size(path: &Path) -> (u32, u32) {
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
