//! Every export of the fixture run, byte for byte. Set UPDATE_SNAPSHOTS=1 to
//! rewrite the expected files after an intended change, then review the diff.

mod common;

use std::path::PathBuf;

use throng_report::compare::{compare_runs, compare_servers, CompareOptions};
use throng_report::{CsvExporter, Exporter, HtmlExporter, JsonExporter, MarkdownExporter};

fn check(name: &str, actual: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_SNAPSHOTS=1 to create it)",
            path.display()
        )
    });
    if expected != actual {
        let got = path.with_extension(format!(
            "{}.new",
            path.extension().and_then(|e| e.to_str()).unwrap_or("")
        ));
        std::fs::write(&got, actual).unwrap();
        panic!(
            "{} differs from the export; the new output is in {}",
            path.display(),
            got.display()
        );
    }
}

#[test]
fn html_snapshot() {
    check(
        "fixture.html",
        &HtmlExporter.export(&common::rich_run()).unwrap(),
    );
}

#[test]
fn markdown_snapshot() {
    check(
        "fixture.md",
        &MarkdownExporter::default()
            .export(&common::rich_run())
            .unwrap(),
    );
    let with_images = MarkdownExporter {
        image_dir: Some("charts".into()),
    };
    check(
        "fixture-images.md",
        &with_images.export(&common::rich_run()).unwrap(),
    );
}

#[test]
fn csv_snapshot() {
    check(
        "fixture.csv",
        &CsvExporter.export(&common::rich_run()).unwrap(),
    );
}

#[test]
fn json_snapshot() {
    check(
        "fixture.json",
        &JsonExporter.export(&common::rich_run()).unwrap(),
    );
}

#[test]
fn chart_snapshots() {
    let run = common::rich_run();
    let a = throng_report::Analysis::of(&run);
    let ids: Vec<&str> = a.charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "throughput-tiny-1c",
            "latency-tiny-1c",
            "throughput-tiny-2c",
            "latency-tiny-2c",
            "scaling-tiny",
            "transfer-large-1c",
            "latency-large-1c",
            "memory",
            "total-time-tiny",
            "cpu-tiny",
            "cpu-large",
            "large-large",
        ]
    );
    for c in &a.charts {
        check(&format!("{}.svg", c.id), c.svg.as_bytes());
    }
    // The pooled ratios, drawn before every other chart.
    let forest = a.forest.as_ref().unwrap();
    check(&format!("{}.svg", forest.id), forest.svg.as_bytes());
}

#[test]
fn compare_snapshots() {
    let a = common::rich_run();
    let b = common::second_run();
    let runs = compare_runs(&a, &b, CompareOptions::default());
    check("compare-runs.txt", runs.to_table().as_bytes());
    check("compare-runs.md", runs.to_markdown().as_bytes());
    check("compare-runs.json", &runs.to_json().unwrap());
    let servers = compare_servers(&a, "nginx", "lighttpd", CompareOptions::default()).unwrap();
    check("compare-servers.txt", servers.to_table().as_bytes());
}
