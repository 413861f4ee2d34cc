//! The servers' core's prices (see `throng_model::CorePrices`): a run's
//! readings in a line of its machine, and between two runs, whether the
//! machine itself changed beyond what its readings within each run spread.
//!
//! Five quiet runs of one study on one machine once moved nginx, lighttpd
//! and h2o 8–11% faster together while Apache's event MPM, switching
//! threads three times a request, went 35–95% faster: the same work, a
//! cheaper machine. A comparison of runs that says so names the machine
//! before it names a server.

use std::collections::BTreeMap;

use throng_model::{CorePrices, Price, RunData};

/// A change smaller than this is not called a change of the machine even
/// where the runs' own readings agree closely: the readings are medians of
/// short timings, good to a few percent.
const LEAST_CHANGE: f64 = 0.05;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A price as a reader takes it in: microseconds from 100 ns up.
pub fn amount(ns: f64) -> String {
    if ns >= 100.0 {
        format!("{:.2} µs", ns / 1000.0)
    } else {
        format!("{ns:.2} ns")
    }
}

/// The run's readings in one line: each price's median and range, or
/// `None` when none was read.
pub fn line(readings: &[CorePrices]) -> Option<String> {
    let first = readings.first()?;
    let parts: Vec<String> = [Price::Switch, Price::Syscall, Price::Loop]
        .iter()
        .map(|&p| {
            let v: Vec<f64> = readings.iter().map(|r| p.of(r)).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mid = median(v).unwrap_or(f64::NAN);
            format!(
                "{} {} ({}–{})",
                p.label(),
                amount(mid),
                amount(lo),
                amount(hi)
            )
        })
        .collect();
    Some(format!(
        "CPU {}, {} reading{} before the launches: {}",
        first.cpu,
        readings.len(),
        if readings.len() == 1 { "" } else { "s" },
        parts.join("; ")
    ))
}

/// One price in two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub price: Price,
    pub a_ns: f64,
    pub b_ns: f64,
    /// b over a, less one.
    pub change: f64,
    /// The larger of the two runs' own spreads (largest reading over
    /// smallest, less one).
    pub within: f64,
}

impl Moved {
    /// Beyond its readings' own spread in either run, and by at least
    /// [`LEAST_CHANGE`].
    pub fn is_change(&self) -> bool {
        self.change.abs() >= LEAST_CHANGE && self.change.abs() > self.within
    }
}

fn spread(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo > 0.0 {
        hi / lo - 1.0
    } else {
        0.0
    }
}

/// Each price in both runs; empty when either run has no reading.
pub fn between(a: &RunData, b: &RunData) -> Vec<Moved> {
    let (pa, pb) = (&a.run.environment.prices, &b.run.environment.prices);
    if pa.is_empty() || pb.is_empty() {
        return Vec::new();
    }
    Price::ALL
        .iter()
        .filter_map(|&price| {
            let va: Vec<f64> = pa.iter().map(|r| price.of(r)).collect();
            let vb: Vec<f64> = pb.iter().map(|r| price.of(r)).collect();
            let within = spread(&va).max(spread(&vb));
            let (a_ns, b_ns) = (median(va)?, median(vb)?);
            (a_ns > 0.0).then(|| Moved {
                price,
                a_ns,
                b_ns,
                change: b_ns / a_ns - 1.0,
                within,
            })
        })
        .collect()
}

/// Per server, its context switches and system calls a request, averaged
/// over the steps of both runs that were diagnosed.
fn work(a: &RunData, b: &RunData) -> BTreeMap<String, (f64, f64)> {
    let mut sums: BTreeMap<String, (f64, f64, u32)> = BTreeMap::new();
    for s in a.steps.iter().chain(&b.steps) {
        let Some(d) = s.diagnosis.as_ref().filter(|d| d.unavailable.is_none()) else {
            continue;
        };
        let Some(calls) = d.total_per_request else {
            continue;
        };
        let e = sums.entry(s.server.clone()).or_default();
        e.0 += d.voluntary_switches_per_request + d.involuntary_switches_per_request;
        e.1 += calls;
        e.2 += 1;
    }
    sums.into_iter()
        .map(|(k, (sw, calls, n))| (k, (sw / f64::from(n), calls / f64::from(n))))
        .collect()
}

/// The caution a comparison of runs gives when the machine's prices
/// moved; `None` when they held or were not read in both runs.
pub fn caution(a: &RunData, b: &RunData) -> Option<String> {
    let moved: Vec<Moved> = between(a, b).into_iter().filter(Moved::is_change).collect();
    if moved.is_empty() {
        return None;
    }
    let parts: Vec<String> = moved
        .iter()
        .map(|m| {
            format!(
                "{} cost {} in run {} and {} in run {} ({:+.0}%; each run's own readings within {:.0}%)",
                m.price.label(),
                amount(m.a_ns),
                a.run.id,
                amount(m.b_ns),
                b.run.id,
                m.change * 100.0,
                m.within * 100.0
            )
        })
        .collect();
    let mut text = format!(
        "The servers' core was not the same machine in the two runs: {}.",
        parts.join("; ")
    );
    let mut servers: Vec<(String, (f64, f64))> = work(a, b).into_iter().collect();
    if servers.len() >= 2 {
        servers.sort_by(|x, y| y.1 .0.total_cmp(&x.1 .0).then(x.0.cmp(&y.0)));
        let each: Vec<String> = servers
            .iter()
            .map(|(name, (sw, calls))| {
                format!("{name} {sw:.1} switches and {calls:.1} system calls a request")
            })
            .collect();
        text.push_str(&format!(
            " A server that pays for more of these a request moves with the machine more \
             ({}); its change between the runs is the machine's as much as its own.",
            each.join(", ")
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(launch: u32, switch_ns: f64, syscall_ns: f64, loop_ns: f64) -> CorePrices {
        CorePrices {
            launch,
            cores: 1,
            workload: "tiny".into(),
            cpu: 0,
            unix_s: 0.0,
            loop_ns,
            syscall_ns,
            switch_ns,
        }
    }

    fn run(id: i64, readings: Vec<CorePrices>) -> RunData {
        let mut r = RunData::default();
        r.run.id = id;
        r.run.environment.prices = readings;
        r
    }

    #[test]
    fn a_run_s_readings_are_told_by_median_and_range() {
        let r = [
            reading(0, 2900.0, 210.0, 0.95),
            reading(1, 3100.0, 200.0, 0.97),
            reading(2, 3000.0, 220.0, 0.96),
        ];
        assert_eq!(
            line(&r).unwrap(),
            "CPU 0, 3 readings before the launches: a context switch 3.00 µs (2.90 µs–3.10 µs); \
             a system call 0.21 µs (0.20 µs–0.22 µs); a fixed stretch of code 0.96 ns (0.95 ns–0.97 ns)"
        );
        assert_eq!(line(&[]), None);
    }

    #[test]
    fn a_switch_that_got_cheaper_beyond_each_run_s_spread_is_the_machine_s_change() {
        let a = run(
            1,
            vec![
                reading(0, 2900.0, 210.0, 0.95),
                reading(1, 3000.0, 212.0, 0.95),
            ],
        );
        let b = run(
            5,
            vec![
                reading(0, 2200.0, 205.0, 0.95),
                reading(1, 2250.0, 208.0, 0.95),
            ],
        );
        assert_eq!(
            caution(&a, &b).unwrap(),
            "The servers' core was not the same machine in the two runs: a context switch cost \
             2.95 µs in run 1 and 2.23 µs in run 5 (-25%; each run's own readings within 3%)."
        );
    }

    #[test]
    fn a_change_within_a_run_s_own_spread_or_under_five_percent_is_no_change() {
        // 4% apart, with readings that agree to 1% inside each run.
        let a = run(
            1,
            vec![
                reading(0, 3000.0, 200.0, 1.0),
                reading(1, 3030.0, 200.0, 1.0),
            ],
        );
        let b = run(
            2,
            vec![
                reading(0, 3120.0, 200.0, 1.0),
                reading(1, 3150.0, 200.0, 1.0),
            ],
        );
        assert_eq!(caution(&a, &b), None);
        // 20% apart, but one run's own readings spread 30%.
        let a = run(
            1,
            vec![
                reading(0, 3000.0, 200.0, 1.0),
                reading(1, 3900.0, 200.0, 1.0),
            ],
        );
        let b = run(
            2,
            vec![
                reading(0, 4100.0, 200.0, 1.0),
                reading(1, 4150.0, 200.0, 1.0),
            ],
        );
        assert_eq!(caution(&a, &b), None);
        // No reading in one run: nothing to say.
        assert_eq!(caution(&a, &run(3, Vec::new())), None);
    }

    #[test]
    fn servers_are_named_by_the_switches_and_calls_they_pay_a_request() {
        use throng_model::{Diagnosis, StepRecord};
        let diag = |vol: f64, invol: f64, calls: f64| Diagnosis {
            voluntary_switches_per_request: vol,
            involuntary_switches_per_request: invol,
            total_per_request: Some(calls),
            ..Diagnosis::default()
        };
        let mut a = run(1, vec![reading(0, 3000.0, 200.0, 1.0)]);
        let mut b = run(2, vec![reading(0, 2000.0, 200.0, 1.0)]);
        let step = |server: &str, d: Diagnosis| StepRecord {
            diagnosis: Some(d),
            ..StepRecord::new(server, 1, "tiny", 100)
        };
        a.steps = vec![
            step("nginx", diag(0.1, 0.0, 4.0)),
            step("apache2-event", diag(2.0, 1.2, 15.6)),
        ];
        b.steps = vec![
            step("nginx", diag(0.1, 0.0, 4.0)),
            step("apache2-event", diag(2.0, 1.4, 15.8)),
        ];
        assert_eq!(
            caution(&a, &b).unwrap(),
            "The servers' core was not the same machine in the two runs: a context switch cost \
             3.00 µs in run 1 and 2.00 µs in run 2 (-33%; each run's own readings within 0%). \
             A server that pays for more of these a request moves with the machine more \
             (apache2-event 3.3 switches and 15.7 system calls a request, nginx 0.1 switches and \
             4.0 system calls a request); its change between the runs is the machine's as much as its own."
        );
    }
}
