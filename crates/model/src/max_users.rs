//! The one rule for "max users", as Sametz's httperf comparison and
//! ACME's thttpd table report it: the highest concurrency at which a server
//! still answers every request, without errors and with p99 under a
//! patience limit (3 s by default, httperf's timeout in Sametz's runs).
//! The lab's search, its sweep and the report's summary all decide with
//! these functions.

use std::time::Duration;

use crate::{ErrorKind, StepRecord, StepStatus, Summary};

/// Default patience: a request slower than this is a user gone.
pub const DEFAULT_PATIENCE_S: f64 = 3.0;

/// What broke a level, or `None` when it was good.
pub fn level_broke_by(s: &Summary, patience: Duration) -> Option<String> {
    if s.errors_total > 0 {
        let mut kinds: Vec<(u64, &'static str)> = Vec::new();
        for (k, n) in s.error_counts() {
            if n == 0 {
                continue;
            }
            let what = match k {
                ErrorKind::ConnectRefused => "refusals",
                ErrorKind::Reset | ErrorKind::Closed | ErrorKind::Write | ErrorKind::Read => {
                    "resets"
                }
                ErrorKind::Timeout | ErrorKind::ConnectTimeout => "timeouts",
                ErrorKind::AddrUnavailable => "client ports exhausted",
                ErrorKind::Status => "error statuses",
                ErrorKind::SizeMismatch | ErrorKind::ChecksumMismatch => "wrong bodies",
                ErrorKind::Parse | ErrorKind::ConnectOther => "other errors",
            };
            match kinds.iter_mut().find(|(_, w)| *w == what) {
                Some(e) => e.0 += n,
                None => kinds.push((n, what)),
            }
        }
        kinds.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let list: Vec<String> = kinds.iter().map(|(n, w)| format!("{n} {w}")).collect();
        return Some(list.join(", "));
    }
    if s.completed == 0 {
        return Some("no response".to_string());
    }
    let p99 = Duration::from_micros(s.latency_us.p99);
    if p99 >= patience {
        return Some(format!(
            "p99 {:.2} s over the {:.1} s patience",
            p99.as_secs_f64(),
            patience.as_secs_f64()
        ));
    }
    None
}

/// Why a sweep step is not good, or `None` when it is.
pub fn step_broke_by(st: &StepRecord, patience: Duration) -> Option<String> {
    match st.status {
        StepStatus::Ok => {}
        StepStatus::Failed => {
            return Some(
                st.failure
                    .clone()
                    .unwrap_or_else(|| "the server failed".to_string()),
            )
        }
        // Not measured: says nothing either way.
        StepStatus::Skipped | StepStatus::Unsupported => return None,
    }
    let mut worst = None;
    for r in &st.rounds {
        if let Some(w) = level_broke_by(&r.summary, patience) {
            worst = Some(w);
            if r.summary.errors_total > 0 {
                break;
            }
        }
    }
    if worst.is_none()
        && st
            .p99_us()
            .is_some_and(|p| p >= patience.as_micros() as u64)
    {
        worst = Some(format!(
            "median p99 over the {:.1} s patience",
            patience.as_secs_f64()
        ));
    }
    worst
}

/// The sweep's answer: the highest good level below the first broken one,
/// and the broken one with what broke it.
pub fn from_sweep(
    steps: &[StepRecord],
    patience: Duration,
) -> (Option<u32>, Option<(u32, String)>) {
    let mut measured: Vec<&StepRecord> = steps
        .iter()
        .filter(|s| s.status == StepStatus::Failed || !s.rounds.is_empty())
        .filter(|s| s.status != StepStatus::Skipped && s.status != StepStatus::Unsupported)
        .collect();
    measured.sort_by_key(|s| s.concurrency);
    let mut good = None;
    for s in measured {
        match step_broke_by(s, patience) {
            None => good = Some(s.concurrency),
            Some(why) => return (good, Some((s.concurrency, why))),
        }
    }
    (good, None)
}

/// The highest good level of a sweep, when it has one.
pub fn max_users(steps: &[StepRecord], patience: Duration) -> Option<u32> {
    from_sweep(steps, patience).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Latency, RoundRecord, Verdict};

    fn summary(errors: &[(&str, u64)], p99_us: u64) -> Summary {
        Summary {
            completed: 100,
            errors: errors.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            errors_total: errors.iter().map(|(_, n)| n).sum(),
            latency_us: Latency {
                p99: p99_us,
                ..Latency::default()
            },
            ..Summary::default()
        }
    }

    fn step(c: u32, s: Summary, status: StepStatus) -> StepRecord {
        StepRecord {
            server: "x".into(),
            cores: 1,
            workload: "tiny".into(),
            concurrency: c,
            status,
            failure: (status == StepStatus::Failed).then(|| "the server exited".to_string()),
            log_tail: None,
            server_cpus: vec![0],
            client_cpus: vec![1],
            shared_cores: false,
            throughput: Default::default(),
            rounds: if status == StepStatus::Failed {
                vec![]
            } else {
                vec![RoundRecord {
                    summary: s,
                    ..RoundRecord::default()
                }]
            },
            verdict: Verdict::valid(),
        }
    }

    const P: Duration = Duration::from_secs(3);

    #[test]
    fn what_broke_is_named_by_kind() {
        assert_eq!(level_broke_by(&summary(&[], 2_999_999), P), None);
        assert_eq!(
            level_broke_by(&summary(&[], 3_500_000), P).unwrap(),
            "p99 3.50 s over the 3.0 s patience"
        );
        assert_eq!(
            level_broke_by(
                &summary(&[("connect_refused", 7), ("reset", 2), ("closed", 3)], 10),
                P
            )
            .unwrap(),
            "7 refusals, 5 resets"
        );
        assert_eq!(
            level_broke_by(&summary(&[("timeout", 4)], 10), P).unwrap(),
            "4 timeouts"
        );
    }

    #[test]
    fn the_sweep_answers_when_it_broke_the_server() {
        let steps = [
            step(100, summary(&[], 1000), StepStatus::Ok),
            step(10, summary(&[], 1000), StepStatus::Ok),
            step(500, summary(&[("reset", 9)], 1000), StepStatus::Ok),
            step(1000, summary(&[], 1000), StepStatus::Ok),
        ];
        assert_eq!(
            from_sweep(&steps, P),
            (Some(100), Some((500, "9 resets".into())))
        );
        let failed = [
            step(10, summary(&[], 1000), StepStatus::Ok),
            step(20, Summary::default(), StepStatus::Failed),
        ];
        assert_eq!(
            from_sweep(&failed, P),
            (Some(10), Some((20, "the server exited".into())))
        );
        let clean = [step(10, summary(&[], 1000), StepStatus::Ok)];
        assert_eq!(from_sweep(&clean, P), (Some(10), None));
    }

    #[test]
    fn max_users_is_the_highest_clean_level_below_the_first_broken_one() {
        let steps = [
            step(10, summary(&[], 1_000), StepStatus::Ok),
            step(100, summary(&[], 2_999_999), StepStatus::Ok),
            step(250, summary(&[("status", 3)], 10_000), StepStatus::Ok),
            step(500, summary(&[], 3_000_000), StepStatus::Ok),
            step(1000, summary(&[], 1_000), StepStatus::Failed),
        ];
        assert_eq!(max_users(&steps, P), Some(100));
        assert_eq!(max_users(&steps[2..], P), None);
    }
}
