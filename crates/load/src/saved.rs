//! `throng load --save`: a load kept in the results database as a run of
//! one step, written through the store's [`RunWriter`] as a study's run
//! is, so that `throng report`, `throng compare` and `throng runs` read it
//! as they read a lab run.

use throng_engine::{LoadResult, LoadSpec};
use throng_model::{
    Environment, Estimate, HostRecord, RoundRecord, ServerRecord, ServerUsage, StepRecord,
    StepStatus, Summary, Verdict,
};
use throng_store::{NewRun, RunWriter, Store};

pub use throng_model::LOAD_STUDY;

/// How a load ended, as far as storing it goes.
pub enum Outcome<'a> {
    Measured {
        result: &'a LoadResult,
        summary: &'a Summary,
        /// The verdict the command printed.
        verdict: &'a Verdict,
    },
    /// The engine could not run the load; the words the command printed.
    Failed(&'a str),
}

/// A load spread over hosts, as the run's environment records it.
pub struct Spread {
    pub topology: String,
    pub hosts: Vec<HostRecord>,
    /// Every host is this machine, so this machine's checks are the
    /// clients'.
    pub all_local: bool,
}

/// A load to store: its spec, how it ended, the hosts it was spread over
/// (`None`: this machine alone) and the command line that asked for it,
/// as a shell would take it back, its secrets left out.
pub struct SavedLoad<'a> {
    pub spec: &'a LoadSpec,
    pub outcome: Outcome<'a>,
    pub spread: Option<Spread>,
    pub command: String,
}

impl SavedLoad<'_> {
    /// Whether the load ran to its end: an interrupted one is stored as an
    /// incomplete run.
    pub fn complete(&self) -> bool {
        !matches!(self.outcome, Outcome::Measured { summary, .. } if summary.interrupted)
    }
}

/// Stores the load as a run of one step, the machine checked as `throng
/// doctor` does when the load ran here to its end; returns the run's id.
pub fn save(store: &mut Store, load: SavedLoad) -> anyhow::Result<i64> {
    let spec = load.spec;
    let complete = load.complete();
    let client_cpus = if load.spread.is_some() {
        Vec::new()
    } else {
        client_cpus(spec)
    };
    let local_clients = load.spread.as_ref().is_none_or(|s| s.all_local);
    // An interrupted run is stored at once: the check samples the machine
    // for a second, which a user who pressed Ctrl-C should not wait for.
    // Clients on other hosts were not checked, and this machine's findings
    // would pass for theirs.
    let doctor = if !complete || !local_clients {
        Vec::new()
    } else {
        throng_trust::doctor::check(&throng_trust::doctor::Plan {
            connections: spec.connections as u64,
            close_mode: !spec.keep_alive,
            client_cpus: if client_cpus.is_empty() {
                throng_engine::affinity::own_cpus()
            } else {
                client_cpus.clone()
            },
            server_cpus: Vec::new(),
        })
    };
    let mut environment: Environment = throng_trust::doctor::environment();
    if let Some(s) = load.spread {
        environment.topology = s.topology;
        environment.hosts = s.hosts;
    }
    let server = authority(spec);
    // A load of users who think is labelled by its users, as a study's
    // levels are; their connections are the users' times `conns_per_user`.
    let level = match &spec.users {
        Some(u) => u.slots(spec.connections),
        None => spec.connections,
    };
    let mut step = StepRecord {
        client_cpus,
        ..StepRecord::new(&server, 0, &workload(spec), level as u32)
    };
    let started = match &load.outcome {
        Outcome::Measured {
            result,
            summary,
            verdict,
        } => {
            let rps = summary.requests_per_sec;
            step.throughput = Estimate {
                mean: rps,
                median: rps,
                ci_low: rps,
                ci_high: rps,
                n: 1,
            };
            step.rounds.push(RoundRecord {
                index: 0,
                summary: (*summary).clone(),
                // The target is not a process throng started: nothing of it
                // was sampled.
                server: ServerUsage::default(),
                histogram: crate::record::serialize_histogram(&result.latency),
                block: None,
                launch: None,
            });
            step.verdict = (*verdict).clone();
            let warmup = summary.warmup.as_ref().map_or(0.0, |w| w.duration_s);
            summary.started_unix_s - warmup
        }
        Outcome::Failed(why) => {
            step.status = StepStatus::Failed;
            step.failure = Some(why.to_string());
            throng_model::unix_now()
        }
    };
    let mut run = RunWriter::begin(
        store,
        NewRun {
            study: LOAD_STUDY.to_string(),
            study_toml: load.command,
            started_unix_s: if started > 0.0 {
                started
            } else {
                throng_model::unix_now()
            },
            environment,
            doctor,
            baseline: None,
            threshold: None,
            servers: vec![ServerRecord {
                name: server,
                recipe: "url".into(),
                ..ServerRecord::default()
            }],
        },
    )?;
    run.step(&step)?;
    run.finish(complete)?;
    Ok(run.id())
}

/// The CPUs the engine's threads are pinned to, as it assigns them: thread
/// t on the t-th CPU of the mask, round and round.
fn client_cpus(spec: &LoadSpec) -> Vec<usize> {
    if spec.cpus.is_empty() {
        return Vec::new();
    }
    let mut v: Vec<usize> = (0..spec.threads)
        .map(|t| spec.cpus[t % spec.cpus.len()])
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The "server" of a saved load: the host and port it was sent to, as the
/// URL names them. Two loads of one address then compare step by step.
fn authority(spec: &LoadSpec) -> String {
    let mut names: Vec<&str> = Vec::new();
    for t in &spec.targets {
        if !names.contains(&t.host_header.as_str()) {
            names.push(&t.host_header);
        }
    }
    names.join(", ")
}

/// The step's workload: the path loaded, so loads of different paths are
/// not compared with each other.
fn workload(spec: &LoadSpec) -> String {
    if spec.users.is_some() {
        return format!("sessions over {} URLs", spec.targets.len());
    }
    match spec.targets.as_slice() {
        [one] => one.path.clone(),
        many => format!("{} URLs", many.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_placed_round_the_mask() {
        let target = crate::target::parse_target("http://127.0.0.1:1/x").unwrap();
        let mut spec = LoadSpec::new(vec![target]);
        spec.cpus = vec![2, 5];
        spec.threads = 3;
        assert_eq!(client_cpus(&spec), [2, 5]);
        spec.threads = 1;
        assert_eq!(client_cpus(&spec), [2]);
        assert_eq!(authority(&spec), "127.0.0.1:1");
        assert_eq!(workload(&spec), "/x");
    }
}
