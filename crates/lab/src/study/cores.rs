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
