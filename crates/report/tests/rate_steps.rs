//! An open-model sweep by offered rate in the report: its latency drawn
//! against the rate offered, the rate in the steps table and its paired
//! levels kept apart, while a run without rates keeps its charts.

mod common;

use throng_model::{Comparison, Decision, RunData, StepRecord, StepStatus};
use throng_report::{Analysis, Exporter, HtmlExporter, MarkdownExporter};

fn text(e: &dyn Exporter, run: &RunData) -> String {
    String::from_utf8(e.export(run).unwrap()).unwrap()
}

/// Two servers offered 1000 and 2000 req/s over 4 connections; lighttpd
/// did not keep up at 2000, so its 4000 was skipped.
fn rate_run() -> RunData {
    let mut run = common::rich_run();
    run.comparisons.clear();
    let at = |server: &str, rate: f64, achieved: f64| StepRecord {
        rate: Some(rate),
        ..common::step(server, 1, "tiny", 4, achieved, 50, 1 << 20)
    };
    run.steps = vec![
        at("nginx", 1000.0, 1000.0),
        at("nginx", 2000.0, 2000.0),
        at("nginx", 4000.0, 3990.0),
        at("lighttpd", 1000.0, 1000.0),
        at("lighttpd", 2000.0, 1500.0),
        StepRecord {
            rate: Some(4000.0),
            status: StepStatus::Skipped,
            failure: Some("the server did not keep up at 2000 req/s".into()),
            ..StepRecord::new("lighttpd", 1, "tiny", 4)
        },
    ];
    // Latency grows with the rate, lighttpd's sharply where it fell behind.
    for (s, p50, p99) in [(1, 900, 2_000), (2, 1_100, 4_000), (4, 150_000, 400_000)] {
        for r in &mut run.steps[s].rounds {
            r.summary.latency_us.p50 = p50;
            r.summary.latency_us.p99 = p99;
        }
    }
    for rate in [1000.0, 2000.0] {
        run.comparisons.push(Comparison {
            a: "nginx".into(),
            b: "lighttpd".into(),
            workload: "tiny".into(),
            cores: 1,
            concurrency: Some(4),
            rate: Some(rate),
            ratio: if rate == 1000.0 { 1.0 } else { 0.75 },
            ci_low: 0.74,
            ci_high: 1.01,
            pairs: 6,
            decision: if rate == 1000.0 {
                Decision::Equal
            } else {
                Decision::Lower
            },
            interval: throng_model::IntervalKind::OrderStatistic,
            launch_ratios: Vec::new(),
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        });
    }
    run
}

#[test]
fn latency_is_drawn_against_the_offered_rate() {
    let a = Analysis::of(&rate_run());
    let ids: Vec<&str> = a.charts.iter().map(|c| c.id.as_str()).collect();
    assert!(ids.contains(&"latency-rate-tiny-1c"), "{ids:?}");
    // Its levels share one concurrency: no chart against it.
    assert!(!ids.contains(&"throughput-tiny-1c"), "{ids:?}");
    assert!(!ids.contains(&"latency-tiny-1c"), "{ids:?}");
    let c = a
        .charts
        .iter()
        .find(|c| c.id == "latency-rate-tiny-1c")
        .unwrap();
    assert_eq!(c.title, "Latency under load, tiny, 1 server core");
    for s in [
        "offered requests per second",
        "latency (ms)",
        "nginx p50",
        "nginx p99",
        "lighttpd p99",
    ] {
        assert!(c.svg.contains(s), "{s} in\n{}", c.svg);
    }
    // lighttpd's line ends at 2000: its 4000 was skipped, not measured.
    assert!(c.svg.contains("<title>lighttpd p99: 400 at 2k</title>"));
    assert!(c.svg.contains("<title>nginx p99: 4 at 4k</title>"));
    assert!(!c.svg.contains("lighttpd p50: 1.1 at 4k"), "{}", c.svg);
    assert_eq!(c.svg.matches("lighttpd p99: ").count(), 2, "{}", c.svg);
}

#[test]
fn a_run_without_rates_draws_no_rate_chart() {
    let a = Analysis::of(&common::rich_run());
    assert!(a.charts.iter().all(|c| !c.id.starts_with("latency-rate-")));
    let md = text(&MarkdownExporter { image_dir: None }, &common::rich_run());
    assert!(!md.contains("Offered req/s"));
}

#[test]
fn the_steps_table_shows_each_rate_and_paired_levels_stay_apart() {
    let run = rate_run();
    let md = text(&MarkdownExporter { image_dir: None }, &run);
    assert!(md.contains("| Conc. | Offered req/s | Rounds |"), "{md}");
    assert!(
        md.contains("| lighttpd | 1 | tiny | 4 | 2000 | 5 |"),
        "{md}"
    );
    assert!(
        md.contains("skipped: the server did not keep up at 2000 req/s"),
        "{md}"
    );
    // One row per offered rate, not one for their shared concurrency.
    assert!(md.contains("| 4 @ 1000 req/s | "), "{md}");
    assert!(md.contains("| 4 @ 2000 req/s | "), "{md}");
    let html = text(&HtmlExporter, &run);
    assert!(html.contains("id=\"latency-rate-tiny-1c\""));
}
