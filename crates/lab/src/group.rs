//! A group: one core count and one workload, across every server of a
//! study. Servers of a group start together and stay up while its sweep
//! rotates through them.

use throng_model::StepRecord;

use crate::workload::Workload;

#[derive(Debug, Clone)]
pub struct Group {
    pub cores: u32,
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    /// Server and client share cores (allowed by the study): every step is
    /// marked.
    pub shared: bool,
    pub workload: Workload,
    /// The study's highest concurrency: every server is configured to
    /// accept that many clients.
    pub max_concurrency: u32,
    /// In a duet, each server's own CPUs and its client's, by the
    /// server's index in the study; empty otherwise.
    pub lanes: Vec<Lane>,
}

/// The CPUs of one server of a duet and of its load generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
}

/// Two equal lanes from a group's CPUs (its server CPUs, then its client
/// CPUs): `cores` server CPUs each, the CPUs left split evenly between the
/// two clients. `None` when that leaves a client without a CPU.
pub fn duet_lanes(cores: u32, cpus: &[usize]) -> Option<Vec<Lane>> {
    let c = cores as usize;
    let rest = cpus.len().checked_sub(2 * c)?;
    let k = rest / 2;
    if k == 0 {
        return None;
    }
    Some(vec![
        Lane {
            server_cpus: cpus[..c].to_vec(),
            client_cpus: cpus[2 * c..2 * c + k].to_vec(),
        },
        Lane {
            server_cpus: cpus[c..2 * c].to_vec(),
            client_cpus: cpus[2 * c + k..2 * c + 2 * k].to_vec(),
        },
    ])
}

impl Group {
    /// The directory of the group's servers inside the run directory.
    pub fn dir_name(&self) -> String {
        format!("c{}-{}", self.cores, self.workload.kind.name())
    }

    /// An empty step of `server` at `concurrency` in this group.
    pub fn step(&self, server: &str, concurrency: u32) -> StepRecord {
        StepRecord {
            server_cpus: self.server_cpus.clone(),
            client_cpus: self.client_cpus.clone(),
            shared_cores: self.shared,
            ..StepRecord::new(server, self.cores, self.workload.kind.name(), concurrency)
        }
    }

    /// The group as the server with this index in the study sees it: in a
    /// duet, with its lane's CPUs.
    pub fn for_server(&self, index: usize) -> Group {
        match self.lanes.get(index) {
            Some(l) => Group {
                server_cpus: l.server_cpus.clone(),
                client_cpus: l.client_cpus.clone(),
                lanes: Vec::new(),
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// The client CPUs of the server with this index in the study.
    pub fn client_cpus_of(&self, index: usize) -> &[usize] {
        self.lanes
            .get(index)
            .map_or(&self.client_cpus, |l| &l.client_cpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duet_needs_a_client_cpu_for_each_server() {
        assert_eq!(duet_lanes(1, &[0, 1, 2]), None);
        let l = duet_lanes(1, &[0, 1, 2, 3]).unwrap();
        assert_eq!(
            (l[0].server_cpus.as_slice(), l[0].client_cpus.as_slice()),
            (&[0][..], &[2][..])
        );
        assert_eq!(
            (l[1].server_cpus.as_slice(), l[1].client_cpus.as_slice()),
            (&[1][..], &[3][..])
        );
        // Seven CPUs, two cores each: one CPU is left over, unused.
        let l = duet_lanes(2, &[0, 1, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(l[0].server_cpus, [0, 1]);
        assert_eq!(l[1].server_cpus, [2, 3]);
        assert_eq!(l[0].client_cpus, [4]);
        assert_eq!(l[1].client_cpus, [5]);
    }
}
