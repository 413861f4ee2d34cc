//! The server behind `throng load`'s target when it runs on this machine:
//! the processes holding the port's listening socket, and their trees,
//! sampled over the measured window by the lab's own sampler, so the
//! verdict can say whether the server was starved of CPU, as it does for
//! a server the lab started.
//!
//! Found here, not in the load crate: finding and sampling processes is the
//! servers crate's, which the load crate does not link.

use std::collections::BTreeSet;
use std::time::Duration;

use throng_engine::{LoadSpec, Stop};
use throng_model::{LocalServer, Summary};
use throng_servers::usage::{Sampler, TreeFinder};
use throng_servers::{process, sockets};

use crate::fmt::human_us;

/// As often as the lab samples its servers.
const INTERVAL: Duration = Duration::from_millis(100);

/// A server found on this machine, being sampled.
pub struct Watch {
    name: String,
    pids: Vec<i32>,
    cores: Option<u32>,
    shared_cores: bool,
    sampler: Sampler,
}

/// Starts sampling the server the load's target reaches when it is on this
/// machine; `None` when it is elsewhere, when no process holding its
/// listener can be seen, or when the listener is held by this process's
/// own tree (the server and the load generator then cannot be told apart).
pub fn watch(spec: &LoadSpec) -> Option<Watch> {
    let addr = spec.targets.first()?.addr;
    if spec.targets.iter().any(|t| t.addr != addr) || !sockets::is_local(addr.ip()) {
        return None;
    }
    let holders = sockets::listeners_of(addr);
    // The walk that finds the trees is the sampler's first: a server is
    // looked for once, on the load's CPU, before its load starts.
    let mut finder = TreeFinder::sampling(&holders);
    let pids = finder.find_all();
    if pids.is_empty() || pids.contains(&(std::process::id() as i32)) {
        return None;
    }
    let name = process::command_name(holders[0]).unwrap_or_default();
    let allowed = cpus_of(&pids);
    // The load's threads are pinned round-robin to the CPUs of its mask:
    // the first of them, one a thread.
    let client: BTreeSet<usize> = spec
        .cpus
        .iter()
        .take(spec.threads.max(1))
        .copied()
        .collect();
    let shared_cores = allowed
        .as_ref()
        .is_some_and(|a| a.iter().any(|c| client.contains(c)));
    let cores = allowed.map(|a| a.len() as u32);
    // The measured window: after the warmup, for the duration asked (a
    // count of requests ends when it ends, at `finish`).
    let length = match spec.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    };
    // The sampler on a CPU of the mask no load thread runs on, where there
    // is one: its readings are then not in the load's CPU per response.
    let spare: Vec<usize> = spec
        .cpus
        .iter()
        .filter(|c| !client.contains(c))
        .copied()
        .collect();
    let mine = if spare.is_empty() { &spec.cpus } else { &spare };
    let sampler = Sampler::start_found(finder, mine, spec.warmup, length, INTERVAL);
    Some(Watch {
        name,
        pids,
        cores,
        shared_cores,
        sampler,
    })
}

/// The CPUs any of `pids` may run on; `None` when one's cannot be read.
fn cpus_of(pids: &[i32]) -> Option<BTreeSet<usize>> {
    let mut cpus = BTreeSet::new();
    for &p in pids {
        cpus.extend(process::cpus_allowed(p).ok()?);
    }
    Some(cpus)
}

impl Watch {
    /// The final reading, once the load has ended.
    pub fn finish(self) -> LocalServer {
        LocalServer {
            name: self.name,
            pids: self.pids,
            cores: self.cores,
            shared_cores: self.shared_cores,
            cpu_us_per_request: None,
            usage: self.sampler.finish(),
        }
    }
}

/// A few µs a request tell servers apart by their tenths, which the
/// summary's whole µs would round away.
fn per_request_us(us: f64) -> String {
    if us < 100.0 {
        format!("{us:.1}µs")
    } else {
        human_us(us)
    }
}

/// The summary's line on the server found, empty when none was.
pub fn line(s: &Summary) -> String {
    let Some(l) = &s.local_server else {
        return String::new();
    };
    let pids: Vec<String> = l.pids.iter().map(|p| p.to_string()).collect();
    let per_request = l
        .cpu_us_per_request
        .map(|us| format!(", {} a request", per_request_us(us)))
        .unwrap_or_default();
    let shared = if l.shared_cores {
        ", on CPUs the load ran on too"
    } else {
        ""
    };
    format!(
        "  server on this machine: {}, pids {}, {:.2} of a CPU{per_request}, waited {:.2} s for a \
         CPU{shared}\n",
        l.name,
        pids.join(" "),
        l.usage.cpu_utilisation(),
        l.usage.runqueue_s,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::ServerUsage;

    #[test]
    fn the_server_seen_is_named_with_its_cpu() {
        let mut s = Summary::default();
        assert_eq!(line(&s), "");
        s.local_server = Some(LocalServer {
            name: "nginx".into(),
            pids: vec![1234, 1235],
            cores: Some(1),
            shared_cores: false,
            cpu_us_per_request: Some(6.1),
            usage: ServerUsage {
                cpu_user_s: 0.62,
                cpu_sys_s: 1.24,
                wall_s: 2.0,
                runqueue_s: 0.014,
                ..ServerUsage::default()
            },
        });
        assert_eq!(
            line(&s),
            "  server on this machine: nginx, pids 1234 1235, 0.93 of a CPU, 6.1µs a request, \
             waited 0.01 s for a CPU\n"
        );
    }
}
