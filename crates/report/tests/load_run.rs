//! A run `throng load URL --save` stored, in exact words: the command to run
//! it again instead of a study file, the target instead of blank version,
//! package and model, "–" for the server figures nobody sampled, and no
//! "0 cores" where the server's cores are not known.

mod common;

use throng_report::compare::{compare_runs, CompareOptions};
use throng_report::{Analysis, Exporter, HtmlExporter, MarkdownExporter};

fn markdown(run: &throng_model::RunData) -> String {
    String::from_utf8(MarkdownExporter::default().export(run).unwrap()).unwrap()
}

fn html(run: &throng_model::RunData) -> String {
    String::from_utf8(HtmlExporter.export(run).unwrap()).unwrap()
}

/// The line of `md` that starts with `start`, whole.
fn line<'a>(md: &'a str, start: &str) -> &'a str {
    md.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starts with {start:?} in\n{md}"))
}

#[test]
fn markdown_says_how_to_run_the_command_again() {
    let md = markdown(&common::load_run());
    assert!(
        md.ends_with(
            "\n## Command\n\nRun again with:\n\n\
             ```sh\nthrong load http://127.0.0.1:8080/ -n 500 -c 5 --save\n```\n\n"
        ),
        "{md}"
    );
    assert!(!md.contains("study.toml"), "{md}");
    assert!(!md.contains("## Study file"), "{md}");
}

#[test]
fn markdown_names_the_target_instead_of_blank_cells() {
    let md = markdown(&common::load_run());
    assert!(
        md.contains(
            "\n## Target\n\n127.0.0.1:8080: target, not started by throng; its version, \
             package, model and configuration are unknown, and its CPU and memory were not \
             sampled.\n\n## Command\n"
        ),
        "{md}"
    );
    assert!(!md.contains("## Servers and their configurations"), "{md}");
    // No server has a version or a model: the summary leaves both columns
    // out rather than drawing them empty.
    assert_eq!(
        line(&md, "| Server | req/s"),
        "| Server | req/s (/) | Max users (/) | Memory (peak PSS) | Executable |"
    );
}

#[test]
fn markdown_shows_what_was_not_sampled_as_not_measured() {
    let md = markdown(&common::load_run());
    assert_eq!(
        line(&md, "| 127.0.0.1:8080 | 2,500"),
        "| 127.0.0.1:8080 | 2,500 — valid (c=5) | 5+ (sweep) | – | – |"
    );
    assert_eq!(
        line(&md, "| 127.0.0.1:8080 | – | /"),
        "| 127.0.0.1:8080 | – | / | 5 | 1 | 2,500 | 1.5 | 2.09 ms | 1.90 ms | 4.80 ms | 0 | – | – | valid |"
    );
    assert_eq!(
        line(&md, "Server CPU and memory"),
        "Server CPU and memory: – where the server was not sampled (throng samples only the \
         servers it starts)."
    );
    assert!(
        md.contains(
            " Memory: peak PSS of the server's process tree; – where it was not sampled \
             (throng samples only the servers it starts).\n"
        ),
        "{md}"
    );
    for zero in ["0 cores", "0 core", "0.0 µs", " 0.0 MiB", "| 0% |"] {
        assert!(!md.contains(zero), "{zero:?} in\n{md}");
    }
}

#[test]
fn html_has_no_zero_cores_and_no_unsampled_zeros() {
    let page = html(&common::load_run());
    for zero in [
        "0 cores",
        "0 core(s)",
        "0 server cores",
        "0.0 µs",
        ">0.0 MiB",
        ">0%<",
        "-0c",
    ] {
        assert!(!page.contains(zero), "{zero:?} in the HTML");
    }
    assert!(page.contains(
        "<h2 id=\"servers\">Target</h2>\n<p>127.0.0.1:8080: target, not started by throng; its \
         version, package, model and configuration are unknown, and its CPU and memory were \
         not sampled.</p>\n"
    ));
    assert!(page.contains(
        "<h2 id=\"study\">Command</h2>\n<p>Run again with:</p>\n\
         <pre>throng load http://127.0.0.1:8080/ -n 500 -c 5 --save</pre>\n"
    ));
    // Cores, CPU/req, server CPU and PSS peak of the one step.
    assert!(page.contains(
        "<tr><td class=\"t\">127.0.0.1:8080</td><td>–</td><td class=\"t\">/</td><td>5</td>\
         <td>1</td><td>2,500</td><td>1.5</td><td>2.09 ms</td><td>1.90 ms</td><td>4.80 ms</td>\
         <td>0</td><td>–</td><td>–</td><td>–</td>"
    ));
    assert!(!page.contains("study.toml"));
}

#[test]
fn charts_of_one_unsampled_step_skip_the_server_figures() {
    let a = Analysis::of(&common::load_run());
    let ids: Vec<&str> = a.charts.iter().map(|c| c.id.as_str()).collect();
    // No memory or CPU chart of zeros; no "-0c" in the file names.
    assert_eq!(ids, ["throughput-x", "latency-x", "total-time-x"]);
    let tput = &a.charts[0];
    // One level: a bar a server, not a line of one dot on an axis of
    // fractions of a connection.
    assert_eq!(tput.title, "Throughput, /, 5 connections");
    assert!(tput.svg.contains("<title>127.0.0.1:8080: "), "{}", tput.svg);
    assert!(!tput.svg.contains("<circle") && !tput.svg.contains("<polyline"));
    assert!(!tput.svg.contains("NaN") && !tput.svg.contains("inf"));
    // Its figures as a table for a text report: one row, the server's.
    let data = tput.data.as_ref().unwrap();
    assert_eq!(data.rows.len(), 1);
    assert_eq!(data.rows[0][0].text, "127.0.0.1:8080");
    assert!(
        a.charts[2].svg.contains("s over 1 step<"),
        "{}",
        a.charts[2].svg
    );
}

#[test]
fn a_failed_load_names_its_step_without_cores() {
    let mut run = common::load_run();
    let step = &mut run.steps[0];
    step.status = throng_model::StepStatus::Failed;
    step.failure = Some("connection refused".into());
    step.rounds.clear();
    step.throughput = throng_model::Estimate::default();
    let page = html(&run);
    assert!(page.contains(
        "<h3>127.0.0.1:8080, /, concurrency 5</h3>\n<p class=\"failed\">connection refused</p>"
    ));
    let md = markdown(&run);
    assert_eq!(
        line(&md, "| 127.0.0.1:8080 | – | /"),
        "| 127.0.0.1:8080 | – | / | 5 | 0 | – | 0.0 | – | – | – | 0 | – | – | failed: connection refused |"
    );
    // Nothing was measured, so nothing was left unsampled.
    assert!(!md.contains("Server CPU and memory"), "{md}");
}

#[test]
fn a_lab_study_named_load_keeps_its_study_file() {
    let mut run = common::rich_run();
    run.run.study = "load".into();
    let md = markdown(&run);
    assert!(md.contains("Save as `study.toml` and run `throng lab study.toml`"));
    assert!(md.contains("## Servers and their configurations"));
    assert!(!md.contains("## Command"));
}

#[test]
fn two_saved_loads_compare_step_by_step_without_cores() {
    let a = common::load_run();
    let mut b = common::load_run();
    b.run.id = 13;
    let md = compare_runs(&a, &b, CompareOptions::default()).to_markdown();
    assert!(md.contains("\n| 127.0.0.1:8080, /, c=5 | 2,500 "), "{md}");
}

#[test]
fn any_unsampled_step_shows_dashes_and_leaves_the_charts() {
    // A lab step whose sampler recorded nothing: its server figures are
    // "–", and the CPU chart's bar for lighttpd leaves it out instead of
    // averaging a zero in.
    let mut run = common::rich_run();
    let i = run
        .steps
        .iter()
        .position(|s| s.server == "lighttpd" && s.cores == 1 && s.concurrency == 10)
        .unwrap();
    for r in &mut run.steps[i].rounds {
        r.server = throng_model::ServerUsage::default();
    }
    let md = markdown(&run);
    let row = line(&md, "| lighttpd | 1 | tiny | 10 |");
    assert!(row.ends_with(" | – | – | valid |"), "{row}");
    assert!(md.contains("\nServer CPU and memory: – where the server was not sampled"));
    let sampled = Analysis::of(&common::rich_run());
    let a = Analysis::of(&run);
    let cpu = |a: &Analysis| {
        a.charts
            .iter()
            .find(|c| c.id == "cpu-tiny")
            .unwrap()
            .svg
            .clone()
    };
    // lighttpd's other tiny steps used 32 µs a request, as every step of
    // the fixture does: the bar stays at 32 with the step left out.
    assert_eq!(cpu(&a), cpu(&sampled));
}
