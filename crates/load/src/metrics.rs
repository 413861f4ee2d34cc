//! A run's figures as a Prometheus text exposition (format 0.0.4, which
//! Prometheus and OpenMetrics scrapers both read), rebuilt from the
//! engine's per-second ticks: requests completed, responses by status
//! class, errors by kind, requests in flight, connections open, and the
//! latency as a Prometheus histogram drawn from the HDR data. Every
//! series carries the run's label (`run="..."`).

use std::fmt::Write;

use hdrhistogram::Histogram;
use throng_engine::tap::{Tick, STATUS_CLASSES};
use throng_model::ErrorKind;

/// The latency histogram's bucket bounds, in seconds; fixed so that
/// dashboards can sum runs. A sample falls in the first bucket whose bound
/// is at or above the lowest value of its HDR bucket (HDR keeps 3
/// significant digits, so within 0.1% of the bound).
pub const LATENCY_BOUNDS_S: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// The names of the status classes a tick counts, by index.
const CLASSES: [&str; STATUS_CLASSES] = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];

/// A run label: what `run="..."` may hold, checked once at the edge so
/// that no escaping is ever needed.
pub fn valid_run_label(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

#[derive(Clone, Copy, Default)]
struct Totals {
    completed: u64,
    errors: [u64; ErrorKind::ALL.len()],
    status: [u64; STATUS_CLASSES],
    in_flight: u64,
    open: u64,
}

/// The run's figures so far, from the threads' latest ticks.
pub struct Board {
    run: String,
    threads: Vec<Totals>,
    latency: Option<Histogram<u64>>,
}

impl Board {
    pub fn new(run: &str) -> Board {
        Board {
            run: run.to_string(),
            threads: Vec::new(),
            latency: None,
        }
    }

    pub fn tick(&mut self, t: &Tick) {
        if self.threads.len() < t.threads.max(t.thread + 1) {
            self.threads
                .resize(t.threads.max(t.thread + 1), Totals::default());
        }
        self.threads[t.thread] = Totals {
            completed: t.completed,
            errors: t.errors,
            status: t.status,
            in_flight: t.in_flight,
            open: t.open,
        };
        if let Some(h) = &t.latency {
            match &mut self.latency {
                // Same bounds in every thread: adding cannot fail.
                Some(sum) => {
                    let _ = sum.add(h);
                }
                None => self.latency = Some(h.clone()),
            }
        }
    }

    /// The run's figures now, family by family.
    pub fn samples(&self) -> Vec<Sample> {
        let mut sum = Totals::default();
        for t in &self.threads {
            sum.completed += t.completed;
            for (a, b) in sum.errors.iter_mut().zip(&t.errors) {
                *a += b;
            }
            for (a, b) in sum.status.iter_mut().zip(&t.status) {
                *a += b;
            }
            sum.in_flight += t.in_flight;
            sum.open += t.open;
        }
        let mut out = Vec::new();
        let mut push = |family: usize,
                        suffix: &'static str,
                        label: Option<(&'static str, String)>,
                        value: f64| {
            out.push(Sample {
                family,
                name: format!("{}{suffix}", FAMILIES[family].0),
                label,
                value,
            });
        };
        push(0, "", None, sum.completed as f64);
        for (class, n) in CLASSES.iter().zip(&sum.status) {
            push(1, "", Some(("class", class.to_string())), *n as f64);
        }
        for k in ErrorKind::ALL {
            push(
                2,
                "",
                Some(("kind", k.name().to_string())),
                sum.errors[k.index()] as f64,
            );
        }
        push(3, "", None, sum.in_flight as f64);
        push(4, "", None, sum.open as f64);
        let (buckets, count, sum_s) = match &self.latency {
            Some(h) => buckets(h),
            None => ([0; LATENCY_BOUNDS_S.len()], 0, 0.0),
        };
        for (le, n) in LATENCY_BOUNDS_S.iter().zip(buckets) {
            push(5, "_bucket", Some(("le", le.to_string())), n as f64);
        }
        push(5, "_bucket", Some(("le", "+Inf".into())), count as f64);
        push(5, "_sum", None, sum_s);
        push(5, "_count", None, count as f64);
        out
    }

    pub fn run(&self) -> &str {
        &self.run
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let run = &self.run;
        let mut o = String::new();
        let mut family = usize::MAX;
        for s in self.samples() {
            if s.family != family {
                family = s.family;
                let (name, kind, help) = FAMILIES[family];
                let _ = writeln!(o, "# HELP {name} {help}");
                let _ = writeln!(o, "# TYPE {name} {kind}");
            }
            let _ = match &s.label {
                Some((k, v)) => writeln!(o, "{}{{run=\"{run}\",{k}=\"{v}\"}} {}", s.name, s.value),
                None => writeln!(o, "{}{{run=\"{run}\"}} {}", s.name, s.value),
            };
        }
        o
    }
}

/// One sample of a family: its full name, its label besides `run`, its value.
pub struct Sample {
    pub family: usize,
    pub name: String,
    pub label: Option<(&'static str, String)>,
    pub value: f64,
}

/// Each family's name, type and help, in the order they are exposed.
const FAMILIES: [(&str, &str, &str); 6] = [
    (
        "throng_requests_completed_total",
        "counter",
        "Responses complete in the measured phase.",
    ),
    (
        "throng_responses_total",
        "counter",
        "Responses in the measured phase by status class.",
    ),
    (
        "throng_errors_total",
        "counter",
        "Errors in the measured phase by kind.",
    ),
    ("throng_in_flight", "gauge", "Requests on the wire."),
    ("throng_connections", "gauge", "Connections open."),
    (
        "throng_latency_seconds",
        "histogram",
        "Latency of the measured phase (from the intended send time in the open model).",
    ),
];

/// Cumulative counts at each bound, the count and the sum in seconds (each
/// sample at its HDR bucket's middle, as HDR's mean takes it).
fn buckets(h: &Histogram<u64>) -> ([u64; LATENCY_BOUNDS_S.len()], u64, f64) {
    let mut out = [0u64; LATENCY_BOUNDS_S.len()];
    let mut sum_us = 0.0;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let n = v.count_at_value();
        let low = h.lowest_equivalent(value);
        sum_us += h.median_equivalent(value) as f64 * n as f64;
        for (slot, bound) in out.iter_mut().zip(LATENCY_BOUNDS_S) {
            if low as f64 <= bound * 1e6 {
                *slot += n;
            }
        }
    }
    (out, h.len(), sum_us / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(thread: usize, completed: u64, values: &[u64]) -> Tick {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        let mut errors = [0; ErrorKind::ALL.len()];
        errors[ErrorKind::Timeout.index()] = thread as u64 + 1;
        Tick {
            thread,
            threads: 2,
            second: 0,
            start_unix_s: 0.0,
            latency: (!values.is_empty()).then_some(h),
            completed,
            errors,
            status: [0, 0, completed, 0, 1, 0],
            in_flight: 3,
            open: 2,
            last: false,
        }
    }

    fn sample<'a>(text: &'a str, series: &str) -> &'a str {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    }

    #[test]
    fn counters_are_the_threads_latest_totals_and_buckets_are_cumulative() {
        let mut b = Board::new("r1");
        // Thread 0's second tick replaces its first; thread 1 adds its own.
        b.tick(&tick(0, 2, &[50, 900]));
        b.tick(&tick(0, 5, &[100, 2_000, 30_000]));
        b.tick(&tick(1, 4, &[20_000_000]));
        let t = b.render();
        assert_eq!(
            sample(&t, "throng_requests_completed_total{run=\"r1\"}"),
            "9"
        );
        assert_eq!(
            sample(&t, "throng_responses_total{run=\"r1\",class=\"2xx\"}"),
            "9"
        );
        assert_eq!(
            sample(&t, "throng_responses_total{run=\"r1\",class=\"4xx\"}"),
            "2"
        );
        assert_eq!(
            sample(&t, "throng_errors_total{run=\"r1\",kind=\"timeout\"}"),
            "3"
        );
        assert_eq!(sample(&t, "throng_in_flight{run=\"r1\"}"), "6");
        assert_eq!(sample(&t, "throng_connections{run=\"r1\"}"), "4");
        // 50 µs, 100 µs, 900 µs, 2 ms, 30 ms, 20 s: six samples in all.
        let le = |b: &str| format!("throng_latency_seconds_bucket{{run=\"r1\",le=\"{b}\"}}");
        assert_eq!(sample(&t, &le("0.0001")), "2");
        assert_eq!(sample(&t, &le("0.00025")), "2");
        assert_eq!(sample(&t, &le("0.001")), "3");
        assert_eq!(sample(&t, &le("0.0025")), "4");
        assert_eq!(sample(&t, &le("0.025")), "4");
        assert_eq!(sample(&t, &le("0.05")), "5");
        assert_eq!(sample(&t, &le("10")), "5");
        assert_eq!(sample(&t, &le("+Inf")), "6");
        assert_eq!(sample(&t, "throng_latency_seconds_count{run=\"r1\"}"), "6");
        assert!(t.contains("# TYPE throng_latency_seconds histogram\n"));
    }

    #[test]
    fn run_labels_need_no_escaping() {
        assert!(valid_run_label("soak-2024.06:a_1"));
        assert!(!valid_run_label(""));
        assert!(!valid_run_label("a\"b"));
        assert!(!valid_run_label("a b"));
        assert!(!valid_run_label(&"x".repeat(65)));
    }
}
