//! Time per request with the connection included, for loads that open a
//! connection per request (`keep_alive = false`: ab without `-k`, siege
//! in its default close mode). The latency the rest of the report shows
//! starts once the connection is up; ab's "Time per request" and siege's
//! elapsed time include the handshake, so a server that is slow to
//! accept looks fast by latency alone. Each such step's figures are
//! shown here from its stored rounds: the connect and latency means,
//! their sum (ab's figure, docs/methodology.md), the time its rounds took
//! to deliver every request (siege's), the errors, and what the server
//! used meanwhile.

use throng_model::{RoundRecord, RunData, StepRecord, StepStatus};

use crate::article::{Block, Section};
use crate::charts::NamedChart;
use crate::escape::slug;
use crate::figures::{self, server_names, weighted_mean_us};
use crate::svg::{self, Bar, BarChart, LineChart, Point, Series};
use crate::table::{Cell, Column, Mark, Table};

/// What the section says before its tables.
pub const INTRO: &str = "Every request of these steps opened a connection of its own. \
    ab's time per request is the connect mean plus the latency mean: from connect() to a \
    response's last byte, the mean over every request of the step's rounds \
    (docs/methodology.md). Smaller is better. Time taken: the measured time of the step's \
    rounds added up, what siege reports as elapsed time for the same requests. Connects \
    count the measured phase's, one a request; a round's stored reconnects also count its \
    warmup's. Server CPU: user + system time of the server's process tree over the rounds' \
    wall time (100% = one core); peak RSS and PSS: the highest of any round, the tree's \
    processes added up.";

/// One step of a load that opened a connection per request, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub server: String,
    pub workload: String,
    pub cores: u32,
    pub concurrency: u32,
    /// Why the step has no figures, when it has none.
    pub failure: Option<String>,
    pub rounds: usize,
    /// Responses and errors of the measured phases.
    pub completed: u64,
    pub errors: u64,
    /// Each error kind seen, with its count.
    pub error_kinds: Vec<(String, u64)>,
    /// Connects of the measured phases.
    pub connects: u64,
    pub connect_us: Option<f64>,
    pub latency_us: Option<f64>,
    /// Measured seconds of the rounds, added up.
    pub seconds: f64,
    pub cpu_percent: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
    pub pss_peak_bytes: Option<u64>,
}

impl Row {
    /// ab's time per request: connect mean plus latency mean, in µs.
    pub fn total_us(&self) -> Option<f64> {
        Some(self.connect_us? + self.latency_us?)
    }

    /// Requests asked for that ended as an answer or an error.
    pub fn requests(&self) -> u64 {
        self.completed
            + self
                .error_kinds
                .iter()
                .filter(|(k, _)| throng_model::ErrorKind::parse(k).is_some_and(|k| k.unanswered()))
                .map(|(_, n)| n)
                .sum::<u64>()
    }
}

/// Whether a round opened a connection per request, in the closed model.
fn one_per_request(r: &RoundRecord) -> bool {
    !r.summary.keep_alive && r.summary.rate.is_none() && r.summary.sessions.is_none()
}

fn row(s: &StepRecord) -> Row {
    let rounds: Vec<&RoundRecord> = s.rounds.iter().filter(|r| one_per_request(r)).collect();
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for r in &rounds {
        for (k, n) in r.summary.errors.iter().filter(|(_, n)| **n > 0) {
            match kinds.iter_mut().find(|(name, _)| name == k) {
                Some(e) => e.1 += n,
                None => kinds.push((k.clone(), *n)),
            }
        }
    }
    let sampled: Vec<&&RoundRecord> = rounds
        .iter()
        .filter(|r| figures::sampled(&r.server))
        .collect();
    let wall: f64 = sampled.iter().map(|r| r.server.wall_s).sum();
    let cpu: f64 = sampled
        .iter()
        .map(|r| r.server.cpu_user_s + r.server.cpu_sys_s)
        .sum();
    Row {
        server: s.server.clone(),
        workload: s.workload.clone(),
        cores: s.cores,
        concurrency: s.concurrency,
        failure: (s.status != StepStatus::Ok).then(|| {
            let why = s.failure.as_deref().unwrap_or("");
            if why.is_empty() {
                s.status.name().to_string()
            } else {
                format!("{}: {why}", s.status.name())
            }
        }),
        rounds: rounds.len(),
        completed: rounds.iter().map(|r| r.summary.completed).sum(),
        errors: rounds.iter().map(|r| r.summary.errors_total).sum(),
        error_kinds: kinds,
        connects: rounds
            .iter()
            .map(|r| r.summary.connections.connect_time_us.count)
            .sum(),
        connect_us: weighted_mean_us(
            rounds
                .iter()
                .map(|r| &r.summary.connections.connect_time_us),
        ),
        latency_us: weighted_mean_us(rounds.iter().map(|r| &r.summary.latency_us)),
        seconds: rounds.iter().map(|r| r.summary.duration_s).sum(),
        cpu_percent: (wall > 0.0).then(|| cpu / wall * 100.0),
        rss_peak_bytes: sampled.iter().map(|r| r.server.rss_peak_bytes).max(),
        pss_peak_bytes: sampled.iter().map(|r| r.server.pss_peak_bytes).max(),
    }
}

/// Every step of the run that opened a connection per request, and the
/// steps that failed in a workload that did, by server in the run's order
/// and then by level.
pub fn rows(run: &RunData) -> Vec<Row> {
    let close = |s: &StepRecord| s.rate.is_none() && s.rounds.iter().any(one_per_request);
    let workloads: Vec<&str> = run
        .steps
        .iter()
        .filter(|s| close(s))
        .map(|s| s.workload.as_str())
        .collect();
    let mut rows: Vec<Row> = run
        .steps
        .iter()
        .filter(|s| {
            close(s)
                || (s.status == StepStatus::Failed
                    && s.rate.is_none()
                    && workloads.contains(&s.workload.as_str()))
        })
        .map(row)
        .collect();
    // The study's order of servers, each from its lowest level up, as the
    // article's charts read.
    let servers = server_names(run);
    let place = |r: &Row| servers.iter().position(|s| s == &r.server);
    rows.sort_by_key(|r| (place(r), r.concurrency));
    rows
}

fn ms(us: Option<f64>) -> Cell {
    match us {
        Some(us) => Cell::lit(format!("{:.3}", us / 1000.0)),
        None => Cell::none(),
    }
}

/// The table of one workload and core count.
fn table(rows: &[&Row]) -> Table {
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::right("c"),
        Column::right("requests"),
        Column::right("errors"),
        Column::right("ab time per request (ms)"),
        Column::right("connect (ms)"),
        Column::right("latency (ms)"),
        Column::right("connects"),
        Column::right("time taken (s)"),
        Column::right("server CPU"),
        Column::right("peak RSS"),
        Column::right("peak PSS"),
    ])
    .wide();
    for r in rows {
        let mut server = Cell::text(&r.server);
        if let Some(why) = &r.failure {
            server = server.mark(Mark::Failed(why.clone()));
        }
        t.push(vec![
            server,
            Cell::lit(r.concurrency.to_string()),
            Cell::lit(figures::grouped(r.requests())),
            Cell::lit(figures::grouped(r.errors)),
            ms(r.total_us()),
            ms(r.connect_us),
            ms(r.latency_us),
            Cell::lit(figures::grouped(r.connects)),
            if r.rounds > 0 {
                Cell::lit(format!("{:.2}", r.seconds))
            } else {
                Cell::none()
            },
            r.cpu_percent
                .map(|p| Cell::lit(format!("{p:.0}%")))
                .unwrap_or_else(Cell::none),
            r.rss_peak_bytes
                .map(|b| Cell::lit(figures::mib(b)))
                .unwrap_or_else(Cell::none),
            r.pss_peak_bytes
                .map(|b| Cell::lit(figures::mib(b)))
                .unwrap_or_else(Cell::none),
        ]);
    }
    t
}

/// "squid at c=1000 (page): 312 of 6,000 requests failed (connect_timeout
/// 300, reset 12)", or the reason a step has no figures.
pub fn failure_line(r: &Row) -> Option<String> {
    let at = format!("{} at c={} ({})", r.server, r.concurrency, r.workload);
    if let Some(why) = &r.failure {
        return Some(format!("{at}: {why}"));
    }
    if r.errors == 0 {
        return None;
    }
    let kinds: Vec<String> = r
        .error_kinds
        .iter()
        .map(|(k, n)| format!("{k} {}", figures::grouped(*n)))
        .collect();
    Some(format!(
        "{at}: {} of {} requests failed ({})",
        figures::grouped(r.errors),
        figures::grouped(r.requests()),
        kinds.join(", ")
    ))
}

/// The chart of one workload and core count: ab's time per request
/// against the level when the workload has several, else the time each
/// server took for all its requests; `None` with nothing to draw.
fn chart(run: &RunData, workload: &str, cores: u32, rows: &[&Row]) -> Option<NamedChart> {
    let servers = server_names(run);
    let measured: Vec<&&Row> = rows.iter().filter(|r| r.rounds > 0).collect();
    let mut levels: Vec<u32> = measured.iter().map(|r| r.concurrency).collect();
    levels.sort_unstable();
    levels.dedup();
    let id = format!("connect-included-{}-{cores}c", slug(workload));
    if levels.len() > 1 {
        let mut series = Vec::new();
        for (color, s) in servers.iter().enumerate() {
            let points: Vec<Point> = measured
                .iter()
                .filter(|r| &r.server == s)
                .filter_map(|r| {
                    Some(Point {
                        x: f64::from(r.concurrency),
                        y: r.total_us()? / 1000.0,
                        band: None,
                    })
                })
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: s.clone(),
                    color,
                    dashed: false,
                    points,
                });
            }
        }
        if series.is_empty() {
            return None;
        }
        let title = format!("Time per request, connect included, {workload} (smaller is better)");
        return Some(NamedChart {
            id,
            caption: "ab's time per request at each level: the connect mean plus the latency \
                      mean over every request of the level's rounds, in ms. Smaller is better."
                .into(),
            svg: svg::line_chart(&LineChart {
                title: title.clone(),
                x_label: "concurrent connections".into(),
                y_label: "ms per request, connect included".into(),
                series,
                whole_x: true,
            }),
            title,
            // Its figures are the section's table.
            data: None,
        });
    }
    let bars: Vec<Bar> = measured
        .iter()
        .map(|r| Bar {
            label: r.server.clone(),
            value: r.seconds,
            color: servers.iter().position(|s| s == &r.server).unwrap_or(0),
            range: None,
            note: format!(
                "{} requests, {} errors",
                figures::grouped(r.requests()),
                figures::grouped(r.errors)
            ),
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    let c = levels.first().copied().unwrap_or(0);
    let title = format!("Time taken for every request, {workload}, c={c} (smaller is better)");
    Some(NamedChart {
        id,
        caption: "The measured time of the level's rounds added up, in seconds: how long each \
                  server took to deliver all the requests. Smaller is better."
            .into(),
        svg: svg::bar_chart(&BarChart {
            title: title.clone(),
            x_label: "seconds".into(),
            bars,
        }),
        title,
        data: None,
    })
}

/// The (workload, cores) groups of `rows`, in first-seen order.
fn groups(rows: &[Row]) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for r in rows {
        let g = (r.workload.clone(), r.cores);
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// The charts of the section, one a workload and core count: what
/// `--png` writes beside the others.
pub fn charts(run: &RunData) -> Vec<NamedChart> {
    let rows = rows(run);
    groups(&rows)
        .into_iter()
        .filter_map(|(w, c)| {
            let mine: Vec<&Row> = rows
                .iter()
                .filter(|r| r.workload == w && r.cores == c)
                .collect();
            chart(run, &w, c, &mine)
        })
        .collect()
}

/// The section, when any step opened a connection per request.
pub fn section(run: &RunData) -> Option<Section> {
    let rows = rows(run);
    if rows.is_empty() {
        return None;
    }
    let mut s = Section::new("connect-included", "Time per request, connect included");
    s.push(Block::text(INTRO));
    for (w, c) in groups(&rows) {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.workload == w && r.cores == c)
            .collect();
        s.push(Block::Table(
            table(&mine).subsection(&format!("{w}, {}", figures::cores_label(c))),
        ));
        if let Some(chart) = chart(run, &w, c, &mine) {
            s.push(Block::Chart(chart));
        }
    }
    let failed: Vec<String> = rows.iter().filter_map(failure_line).collect();
    if failed.is_empty() {
        s.push(Block::text("No request failed at any level."));
    } else {
        s.push(Block::text("Where servers failed:"));
        s.push(Block::List(failed));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Latency, RunData};
    use throng_testkit::model::step;

    /// A step of `server` at `c` whose rounds each opened a connection per
    /// request: 1000 connects of 3 ms mean and 1000 latencies of the
    /// testkit's mean, `errors` connect timeouts in its first round.
    fn close_step(server: &str, c: u32, errors: u64) -> StepRecord {
        let mut s = step(server, 1, "page", c, 500.0, 6451, 4 << 20);
        for (i, r) in s.rounds.iter_mut().enumerate() {
            r.summary.keep_alive = false;
            r.summary.connections.connect_time_us = Latency {
                count: r.summary.completed,
                mean: 3000.0,
                ..Latency::default()
            };
            if i == 0 && errors > 0 {
                r.summary.errors.insert("connect_timeout".into(), errors);
                r.summary.errors_total = errors;
            }
        }
        s
    }

    fn run(steps: Vec<StepRecord>) -> RunData {
        RunData {
            steps,
            ..RunData::default()
        }
    }

    #[test]
    fn abs_time_per_request_is_the_connect_mean_plus_the_latency_mean() {
        let r = run(vec![close_step("nginx", 10, 0)]);
        let rows = rows(&r);
        assert_eq!(rows.len(), 1);
        let latency = weighted_mean_us(r.steps[0].rounds.iter().map(|r| &r.summary.latency_us));
        assert_eq!(rows[0].connect_us, Some(3000.0));
        assert_eq!(rows[0].total_us(), Some(3000.0 + latency.unwrap()));
        // Five rounds of 2 s, 1000 responses each at 500/s (jittered).
        assert_eq!(rows[0].seconds, 10.0);
        assert_eq!(rows[0].connects, rows[0].completed);
    }

    #[test]
    fn the_section_names_the_server_that_failed_and_where() {
        let mut failed = close_step("squid", 1000, 0);
        failed.status = StepStatus::Failed;
        failed.failure = Some("the server exited".into());
        failed.rounds.clear();
        let r = run(vec![
            close_step("nginx", 1000, 0),
            close_step("squid", 500, 37),
            failed,
        ]);
        let lines: Vec<String> = rows(&r).iter().filter_map(failure_line).collect();
        let first = r.steps[1].rounds[0].summary.completed;
        let all: u64 = r.steps[1].rounds.iter().map(|r| r.summary.completed).sum();
        assert!(first > 0);
        assert_eq!(
            lines,
            [
                format!(
                    "squid at c=500 (page): 37 of {} requests failed (connect_timeout 37)",
                    figures::grouped(all + 37)
                ),
                "squid at c=1000 (page): failed: the server exited".to_string(),
            ]
        );
        assert!(section(&r).is_some());
    }

    #[test]
    fn keep_alive_runs_have_no_such_section() {
        let r = run(vec![step("nginx", 1, "page", 10, 500.0, 6451, 4 << 20)]);
        assert!(rows(&r).is_empty());
        assert!(section(&r).is_none());
        assert!(charts(&r).is_empty());
    }
}
