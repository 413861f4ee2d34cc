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

/// How two servers' syscalls per request differ, told from the side that
/// makes more of them in all: the largest single difference alone could
/// point the other way (lighttpd "2.00 more read" while nginx made 6.01
/// syscalls a request to its 4.01, by openat, newfstatat and close).
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallGap {
    /// The server that makes more syscalls per request in all, or, when
    /// both make as many, more of the syscall they differ in most.
    pub more: String,
    /// The other server.
    pub fewer: String,
    /// How many more in all (0 when as many).
    pub by: f64,
    /// Where `more` makes more, the largest first (at most three).
    pub its: Vec<(String, f64)>,
    /// Where `fewer` makes more, the largest first (at most two).
    pub theirs: Vec<(String, f64)>,
    /// The level both servers were diagnosed at.
    pub concurrency: u32,
}

impl SyscallGap {
    /// "nginx makes 2.00 more syscalls per request at c=100 (openat +1.00,
    /// newfstatat +1.00, close +1.00; lighttpd read +2.00)".
    pub fn sentence(&self) -> String {
        let list = |v: &[(String, f64)]| {
            v.iter()
                .map(|(n, d)| format!("{n} +{d:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.its.is_empty() {
            parts.push(list(&self.its));
        }
        if !self.theirs.is_empty() {
            parts.push(format!("{} {}", self.fewer, list(&self.theirs)));
        }
        let parts = parts.join("; ");
        if self.by >= SHOWN_FROM {
            format!(
                "{} makes {:.2} more syscalls per request at c={} ({parts})",
                self.more, self.by, self.concurrency
            )
        } else {
            format!(
                "{} and {} make as many syscalls per request at c={}, not the same ones ({} {parts})",
                self.more, self.fewer, self.concurrency, self.more
            )
        }
    }
}

/// How two servers' syscalls differ on a workload and core count, at the
/// highest level where both counted syscalls; `None` when there is no
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
            .filter(|f| f.syscalls_per_request.is_some())
    };
    let level = figs
        .iter()
        .filter(|f| f.server == a && f.workload == workload && f.cores == cores)
        .map(|f| f.concurrency)
        .filter(|c| counted_at(a, *c).is_some() && counted_at(b, *c).is_some())
        .max()?;
    let (fa, fb) = (counted_at(a, level)?, counted_at(b, level)?);
    let (sa, sb) = (
        fa.syscalls_per_request.as_ref()?,
        fb.syscalls_per_request.as_ref()?,
    );
    // All syscalls, those too rare to be named included.
    let total = |f: &StepFigures, m: &std::collections::BTreeMap<String, f64>| {
        f.diagnosis
            .as_ref()
            .and_then(|d| d.total_per_request)
            .unwrap_or_else(|| m.values().sum())
    };
    let all = total(fb, sb) - total(fa, sa);
    // b's count minus a's, per syscall; names in order, so a tie goes to
    // the first name.
    let names: std::collections::BTreeSet<&String> = sa.keys().chain(sb.keys()).collect();
    let mut diffs: Vec<(String, f64)> = names
        .into_iter()
        .map(|n| {
            (
                n.clone(),
                sb.get(n).unwrap_or(&0.0) - sa.get(n).unwrap_or(&0.0),
            )
        })
        .filter(|(_, d)| d.abs() >= SHOWN_FROM)
        .collect();
    diffs.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
    let first = diffs.first()?.1;
    // The side with more in all; as many: the side of the largest gap.
    let b_more = if all.abs() >= SHOWN_FROM {
        all > 0.0
    } else {
        first > 0.0
    };
    let side = |more: bool, k: usize| -> Vec<(String, f64)> {
        diffs
            .iter()
            .filter(|(_, d)| (*d > 0.0) == more)
            .take(k)
            .map(|(n, d)| (n.clone(), d.abs()))
            .collect()
    };
    let (more, fewer) = if b_more { (b, a) } else { (a, b) };
    Some(SyscallGap {
        more: more.to_string(),
        fewer: fewer.to_string(),
        by: all.abs(),
        its: side(b_more, 3),
        theirs: side(!b_more, 2),
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

    #[test]
    fn a_gap_is_told_from_the_server_that_makes_more_syscalls_in_all() {
        // lighttpd reads twice more, and still makes 2 syscalls a request
        // fewer than nginx: the line named lighttpd's 2.00 more read.
        let step = |server: &str, calls: &[(&str, f64)], total: f64| {
            let mut s = throng_model::StepRecord::new(server, 1, "tiny", 100);
            s.diagnosis = Some(diagnosis(calls, Some(total)));
            figures::step_figures(&s)
        };
        let figs = [
            step(
                "nginx",
                &[
                    ("openat", 1.0),
                    ("newfstatat", 1.0),
                    ("close", 1.0),
                    ("writev", 1.0),
                    ("read", 1.0),
                    ("epoll_wait", 1.01),
                ],
                6.01,
            ),
            step("lighttpd", &[("read", 3.0), ("writev", 1.0)], 4.01),
        ];
        let gap = biggest_gap(&figs, "nginx", "lighttpd", "tiny", 1).unwrap();
        assert_eq!(
            gap.sentence(),
            "nginx makes 2.00 more syscalls per request at c=100 (epoll_wait +1.01, close +1.00, \
             newfstatat +1.00; lighttpd read +2.00)"
        );
        // As many in all: told from the side of the largest difference.
        let figs = [
            step("a", &[("openat", 1.0), ("read", 1.0)], 2.0),
            step("b", &[("read", 2.0)], 2.0),
        ];
        assert_eq!(
            biggest_gap(&figs, "a", "b", "tiny", 1).unwrap().sentence(),
            "a and b make as many syscalls per request at c=100, not the same ones (a openat \
             +1.00; b read +1.00)"
        );
    }
}
