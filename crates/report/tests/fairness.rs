//! What the report says about fairness, in exact words: paired ratios
//! against the baseline, the settings that differ, the cost of a request,
//! and the JSON fields behind them; and that a run stored before any of it
//! reads as it always did.

mod common;

use throng_report::compare::{compare_servers, CompareOptions};
use throng_report::{cost, Analysis, Exporter, HtmlExporter, JsonExporter, MarkdownExporter};

fn markdown(run: &throng_model::RunData) -> String {
    String::from_utf8(MarkdownExporter::default().export(run).unwrap()).unwrap()
}

fn html(run: &throng_model::RunData) -> String {
    String::from_utf8(HtmlExporter.export(run).unwrap()).unwrap()
}

#[test]
fn the_summary_leads_with_ratios_against_the_baseline() {
    let run = common::rich_run();
    let md = markdown(&run);
    let summary = md.split("## Summary\n").nth(1).unwrap();
    assert!(summary.starts_with(
        "\nEach server's requests per second over nginx's (the baseline), from rounds of the two \
         measured back to back"
    ));
    // lighttpd was diagnosed at c=100 but not c=200 on 1 core: the syscalls
    // are compared at the highest level both have.
    assert!(summary.contains(
        "**tiny, 1 core**\n\n\
         - lighttpd: 0.80× nginx's requests per second (95% CI 0.79–0.81, 20 pairs) — lower; \
         nginx makes 2.94 more syscalls per request at c=100 (openat +1.00, close +0.98, \
         newfstatat +0.98; lighttpd epoll\\_wait +0.02)\n\
         - apache2-event: 0.600× nginx's requests per second (95% CI 0.595–0.605, 20 pairs) — lower\n"
    ));
    // The pair stored as apache2-event/lighttpd is listed as stored.
    assert!(summary
        .contains("| apache2-event | lighttpd | large | 1 | 1.33× | 1.32–1.34 | 10 | higher |"));
    // The table of best figures follows, as a subsection.
    let best = summary.find("### Best figures per server").unwrap();
    assert!(summary.find("### Paired comparisons").unwrap() < best);
    let h = html(&run);
    assert!(h.contains(
        "<li>lighttpd: 0.80× nginx&#39;s requests per second (95% CI 0.79–0.81, 20 pairs) — lower; \
         nginx makes 2.94 more syscalls per request at c=100 (openat +1.00, close +0.98, \
         newfstatat +0.98; lighttpd epoll_wait +0.02)</li>"
    ));
    assert!(h.contains("<h2 id=\"summary\">Summary</h2>\n<p>Each server"));
    // Per level, in the detailed part.
    assert!(md.contains(
        "### tiny, 2 cores\n\n| Conc. | lighttpd / nginx | apache2-event / nginx | apache2-event / lighttpd |"
    ));
    assert!(md.contains("| 200 | 0.80× [0.79–0.81] lower (5 pairs) | – | – |"));
}

#[test]
fn settings_that_differ_are_marked_with_their_likely_effect() {
    let run = common::rich_run();
    let md = markdown(&run);
    assert!(
        md.contains("| Setting | nginx (defaults) | lighttpd (tuned) | apache2-event (defaults) |")
    );
    assert!(md.contains("| open\\_file\\_cache | **off** (default) | **on** (default) | – |"));
    assert!(md.contains("| workers | 1 (lab) | 1 (lab) | 1 (lab) |"));
    assert!(md.contains(
        "- open\\_file\\_cache (nginx off, lighttpd on): a server without it opens and stats the \
         file on every request (see syscalls per request)\n"
    ));
    assert!(md.contains(
        "- sendfile (nginx on, lighttpd on, apache2-event off): a server without it copies the \
         file through user space on every response\n"
    ));
    assert!(!md.contains("- workers ("));
    let h = html(&run);
    assert!(h.contains(
        "<td class=\"t hl\" title=\"open_file_cache off\">off <small>(default)</small></td>"
    ));
    assert!(h.contains("<td class=\"t\">1 <small>(lab)</small></td>"));
    // A hostile detail stays a tooltip's text.
    assert!(h.contains("title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\">100"));
}

#[test]
fn each_server_has_its_cost_per_request() {
    let run = common::rich_run();
    let a = Analysis::of(&run);
    assert_eq!(
        cost::best_lines(&run, &a.steps),
        [
            "nginx (tiny, 2 cores, c=200): close 1.00, newfstatat 1.00, openat 1.00, recvfrom 1.00, \
             writev 1.00, epoll_wait 0.08 + 0.05 other per request; 32.0 µs CPU and 0.25 context \
             switches per request",
            // Its step at 2 cores, c=200 is suspect: the best valid one.
            "lighttpd (tiny, 1 core, c=100): recvfrom 1.00, writev 1.00, epoll_wait 0.10, close \
             0.02, newfstatat 0.02 + 0.05 other per request; 32.0 µs CPU and 0.25 context \
             switches per request",
            "apache2-event (tiny, 1 core, c=200): syscalls not counted: perf_event_paranoid is 3 \
             and throng lacks CAP_PERFMON; 32.0 µs CPU and 0.70 context switches per request",
        ]
    );
    let md = markdown(&run);
    assert!(md.contains(
        "| lighttpd | 1 | tiny | 100 | recvfrom 1.00, writev 1.00, epoll\\_wait 0.10, close 0.02, \
         newfstatat 0.02 + 0.05 other per request | 32.0 µs | 0.25 | 0 B | perf stat |"
    ));
}

#[test]
fn the_json_carries_comparisons_parity_and_diagnoses() {
    let run = common::rich_run();
    let v: serde_json::Value = serde_json::from_slice(&JsonExporter.export(&run).unwrap()).unwrap();
    assert_eq!(v["baseline"], "nginx");
    assert_eq!(
        v["comparisons"].as_array().unwrap().len(),
        run.comparisons.len()
    );
    let pooled = &v["comparisons"][0];
    assert_eq!(
        pooled.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "a",
            "b",
            "ci_high",
            "ci_low",
            "concurrency",
            "cores",
            "decision",
            "interval",
            "pairs",
            "ratio",
            "workload"
        ]
    );
    assert_eq!(pooled["concurrency"], serde_json::Value::Null);
    assert_eq!(pooled["decision"], "lower");
    assert_eq!(pooled["interval"], "order_statistic");
    assert_eq!(v["comparisons"][1]["concurrency"], 10);
    assert_eq!(v["servers"][1]["name"], "lighttpd");
    assert_eq!(v["servers"][1]["profile"], "tuned");
    assert_eq!(
        v["servers"][0]["parity"]["open_file_cache"],
        serde_json::json!({"value": "off", "source": "default", "detail": "open_file_cache off"})
    );
    assert_eq!(
        v["servers"][1]["parity"]["keepalive_requests"]["value"],
        "1000"
    );
    let steps = v["steps"].as_array().unwrap();
    let at = |server: &str, cores: u64, c: u64| {
        steps
            .iter()
            .find(|s| {
                s["server"] == server
                    && s["workload"] == "tiny"
                    && s["cores"] == cores
                    && s["concurrency"] == c
            })
            .unwrap()
    };
    let nginx = at("nginx", 1, 100);
    assert_eq!(nginx["syscalls_per_request"]["openat"], 1.0);
    assert_eq!(nginx["diagnosis"]["tool"], "perf stat");
    assert_eq!(nginx["diagnosis"]["total_per_request"], 5.13);
    let apache = at("apache2-event", 1, 200);
    assert_eq!(apache["syscalls_per_request"], serde_json::Value::Null);
    assert_eq!(
        apache["diagnosis"]["unavailable"],
        "perf_event_paranoid is 3 and throng lacks CAP_PERFMON"
    );
    let plain = at("nginx", 1, 10);
    assert_eq!(plain["syscalls_per_request"], serde_json::Value::Null);
    assert_eq!(plain["diagnosis"], serde_json::Value::Null);
}

/// The fixture as a run stored before paired rounds, settings and
/// diagnoses.
fn old_run() -> throng_model::RunData {
    let mut run = common::rich_run();
    run.run.baseline = None;
    run.comparisons.clear();
    for s in &mut run.servers {
        s.parity.clear();
        s.profile = throng_model::Profile::Defaults;
    }
    for s in &mut run.steps {
        s.diagnosis = None;
    }
    run
}

#[test]
fn a_run_without_them_reads_as_before() {
    let run = old_run();
    let md = markdown(&run);
    assert!(md.contains("## Summary\n\n| Server | Version | Model |"));
    for gone in [
        "Paired comparisons",
        "Best figures per server",
        "Settings that change results",
        "Cost per request",
    ] {
        assert!(!md.contains(gone), "{gone}");
    }
    let h = html(&run);
    assert!(h.contains("<h2 id=\"summary\">Summary</h2>\n<div class=\"scroll\"><table>"));
    // The first server stands as the baseline of a run that named none.
    let v: serde_json::Value = serde_json::from_slice(&JsonExporter.export(&run).unwrap()).unwrap();
    assert_eq!(v["baseline"], "nginx");
    assert_eq!(v["comparisons"], serde_json::json!([]));
    let c = compare_servers(&run, "nginx", "lighttpd", CompareOptions::default()).unwrap();
    assert!(c.paired.is_empty());
    assert!(c.to_table().starts_with('┌'));
    assert!(!String::from_utf8(c.to_json().unwrap())
        .unwrap()
        .contains("\"paired\""));
}

#[test]
fn compare_leads_with_the_stored_ratios_either_way_round() {
    let run = common::rich_run();
    // Stored as nginx/lighttpd: read as lighttpd against nginx...
    let c = compare_servers(&run, "nginx", "lighttpd", CompareOptions::default()).unwrap();
    let text = c.to_table();
    assert!(text.starts_with(
        "Paired: lighttpd's requests per second over nginx's, from rounds measured back to back\n"
    ));
    assert!(text.contains(
        "│ 1 core, tiny, all levels  ┆            0.80× ┆ 0.79–0.81 ┆    20 ┆ lower    │"
    ));
    assert!(text.contains("\nUnpaired, step by step:\n┌"));
    // ...and turned around: nginx against lighttpd.
    let c = compare_servers(&run, "lighttpd", "nginx", CompareOptions::default()).unwrap();
    let pooled = &c.paired[0];
    assert_eq!(
        (pooled.a.as_str(), pooled.b.as_str()),
        ("lighttpd", "nginx")
    );
    assert_eq!(pooled.decision, throng_model::Decision::Higher);
    assert!(c.to_table().contains(
        "│ 1 core, tiny, all levels  ┆            1.25× ┆ 1.24–1.26 ┆    20 ┆ higher   │"
    ));
    // A pair stored the other way round reads the way it was asked for.
    let c = compare_servers(&run, "lighttpd", "apache2-event", CompareOptions::default()).unwrap();
    let large: Vec<String> = c
        .paired
        .iter()
        .filter(|p| p.workload == "large")
        .map(|p| {
            format!(
                "{} {}",
                throng_report::ratios::sweep_label(p),
                throng_report::ratios::ratio_text(p)
            )
        })
        .collect();
    assert_eq!(
        large,
        [
            "1 core, large, all levels 0.75×",
            "1 core, large, c=1 0.75×",
            "1 core, large, c=4 0.75×"
        ]
    );
    let md = c.to_markdown();
    assert!(md.contains("| sweep | apache2-event / lighttpd | 95% CI | pairs | decision |"));
    assert!(md.contains("| 1 core, large, all levels | 0.75× | 0.74–0.76 | 10 | lower |"));
}

#[test]
fn a_server_whose_recipe_says_no_version_or_model_shows_no_empty_fields() {
    // A study's `command` server: no version found, no model declared.
    let mut run = common::rich_run();
    run.servers[0].version = String::new();
    run.servers[0].model = String::new();
    let name = run.servers[0].name.clone();
    let md = markdown(&run);
    let line = md
        .split(&format!("\n### {name}\n\n"))
        .nth(1)
        .and_then(|s| s.lines().next())
        .unwrap();
    assert!(line.starts_with(&format!("{name}, recipe ")), "{line}");
    assert!(!line.contains(", ,") && !line.contains("  "), "{line}");
    let page = html(&run);
    let p = page
        .split(&format!("<h3>{name}</h3>\n<p>"))
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap();
    assert!(p.starts_with(&format!("{name} · recipe ")), "{p}");
    assert!(!p.contains("·  ·") && !p.contains(" · · "), "{p}");
}
