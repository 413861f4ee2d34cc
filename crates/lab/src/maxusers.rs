//! The max-users search: the sweep's own levels come first (judged by the
//! one rule in [`throng_model::max_users`]); when the sweep never broke the
//! server, concurrency keeps doubling past it until something breaks or the
//! cap (open files, the study's limit) is reached. Each level's round is
//! long enough for its connections to complete a few responses at the pace
//! the server showed; a round that still ends before any response is
//! measured again, longer, and never counts as the server breaking.

use std::time::Duration;

use throng_model::max_users::{from_sweep, judge_level, Level, SweepEnd};
use throng_model::{MaxUsers, StepRecord};

use crate::executor::Executor;
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::round::{RoundKind, ServerId};
use crate::spec::{known_response_bytes, longer_round, round_seconds, secs, Pace, ROUND_CAP_S};
use crate::study::{CapLimit, Study, UsersCap};

/// How a server that exited during a level is described: running out of
/// memory is the classic way a server stops taking users (ACME's table
/// notes servers that fell over for want of memory), and the OOM killer's
/// counter moving while the level ran says it was that.
fn exit_cause(exit: &str, oom_before: Option<u64>, oom_after: Option<u64>) -> String {
    match (oom_before, oom_after) {
        (Some(a), Some(b)) if b > a => {
            format!("memory: the server {exit}, killed by the kernel's OOM killer")
        }
        _ => format!("the server {exit}"),
    }
}

/// Why a search that never broke the server stopped: at the study's own
/// cap, at the machine's, or at the server's share of the kernel's task
/// ids; the last two are no finding about the server and are said with
/// what sets them.
fn unbroken(cap: &UsersCap, reached: u32) -> String {
    match cap.limit {
        CapLimit::Study => format!("no failure up to the cap of {reached}"),
        CapLimit::Machine => {
            let files = throng_engine::max_connections() + throng_model::SPARE_FDS;
            machine_limit_words(reached, files)
        }
        CapLimit::Tasks { task_ids } => task_limit_words(reached, task_ids),
        CapLimit::Files {
            per_connection,
            files,
        } => files_limit_words(reached, per_connection, files),
    }
}

/// "none found up to 10000 (its limit here: ...)": a server that keeps
/// several open files for each connection by its own rule reaches a
/// process's open-file limit first.
fn files_limit_words(cap: u32, per_connection: u32, files: u64) -> String {
    format!(
        "none found up to {cap} (its limit here: it takes at most one connection for every \
         {per_connection} open files by its own rule, and a process may hold {files} (the hard \
         limit, which throng cannot raise))"
    )
}

/// "none found up to 8192 (its limit here: ...)": a server whose config
/// takes a task per connection allowed, twice the users it is searched
/// to, may take half the kernel's task ids.
fn task_limit_words(cap: u32, task_ids: u32) -> String {
    format!(
        "none found up to {cap} (its limit here: its config takes a thread or a process for \
         each connection it allows, twice the users searched, and one server may take at most \
         half of the kernel's {task_ids} task ids (kernel.pid_max), which every process and \
         thread of the machine shares)"
    )
}

/// "none found up to 19,936 (the machine's limit: ...)": a process may
/// hold `files` open files, the load generator keeps some for itself, and
/// the server spends one per connection from its own as well.
fn machine_limit_words(cap: u32, files: u64) -> String {
    format!(
        "none found up to {cap} (the machine's limit: the load generator and the server each \
         hold an open file per connection, a process may hold {files} (the hard limit, which \
         throng cannot raise), and the load generator keeps {} for its own files)",
        throng_model::SPARE_FDS
    )
}

/// One server's search after its group's sweep.
pub struct Search<'a> {
    pub study: &'a Study,
    pub group: &'a Group,
    pub server: ServerId,
    /// The server is still running (a server that failed in the sweep is
    /// answered from the sweep alone).
    pub alive: bool,
    /// The server's steps in this group's sweep.
    pub sweep: &'a [StepRecord],
    /// The highest concurrency to try, and what set it.
    pub cap: UsersCap,
    /// The pace of the server's last sweep round: how long a response
    /// takes, so the search's rounds are long enough to see them complete.
    pub pace: Option<Pace>,
}

/// Steps concurrency up from the sweep of `s.server` until a level breaks.
pub fn search(exec: &mut dyn Executor, s: &Search, interrupt: &Interrupt) -> MaxUsers {
    let (study, group, server) = (s.study, s.group, s.server);
    let patience = Duration::from_secs_f64(study.patience_s);
    let (sweep_good, sweep_end) = from_sweep(s.sweep, patience);
    let mut m = MaxUsers {
        cores: group.cores,
        workload: group.workload.kind.name().to_string(),
        patience_s: study.patience_s,
        level: sweep_good,
        broke_at: None,
        broke_by: String::new(),
    };
    match sweep_end {
        SweepEnd::Broke(at, why) => {
            m.broke_at = Some(at);
            m.broke_by = why;
            return m;
        }
        SweepEnd::Undecided(at) => {
            // The sweep lengthened them up to the cap, or kept a study's
            // own longer rounds.
            let longest = s
                .sweep
                .iter()
                .filter(|st| st.concurrency == at && st.rate.is_none())
                .flat_map(|st| &st.rounds)
                .map(|r| r.summary.duration_s)
                .fold(0.0, f64::max);
            m.broke_by = format!(
                "undecided at {at}: every round of the sweep ended before a response could \
                 complete, even {} ones",
                secs(if longest > 0.0 { longest } else { ROUND_CAP_S })
            );
            return m;
        }
        SweepEnd::Unbroken => {}
    }
    let Some(highest) = sweep_good else {
        m.broke_by = "the sweep measured no level".to_string();
        return m;
    };
    let cap = s.cap.users.max(highest);
    let mut level = highest.saturating_mul(2).min(cap);
    if level <= highest {
        m.broke_by = unbroken(&s.cap, cap);
        return m;
    }
    let known = known_response_bytes(&group.workload);
    let mut pace = s.pace;
    loop {
        if interrupt.is_set() {
            m.broke_by = "interrupted".to_string();
            return m;
        }
        let oom_before = exec.oom_kills();
        let exited = if s.alive {
            exec.exited(server)
        } else {
            Some("was not running".to_string())
        };
        if let Some(e) = exited {
            m.broke_at = Some(level);
            m.broke_by = format!("the server {e}");
            return m;
        }
        let mut seconds = round_seconds(study.round_s, pace, level);
        // What broke the level; `None` when it was good.
        let broke = loop {
            let mut load = study
                .round_load(group, crate::study::Level::closed(level), level as u64)
                .timed(seconds);
            // Past the patience a request is a timeout: no need to wait longer.
            load.timeout = patience + Duration::from_secs(1);
            let r = match exec.round(server, &load, RoundKind::Search) {
                Err(e) => break Some(e.to_string()),
                Ok(r) => r,
            };
            if let Some(e) = exec.exited(server) {
                break Some(exit_cause(&e, oom_before, exec.oom_kills()));
            }
            if let Some(p) = Pace::of(&r.summary, known) {
                pace = Some(p);
            }
            match judge_level(&r.summary, patience) {
                Level::Good => break None,
                Level::Broke(why) => break Some(why),
                // The round ended before a response could complete: that
                // says nothing of the server. Again, longer.
                Level::TooShort => match longer_round(seconds, pace, level) {
                    Some(_) if interrupt.is_set() => {
                        m.broke_by = "interrupted".to_string();
                        return m;
                    }
                    Some(next) => seconds = next,
                    None => {
                        m.broke_by = format!(
                            "undecided at {level}: no response within {} rounds, {} requests \
                             still in flight and none timed out",
                            secs(seconds),
                            r.summary.in_flight_at_end
                        );
                        return m;
                    }
                },
            }
        };
        if let Some(why) = broke {
            m.broke_at = Some(level);
            m.broke_by = why;
            return m;
        }
        m.level = Some(level);
        if level >= cap {
            m.broke_by = unbroken(&s.cap, cap);
            return m;
        }
        level = level.saturating_mul(2).min(cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_that_reached_the_machines_limit_says_so() {
        assert_eq!(
            machine_limit_words(19_936, 20_000),
            "none found up to 19936 (the machine's limit: the load generator and the server each \
             hold an open file per connection, a process may hold 20000 (the hard limit, which \
             throng cannot raise), and the load generator keeps 64 for its own files)"
        );
    }

    #[test]
    fn a_search_that_reached_its_share_of_the_task_ids_says_so() {
        assert_eq!(
            task_limit_words(8_192, 32_768),
            "none found up to 8192 (its limit here: its config takes a thread or a process for \
             each connection it allows, twice the users searched, and one server may take at \
             most half of the kernel's 32768 task ids (kernel.pid_max), which every process and \
             thread of the machine shares)"
        );
    }

    #[test]
    fn a_search_that_reached_the_servers_own_file_rule_says_so() {
        assert_eq!(
            files_limit_words(10_000, 2, 20_000),
            "none found up to 10000 (its limit here: it takes at most one connection for every \
             2 open files by its own rule, and a process may hold 20000 (the hard limit, which \
             throng cannot raise))"
        );
    }

    #[test]
    fn an_oom_kill_during_the_level_is_named_memory() {
        assert_eq!(
            exit_cause("exited (signal 9)", Some(3), Some(4)),
            "memory: the server exited (signal 9), killed by the kernel's OOM killer"
        );
        assert_eq!(
            exit_cause("exited (signal 9)", Some(3), Some(3)),
            "the server exited (signal 9)"
        );
        assert_eq!(
            exit_cause("exited (status 1)", None, None),
            "the server exited (status 1)"
        );
    }
}
