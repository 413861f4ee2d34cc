//! What the sweep asks of an executor for one round, and what comes back:
//! the server by its place in the study, the kind of round (which says
//! whether the server is sampled and how the result is used), and why a
//! round could not run.

use hdrhistogram::Histogram;
use throng_engine::EngineError;
use throng_model::{ServerUsage, Summary};
use throng_remote::RemoteError;

/// A server of the study, by its index in the study's list of servers:
/// the sweep and its executors name servers by it, never by a string they
/// would have to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId(pub usize);

impl ServerId {
    /// Its index in the study's list of servers.
    pub fn index(self) -> usize {
        self.0
    }
}

/// Why the sweep runs a round: the executor samples the server for a
/// measured slice and a warmup, and a scripted executor checks what it is
/// asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundKind {
    /// Before a group's first level: readies the server, measures nothing
    /// but the shape it leaves the server in.
    Warmup,
    /// A measured round of a level: the server's resource use is sampled.
    Slice,
    /// A level of the max-users search past the sweep.
    Search,
    /// The load of a diagnostic round, while the server is counted.
    Diagnosis,
}

impl RoundKind {
    /// Whether the server's resource use is sampled over the round: a
    /// measured slice's is stored, a warmup's says whether the server's
    /// pool has settled (its processes, threads and listeners).
    pub fn sampled(self) -> bool {
        matches!(self, RoundKind::Slice | RoundKind::Warmup)
    }
}

/// What one round measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub summary: Summary,
    /// Latency in microseconds, for verdicts that look at its shape.
    pub latency: Histogram<u64>,
    /// What the server's process tree used (zero when not sampled).
    pub usage: ServerUsage,
    /// The client hosts' ephemeral ports, the worst of them, when the load
    /// came from other hosts; `None`: this machine's, read by the verdict.
    pub ports: Option<throng_trust::PortUse>,
}

/// Why a round (or a diagnostic count) could not run.
#[derive(Debug)]
pub enum RoundError {
    /// The executor runs no server of that id.
    NotRunning,
    /// The load engine could not run the round on this machine.
    Engine(EngineError),
    /// The client hosts could not run the round; the error names the host
    /// when one failed.
    Clients(RemoteError),
    /// The server host failed a request, or could not be reached.
    ServerHost(String),
    /// The server's system calls could not be counted.
    Uncounted(String),
}

/// Worded here because the sweep stores it: as a step's failure, a
/// diagnosis's `unavailable`, a search's `broke_by`.
impl std::fmt::Display for RoundError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoundError::NotRunning => write!(f, "the server is not running"),
            RoundError::Engine(e) => write!(f, "the load engine failed: {e}"),
            RoundError::Clients(e) if e.host().is_some() => write!(f, "client host {e}"),
            RoundError::Clients(e) => write!(f, "{e}"),
            RoundError::ServerHost(e) | RoundError::Uncounted(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_measured_slice_and_a_warmup_are_sampled() {
        assert!(RoundKind::Slice.sampled());
        assert!(RoundKind::Warmup.sampled());
        for k in [RoundKind::Search, RoundKind::Diagnosis] {
            assert!(!k.sampled());
        }
    }

    #[test]
    fn a_client_host_that_failed_is_named() {
        let lost = RoundError::Clients(RemoteError::Lost {
            host: "ssh://load@b".into(),
            detail: "connection reset".into(),
        });
        assert_eq!(
            lost.to_string(),
            "client host ssh://load@b was lost: connection reset"
        );
        let split = RoundError::Clients(RemoteError::Split("no host left".into()));
        assert_eq!(split.to_string(), "no host left");
    }
}
