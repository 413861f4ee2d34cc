//! The HTML report opened in a real browser (Debian's chromium, headless):
//! it renders without console errors, hostile strings stay text, and a
//! screenshot is taken in light and dark mode.

mod browser;
mod common;

use browser::{chromium, console_errors, png_size};

use std::path::PathBuf;

use throng_report::{Exporter, HtmlExporter};

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
    // Rendered: every chart is an SVG element in the DOM (twelve, the
    // pooled ratios' forest and one per group's levels), the tables are
    // there.
    assert_eq!(dom_text.matches("<svg ").count(), 16);
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
