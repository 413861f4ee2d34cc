//! The figures the articles drew that the report draws too, in exact
//! words: ab's mean latency per step, weighted by each round's responses,
//! and the Apache/lighttpd/nginx/Varnish article's MB/s against
//! concurrency for its large file.

mod common;

use throng_model::{RoundRecord, RunData, StepStatus, Summary};
use throng_report::{
    Analysis, CsvExporter, Exporter, HtmlExporter, JsonExporter, MarkdownExporter,
};

fn text(e: &dyn Exporter, run: &RunData) -> String {
    String::from_utf8(e.export(run).unwrap()).unwrap()
}

/// The saved load's one step measured over three rounds: 5,000 responses
/// at a mean of 2 ms, 2,500 at a mean of 5 ms, and one round that ended
/// before any response completed.
fn three_rounds() -> RunData {
    let mut run = common::load_run();
    let step = &mut run.steps[0];
    step.rounds[0].summary.latency_us.mean = 2_000.0;
    let mut slow = common::round(1, 1_250.0, 612, 4_000, 9_000, 0);
    slow.server = Default::default();
    slow.summary.latency_us.mean = 5_000.0;
    step.rounds.push(slow);
    step.rounds.push(RoundRecord {
        index: 2,
        summary: Summary {
            duration_s: 2.0,
            in_flight_at_end: 5,
            ..Summary::default()
        },
        ..RoundRecord::default()
    });
    run
}

#[test]
fn the_mean_weighs_each_round_by_its_responses() {
    let run = three_rounds();
    let counts: Vec<u64> = run.steps[0]
        .rounds
        .iter()
        .map(|r| r.summary.latency_us.count)
        .collect();
    assert_eq!(counts, [5_000, 2_500, 0]);
    // (5,000 × 2,000 µs + 2,500 × 5,000 µs) / 7,500 = 22,500,000 / 7,500
    // = 3,000 µs. The plain mean of the means would be 3.50 ms, and
    // counting the empty round's 0 µs would pull it lower still.
    let a = Analysis::of(&run);
    assert_eq!(a.steps[0].latency_mean_us, Some(3_000.0));

    // Rounds 3 with 1 empty; the stored estimate of 2,500 req/s; MB/s the
    // median of 1.53, 0.765 and 0; mean; p50 the median of 1,900 and
    // 4,000 µs; p99 of 4,800 and 9,000 µs.
    let md = text(&MarkdownExporter::default(), &run);
    assert!(
        md.contains(
            "\n| Server | Cores | Workload | Conc. | Rounds | req/s [95% CI] | MB/s | mean | p50 \
             | p99 | Errors | CPU/req | PSS peak | Verdict |\n"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "\n| 127.0.0.1:8080 | – | / | 5 | 3 (1 empty) | 2,500 | 0.8 | 3.00 ms | 2.95 ms \
             | 6.90 ms | 0 | – | – | valid |\n"
        ),
        "{md}"
    );

    let page = text(&HtmlExporter, &run);
    assert!(
        page.contains("<th>MB/s</th><th>mean</th><th>p50</th><th>p99</th>"),
        "{page}"
    );
    assert!(
        page.contains("<td>0.8</td><td>3.00 ms</td><td>2.95 ms</td><td>6.90 ms</td>"),
        "{page}"
    );

    let csv = text(&CsvExporter, &run);
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .contains(",mb_per_sec,latency_mean_us,p50_us,p99_us,"));
    assert!(
        lines.next().unwrap().contains(",0.765,3000.000,2950,6900,"),
        "{csv}"
    );

    let json = text(&JsonExporter, &run);
    assert!(
        json.contains("\n      \"latency_mean_us\": 3000.0,\n"),
        "{json}"
    );
}

#[test]
fn a_step_without_a_response_has_no_mean() {
    let mut run = three_rounds();
    run.steps[0].rounds.drain(..2);
    let a = Analysis::of(&run);
    assert_eq!(a.steps[0].latency_mean_us, None);
    let md = text(&MarkdownExporter::default(), &run);
    assert!(
        md.contains(
            "\n| 127.0.0.1:8080 | – | / | 5 | 1 (1 empty) | 2,500 | 0.0 | – | – | – | 0 | – | – \
             | valid |\n"
        ),
        "{md}"
    );
    let json = text(&JsonExporter, &run);
    assert!(
        json.contains("\n      \"latency_mean_us\": null,\n"),
        "{json}"
    );
}

#[test]
fn large_files_get_mb_per_sec_against_concurrency() {
    let a = Analysis::of(&common::rich_run());
    let ids: Vec<&str> = a.charts.iter().map(|c| c.id.as_str()).collect();
    // Only the large workload: tiny keeps its throughput charts alone.
    let transfer: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| id.starts_with("transfer-"))
        .collect();
    assert_eq!(transfer, ["transfer-large-1c"]);
    let c = a
        .charts
        .iter()
        .find(|c| c.id == "transfer-large-1c")
        .unwrap();
    assert_eq!(c.title, "Transfer rate, large, 1 server core");
    // Each round of nginx moves 10 responses of 21 MB in 2 s at c=1 (105
    // MB/s) and 20 at c=4 (210 MB/s); lighttpd 0.8 and apache2-event 0.6
    // of that. The axes run 0–4 connections over x 72–580 and 0–250 MB/s
    // over y 368–44: 105 MB/s is at 368 − 105/250 × 324 = 231.9.
    for line in [
        "<polyline points=\"199.0,231.9 580.0,95.8\" fill=\"none\" stroke=\"#0072b2\" stroke-width=\"2\"/>",
        "<circle cx=\"199.0\" cy=\"231.9\" r=\"3\" fill=\"#0072b2\"><title>nginx: 105 at 1</title></circle>",
        "<circle cx=\"580.0\" cy=\"95.8\" r=\"3\" fill=\"#0072b2\"><title>nginx: 210 at 4</title></circle>",
        "<polyline points=\"199.0,259.1 580.0,150.3\" fill=\"none\" stroke=\"#e69f00\" stroke-width=\"2\"/>",
        "<polyline points=\"199.0,286.4 580.0,204.7\" fill=\"none\" stroke=\"#009e73\" stroke-width=\"2\"/>",
        "transform=\"rotate(-90 16 206.0)\">MB/s</text>",
    ] {
        assert!(c.svg.contains(line), "{line} in\n{}", c.svg);
    }
    let page = text(&HtmlExporter, &common::rich_run());
    assert!(page.contains(
        "<figure class=\"chart\" id=\"transfer-large-1c\">\n<svg xmlns=\"http://www.w3.org/2000/svg\""
    ));
    let md = text(
        &MarkdownExporter {
            image_dir: Some("charts".into()),
        },
        &common::rich_run(),
    );
    assert!(md.contains("\n![Transfer rate, large, 1 server core](charts/transfer-large-1c.png)\n"));
}

#[test]
fn the_transfer_chart_skips_steps_as_the_throughput_chart_does() {
    // nginx's c=4 step failed: its line is one point, and the axis is
    // scaled to what is left (lighttpd's 168 MB/s tops it at 200, so 105
    // MB/s is at 368 − 105/200 × 324 = 197.9).
    let mut run = common::rich_run();
    let i = run
        .steps
        .iter()
        .position(|s| s.server == "nginx" && s.workload == "large" && s.concurrency == 4)
        .unwrap();
    run.steps[i].status = StepStatus::Failed;
    run.steps[i].rounds.clear();
    let a = Analysis::of(&run);
    let c = a
        .charts
        .iter()
        .find(|c| c.id == "transfer-large-1c")
        .unwrap();
    assert!(c.svg.contains(
        "<circle cx=\"199.0\" cy=\"197.9\" r=\"3\" fill=\"#0072b2\"><title>nginx: 105 at 1</title></circle>"
    ));
    assert!(!c.svg.contains("nginx: 210"), "{}", c.svg);
    assert!(
        !c.svg
            .lines()
            .any(|l| l.starts_with("<polyline") && l.contains("#0072b2")),
        "{}",
        c.svg
    );
    // With every large step failed there is nothing to draw, and no chart.
    for s in run.steps.iter_mut().filter(|s| s.workload == "large") {
        s.status = StepStatus::Failed;
        s.rounds.clear();
    }
    let a = Analysis::of(&run);
    assert!(a.charts.iter().all(|c| !c.id.starts_with("transfer-")));
}
