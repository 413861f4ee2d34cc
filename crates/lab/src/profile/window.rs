//! A diagnostic window on a server's processes: its syscalls counted and
//! its stacks sampled over the same round. One machine's executor opens it
//! around its own diagnostic round; a server host's agent opens it when the
//! coordinator begins the round and closes it when the round is over, so a
//! profile apart is taken, folded and compressed where the server runs.

use throng_model::StackProfile;
use throng_servers::syscalls::{Counter, Counts};

use super::{on_path, Sampler};

/// The counter and the sampler attached to one server's processes.
pub struct Window {
    counter: Counter,
    /// The sampler, or why there is none (no perf, not permitted).
    sampler: Result<Sampler, String>,
}

impl Window {
    /// Attaches both to these processes (their trees), side by side: each
    /// perf spends most of its start reading what it needs, so the window
    /// opens in the time of the slower one. Without a syscall count there
    /// is no diagnosis; without a sampler the profile alone is absent, for
    /// the reason perf gave.
    pub fn open(leaders: &[i32]) -> Result<Window, String> {
        let perf = on_path("perf");
        let (counter, sampler) = std::thread::scope(|scope| {
            let counting = scope.spawn(|| Counter::attach(leaders));
            let sampler = Sampler::start(perf.as_deref(), leaders);
            let counter = counting
                .join()
                .unwrap_or_else(|_| Err("counting syscalls panicked".to_string()));
            (counter, sampler)
        });
        Ok(Window {
            counter: counter?,
            sampler,
        })
    }

    /// Closes the syscall count, then the sampler, before the stacks are
    /// read back, so folding them is not counted; then the counts, and the
    /// profile or why it is absent. perf stat's exit (about 35 ms a
    /// tracepoint, the kernel waiting out a grace period for each, not
    /// CPU) overlaps perf record's exit and the folding, neither of which
    /// touches the server.
    pub fn close(mut self) -> Result<(Counts, StackProfile), String> {
        self.counter.stop()?;
        let counter = self.counter;
        let sampler = self.sampler;
        std::thread::scope(|scope| {
            let counting = scope.spawn(move || counter.finish());
            let profile = sampler
                .and_then(Sampler::finish)
                .unwrap_or_else(StackProfile::absent);
            let counts = counting
                .join()
                .unwrap_or_else(|_| Err("counting syscalls panicked".to_string()))?;
            Ok((counts, profile))
        })
    }
}

/// A profile as a server host's agent sent it, stored as one taken here
/// would be; absent for the host's own reason, said to be the host's.
pub fn from_server_host(sent: Option<StackProfile>) -> StackProfile {
    match sent {
        Some(p) => match p.absent {
            Some(why) => StackProfile::absent(format!("on the server host, {why}")),
            None => p,
        },
        None => StackProfile::absent("the server host sent no profile"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_hosts_profile_is_stored_as_sent_or_absent_for_the_hosts_reason() {
        let sampled = StackProfile {
            samples: 3,
            folded_gz: "H4sI".to_string(),
            ..StackProfile::default()
        };
        assert_eq!(from_server_host(Some(sampled.clone())), sampled);
        let why = "no perf on PATH (Debian package linux-perf)";
        assert_eq!(
            from_server_host(Some(StackProfile::absent(why)))
                .absent
                .as_deref(),
            Some("on the server host, no perf on PATH (Debian package linux-perf)")
        );
        assert_eq!(
            from_server_host(None).absent.as_deref(),
            Some("the server host sent no profile")
        );
    }
}
