//! The max-users search: the sweep's own levels come first (judged by the
//! one rule in [`throng_model::max_users`]); when the sweep never broke the
//! server, concurrency keeps doubling past it until something breaks or the
//! cap (open files, the study's limit) is reached.

use std::time::Duration;

use throng_model::max_users::{from_sweep, level_broke_by};
use throng_model::{MaxUsers, StepRecord};

use crate::executor::Executor;
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::spec::RoundLoad;
use crate::study::Study;

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

/// Steps concurrency up from the sweep of `server` until a level breaks.
/// `alive`: the server is still running (a server that failed in the sweep
/// is answered from the sweep alone).
#[allow(clippy::too_many_arguments)]
pub fn search(
    exec: &mut dyn Executor,
    study: &Study,
    group: &Group,
    server: &str,
    alive: bool,
    sweep: &[StepRecord],
    cap: u32,
    interrupt: &Interrupt,
) -> MaxUsers {
    let patience = Duration::from_secs_f64(study.patience_s);
    let (sweep_good, sweep_broke) = from_sweep(sweep, patience);
    let mut m = MaxUsers {
        cores: group.cores,
        workload: group.workload.kind.name().to_string(),
        patience_s: study.patience_s,
        level: sweep_good,
        broke_at: None,
        broke_by: String::new(),
    };
    if let Some((at, why)) = sweep_broke {
        m.broke_at = Some(at);
        m.broke_by = why;
        return m;
    }
    let Some(highest) = sweep_good else {
        m.broke_by = "the sweep measured no level".to_string();
        return m;
    };
    let cap = cap.max(highest);
    let mut level = highest.saturating_mul(2).min(cap);
    if level <= highest {
        m.broke_by = format!("no failure up to the cap of {cap}");
        return m;
    }
    loop {
        if interrupt.is_set() {
            m.broke_by = "interrupted".to_string();
            return m;
        }
        let oom_before = exec.oom_kills();
        let exited = if alive {
            exec.exited(server)
        } else {
            Some("was not running".to_string())
        };
        if let Some(e) = exited {
            m.broke_at = Some(level);
            m.broke_by = format!("the server {e}");
            return m;
        }
        let mut load = RoundLoad::measured(study, group, level, level as u64);
        // Past the patience a request is a timeout: no need to wait longer.
        load.timeout = patience + Duration::from_secs(1);
        let why = match exec.round(server, &load, false) {
            Err(e) => Some(e),
            Ok(r) => match exec.exited(server) {
                Some(e) => Some(exit_cause(&e, oom_before, exec.oom_kills())),
                None => level_broke_by(&r.summary, patience),
            },
        };
        match why {
            Some(w) => {
                m.broke_at = Some(level);
                m.broke_by = w;
                return m;
            }
            None => m.level = Some(level),
        }
        if level >= cap {
            m.broke_by = format!("no failure up to the cap of {cap}");
            return m;
        }
        level = level.saturating_mul(2).min(cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
