//! Users who walk sessions in the report: a table of each step's sessions
//! with exact figures, the sessions that failed or were turned away in
//! words, completed sessions per second drawn against users, and nothing
//! of it in a run of plain requests.

mod common;

use throng_model::{Latency, RunData, SessionCounts, Sessions, StepRecord};
use throng_report::{Analysis, Exporter, HtmlExporter, JsonExporter, MarkdownExporter};

fn text(e: &dyn Exporter, run: &RunData) -> String {
    String::from_utf8(e.export(run).unwrap()).unwrap()
}

fn spectrum(count: u64, mean: f64, p50: u64, p99: u64) -> Latency {
    Latency {
        count,
        mean,
        p50,
        p99,
        ..Latency::default()
    }
}

/// One round's sessions: `counts` are started, completed, failed and
/// unfinished; a fixed population of users, who turn nobody away.
fn walked(
    sessions_per_sec: f64,
    counts: [u64; 4],
    duration_us: Latency,
    think_us: Latency,
    active_max: u64,
) -> Sessions {
    let [started, completed, failed, unfinished] = counts;
    Sessions {
        users: active_max,
        arrival_per_sec: None,
        counts: SessionCounts {
            started,
            completed,
            failed,
            unfinished,
            turned_away: 0,
            late_arrivals: 0,
        },
        sessions_per_sec,
        duration_us,
        think_us,
        active: vec![active_max],
        active_max,
        lengths: Vec::new(),
    }
}

/// A step of `server` on the shop workload at `users`, one round per
/// element of `rounds`.
fn step(server: &str, users: u32, rounds: Vec<Sessions>) -> StepRecord {
    let mut st = common::step(server, 1, "shop", users, 400.0, 5_000, 8 << 20);
    st.rounds.truncate(rounds.len());
    for (r, x) in st.rounds.iter_mut().zip(rounds) {
        r.summary.sessions = Some(x);
    }
    st
}

/// nginx and lighttpd with users walking the shop's sessions at 10 and 50
/// users; lighttpd's 50 users arrive at 30 a second and are sometimes
/// turned away.
fn session_run() -> RunData {
    let mut run = common::rich_run();
    run.comparisons.clear();
    let diagnosis = run.steps.iter().find_map(|s| s.diagnosis.clone());
    let mut open = vec![
        walked(
            25.0,
            [240, 230, 0, 10],
            spectrum(230, 2_100_000.0, 2_000_000, 5_000_000),
            spectrum(900, 1_000_000.0, 900_000, 3_000_000),
            50,
        ),
        walked(
            27.0,
            [250, 245, 1, 4],
            spectrum(245, 2_300_000.0, 2_200_000, 5_400_000),
            spectrum(900, 1_000_000.0, 900_000, 3_000_000),
            50,
        ),
    ];
    for (x, away) in open.iter_mut().zip([40, 0]) {
        x.arrival_per_sec = Some(30.0);
        x.counts.turned_away = away;
    }
    run.steps = vec![
        step(
            "nginx",
            10,
            vec![
                walked(
                    20.0,
                    [80, 80, 0, 0],
                    spectrum(80, 1_000_000.0, 900_000, 2_000_000),
                    spectrum(300, 1_500_000.0, 1_400_000, 4_000_000),
                    10,
                ),
                // Ten slow sessions, none of them over when the round
                // ended: no session time at all, rather than zeros.
                walked(
                    0.0,
                    [10, 0, 0, 10],
                    Latency::default(),
                    spectrum(20, 1_000_000.0, 1_000_000, 1_000_000),
                    10,
                ),
            ],
        ),
        step(
            "nginx",
            50,
            vec![
                walked(
                    95.0,
                    [400, 396, 1, 3],
                    spectrum(396, 1_300_000.0, 1_200_000, 3_000_000),
                    spectrum(1_000, 3_000_000.0, 2_500_000, 9_000_000),
                    48,
                ),
                walked(
                    96.0,
                    [410, 405, 2, 3],
                    spectrum(405, 1_400_000.0, 1_300_000, 4_000_000),
                    spectrum(3_000, 1_000_000.0, 900_000, 3_000_000),
                    50,
                ),
                walked(
                    97.5,
                    [390, 386, 0, 4],
                    spectrum(386, 1_350_000.0, 1_250_000, 3_600_000),
                    spectrum(1_000, 2_000_000.0, 1_800_000, 6_000_000),
                    49,
                ),
            ],
        ),
        step(
            "lighttpd",
            10,
            vec![walked(
                15.0,
                [60, 60, 0, 0],
                spectrum(60, 900_000.0, 800_000, 1_500_000),
                spectrum(200, 1_200_000.0, 1_100_000, 2_000_000),
                10,
            )],
        ),
        step("lighttpd", 50, open),
    ];
    run.steps[1].diagnosis = diagnosis;
    run
}

/// The line of the sessions section of `md` that starts with `start`,
/// whole: the steps table above it has rows that start alike.
fn line<'a>(md: &'a str, start: &str) -> &'a str {
    let at = md.find("\n## Sessions\n").expect("a sessions section");
    md[at..]
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starts with {start:?} in\n{md}"))
}

#[test]
fn the_table_gives_each_steps_sessions_over_its_rounds() {
    let md = text(&MarkdownExporter::default(), &session_run());
    assert!(
        md.contains(
            "\n## Sessions\n\n| Server | Workload | Users | Sessions/s | Started | Completed \
             | Failed | Unfinished | Turned away | Session p50 | Session p99 | Think (mean) \
             | Most active |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
        ),
        "{md}"
    );
    // nginx at 10 users: sessions/s the median of 20 and 0; session time
    // from the round that completed sessions alone; think (300 × 1.5 s +
    // 20 × 1 s) / 320 = 1.46875 s.
    assert_eq!(
        line(&md, "| nginx | shop | 10 |"),
        "| nginx | shop | 10 | 10.0 | 90 | 80 | 0 | 10 | – | 900.00 ms | 2.00 s | 1.47 s | 10 |"
    );
    // nginx at 50 users: p50 the median of 1.20, 1.30 and 1.25 s; p99 of
    // 3.0, 4.0 and 3.6 s (their mean would be 3.53 s); think (1,000 × 3 s
    // + 3,000 × 1 s + 1,000 × 2 s) / 5,000 = 1.6 s, not the 2 s the
    // rounds' means average to.
    assert_eq!(
        line(&md, "| nginx | shop | 50 |"),
        "| nginx | shop | 50 | 96.0 | 1,200 | 1,187 | 3 | 10 | – | 1.25 s | 3.60 s | 1.60 s | 50 |"
    );
    assert_eq!(
        line(&md, "| lighttpd | shop | 10 |"),
        "| lighttpd | shop | 10 | 15.0 | 60 | 60 | 0 | 0 | – | 800.00 ms | 1.50 s | 1.20 s | 10 |"
    );
    // Users who arrive can be turned away: a count, even of 0.
    assert_eq!(
        line(&md, "| lighttpd | shop | 50 |"),
        "| lighttpd | shop | 50 | 26.0 | 490 | 475 | 1 | 14 | 40 | 2.10 s | 5.20 s | 1.00 s | 50 |"
    );
    let failed = "nginx at 50 users: 3 of 1,200 sessions failed; lighttpd at 50 users: 1 of 490 \
                  sessions failed — a session fails once when any of its requests fails.";
    let away = "lighttpd at 50 users: 40 of 530 arriving users were turned away — every user slot \
                was taken when they arrived, so fewer users walked sessions than the arrival rate \
                asked for.";
    assert!(
        md.contains(&format!(
            "| 50 |\n\n{failed}\n\n{away}\n\nUsers: the step's level"
        )),
        "{md}"
    );
    assert!(md.contains(
        "the median over rounds of each round's own p50 and p99 (rounds that completed no \
         session add none); percentiles are never averaged."
    ));

    let page = text(&HtmlExporter, &session_run());
    assert!(
        page.contains(
            "<h2 id=\"sessions\">Sessions</h2>\n<div class=\"scroll\"><table>\n\
             <tr><th class=\"t\">Server</th><th class=\"t\">Workload</th><th>Users</th>\
             <th>Sessions/s</th><th>Started</th><th>Completed</th><th>Failed</th>\
             <th>Unfinished</th><th>Turned away</th><th>Session p50</th><th>Session p99</th>\
             <th>Think (mean)</th><th>Most active</th></tr>\n"
        ),
        "{page}"
    );
    assert!(
        page.contains(
            "<tr><td class=\"t\">nginx</td><td class=\"t\">shop</td><td>50</td><td>96.0</td>\
             <td>1,200</td><td>1,187</td><td>3</td><td>10</td><td>–</td><td>1.25 s</td>\
             <td>3.60 s</td><td>1.60 s</td><td>50</td></tr>\n"
        ),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "</table></div>\n<p>{failed}</p>\n<p>{away}</p>\n<p class=\"meta\">Users: the step&#39;s level"
        )),
        "{page}"
    );
    // The section stands among the per-step ones: after every step, before
    // the cost of a request.
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s}"));
    assert!(at("<h2 id=\"steps\">") < at("<h2 id=\"sessions\">"));
    assert!(at("<h2 id=\"sessions\">") < at("<h2 id=\"cost\">"));
}

#[test]
fn steps_that_went_well_need_no_sentence() {
    let mut run = session_run();
    for st in &mut run.steps {
        for r in &mut st.rounds {
            let x = r.summary.sessions.as_mut().unwrap();
            x.counts.unfinished += x.counts.failed;
            x.counts.failed = 0;
            x.counts.turned_away = 0;
        }
    }
    let md = text(&MarkdownExporter::default(), &run);
    assert!(md.contains("| 50 |\n\nUsers: the step's level"), "{md}");
    assert!(!md.contains("failed —") && !md.contains("turned away —"));
}

#[test]
fn steps_apart_in_workload_or_cores_say_which_they_are() {
    let mut run = session_run();
    run.steps.truncate(2);
    run.steps[1].cores = 2;
    run.steps[1].workload = "blog".into();
    let md = text(&MarkdownExporter::default(), &run);
    assert!(md.contains("\n| Server | Cores | Workload | Users | Sessions/s |"));
    assert_eq!(
        line(&md, "| nginx | 2 | blog | 50 |"),
        "| nginx | 2 | blog | 50 | 96.0 | 1,200 | 1,187 | 3 | 10 | – | 1.25 s | 3.60 s | 1.60 s | 50 |"
    );
    assert!(
        md.contains(
            "\nnginx (blog, 2 cores) at 50 users: 3 of 1,200 sessions failed — a session fails \
             once when any of its requests fails.\n"
        ),
        "{md}"
    );
}

#[test]
fn the_json_gives_each_steps_sessions() {
    let run = session_run();
    let v: serde_json::Value = serde_json::from_str(&text(&JsonExporter, &run)).unwrap();
    let x = &v["steps"][1]["sessions"];
    assert_eq!(v["steps"][1]["concurrency"], 50);
    assert_eq!(x["sessions_per_sec"], 96.0);
    assert_eq!(x["arrival_per_sec"], serde_json::Value::Null);
    assert_eq!(
        [
            &x["started"],
            &x["completed"],
            &x["failed"],
            &x["unfinished"],
            &x["turned_away"],
            &x["duration_p50_us"],
            &x["duration_p99_us"],
            &x["active_max"],
        ],
        [1_200, 1_187, 3, 10, 0, 1_250_000, 3_600_000, 50]
    );
    assert_eq!(x["think_mean_us"], 1_600_000.0);
    let open = &v["steps"][3]["sessions"];
    assert_eq!(open["arrival_per_sec"], 30.0);
    assert_eq!(open["turned_away"], 40);
    // A step of nginx at 10 users whose rounds completed no session has no
    // session time, rather than 0.
    let mut run = run;
    run.steps[0].rounds.remove(0);
    let v: serde_json::Value = serde_json::from_str(&text(&JsonExporter, &run)).unwrap();
    assert_eq!(
        v["steps"][0]["sessions"]["duration_p50_us"],
        serde_json::Value::Null
    );
    let md = text(&MarkdownExporter::default(), &run);
    assert_eq!(
        line(&md, "| nginx | shop | 10 |"),
        "| nginx | shop | 10 | 0.0 | 10 | 0 | 0 | 10 | – | – | – | 1.00 s | 10 |"
    );
}

#[test]
fn completed_sessions_per_second_are_drawn_against_users() {
    let a = Analysis::of(&session_run());
    let c = a
        .charts
        .iter()
        .find(|c| c.id == "sessions-shop-1c")
        .unwrap();
    assert_eq!(c.title, "Sessions, shop, 1 server core");
    // Users run 0–50 over x 72–580, sessions/s 0–100 over y 368–44: nginx
    // at 10 users and 10 sessions/s is at (173.6, 335.6), at 50 users and
    // 96 at (580, 368 − 0.96 × 324 = 57.0); lighttpd's 15 and 26 at 319.4
    // and 283.8.
    for line in [
        "<polyline points=\"173.6,335.6 580.0,57.0\" fill=\"none\" stroke=\"#0072b2\" stroke-width=\"2\"/>",
        "<circle cx=\"580.0\" cy=\"57.0\" r=\"3\" fill=\"#0072b2\"><title>nginx: 96 at 50</title></circle>",
        "<polyline points=\"173.6,319.4 580.0,283.8\" fill=\"none\" stroke=\"#e69f00\" stroke-width=\"2\"/>",
        ">users</text>",
        ">completed sessions per second</text>",
    ] {
        assert!(c.svg.contains(line), "{line} in\n{}", c.svg);
    }
    // The requests those users sent keep their own charts.
    assert!(a.charts.iter().any(|c| c.id == "throughput-shop-1c"));
    let page = text(&HtmlExporter, &session_run());
    assert!(page.contains("<figure class=\"chart\" id=\"sessions-shop-1c\">\n<svg "));
    let md = text(
        &MarkdownExporter {
            image_dir: Some("charts".into()),
        },
        &session_run(),
    );
    assert!(md.contains("\n![Sessions, shop, 1 server core](charts/sessions-shop-1c.png)\n"));
}

#[test]
fn a_saved_load_of_sessions_is_one_row() {
    let mut run = common::load_run();
    run.steps[0].rounds[0].summary.sessions = Some(walked(
        12.5,
        [30, 25, 0, 5],
        spectrum(25, 400_000.0, 350_000, 700_000),
        spectrum(75, 250_000.0, 200_000, 900_000),
        5,
    ));
    let md = text(&MarkdownExporter::default(), &run);
    assert_eq!(
        line(&md, "| 127.0.0.1:8080 | / | 5 |"),
        "| 127.0.0.1:8080 | / | 5 | 12.5 | 30 | 25 | 0 | 5 | – | 350.00 ms | 700.00 ms | 250.00 ms | 5 |"
    );
    let a = Analysis::of(&run);
    assert!(
        a.charts.iter().any(|c| c.id == "sessions-x"),
        "{:?}",
        a.charts
    );
}

#[test]
fn a_run_without_sessions_has_no_sessions_section() {
    for run in [common::rich_run(), common::load_run()] {
        let md = text(&MarkdownExporter::default(), &run);
        assert!(!md.contains("## Sessions"), "{md}");
        assert!(!md.contains("Sessions/s"));
        let page = text(&HtmlExporter, &run);
        assert!(!page.contains("id=\"sessions"), "{page}");
        assert!(!page.contains("Sessions/s"));
        let json = text(&JsonExporter, &run);
        assert!(!json.contains("\"sessions\""), "{json}");
        let a = Analysis::of(&run);
        assert!(a.steps.iter().all(|f| f.sessions.is_none()));
        assert!(a.charts.iter().all(|c| !c.id.starts_with("sessions-")));
    }
}
