//! throng across machines.
//!
//! A coordinating throng reaches each host through a transport that gives
//! it a process's stdio there — OpenSSH by default, as git, rsync and
//! Ansible use it, so no daemon of ours runs and no port opens beyond
//! sshd — and runs `throng agent` at the far end (copying this very build
//! there first when the host lacks it). Requests and replies are JSON
//! lines ([`protocol`]). [`Fleet`] holds the agents of one command: it
//! measures each host's clock offset, starts every client host's share of
//! a load at the same instant, and merges what they measured exactly.

pub mod agent;
mod bell;
pub mod binary;
pub mod clock;
pub mod facts;
mod fleet;
pub mod lanes;
pub mod lead;
mod link;
mod place;
pub mod plan;
pub mod protocol;

pub use fleet::{split, Fleet, FleetRun, HostRun, CLOCK_LIMIT};
pub use link::{ControlDir, Link};
pub use place::{Place, PlaceError};

/// How the coordinator reaches a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// An ssh command line, run through the shell as git runs
    /// GIT_SSH_COMMAND (`ssh`, `ssh -F ./ssh_config`); throng adds its
    /// options, the destination and the remote command.
    Ssh { command: String },
    /// Any command that gives stdio to a process on `{host}` and runs the
    /// arguments after it there, e.g. `kubectl exec -i {host} --` or
    /// `docker exec -i {host}`.
    Template(String),
}

/// The environment variable that replaces the ssh command, as
/// GIT_SSH_COMMAND does for git.
pub const SSH_COMMAND_ENV: &str = "THRONG_SSH_COMMAND";

impl Transport {
    /// The ssh transport: the environment variable wins over a study's
    /// `ssh_command`, which wins over plain `ssh`, in git's order.
    pub fn ssh(configured: Option<&str>) -> Transport {
        let command = std::env::var(SSH_COMMAND_ENV)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .or_else(|| configured.map(str::to_string))
            .unwrap_or_else(|| "ssh".to_string());
        Transport::Ssh { command }
    }

    /// A transport template: `{host}` is its one placeholder.
    pub fn template(t: &str) -> Result<Transport, String> {
        if !t.contains("{host}") {
            return Err(format!("transport {t:?} does not name {{host}}"));
        }
        if t.replace("{host}", "").contains(['{', '}']) {
            return Err(format!(
                "transport {t:?} has a placeholder other than {{host}}"
            ));
        }
        if t.contains('\n') {
            return Err("a transport is one line".into());
        }
        Ok(Transport::Template(t.to_string()))
    }
}

/// What went wrong with a host, named. The CLI and the lab word these for
/// their users; each names the host it is about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    #[error("{host} cannot be reached: {detail}")]
    Unreachable { host: String, detail: String },
    #[error("{host} was lost: {detail}")]
    Lost { host: String, detail: String },
    #[error(
        "{host} is a {remote} machine and this throng is built for {local}: \
         install throng {version} there (cargo install), then try again"
    )]
    Arch {
        host: String,
        remote: String,
        local: String,
        version: String,
    },
    #[error("{host} runs agent protocol {theirs} and this throng speaks {ours}")]
    Protocol {
        host: String,
        theirs: u32,
        ours: u32,
    },
    #[error("{host}: {message}")]
    Agent { host: String, message: String },
    #[error("{host} did not answer in time")]
    Timeout { host: String },
    #[error(
        "{host}'s clock offset is known only to ±{uncertainty_ms:.3} ms (limit {limit_ms:.3} ms): \
         the hosts cannot start together"
    )]
    Clock {
        host: String,
        uncertainty_ms: f64,
        limit_ms: f64,
    },
    #[error("{0}")]
    Split(String),
}

impl RemoteError {
    /// The host the error is about, when it is about one.
    pub fn host(&self) -> Option<&str> {
        match self {
            RemoteError::Unreachable { host, .. }
            | RemoteError::Lost { host, .. }
            | RemoteError::Arch { host, .. }
            | RemoteError::Protocol { host, .. }
            | RemoteError::Agent { host, .. }
            | RemoteError::Timeout { host }
            | RemoteError::Clock { host, .. } => Some(host),
            RemoteError::Split(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_name_the_host_and_nothing_else() {
        assert!(Transport::template("kubectl exec -i {host} --").is_ok());
        assert!(Transport::template("docker exec -i {host}").is_ok());
        assert!(Transport::template("docker exec -i box").is_err());
        assert!(Transport::template("x {host} {port}").is_err());
    }
}
