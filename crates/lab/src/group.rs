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
}
