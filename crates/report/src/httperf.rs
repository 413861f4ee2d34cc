//! httperf's figures, as its summary prints them, for the steps whose
//! users walked sessions (httperf's `--wsesslog`): test duration,
//! connection rate and time, request and reply sizes, replies by status
//! class, errors, session rate and the session length histogram. Each
//! figure is of the step's rounds together, as httperf's are of its one
//! run, so an article's table of two httperf runs can be set beside it.

use throng_model::{Latency, RoundRecord, RunData, StepRecord};

use crate::article::{Block, Section, Span};
use crate::figures::grouped;
use crate::table::{Cell, Column, Table};

/// The section, `None` when no step walked sessions with its connections
/// timed (runs stored before connection time was measured).
pub fn section(run: &RunData) -> Option<Section> {
    let steps: Vec<(&StepRecord, Figures)> = run
        .steps
        .iter()
        .filter_map(|s| Figures::of(&s.rounds).map(|f| (s, f)))
        .collect();
    if steps.is_empty() {
        return None;
    }
    let several = steps.iter().any(|(s, _)| s.workload != steps[0].0.workload);
    let lead = |s: &StepRecord| {
        let mut row = vec![Cell::text(&s.server)];
        if several {
            row.push(Cell::text(&s.workload));
        }
        row.push(Cell::lit(grouped(s.concurrency.into())));
        row
    };
    let columns = |rest: &[&str]| {
        let mut c = vec![Column::left("Server")];
        if several {
            c.push(Column::left("Workload"));
        }
        c.push(Column::right("Users"));
        c.extend(rest.iter().map(|t| Column::right(t)));
        c
    };
    let mut total = Table::new(columns(&[
        "Test duration (s)",
        "Connections",
        "Requests",
        "Replies",
        "Conn/s",
        "Req/s",
        "Errors",
    ]))
    .subsection("Total, rates and errors");
    let mut time = Table::new(columns(&[
        "Min", "Avg", "Max", "Median", "Stddev", "Connect",
    ]))
    .subsection("Connection time [ms]");
    let mut sizes = Table::new(columns(&[
        "Request",
        "Reply header",
        "Reply content",
        "Reply total",
        "1xx",
        "2xx",
        "3xx",
        "4xx",
        "5xx",
    ]))
    .subsection("Request and reply size [B], reply status");
    let mut sessions = Table::new(columns(&[
        "Session rate (sess/s)",
        "Completed",
        "Failed",
        "Session length histogram",
    ]))
    .subsection("Sessions");
    for (s, f) in &steps {
        let per_s = |n: u64| Cell::lit(format!("{:.1}", n as f64 / f.duration_s));
        total.push(
            [
                lead(s),
                vec![
                    Cell::lit(format!("{:.3}", f.duration_s)),
                    Cell::lit(grouped(f.connections)),
                    Cell::lit(grouped(f.requests)),
                    Cell::lit(grouped(f.replies)),
                    per_s(f.connections),
                    per_s(f.replies),
                    Cell::lit(grouped(f.errors)),
                ],
            ]
            .concat(),
        );
        let ms =
            |us: Option<f64>| us.map_or_else(Cell::none, |v| Cell::lit(format!("{:.3}", v / 1e3)));
        let life = &f.connection_time;
        time.push(
            [
                lead(s),
                vec![
                    ms(life.map(|l| l.min as f64)),
                    ms(life.map(|l| l.mean)),
                    ms(life.map(|l| l.max as f64)),
                    ms(f.connection_median_us),
                    ms(life.map(|l| l.stdev)),
                    ms(f.connect.map(|l| l.mean)),
                ],
            ]
            .concat(),
        );
        let bytes = |v: Option<f64>| v.map_or_else(Cell::none, |v| Cell::lit(format!("{v:.1}")));
        let header = (f.head_replies > 0).then(|| f.head_bytes as f64 / f.head_replies as f64);
        let content = (f.replies > 0).then(|| f.body_bytes as f64 / f.replies as f64);
        let mut row = lead(s);
        row.extend([
            bytes((f.requests > 0).then(|| f.bytes_written as f64 / f.requests as f64)),
            bytes(header),
            bytes(content),
            bytes(header.zip(content).map(|(h, c)| h + c)),
        ]);
        row.extend(f.classes.iter().map(|&n| Cell::lit(grouped(n))));
        sizes.push(row);
        let histogram = f
            .lengths
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(len, &n)| format!("{len}: {}", grouped(n)))
            .collect::<Vec<_>>()
            .join(", ");
        sessions.push(
            [
                lead(s),
                vec![
                    per_s(f.sessions_completed),
                    Cell::lit(grouped(f.sessions_completed)),
                    Cell::lit(grouped(f.sessions_failed)),
                    if histogram.is_empty() {
                        Cell::none()
                    } else {
                        Cell::lit(histogram)
                    },
                ],
            ]
            .concat(),
        );
    }
    let mut out = Section::new("httperf", "httperf's figures");
    out.push(Block::text(INTRO));
    for t in [total, time, sizes, sessions] {
        out.push(Block::Table(t));
    }
    out.push(Block::note(vec![Span::text(NOTE)]));
    Some(out)
}

const INTRO: &str = "The figures httperf prints at the end of a run, measured by throng for each \
    step whose users walked sessions (httperf's --wsesslog), of the step's rounds together as \
    httperf's are of its one run.";

const NOTE: &str = "Test duration: the measured time of the step's rounds, added. Connections: \
    those opened and closed in that time; Conn/s, Req/s and the session rate are counts over the test \
    duration. Connection time: from a connect's start to the connection's close, for those \
    connections; min, avg, max and stddev are of every connection \
    of the rounds together, the median is the median over rounds of each round's own (a \
    percentile is never averaged); Connect: the mean time from connect() to established. \
    Request: bytes written per request sent. Reply header: what was not body in each HTTP/1.x \
    reply (status line, headers, chunk framing and trailers, which httperf counts as its \
    footer); content: body bytes per reply. Reply status: replies by status class. Session \
    length histogram: sessions ended, completed or failed, by how many of their requests were \
    answered (httperf prints the same counts from length 0 up, as a list).";

/// A step's rounds reduced to httperf's figures.
struct Figures {
    duration_s: f64,
    connections: u64,
    requests: u64,
    replies: u64,
    errors: u64,
    bytes_written: u64,
    body_bytes: u64,
    head_replies: u64,
    head_bytes: u64,
    /// Replies by status class, 1xx to 5xx.
    classes: [u64; 5],
    connection_time: Option<Pooled>,
    connection_median_us: Option<f64>,
    connect: Option<Pooled>,
    sessions_completed: u64,
    sessions_failed: u64,
    lengths: Vec<u64>,
}

impl Figures {
    /// `None` unless a round walked sessions and timed its connections.
    fn of(rounds: &[RoundRecord]) -> Option<Figures> {
        let timed = |r: &&RoundRecord| {
            r.summary.sessions.is_some() && r.summary.connections.connection_time_us.is_some()
        };
        if !rounds.iter().any(|r| timed(&r)) {
            return None;
        }
        let mut f = Figures {
            duration_s: 0.0,
            connections: 0,
            requests: 0,
            replies: 0,
            errors: 0,
            bytes_written: 0,
            body_bytes: 0,
            head_replies: 0,
            head_bytes: 0,
            classes: [0; 5],
            connection_time: None,
            connection_median_us: None,
            connect: None,
            sessions_completed: 0,
            sessions_failed: 0,
            lengths: Vec::new(),
        };
        let mut medians = Vec::new();
        for r in rounds {
            let s = &r.summary;
            f.duration_s += s.duration_s;
            f.connections += s
                .connections
                .connection_time_us
                .as_ref()
                .map_or(0, |l| l.count);
            f.requests += s.sent;
            f.replies += s.completed;
            f.errors += s.errors_total;
            f.bytes_written += s.bytes_written;
            f.body_bytes += s.body_bytes;
            if let Some(h) = s.reply_heads {
                f.head_replies += h.replies;
                f.head_bytes += h.bytes;
            }
            for (&code, &n) in &s.status {
                if let Some(slot) = (code / 100).checked_sub(1).filter(|&c| c < 5) {
                    f.classes[slot as usize] += n;
                }
            }
            if let Some(life) = s
                .connections
                .connection_time_us
                .as_ref()
                .filter(|l| l.count > 0)
            {
                f.connection_time = Some(Pooled::add(f.connection_time, life));
                medians.push(life.p50 as f64);
            }
            if s.connections.connect_time_us.count > 0 {
                f.connect = Some(Pooled::add(f.connect, &s.connections.connect_time_us));
            }
            if let Some(x) = &s.sessions {
                f.sessions_completed += x.counts.completed;
                f.sessions_failed += x.counts.failed;
                if f.lengths.len() < x.lengths.len() {
                    f.lengths.resize(x.lengths.len(), 0);
                }
                for (a, b) in f.lengths.iter_mut().zip(&x.lengths) {
                    *a += b;
                }
            }
        }
        f.connection_median_us = throng_stats::median(&medians);
        Some(f)
    }
}

/// Several rounds' spectra as one: their least and most, and the mean and
/// standard deviation of all their values together, which their counts,
/// means and deviations give exactly.
#[derive(Clone, Copy)]
struct Pooled {
    count: u64,
    min: u64,
    max: u64,
    mean: f64,
    stdev: f64,
}

impl Pooled {
    fn add(so_far: Option<Pooled>, l: &Latency) -> Pooled {
        let Some(p) = so_far else {
            return Pooled {
                count: l.count,
                min: l.min,
                max: l.max,
                mean: l.mean,
                stdev: l.stdev,
            };
        };
        let (n1, n2) = (p.count as f64, l.count as f64);
        let n = n1 + n2;
        let mean = (n1 * p.mean + n2 * l.mean) / n;
        let square = |sd: f64, m: f64| sd * sd + (m - mean) * (m - mean);
        let var = (n1 * square(p.stdev, p.mean) + n2 * square(l.stdev, l.mean)) / n;
        Pooled {
            count: p.count + l.count,
            min: p.min.min(l.min),
            max: p.max.max(l.max),
            mean,
            stdev: var.max(0.0).sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spectrum(count: u64, min: u64, max: u64, mean: f64, stdev: f64) -> Latency {
        Latency {
            count,
            min,
            max,
            mean,
            stdev,
            ..Latency::default()
        }
    }

    #[test]
    fn pooled_spectra_have_the_mean_and_deviation_of_all_their_values() {
        // {1, 3} and {5, 7, 9}: all five have mean 5 and variance 8.
        let a = spectrum(2, 1, 3, 2.0, 1.0);
        let b = spectrum(3, 5, 9, 7.0, (8.0f64 / 3.0).sqrt());
        let p = Pooled::add(Some(Pooled::add(None, &a)), &b);
        assert_eq!((p.count, p.min, p.max), (5, 1, 9));
        assert!((p.mean - 5.0).abs() < 1e-12);
        assert!((p.stdev - 8.0f64.sqrt()).abs() < 1e-12);
    }
}
