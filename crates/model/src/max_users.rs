//! The one rule for "max users", as Sametz's httperf comparison and
//! ACME's thttpd table report it: the highest concurrency at which a server
//! still answers every request, without errors and with p99 under a
//! patience limit (3 s by default, httperf's timeout in Sametz's runs).
//! The lab's search, its sweep and the report's summary all decide with
//! these functions.
//!
//! A round tells one of three things about its level: the server answered
//! well enough ([`Level::Good`]), it failed ([`Level::Broke`]: refusals,
//! resets, timeouts, wrong answers, no response with nothing left in
//! flight, a p99 over the patience), or the round ended before a response
//! could complete ([`Level::TooShort`]: no response, requests still in
//! flight, none timed out). The last says nothing about the server: a
//! 21 MB file shared by 100 connections takes seconds per response, and a
//! 1 s round cannot see one finish. The lab measures such a level again
//! with a longer round; it is never reported as the server breaking.

use std::time::Duration;

use crate::{ErrorKind, StepRecord, StepStatus, Summary};

/// Default patience: a request slower than this is a user gone.
pub const DEFAULT_PATIENCE_S: f64 = 3.0;

/// What one round says about its level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    Good,
    /// The server failed at this level; the text says how.
    Broke(String),
    /// No response, requests still in flight and none timed out: the round
    /// ended before a response could complete. Not the server's failure.
    TooShort,
}

/// Whether a round ended before any response could complete: nothing
/// answered, nothing failed (no timeout, reset or refusal), and requests
/// were still waiting when it ended.
pub fn round_too_short(s: &Summary) -> bool {
    s.completed == 0 && s.errors_total == 0 && s.in_flight_at_end > 0
}

/// Whether a round has latency figures: a round without a completed
/// response has none (its percentiles are zeros, not fast answers).
pub fn has_latency(s: &Summary) -> bool {
    s.completed > 0
}

/// What one round at a level says: good, broken (and by what), or too
/// short to tell.
pub fn judge_level(s: &Summary, patience: Duration) -> Level {
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
                ErrorKind::Tls => "failed TLS handshakes",
                ErrorKind::StreamReset => "reset streams",
                ErrorKind::H2Protocol
                | ErrorKind::H2FrameSize
                | ErrorKind::H2Compression
                | ErrorKind::H2FlowControl => "HTTP/2 protocol errors",
                ErrorKind::Parse | ErrorKind::ConnectOther | ErrorKind::Unsolicited => {
                    "other errors"
                }
            };
            match kinds.iter_mut().find(|(_, w)| *w == what) {
                Some(e) => e.0 += n,
                None => kinds.push((n, what)),
            }
        }
        kinds.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let list: Vec<String> = kinds.iter().map(|(n, w)| format!("{n} {w}")).collect();
        return Level::Broke(list.join(", "));
    }
    if round_too_short(s) {
        return Level::TooShort;
    }
    if s.completed == 0 {
        return Level::Broke("no response".to_string());
    }
    let p99 = Duration::from_micros(s.latency_us.p99);
    if p99 >= patience {
        return Level::Broke(format!(
            "p99 {:.2} s over the {:.1} s patience",
            p99.as_secs_f64(),
            patience.as_secs_f64()
        ));
    }
    Level::Good
}

/// What broke a level, or `None` when it was good or the round was too
/// short to tell (see [`judge_level`]).
pub fn level_broke_by(s: &Summary, patience: Duration) -> Option<String> {
    match judge_level(s, patience) {
        Level::Broke(why) => Some(why),
        Level::Good | Level::TooShort => None,
    }
}

/// What a sweep step says about its level.
pub fn judge_step(st: &StepRecord, patience: Duration) -> Option<Level> {
    match st.status {
        StepStatus::Ok => {}
        StepStatus::Failed => {
            return Some(Level::Broke(
                st.failure
                    .clone()
                    .unwrap_or_else(|| "the server failed".to_string()),
            ))
        }
        // Not measured: says nothing either way.
        StepStatus::Skipped | StepStatus::Unsupported => return None,
    }
    let mut worst = None;
    let mut decided = false;
    for r in &st.rounds {
        match judge_level(&r.summary, patience) {
            Level::TooShort => {}
            Level::Good => decided = true,
            Level::Broke(w) => {
                decided = true;
                let errors = r.summary.errors_total > 0;
                worst = Some(w);
                if errors {
                    break;
                }
            }
        }
    }
    if !decided {
        // No round at all says nothing; rounds that all ended too soon say
        // that the level is not known.
        return (!st.rounds.is_empty()).then_some(Level::TooShort);
    }
    if let Some(w) = worst {
        return Some(Level::Broke(w));
    }
    let p99 = st.p99_us();
    if p99.is_some_and(|p| p >= patience.as_micros() as u64) {
        return Some(Level::Broke(format!(
            "median p99 over the {:.1} s patience",
            patience.as_secs_f64()
        )));
    }
    Some(Level::Good)
}

/// Why a sweep step is not good, or `None` when it is (or says nothing).
pub fn step_broke_by(st: &StepRecord, patience: Duration) -> Option<String> {
    match judge_step(st, patience) {
        Some(Level::Broke(why)) => Some(why),
        _ => None,
    }
}

/// How a sweep's levels ended, read in order of concurrency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepEnd {
    /// Every measured level was good.
    Unbroken,
    /// This level broke the server, for this reason.
    Broke(u32, String),
    /// Every round of this level ended before a response could complete:
    /// the sweep cannot say whether the server held, so nothing above it
    /// is read.
    Undecided(u32),
}

/// The sweep's answer: the highest good level below the first level that
/// broke (or could not be decided), and how the sweep ended.
pub fn from_sweep(steps: &[StepRecord], patience: Duration) -> (Option<u32>, SweepEnd) {
    let mut measured: Vec<&StepRecord> = steps
        .iter()
        .filter(|s| s.status == StepStatus::Failed || !s.rounds.is_empty())
        .filter(|s| s.status != StepStatus::Skipped && s.status != StepStatus::Unsupported)
        .collect();
    measured.sort_by_key(|s| s.concurrency);
    let mut good = None;
    for s in measured {
        match judge_step(s, patience) {
            None => {}
            Some(Level::Good) => good = Some(s.concurrency),
            Some(Level::Broke(why)) => return (good, SweepEnd::Broke(s.concurrency, why)),
            Some(Level::TooShort) => return (good, SweepEnd::Undecided(s.concurrency)),
        }
    }
    (good, SweepEnd::Unbroken)
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
            rate: None,
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
            diagnosis: None,
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
            (Some(100), SweepEnd::Broke(500, "9 resets".into()))
        );
        let failed = [
            step(10, summary(&[], 1000), StepStatus::Ok),
            step(20, Summary::default(), StepStatus::Failed),
        ];
        assert_eq!(
            from_sweep(&failed, P),
            (Some(10), SweepEnd::Broke(20, "the server exited".into()))
        );
        let clean = [step(10, summary(&[], 1000), StepStatus::Ok)];
        assert_eq!(from_sweep(&clean, P), (Some(10), SweepEnd::Unbroken));
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

    /// A round without a completed response, with these errors and this
    /// many requests still in flight when it ended.
    fn unanswered(errors: &[(&str, u64)], in_flight: u64) -> Summary {
        Summary {
            completed: 0,
            in_flight_at_end: in_flight,
            ..summary(errors, 0)
        }
    }

    /// A round of `concurrency` connections that ended before any of its
    /// responses: nothing completed, nothing failed, all still in flight.
    fn cut_short(concurrency: u64) -> Summary {
        unanswered(&[], concurrency)
    }

    #[test]
    fn a_round_that_ended_too_soon_is_not_a_failure() {
        assert_eq!(judge_level(&cut_short(100), P), Level::TooShort);
        assert_eq!(level_broke_by(&cut_short(100), P), None);
        // Nothing in flight and nothing answered: the server did not answer.
        assert_eq!(
            judge_level(&cut_short(0), P),
            Level::Broke("no response".into())
        );
        // A timeout before the round ended is the server's failure, even
        // with requests still in flight.
        let timed_out = unanswered(&[("timeout", 1)], 99);
        assert_eq!(
            judge_level(&timed_out, P),
            Level::Broke("1 timeouts".into())
        );
        let refused = unanswered(&[("connect_refused", 60)], 40);
        assert_eq!(judge_level(&refused, P), Level::Broke("60 refusals".into()));
    }

    #[test]
    fn empty_rounds_neither_break_a_step_nor_lower_its_p99() {
        // One round cut short, two with a p99 of 3.5 s: the median p99 is
        // 3.5 s (over the patience), not the 0 of the empty round.
        let mut st = step(100, summary(&[], 3_500_000), StepStatus::Ok);
        st.rounds.push(RoundRecord {
            summary: cut_short(100),
            ..RoundRecord::default()
        });
        st.rounds.push(st.rounds[0].clone());
        // Each round's own p99 breaks it first.
        assert_eq!(
            step_broke_by(&st, P).unwrap(),
            "p99 3.50 s over the 3.0 s patience"
        );
        assert_eq!(st.p99_us(), Some(3_500_000));
        // A step whose only rounds ended too soon is undecided: the sweep
        // stops reading there, without calling it broken.
        let mut short = step(200, cut_short(200), StepStatus::Ok);
        short.rounds.push(short.rounds[0].clone());
        assert_eq!(judge_step(&short, P), Some(Level::TooShort));
        let steps = [step(100, summary(&[], 1000), StepStatus::Ok), short];
        assert_eq!(from_sweep(&steps, P), (Some(100), SweepEnd::Undecided(200)));
        // Beside good rounds, an empty round changes nothing.
        let mut mixed = step(50, summary(&[], 1000), StepStatus::Ok);
        mixed.rounds.push(RoundRecord {
            summary: cut_short(50),
            ..RoundRecord::default()
        });
        assert_eq!(judge_step(&mixed, P), Some(Level::Good));
    }
}
