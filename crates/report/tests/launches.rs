//! A run whose servers were started more than once: the forest plot that
//! opens the report with each launch's ratio, the band the study's
//! precision sets, a ratio too few pairs bound, and how each server's
//! variance splits between slices and launches.

mod common;

use throng_report::{Analysis, Exporter, HtmlExporter, JsonExporter, MarkdownExporter};

#[test]
fn the_report_opens_with_the_pooled_ratios_drawn() {
    let run = common::launched_run();
    let a = Analysis::of(&run);
    let forest = a.forest.as_ref().unwrap();
    assert_eq!(forest.id, "forest");
    // Three pairs pooled at tiny 1 core, tiny 2 cores and large 1 core.
    assert_eq!(forest.svg.matches("<g class=\"row\">").count(), 9);
    assert_eq!(forest.svg.matches("class=\"launch\"").count(), 6);
    assert_eq!(forest.svg.matches("class=\"ratio unbounded\"").count(), 1);
    assert!(forest.svg.contains(">0.80×</text>"));
    assert!(forest.svg.contains(">too few pairs to bound: 3</text>"));
    assert!(forest
        .svg
        .contains("<title>1 ± 3%: equal within noise</title>"));
    assert!(forest.svg.contains(">lighttpd / nginx</text>"));
    assert!(forest.svg.contains(">tiny, 2 cores, all levels</text>"));
    // Levels get a plot per group, beside their tables.
    let ids: Vec<&str> = a.level_forests.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["forest-tiny-1c", "forest-tiny-2c", "forest-large-1c"]);

    let html = String::from_utf8(HtmlExporter.export(&run).unwrap()).unwrap();
    let drawn = html.find("<figure class=\"chart\" id=\"forest\">").unwrap();
    let first_line = html.find("<li>lighttpd: 0.80× nginx").unwrap();
    assert!(drawn < first_line);
    assert!(
        html.contains(
            "<li>lighttpd: 0.80× nginx&#39;s requests per second (too few pairs to bound: 3) — \
             undecided"
        ),
        "{html}"
    );
    assert!(
        !html.contains("0.80–0.80"),
        "an unbounded ratio printed as an interval"
    );
}

#[test]
fn a_server_whose_launches_differ_is_named() {
    let run = common::launched_run();
    let md = String::from_utf8(MarkdownExporter::default().export(&run).unwrap()).unwrap();
    let at = md.find("## Slices and launches\n").unwrap();
    let section = &md[at..md[at + 3..].find("\n## ").map_or(md.len(), |e| at + 3 + e)];
    let lines: Vec<&str> = section.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        lines,
        [
            "| Server | Launches | Slice SD | Launch SD | Spread | p |",
            "|---|--:|--:|--:|--:|--:|",
            "| nginx | 3 | 0.6% | 0.0% | 0.0% | 1.000 |",
            "| lighttpd | 3 | 1.0% | 0.0% | 0.0% | 1.000 |",
            "| apache2-event | 3 | 0.6% | 6.5% | **12.0%** | < 0.001 |",
        ],
        "{section}"
    );
    let said: Vec<&str> = section
        .lines()
        .filter(|l| l.contains("its launches differed"))
        .collect();
    assert_eq!(
        said,
        ["apache2-event: its launches differed by 12%: its figure depends on how it started"]
    );
}

#[test]
fn the_json_carries_each_servers_split() {
    let run = common::launched_run();
    let v: serde_json::Value = serde_json::from_slice(&JsonExporter.export(&run).unwrap()).unwrap();
    let groups = v["launches"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    assert_eq!(
        (g["workload"].as_str(), g["cores"].as_u64()),
        (Some("tiny"), Some(1))
    );
    assert_eq!(g["threshold"], 0.03);
    let apache = &g["servers"][2];
    assert_eq!(apache["server"], "apache2-event");
    let split = &apache["split"];
    let mut keys: Vec<&String> = split.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "differs",
            "f",
            "launch_sd",
            "launches",
            "p_value",
            "slice_sd",
            "spread"
        ]
    );
    assert_eq!(split["differs"], true);
    assert!((split["spread"].as_f64().unwrap() - 0.12).abs() < 1e-9);
    assert_eq!(split["launches"][2]["slices"], 16);
    // A run whose servers started once has no split to carry.
    let v: serde_json::Value =
        serde_json::from_slice(&JsonExporter.export(&common::rich_run()).unwrap()).unwrap();
    assert_eq!(v["launches"], serde_json::json!([]));
}

#[test]
fn a_machine_that_moved_every_server_in_a_launch_is_said_before_the_servers() {
    // The same run, with every server 10% slower in its second launch:
    // the servers' splits cancel it, the machine's sentence says it.
    let mut run = common::launched_run();
    for s in run
        .steps
        .iter_mut()
        .filter(|s| s.workload == "tiny" && s.cores == 1)
    {
        for r in s.rounds.iter_mut().filter(|r| r.launch == Some(1)) {
            r.summary.requests_per_sec *= 0.9;
        }
    }
    let md = String::from_utf8(MarkdownExporter::default().export(&run).unwrap()).unwrap();
    let at = md.find("## Slices and launches\n").unwrap();
    let section = &md[at..md[at + 3..].find("\n## ").map_or(md.len(), |e| at + 3 + e)];
    let said: Vec<&str> = section
        .lines()
        .filter(|l| l.contains("moved together") || l.contains("its launches differed"))
        .collect();
    // The blocks' own drift (2% steps) sits in the launches' effects too.
    assert_eq!(
        said,
        [
            "every server's rate moved together by 12% between launches (each launch's \
             effect: 1.031, 0.932, 1.041): the machine moved, and part of a server's launches \
             may be the machine's",
            "apache2-event: its launches differed by 12%: its figure depends on how it \
             started, or on how the machine moved between them"
        ],
        "{section}"
    );
    let v: serde_json::Value = serde_json::from_slice(&JsonExporter.export(&run).unwrap()).unwrap();
    let machine = &v["launches"][0]["machine"];
    assert_eq!(machine["factors"][1][0], 1);
    let f = |l: usize| machine["factors"][l][1].as_f64().unwrap();
    // The truth, 0.9, within what the blocks' drift and the noise move it.
    assert!((f(1) / f(0) - 0.9).abs() < 0.01, "{machine}");
    assert!(
        (machine["spread"].as_f64().unwrap() - 0.117).abs() < 0.002,
        "{machine}"
    );
    // Where it held, no sentence: the drift alone is within the precision.
    let md = String::from_utf8(
        MarkdownExporter::default()
            .export(&common::launched_run())
            .unwrap(),
    )
    .unwrap();
    assert!(!md.contains("moved together"), "{md}");
}
