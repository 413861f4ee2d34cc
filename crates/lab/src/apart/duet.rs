//! Where a duet runs apart: two servers at once on one server host, each
//! on CPUs of its own with one more left to the sampler, each loaded by
//! client hosts of its own, so that neither server's load shares a CPU
//! with the other's. Decided from the hosts' hello facts alone, before
//! anything starts; too few CPUs (or client hosts) is one line naming
//! what is missing.

use crate::study::Study;

/// A host as its agent's hello describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCpus {
    /// `ssh://…`, as the study names it.
    pub host: String,
    /// The CPUs its agent may run on.
    pub cpus: Vec<usize>,
}

/// One server of the duet: its CPUs on the server host and the client
/// hosts (indices into the study's `client_hosts`) that load it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuetLane {
    pub server_cpus: Vec<usize>,
    pub clients: Vec<usize>,
}

/// Both servers' lanes and the server host's CPU kept for the sampler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuetPlacement {
    pub lanes: [DuetLane; 2],
    pub sampler_cpu: usize,
}

/// The placement of a duet of two servers of `cores` cores each on
/// `server`, loaded from `clients`: the server host's first `cores` CPUs
/// for the first server, the next `cores` for the second, the next for
/// the sampler; the first half of the client hosts for the first server,
/// the second half for the second, which must hold as many CPUs, since a
/// lane with fewer would load its server less.
pub fn place_duet(
    cores: u32,
    server: &HostCpus,
    clients: &[HostCpus],
) -> Result<DuetPlacement, String> {
    let c = cores.max(1) as usize;
    let need = 2 * c + 1;
    let have = server.cpus.len();
    if have < need {
        return Err(format!(
            "duet apart needs {need} CPUs on the server host {} (two servers of {c} core{} and \
             one for the sampler): it has {have}; remove `duet` to compare the servers in \
             interleaved slices",
            server.host,
            if c == 1 { "" } else { "s" }
        ));
    }
    let n = clients.len();
    if n < 2 || n % 2 == 1 {
        return Err(format!(
            "duet apart loads each server from client hosts of its own, as many for each: \
             client_hosts names {n}, give an even number (2 at least)"
        ));
    }
    let half = n / 2;
    let cpus =
        |r: std::ops::Range<usize>| -> usize { clients[r].iter().map(|h| h.cpus.len()).sum() };
    let (a, b) = (cpus(0..half), cpus(half..n));
    if a != b {
        let names = |r: std::ops::Range<usize>| -> String {
            clients[r]
                .iter()
                .map(|h| h.host.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "duet apart loads both servers with as many client CPUs: {} hold {a} and {} hold \
             {b}; list client hosts of equal CPUs, the first half for the first server",
            names(0..half),
            names(half..n)
        ));
    }
    Ok(DuetPlacement {
        lanes: [
            DuetLane {
                server_cpus: server.cpus[..c].to_vec(),
                clients: (0..half).collect(),
            },
            DuetLane {
                server_cpus: server.cpus[c..2 * c].to_vec(),
                clients: (half..n).collect(),
            },
        ],
        sampler_cpu: server.cpus[2 * c],
    })
}

/// The hosts of a duet apart: the server host's CPUs and each client
/// host's, from their agents' hello, placed again for each core count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuetHosts {
    pub server: HostCpus,
    pub clients: Vec<HostCpus>,
}

impl DuetHosts {
    /// Each server's lane of the study's group of `cores` cores: its CPUs
    /// on the server host; its client hosts are [`DuetHosts::clients_of`].
    pub fn lanes(&self, cores: u32) -> Option<Vec<crate::group::Lane>> {
        let p = place_duet(cores, &self.server, &self.clients).ok()?;
        Some(
            p.lanes
                .iter()
                .map(|l| crate::group::Lane {
                    server_cpus: l.server_cpus.clone(),
                    client_cpus: Vec::new(),
                })
                .collect(),
        )
    }

    /// The client hosts (indices into `client_hosts`) that load the
    /// server of index `server` (0 or 1) in a group of `cores` cores.
    pub fn clients_of(&self, cores: u32, server: usize) -> Option<Vec<usize>> {
        let p = place_duet(cores, &self.server, &self.clients).ok()?;
        Some(p.lanes.get(server)?.clients.clone())
    }
}

/// A duet apart, decided from the hosts' facts before anything starts,
/// for the study's largest core count: its hosts when they hold the CPUs
/// for it, one line naming what is missing when they do not; `None` for
/// a study that is no duet.
pub fn check_apart(
    study: &Study,
    server: &HostCpus,
    clients: &[HostCpus],
) -> anyhow::Result<Option<DuetHosts>> {
    if !study.duet {
        return Ok(None);
    }
    let most = study
        .cores
        .as_ref()
        .and_then(|c| c.iter().copied().max())
        .unwrap_or(1);
    place_duet(most, server, clients).map_err(anyhow::Error::msg)?;
    Ok(Some(DuetHosts {
        server: server.clone(),
        clients: clients.to_vec(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, cpus: &[usize]) -> HostCpus {
        HostCpus {
            host: format!("ssh://{name}"),
            cpus: cpus.to_vec(),
        }
    }

    #[test]
    fn enough_cpus_give_each_server_its_cores_and_its_client_hosts() {
        let srv = host("srv", &[0, 1, 2, 3, 4, 5, 6, 7]);
        let clients = [
            host("c1", &[0, 1]),
            host("c2", &[0, 1]),
            host("c3", &[0, 1, 2, 3]),
            host("c4", &[0, 1]),
            host("c5", &[0, 1]),
            host("c6", &[0, 1, 2, 3]),
        ];
        assert_eq!(
            place_duet(2, &srv, &clients),
            Ok(DuetPlacement {
                lanes: [
                    DuetLane {
                        server_cpus: vec![0, 1],
                        clients: vec![0, 1, 2],
                    },
                    DuetLane {
                        server_cpus: vec![2, 3],
                        clients: vec![3, 4, 5],
                    },
                ],
                sampler_cpu: 4,
            })
        );
        // Exactly 2 × cores + 1, on a host whose agent runs on some CPUs
        // of its machine only.
        let srv = host("srv", &[4, 5, 6]);
        assert_eq!(
            place_duet(1, &srv, &clients[..2]),
            Ok(DuetPlacement {
                lanes: [
                    DuetLane {
                        server_cpus: vec![4],
                        clients: vec![0],
                    },
                    DuetLane {
                        server_cpus: vec![5],
                        clients: vec![1],
                    },
                ],
                sampler_cpu: 6,
            })
        );
    }

    #[test]
    fn too_few_cpus_or_client_hosts_are_one_line_naming_what_is_missing() {
        let two = [host("c1", &[0, 1]), host("c2", &[0, 1])];
        assert_eq!(
            place_duet(1, &host("srv", &[0, 1]), &two).unwrap_err(),
            "duet apart needs 3 CPUs on the server host ssh://srv (two servers of 1 core and one \
             for the sampler): it has 2; remove `duet` to compare the servers in interleaved \
             slices"
        );
        assert_eq!(
            place_duet(4, &host("srv", &[0, 1, 2, 3, 4, 5, 6, 7]), &two).unwrap_err(),
            "duet apart needs 9 CPUs on the server host ssh://srv (two servers of 4 cores and \
             one for the sampler): it has 8; remove `duet` to compare the servers in \
             interleaved slices"
        );
        let srv = host("srv", &[0, 1, 2]);
        for n in [0, 1, 3] {
            let clients: Vec<HostCpus> = (0..n).map(|i| host(&format!("c{i}"), &[0])).collect();
            assert_eq!(
                place_duet(1, &srv, &clients).unwrap_err(),
                format!(
                    "duet apart loads each server from client hosts of its own, as many for \
                     each: client_hosts names {n}, give an even number (2 at least)"
                )
            );
        }
        let uneven = [
            host("c1", &[0, 1]),
            host("c2", &[0]),
            host("c3", &[0, 1, 2, 3]),
            host("c4", &[0]),
        ];
        assert_eq!(
            place_duet(1, &srv, &uneven).unwrap_err(),
            "duet apart loads both servers with as many client CPUs: ssh://c1, ssh://c2 hold 3 \
             and ssh://c3, ssh://c4 hold 5; list client hosts of equal CPUs, the first half for \
             the first server"
        );
    }

    #[test]
    fn a_duet_apart_is_refused_before_anything_starts_naming_what_is_missing() {
        let study = |extra: &str| {
            Study::parse(
                &format!(
                    "name = \"d\"\nservers = [\"nginx\"]\nprofiles = [\"defaults\", \"tuned\"]\n\
                     workloads = [\"tiny\"]\ncores = [1, 2]\nconcurrency = [10]\n\
                     server_host = \"ssh://srv\"\nclient_hosts = [\"ssh://c1\", \"ssh://c2\"]\n\
                     {extra}"
                ),
                &throng_servers::Recipes::builtin(),
            )
            .unwrap()
        };
        let two = [host("c1", &[0, 1]), host("c2", &[0, 1])];
        let srv = host("srv", &[0, 1, 2, 3]);
        assert_eq!(check_apart(&study(""), &srv, &two).unwrap(), None);
        let duet = study("duet = true\n");
        // Two servers of 2 cores, the largest count, and the sampler.
        assert_eq!(
            format!("{:#}", check_apart(&duet, &srv, &two).unwrap_err()),
            "duet apart needs 5 CPUs on the server host ssh://srv (two servers of 2 cores and one \
             for the sampler): it has 4; remove `duet` to compare the servers in interleaved \
             slices"
        );
        // With the CPUs: each core count placed on its own, the first
        // server's lane loaded from c1, the second's from c2.
        let srv = host("srv", &[0, 1, 2, 3, 4]);
        let hosts = check_apart(&duet, &srv, &two).unwrap().unwrap();
        let cpus = |c: u32| -> Vec<Vec<usize>> {
            hosts
                .lanes(c)
                .unwrap()
                .into_iter()
                .map(|l| l.server_cpus)
                .collect()
        };
        assert_eq!(cpus(1), [vec![0], vec![1]]);
        assert_eq!(cpus(2), [vec![0, 1], vec![2, 3]]);
        assert_eq!(hosts.clients_of(2, 0), Some(vec![0]));
        assert_eq!(hosts.clients_of(2, 1), Some(vec![1]));
        assert_eq!(hosts.clients_of(2, 2), None);
        assert_eq!(hosts.lanes(3), None);
    }
}
