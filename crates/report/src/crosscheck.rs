//! The profile read against the syscall count of the same round: of a
//! request's network and file work, the share the samples put in files
//! and the share of its network and file calls that are file calls
//! should tell the same story. Calls differ in cost (a send through the
//! loopback stack costs more than a close), so the two shares are allowed
//! to differ by [`FACTOR`] in their odds; beyond it the profile's split is
//! not what the calls imply, and the report says so beside the table
//! (docs/methodology.md, "Profiles against syscall counts").

use crate::components::{self, wrapped_call, Component};
use crate::figures::{self, StepFigures};

/// How far the two shares' odds may differ: a file call may cost a third
/// of a network call, or three times one, before the two disagree.
pub const FACTOR: f64 = 3.0;
/// Below this share on both sides, files are too small a part to judge.
pub const FLOOR: f64 = 0.05;

/// The two shares of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Shares {
    /// Of the network and file CPU per request, the share in files.
    pub cpu: f64,
    /// Of the network and file calls per request, the share on files.
    pub calls: f64,
}

impl Shares {
    /// Whether the shares disagree beyond [`FACTOR`]; shares both under
    /// [`FLOOR`] are not judged.
    pub fn disagree(&self) -> bool {
        if self.cpu < FLOOR && self.calls < FLOOR {
            return false;
        }
        let odds = |p: f64| p / (1.0 - p);
        let (a, b) = (odds(self.cpu), odds(self.calls));
        // A share of 0 or 1 has odds 0 or infinity: any other disagrees.
        !(a <= b * FACTOR && b <= a * FACTOR)
    }
}

/// A step's two shares, when it has both a profile with network or file
/// samples and a syscall count with network or file calls.
pub fn shares(f: &StepFigures) -> Option<Shares> {
    let d = f.diagnosis.as_ref()?;
    let split = components::split(d)?;
    let (files_us, net_us) = (split.of(Component::Files), split.of(Component::Network));
    let (mut file_calls, mut net_calls) = (0.0, 0.0);
    for (name, per) in &d.syscalls_per_request {
        let call = wrapped_call(name);
        if components::FILES.contains(&call) {
            file_calls += per;
        } else if components::NETWORK.contains(&call) {
            net_calls += per;
        }
    }
    if files_us + net_us <= 0.0 || file_calls + net_calls <= 0.0 {
        return None;
    }
    Some(Shares {
        cpu: files_us / (files_us + net_us),
        calls: file_calls / (file_calls + net_calls),
    })
}

/// One line per step whose shares disagree.
pub fn disagreements(figs: &[StepFigures]) -> Vec<String> {
    figs.iter()
        .filter_map(|f| {
            let s = shares(f)?;
            s.disagree().then(|| {
                format!(
                    "{} ({}, {}): the profile puts {:.0}% of its network and file CPU in files, \
                     but {:.0}% of its network and file calls are file calls, beyond the factor \
                     of {FACTOR:.0} calls may differ by in cost: read its split with care",
                    f.server,
                    f.workload,
                    figures::step_source(f.cores, f.concurrency),
                    100.0 * s.cpu,
                    100.0 * s.calls
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_disagree_beyond_the_factor_in_odds() {
        let s = |cpu, calls| Shares { cpu, calls };
        // nginx without a file cache: 3 file calls of 5, 60% of the CPU.
        assert!(!s(0.6, 0.6).disagree());
        // Odds 3 against odds 1: at the factor, not beyond.
        assert!(!s(0.75, 0.5).disagree());
        assert!(s(0.76, 0.5).disagree());
        assert!(s(0.0, 0.59).disagree());
        assert!(s(0.5, 0.0).disagree());
        // Files a sliver of both: not judged.
        assert!(!s(0.0, 0.02).disagree());
    }
}
