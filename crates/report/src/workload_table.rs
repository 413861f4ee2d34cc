//! One row per server, one level per workload: each small workload's
//! requests per second beside the large file's MB/s, its fastest and
//! slowest transfer and how long its counted run took. The table the
//! 2007 Apache/lighttpd/nginx/Varnish article drew from ab, for a run that
//! measured each workload at one level, as ab runs it once.

use crate::article::{Block, Section, Span};
use crate::figures::{self, duration_us, grouped, StepFigures};
use crate::table::{Cell, Column, Table};

pub const HEADING: &str = "Each workload at its level";

pub const NOTE: &str = "As ab reports a run: requests per second and MB/s are the \
     step's completed requests and body bytes (10^6 bytes to the MB) over the sum of its \
     rounds' measured times, rather than the mean of the rounds' rates. The run's time is \
     that sum, as ab's \"Time taken for tests\", with its requests split into paired \
     rounds over the server's starts: each round is timed from its first request to its \
     last response on connections opened before it, so the connects, the warmups and the \
     pauses between rounds are left out. The transfer times are the fastest and the slowest \
     single response of the large file over every round, from its request's send to the \
     response's last byte on an open keep-alive connection, so no connect is included.";

/// The run's workloads as the table columns them: those of small bodies
/// first, each by its requests per second, then the large ones, each by
/// its transfer; `None` unless the run has a large-file workload, one core
/// count and one level per workload and server, and another workload.
fn columns(figs: &[StepFigures]) -> Option<(Vec<String>, Vec<String>)> {
    let mut workloads: Vec<&str> = Vec::new();
    for f in figs {
        if !workloads.contains(&f.workload.as_str()) {
            workloads.push(&f.workload);
        }
    }
    let one_level = figs.iter().all(|f| {
        f.cores == figs[0].cores
            && f.rate.is_none()
            && figs
                .iter()
                .filter(|g| g.server == f.server && g.workload == f.workload)
                .count()
                == 1
    });
    let (large, small): (Vec<&str>, Vec<&str>) = workloads
        .into_iter()
        .partition(|w| figures::is_large(figs, w));
    if !one_level || large.is_empty() || small.is_empty() {
        return None;
    }
    let own = |v: Vec<&str>| v.into_iter().map(String::from).collect();
    Some((own(small), own(large)))
}

/// Rate over the measured seconds, `None` for a step with nothing measured.
fn over_time(f: &StepFigures, amount: f64) -> Option<f64> {
    (figures::measured(f) && f.measured_s > 0.0).then(|| amount / f.measured_s)
}

/// The step's body bytes in all: its mean per response times its
/// responses, an integer the mean was made from.
pub fn body_bytes(f: &StepFigures) -> u64 {
    f.body_bytes_per_response
        .map_or(0, |b| (b * f.completed as f64).round() as u64)
}

/// The table, or `None` for a run it does not fit (see [`columns`]).
pub fn table(figs: &[StepFigures]) -> Option<Table> {
    let (small, large) = columns(figs)?;
    let mut cols = vec![Column::left("Server")];
    for w in &small {
        cols.push(Column::right(&format!("req/s ({w})")));
    }
    for w in &large {
        cols.extend([
            Column::right(&format!("MB/s ({w})")),
            Column::right(&format!("Transfer min–max ({w})")),
            Column::right(&format!("Requests ({w})")),
            Column::right(&format!("Body bytes ({w})")),
            Column::right(&format!("Run time ({w})")),
        ]);
    }
    let mut t = Table::new(cols).section("per-workload", HEADING).wide();
    let mut servers: Vec<&str> = Vec::new();
    for f in figs {
        if !servers.contains(&f.server.as_str()) {
            servers.push(&f.server);
        }
    }
    for server in servers {
        let step = |w: &str| {
            figs.iter()
                .find(|f| f.server == server && f.workload == w && figures::measured(f))
        };
        let mut row = vec![Cell::text(server)];
        for w in &small {
            row.push(
                step(w)
                    .and_then(|f| over_time(f, f.completed as f64))
                    .map_or_else(Cell::none, |r| Cell::lit(format!("{r:.0}"))),
            );
        }
        for w in &large {
            let Some(f) = step(w) else {
                row.extend((0..5).map(|_| Cell::none()));
                continue;
            };
            let bytes = body_bytes(f);
            row.push(
                over_time(f, bytes as f64 / 1e6)
                    .map_or_else(Cell::none, |r| Cell::lit(format!("{r:.1}"))),
            );
            row.push(match (f.min_us, f.max_us) {
                (Some(lo), Some(hi)) => {
                    Cell::lit(format!("{}–{}", duration_us(lo), duration_us(hi)))
                }
                _ => Cell::none(),
            });
            row.push(Cell::lit(grouped(f.completed)));
            row.push(Cell::lit(grouped(bytes)));
            row.push(Cell::lit(format!("{:.2} s", f.measured_s)));
        }
        t.push(row);
    }
    Some(t)
}

/// The section of [`table`] with its note; `None` when the table is.
pub fn section(figs: &[StepFigures]) -> Option<Section> {
    let mut s = Section::opened_by(table(figs)?);
    s.push(Block::note(vec![Span::text(NOTE)]));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Estimate, StepStatus, Verdict};

    fn step(server: &str, workload: &str, completed: u64, body: f64, s: f64) -> StepFigures {
        StepFigures {
            server: server.into(),
            cores: 1,
            workload: workload.into(),
            concurrency: 10,
            rate: None,
            status: StepStatus::Ok,
            failure: None,
            rounds: 10,
            empty_rounds: 0,
            throughput: Estimate::default(),
            mb_per_sec: 0.0,
            latency_mean_us: None,
            p50_us: None,
            p99_us: None,
            min_us: Some(800_000),
            max_us: Some(2_500_000),
            completed,
            errors: 0,
            cpu_us_per_request: None,
            cpu_utilisation: None,
            pss_peak_bytes: None,
            rss_peak_bytes: None,
            server_sampled: false,
            body_bytes_per_response: Some(body),
            measured_s: s,
            shared_cores: false,
            verdict: Verdict::default(),
            syscalls_per_request: None,
            diagnosis: None,
            sessions: None,
        }
    }

    const LARGE: f64 = 21.0 * 1024.0 * 1024.0;

    #[test]
    fn each_server_has_its_rates_and_its_large_run() {
        let figs = [
            step("nginx", "page", 10_000, 6451.0, 2.0),
            step("nginx", "large", 100, LARGE, 4.0),
            step("lighttpd", "page", 10_000, 6451.0, 4.0),
        ];
        let t = table(&figs).unwrap();
        let head: Vec<&str> = t.columns.iter().map(|c| c.head.text.as_str()).collect();
        assert_eq!(
            head,
            [
                "Server",
                "req/s (page)",
                "MB/s (large)",
                "Transfer min–max (large)",
                "Requests (large)",
                "Body bytes (large)",
                "Run time (large)"
            ]
        );
        let text = |r: usize| -> Vec<&str> { t.rows[r].iter().map(|c| c.text.as_str()).collect() };
        // 100 × 21 MiB over 4 s: 550.5 MB/s.
        assert_eq!(
            text(0),
            [
                "nginx",
                "5000",
                "550.5",
                "800.00 ms–2.50 s",
                "100",
                "2,202,009,600",
                "4.00 s"
            ]
        );
        assert_eq!(text(1), ["lighttpd", "2500", "–", "–", "–", "–", "–"]);
    }

    #[test]
    fn a_sweep_of_levels_or_no_large_file_has_no_such_table() {
        let mut two = step("nginx", "page", 100, 6451.0, 1.0);
        two.concurrency = 50;
        let sweep = [
            step("nginx", "page", 100, 6451.0, 1.0),
            two,
            step("nginx", "large", 10, LARGE, 1.0),
        ];
        assert!(table(&sweep).is_none());
        assert!(table(&[step("nginx", "page", 100, 6451.0, 1.0)]).is_none());
        assert!(table(&[step("nginx", "large", 10, LARGE, 1.0)]).is_none());
    }
}
