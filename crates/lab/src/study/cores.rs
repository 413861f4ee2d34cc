//! Which CPUs serve and which load, for each core count of a study.

/// Where the server and the load generator run for one core count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoresPlan {
    Run {
        cores: u32,
        server_cpus: Vec<usize>,
        client_cpus: Vec<usize>,
        shared: bool,
    },
    Skip {
        cores: u32,
        reason: String,
    },
}

/// Refuses a core count above the `cpus` this machine gives throng, where
/// the servers run here: every step of it would be skipped, and the run
/// stored with nothing measured for it.
pub(super) fn check_cpus(cores: Option<&[u32]>, cpus: usize) -> anyhow::Result<()> {
    match cores.into_iter().flatten().find(|&&c| c as usize > cpus) {
        Some(c) => anyhow::bail!(
            "cores: {c} server cores asked for, but this machine gives throng {cpus} CPUs"
        ),
        None => Ok(()),
    }
}

/// Core plans when the load comes from other hosts: every CPU of the
/// server host can serve, none is kept for a client.
pub fn plan_cores_apart(requested: Option<&[u32]>, cpus: &[usize]) -> Vec<CoresPlan> {
    let n = cpus.len() as u32;
    let auto: Vec<u32>;
    let list = match requested {
        Some(l) => l,
        None => {
            auto = std::iter::successors(Some(1u32), |c| Some(c * 2))
                .take_while(|&c| c <= n.max(1))
                .collect();
            &auto
        }
    };
    list.iter()
        .map(|&c| {
            if c <= n {
                CoresPlan::Run {
                    cores: c,
                    server_cpus: cpus[..c as usize].to_vec(),
                    client_cpus: Vec::new(),
                    shared: false,
                }
            } else {
                CoresPlan::Skip {
                    cores: c,
                    reason: format!(
                        "{c} server cores asked for, but the server host has only {n} CPUs"
                    ),
                }
            }
        })
        .collect()
}

/// What `cores = "auto"` sweeps here when that is less than a full sweep
/// (1, 2, 4, 8), and what to do about it; `None` for a study that lists
/// its core counts, or a machine big enough. Said before the run starts,
/// as the report says it after.
pub fn auto_note(requested: Option<&[u32]>, cpus: &[usize]) -> Option<String> {
    if requested.is_some() {
        return None;
    }
    let swept: Vec<u32> = plan_cores(None, cpus, false)
        .iter()
        .filter_map(|p| match p {
            CoresPlan::Run { cores, .. } => Some(*cores),
            CoresPlan::Skip { .. } => None,
        })
        .collect();
    throng_model::cores::auto_cores_note(&swept, cpus.len() as u32)
}

/// Server on the first `cores` CPUs, the load generator on the others.
/// Never shares silently: without `allow_shared`, a count that leaves no
/// CPU for the client is skipped with the reason.
pub fn plan_cores(requested: Option<&[u32]>, cpus: &[usize], allow_shared: bool) -> Vec<CoresPlan> {
    let n = cpus.len() as u32;
    let auto: Vec<u32>;
    let list = match requested {
        Some(l) => l,
        None => {
            // Powers of two that leave at least one CPU to the client.
            auto = std::iter::successors(Some(1u32), |c| Some(c * 2))
                .take_while(|&c| c < n.max(2))
                .collect();
            &auto
        }
    };
    list.iter()
        .map(|&c| {
            if c < n {
                CoresPlan::Run {
                    cores: c,
                    server_cpus: cpus[..c as usize].to_vec(),
                    client_cpus: cpus[c as usize..].to_vec(),
                    shared: false,
                }
            } else if c <= n && allow_shared {
                CoresPlan::Run {
                    cores: c,
                    server_cpus: cpus[..c as usize].to_vec(),
                    client_cpus: cpus.to_vec(),
                    shared: true,
                }
            } else if c <= n {
                CoresPlan::Skip {
                    cores: c,
                    reason: format!(
                        "{c} server cores would leave none of the {n} CPUs to the load generator \
                         (set allow_shared_cores = true to share them, marked in the results)"
                    ),
                }
            } else {
                CoresPlan::Skip {
                    cores: c,
                    reason: format!("{c} server cores asked for, but only {n} CPUs are available"),
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{auto_note, check_cpus};

    #[test]
    fn auto_on_a_two_cpu_machine_says_it_sweeps_one_core_and_what_to_do() {
        // static-sweep's `cores = "auto"`, on a machine of 2 CPUs.
        let study = crate::study::Study::parse(
            crate::study::BUILTIN
                .iter()
                .find(|(n, _)| *n == "static-sweep")
                .unwrap()
                .1,
            &throng_servers::Recipes::builtin(),
        )
        .unwrap();
        assert_eq!(study.cores, None);
        assert_eq!(
            auto_note(study.cores.as_deref(), &[0, 1]).unwrap(),
            "cores = \"auto\" swept 1 server core only on this machine, not 1, 2, 4 and 8: it \
             has 2 CPUs, and each count keeps a CPU for the load generator (one CPU for the \
             server, one for the client). To sweep 2, 4 and 8 cores, run the study on a machine \
             of 9 CPUs or more, or with the servers on a host of their own and the load from \
             another (server_host and client_hosts, docs/study-format.md#hosts), where every CPU \
             of the server host serves."
        );
        // A machine of 9 CPUs sweeps 1, 2, 4 and 8; a study that lists its
        // counts is told nothing.
        assert_eq!(auto_note(None, &(0..9).collect::<Vec<_>>()), None);
        assert_eq!(auto_note(Some(&[1]), &[0, 1]), None);
    }
    use crate::study::Study;
    use throng_servers::Recipes;

    #[test]
    fn a_core_count_the_machine_lacks_is_refused_where_the_servers_run_here() {
        assert_eq!(
            check_cpus(Some(&[1, 2, 64]), 2).unwrap_err().to_string(),
            "cores: 64 server cores asked for, but this machine gives throng 2 CPUs"
        );
        // All of them may serve, with allow_shared_cores or clients apart.
        assert!(check_cpus(Some(&[1, 2]), 2).is_ok());
        assert!(check_cpus(None, 1).is_ok());
        let cpus = throng_engine::affinity::own_cpus().len();
        let study = |rest: &str| {
            Study::parse(
                &format!(
                    "name = 'x'\nservers = ['nginx']\nworkloads = ['tiny']\n\
                     cores = [1, {}]\nconcurrency = [10]\n{rest}",
                    cpus + 1
                ),
                &Recipes::builtin(),
            )
        };
        assert_eq!(
            study("").unwrap_err().to_string(),
            format!(
                "cores: {} server cores asked for, but this machine gives throng {cpus} CPUs",
                cpus + 1
            )
        );
        // The load elsewhere, the servers here: this machine's CPUs still.
        let e = study("client_hosts = ['ssh://198.18.0.11']\nserver_address = '198.18.0.1'\n");
        assert!(e.unwrap_err().to_string().starts_with("cores: "));
        // A server host's CPUs are counted when it is reached, and its
        // plan skips what it lacks.
        let apart = study(
            "server_host = 'ssh://198.18.0.20'\nclient_hosts = ['ssh://198.18.0.11']\n\
             server_address = '198.18.0.20'\n",
        )
        .unwrap();
        assert_eq!(apart.cores, Some(vec![1, cpus as u32 + 1]));
    }
}
