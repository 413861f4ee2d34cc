//! The cost of one request on the live server: syscalls and context
//! switches from each step's diagnostic round, beside the CPU time the
//! step's measured rounds used per response. Counting runs in a round of
//! its own after the measured ones, so it never slows the figures it
//! explains.
//!
//! Lines here are plain text; each format escapes them whole, since the
//! syscall names come from the counting tool.

use throng_model::{Diagnosis, RunData};

use crate::figures::{self, StepFigures};

/// Syscalls rarer than this per request are left out of a line: they are
/// a timer's or an accept's share spread over many requests, not the work
/// of one.
pub const SHOWN_FROM: f64 = 0.01;

/// What the unnamed rest must add up to before a line mentions it: less is
/// the rounding of the shown figures.
const OTHER_FROM: f64 = 0.005;

/// The heading of the report's section on the cost of a request.
pub const HEADING: &str = "Cost per request";

/// What the section holds, before each server's line at its best step.
pub const INTRO: &str = "Syscalls and context switches per response come from a diagnostic \
    round run after each step's measured rounds and kept out of their figures; CPU per request \
    from the measured rounds (user + system time of the server's process tree over completed \
    responses). Each server at its best diagnosed step:";

/// Whether the diagnostic round counted syscalls.
pub fn counted(d: &Diagnosis) -> bool {
    d.unavailable.is_none()
}

/// "openat 1.00, close 1.00 + 0.05 other per request": the syscalls made at
/// least [`SHOWN_FROM`] times per request, most frequent first (then by
/// name), and what the total counts beyond them.
pub fn syscalls_line(d: &Diagnosis) -> String {
    let mut shown: Vec<(&str, f64)> = d
        .syscalls_per_request
        .iter()
        .filter(|(_, n)| **n >= SHOWN_FROM)
        .map(|(name, n)| (name.as_str(), *n))
        .collect();
    shown.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let named: Vec<String> = shown
        .iter()
        .map(|(name, n)| format!("{name} {n:.2}"))
        .collect();
    let other = d
        .total_per_request
        .map(|t| t - shown.iter().map(|(_, n)| n).sum::<f64>())
        .filter(|o| *o > OTHER_FROM)
        .map(|o| format!("{o:.2} other"));
    let line = match (named.is_empty(), other) {
        (true, None) => "no syscall".to_string(),
        (true, Some(o)) => o,
        (false, None) => named.join(", "),
        (false, Some(o)) => format!("{} + {o}", named.join(", ")),
    };
    line + " per request"
}

/// What the diagnosis says about syscalls: the counted line, or why they
/// were not counted.
pub fn syscalls_or_why(d: &Diagnosis) -> String {
    match &d.unavailable {
        None => syscalls_line(d),
        Some(why) => format!("syscalls not counted: {why}"),
    }
}

/// Voluntary and involuntary context switches per request.
pub fn switches(d: &Diagnosis) -> f64 {
    d.voluntary_switches_per_request + d.involuntary_switches_per_request
}

/// One step's cost in a line: "nginx (tiny, 2 cores, c=200): openat 1.00,
/// … per request; 32.0 µs CPU and 0.30 context switches per request".
pub fn step_line(f: &StepFigures, d: &Diagnosis) -> String {
    let cpu = f
        .cpu_us_per_request
        .map(|c| format!("{c:.1} µs CPU and "))
        .unwrap_or_default();
    format!(
        "{} ({}, {}): {}; {cpu}{:.2} context switches per request",
        f.server,
        f.workload,
        figures::step_source(f.cores, f.concurrency),
        syscalls_or_why(d),
        switches(d)
    )
}

/// Each server's cost at its best diagnosed step, per workload: the step
/// [`figures::best`] picks among those with a diagnostic round.
pub fn best_lines(run: &RunData, figs: &[StepFigures]) -> Vec<String> {
    let diagnosed: Vec<StepFigures> = figs
        .iter()
        .filter(|f| f.diagnosis.is_some())
        .cloned()
        .collect();
    let mut out = Vec::new();
    for w in figures::workload_names(run) {
        let large = figures::is_large(figs, &w);
        for s in figures::server_names(run) {
            if let Some(f) = figures::best(&diagnosed, &s, &w, large) {
                if let Some(d) = &f.diagnosis {
                    out.push(step_line(f, d));
                }
            }
        }
    }
    out
}

/// The largest difference in one syscall per request between two servers.
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallGap {
    /// The server that makes more of it.
    pub more: String,
    pub syscall: String,
    pub by: f64,
    /// The level both servers were diagnosed at.
    pub concurrency: u32,
}

impl SyscallGap {
    /// "nginx makes 1.00 more openat per request at c=100".
    pub fn sentence(&self) -> String {
        format!(
            "{} makes {:.2} more {} per request at c={}",
            self.more, self.by, self.syscall, self.concurrency
        )
    }
}

/// The syscall two servers differ in most on a workload and core count, at
/// the highest level where both counted syscalls; `None` when there is no
/// such level or no difference worth a line.
pub fn biggest_gap(
    figs: &[StepFigures],
    a: &str,
    b: &str,
    workload: &str,
    cores: u32,
) -> Option<SyscallGap> {
    let counted_at = |server: &str, level: u32| {
        figs.iter()
            .find(|f| {
                f.server == server
                    && f.workload == workload
                    && f.cores == cores
                    && f.concurrency == level
            })
            .and_then(|f| f.syscalls_per_request.as_ref())
    };
    let level = figs
        .iter()
        .filter(|f| f.server == a && f.workload == workload && f.cores == cores)
        .map(|f| f.concurrency)
        .filter(|c| counted_at(a, *c).is_some() && counted_at(b, *c).is_some())
        .max()?;
    let (sa, sb) = (counted_at(a, level)?, counted_at(b, level)?);
    let mut best: Option<(&str, f64)> = None;
    // Names in order, so a tie goes to the first name.
    let names: std::collections::BTreeSet<&String> = sa.keys().chain(sb.keys()).collect();
    for name in names {
        let diff = sb.get(name).unwrap_or(&0.0) - sa.get(name).unwrap_or(&0.0);
        if best.is_none_or(|(_, d)| diff.abs() > d.abs()) {
            best = Some((name, diff));
        }
    }
    let (syscall, diff) = best?;
    (diff.abs() >= SHOWN_FROM).then(|| SyscallGap {
        more: if diff > 0.0 { b } else { a }.to_string(),
        syscall: syscall.to_string(),
        by: diff.abs(),
        concurrency: level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnosis(calls: &[(&str, f64)], total: Option<f64>) -> Diagnosis {
        Diagnosis {
            tool: "perf stat".into(),
            requests: 1000,
            syscalls_per_request: calls.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            total_per_request: total,
            voluntary_switches_per_request: 0.25,
            involuntary_switches_per_request: 0.05,
            ..Diagnosis::default()
        }
    }

    #[test]
    fn lines_name_the_frequent_syscalls_then_the_rest() {
        let d = diagnosis(
            &[
                ("writev", 1.0),
                ("openat", 1.0),
                ("epoll_wait", 0.125),
                ("accept4", 0.004),
            ],
            Some(2.5),
        );
        assert_eq!(
            syscalls_line(&d),
            "openat 1.00, writev 1.00, epoll_wait 0.12 + 0.38 other per request"
        );
        // Without a total (strace names every call) there is no rest; the
        // rest of rounding is not a rest either.
        let d = diagnosis(&[("read", 2.0)], None);
        assert_eq!(syscalls_line(&d), "read 2.00 per request");
        let d = diagnosis(&[("read", 2.0)], Some(2.004));
        assert_eq!(syscalls_line(&d), "read 2.00 per request");
        let d = diagnosis(&[], Some(3.0));
        assert_eq!(syscalls_line(&d), "3.00 other per request");
        let d = Diagnosis {
            unavailable: Some("perf_event_paranoid is 3".into()),
            ..Diagnosis::default()
        };
        assert_eq!(
            syscalls_or_why(&d),
            "syscalls not counted: perf_event_paranoid is 3"
        );
    }
}
