//! The profile read against the syscall count of the same round: every
//! call a request makes costs the kernel some CPU (its entry and exit, a
//! descriptor looked up), so a request that makes F file calls spends at
//! least F times [`FLOOR_US`] in files, and one that makes N network calls
//! at least N times it in the network stack. A profile that puts less
//! there missed where the calls went (a kernel without symbols puts the
//! open path in other kernel), and the report says so beside the table
//! (docs/methodology.md, "Profiles against syscall counts").
//!
//! Only a floor is sound: a component may hold CPU with no call of its
//! own (sendfile reads the page cache inside a network call), and calls
//! of one kind differ by tens of times in cost.

use crate::components::{self, wrapped_call, Component};
use crate::figures::{self, StepFigures};

/// The least CPU a syscall costs the kernel, in µs: a trivial call's
/// entry and exit take about 0.05–0.1 µs; nginx's open, stat and close
/// came to 0.4 µs a call on this project's machine.
pub const FLOOR_US: f64 = 0.1;
/// A floor is judged only when it stands for this many samples: below,
/// a profile could miss it by chance.
pub const MIN_SAMPLES: f64 = 10.0;

/// One component set against the calls that must have cost it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall {
    pub component: Component,
    /// Its calls per request.
    pub calls: f64,
    /// What the profile puts in it, µs per request.
    pub us: f64,
}

impl Shortfall {
    pub fn floor_us(&self) -> f64 {
        self.calls * FLOOR_US
    }
}

/// The components of a step whose CPU falls short of its calls' floor,
/// when it has both a readable profile and a syscall count.
pub fn shortfalls(f: &StepFigures) -> Vec<Shortfall> {
    let Some(d) = f.diagnosis.as_ref() else {
        return Vec::new();
    };
    let (Some(split), Some(p)) = (components::split(d), d.profile.as_ref()) else {
        return Vec::new();
    };
    let (mut files, mut network) = (0.0, 0.0);
    for (name, per) in &d.syscalls_per_request {
        let call = wrapped_call(name);
        if components::FILES.contains(&call) {
            files += per;
        } else if components::NETWORK.contains(&call) {
            network += per;
        }
    }
    let samples_per_us = d.requests as f64 * 1e3 / p.period_ns.max(1) as f64;
    [(Component::Files, files), (Component::Network, network)]
        .into_iter()
        .map(|(component, calls)| Shortfall {
            component,
            calls,
            us: split.of(component),
        })
        .filter(|s| s.floor_us() * samples_per_us >= MIN_SAMPLES && s.us < s.floor_us())
        .collect()
}

/// One line per step and component whose CPU falls short.
pub fn disagreements(figs: &[StepFigures]) -> Vec<String> {
    figs.iter()
        .flat_map(|f| {
            shortfalls(f).into_iter().map(move |s| {
                format!(
                    "{} ({}, {}): its syscall count gives {:.2} {} calls a request, at least \
                     {:.2} µs of CPU, but its profile puts {:.2} µs in {}: read its split with care",
                    f.server,
                    f.workload,
                    figures::step_source(f.cores, f.concurrency),
                    s.calls,
                    if s.component == Component::Files {
                        "file"
                    } else {
                        "network"
                    },
                    s.floor_us(),
                    s.us,
                    s.component.name()
                )
            })
        })
        .collect()
}
