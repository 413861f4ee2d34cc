//! How a server fails in a sweep: a step's own failure, and what its later
//! steps in the group are then stored with. Worded here because the store
//! keeps the words, as each step's `failure`.

use std::fmt;

use throng_model::StepStatus;

use super::pending::Pending;
use super::Sweep;
use crate::round::RoundError;

/// Why a step failed, as one of its rounds found.
#[derive(Debug)]
pub enum StepFailure {
    /// The server had exited before the round: how it ended.
    Exited(String),
    /// The server exited while the round ran: how it ended.
    ExitedDuring(String),
    /// No response in a whole round, then none to a lone request either:
    /// what that request got.
    StoppedAnswering(String),
    /// The round could not run.
    Round(RoundError),
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepFailure::Exited(how) => write!(f, "the server {how}"),
            StepFailure::ExitedDuring(how) => write!(f, "the server {how} during the round"),
            StepFailure::StoppedAnswering(e) => write!(
                f,
                "the server stopped answering: no response in a whole round, then {e}"
            ),
            StepFailure::Round(e) => write!(f, "{e}"),
        }
    }
}

/// Why a server is no longer measured in this group: each of its later
/// steps fails with it.
#[derive(Debug)]
pub enum Down {
    /// Its warmup round could not run.
    Warmup(RoundError),
    /// A step of an earlier level failed.
    Earlier(StepFailure),
    /// It did not start again for a later launch: the launch's number
    /// (1 for the second) and why.
    Restart(u32, String),
}

impl fmt::Display for Down {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Down::Warmup(e) => write!(f, "warmup failed: {e}"),
            Down::Earlier(e) => write!(f, "failed earlier: {e}"),
            Down::Restart(launch, why) => {
                write!(f, "did not start again for launch {}: {why}", launch + 1)
            }
        }
    }
}

impl Sweep<'_, '_> {
    /// The step failed: its server is stopped and its later steps in the
    /// group fail with it.
    pub(super) fn fail(&mut self, p: &mut Pending, why: StepFailure) {
        p.step.status = StepStatus::Failed;
        p.step.log_tail = Some(self.exec.log_tail(p.server));
        self.exec.stop(p.server);
        p.step.failure = Some(why.to_string());
        self.down[p.server.index()] = Some(Down::Earlier(why));
        p.done = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_step_says_what_failed_first() {
        let during = StepFailure::ExitedDuring("exited (signal: 9 (SIGKILL))".into());
        assert_eq!(
            during.to_string(),
            "the server exited (signal: 9 (SIGKILL)) during the round"
        );
        assert_eq!(
            Down::Earlier(during).to_string(),
            "failed earlier: the server exited (signal: 9 (SIGKILL)) during the round"
        );
        assert_eq!(
            Down::Warmup(RoundError::NotRunning).to_string(),
            "warmup failed: the server is not running"
        );
        assert_eq!(
            StepFailure::StoppedAnswering("connect failed: Connection refused".into()).to_string(),
            "the server stopped answering: no response in a whole round, then connect failed: \
             Connection refused"
        );
    }
}
