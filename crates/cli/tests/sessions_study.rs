//! The built-in `sessions` study, Sametz's httperf comparison of nginx and
//! Apache (`httperf --wsesslog=10000,0.000,wlog`: sessions of one request
//! each, started back to back): checked as loaded, then run for real
//! scaled down, its report holding each of httperf's figures the article
//! read, by section and column, exact where the figure is a count.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use support::studies::{builtin_text, substitute};
use support::{run_bounded, throng};
use throng_lab::run::estimate_groups;
use throng_lab::{Recipes, Study};

#[test]
fn sessions_is_httperfs_one_request_sessions_and_fits_in_ten_minutes() {
    let study = Study::load("sessions", &Recipes::builtin()).unwrap();
    let servers: Vec<&str> = study.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(servers, ["nginx", "apache2-event"]);
    assert_eq!(study.loads.len(), 1);
    let w = &study.loads[0];
    assert_eq!(w.kind.name(), "site");
    assert_eq!(w.concurrency, [1]);
    // 10000 sessions a server, as 8 rounds of 1250 so that pairs form.
    assert_eq!((w.round_requests, w.counted_rounds), (Some(1250), Some(8)));
    let users = w.shape.users.as_ref().expect("sessions");
    assert_eq!(users.conns_per_user, 1);
    assert_eq!(users.file.sessions.len(), 1);
    let pages = &users.file.sessions[0];
    assert_eq!(pages.len(), 1);
    assert!(pages[0].burst.is_empty());
    let e = estimate_groups(&study, 1);
    eprintln!("sessions: estimated {:.0}-{:.0} s", e.min_s, e.max_s);
    assert!(e.max_s < 600.0, "sessions estimated at {:.0} s", e.max_s);
}

/// The rows of the Markdown table under `heading`, each by column title.
fn table(md: &str, heading: &str) -> Vec<HashMap<String, String>> {
    let mut lines = md
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .skip_while(|l| l.trim().is_empty());
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let head = cells(
        lines
            .next()
            .unwrap_or_else(|| panic!("{heading} in:\n{md}")),
    );
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| head.iter().cloned().zip(cells(l)).collect())
        .collect()
}

fn number(cell: &str) -> f64 {
    cell.replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{cell:?} is not a number"))
}

#[test]
fn a_scaled_down_sessions_study_reports_httperfs_figures() {
    let recipes = Recipes::builtin();
    let servers: Vec<&str> = ["nginx", "apache2-event"]
        .into_iter()
        .filter(|n| recipes.get(n).is_some_and(|r| r.is_installed()))
        .collect();
    if servers.is_empty() {
        eprintln!(
            "skipping the scaled-down sessions study: neither nginx nor apache2 is installed"
        );
        return;
    }
    let list: Vec<String> = servers.iter().map(|s| format!("{s:?}")).collect();
    let text = builtin_text("sessions");
    let text = substitute(
        &text,
        "servers = [\"nginx\", \"apache2-event\"]\n",
        &format!("servers = [{}]\n", list.join(", ")),
    );
    // 1000 sessions a server instead of 10000, still as 8 rounds, over
    // one start of each.
    let text = substitute(&text, "requests = 10000\n", "requests = 1000\n");
    let text = substitute(&text, "launches = 3\n", "launches = 1\n");
    let dir = tempfile::tempdir().unwrap();
    let (study, db) = (dir.path().join("study.toml"), dir.path().join("t.db"));
    std::fs::write(&study, text).unwrap();
    let j = support::lab_report(&study, &db, Duration::from_secs(120));

    // The stored rounds: every session one request on its own connection.
    let steps = j["run"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), servers.len());
    for step in steps {
        let rounds = step["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 8, "{}", step["server"]);
        for r in rounds {
            let s = &r["summary"];
            let at = format!("{}: {s}", step["server"]);
            assert_eq!(s["completed"], 125, "{at}");
            assert_eq!(s["connections"]["connection_time_us"]["count"], 125, "{at}");
            assert_eq!(
                s["sessions"]["lengths"],
                serde_json::json!([0, 125]),
                "{at}"
            );
            assert_eq!(s["reply_heads"]["replies"], 125, "{at}");
        }
    }

    let render = |format: &str| {
        let mut c = throng();
        c.args(["report", "--format", format, "--db"]).arg(&db);
        let out = run_bounded(c, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let md = render("md");
    assert!(md.contains("\n## httperf's figures\n"), "{md}");
    let total = table(&md, "### Total, rates and errors");
    let time = table(&md, "### Connection time \\[ms\\]");
    let sizes = table(&md, "### Request and reply size \\[B\\], reply status");
    let sessions = table(&md, "### Sessions");
    for rows in [&total, &time, &sizes, &sessions] {
        let mut named: Vec<&str> = rows.iter().map(|r| r["Server"].as_str()).collect();
        named.sort();
        let mut want = servers.clone();
        want.sort();
        assert_eq!(named, want, "{md}");
    }
    let row = |rows: &[HashMap<String, String>], server: &str| {
        rows.iter().find(|r| r["Server"] == server).unwrap().clone()
    };
    for server in &servers {
        let t = row(&total, server);
        assert_eq!(t["Users"], "1");
        // httperf's "connections 10000 requests 10000 replies 10000".
        for col in ["Connections", "Requests", "Replies"] {
            assert_eq!(t[col], "1,000", "{server} {col}: {md}");
        }
        assert_eq!(t["Errors"], "0");
        let duration = number(&t["Test duration (s)"]);
        assert!(duration > 0.0, "{server}: {md}");
        // Connections over the test duration, as httperf's rate is. The
        // duration is printed to the millisecond, as httperf prints it: a
        // quarter-second run's rate is known from it to 0.2% only.
        let rate = number(&t["Conn/s"]);
        assert!(
            (rate - 1000.0 / duration).abs() <= 0.1 + rate * (1e-3 + 0.0005 / duration),
            "{server}: {md}"
        );
        assert_eq!(t["Conn/s"], t["Req/s"]);

        let c = row(&time, server);
        let [min, avg, max, median, stddev, connect] =
            ["Min", "Avg", "Max", "Median", "Stddev", "Connect"].map(|k| number(&c[k]));
        assert!(
            min > 0.0 && min <= median && median <= max,
            "{server}: {md}"
        );
        assert!(min <= avg && avg <= max && stddev >= 0.0, "{server}: {md}");
        assert!(connect > 0.0 && connect <= max, "{server}: {md}");

        let s = row(&sizes, server);
        // page011.html of the site, 9645 bytes, every time.
        assert_eq!(s["Reply content"], "9645.0", "{server}: {md}");
        let header = number(&s["Reply header"]);
        assert!(header > 100.0, "{server}: {md}");
        assert_eq!(number(&s["Reply total"]), 9645.0 + header, "{server}: {md}");
        assert!(number(&s["Request"]) > 60.0, "{server}: {md}");
        for (class, want) in [
            ("1xx", "0"),
            ("2xx", "1,000"),
            ("3xx", "0"),
            ("4xx", "0"),
            ("5xx", "0"),
        ] {
            assert_eq!(s[class], want, "{server} {class}: {md}");
        }

        let x = row(&sessions, server);
        assert_eq!(x["Completed"], "1,000");
        assert_eq!(x["Failed"], "0");
        // httperf's "Session length histogram: 0 10000", every session one
        // request long.
        assert_eq!(x["Session length histogram"], "1: 1,000", "{server}: {md}");
        assert_eq!(x["Session rate (sess/s)"], t["Conn/s"]);
    }

    // The page draws the same article.
    let html = render("html");
    assert!(
        html.contains("id=\"httperf\""),
        "no httperf section in the page"
    );
    for title in [
        "Connection time [ms]",
        "Reply header",
        "Session length histogram",
        "5xx",
    ] {
        assert!(html.contains(title), "{title} not in the page");
    }
}
