//! A duet's checks that need no host: two servers, and on one machine the
//! CPUs for both lanes (apart, the hosts' CPUs decide: `apart::duet`).

use anyhow::bail;

use super::Study;

impl Study {
    /// Refuses a duet study on a machine without the CPUs for it: two
    /// servers of the largest core count, each with at least one CPU of
    /// its own for its load generator.
    pub fn check_duet(&self, cpus: usize) -> anyhow::Result<()> {
        if !self.duet {
            return Ok(());
        }
        // Apart, the hosts' CPUs decide, once they are reached
        // (`apart::duet`): this machine's count says nothing of them.
        if !self.hosts.is_local() {
            return self.check_duet_pair();
        }
        let most = self
            .cores
            .as_ref()
            .and_then(|c| c.iter().copied().max())
            .unwrap_or(1) as usize;
        let needed = 2 * most + 2;
        if cpus < needed {
            bail!(
                "duet = true runs two servers of {most} cores at once, each with its own load \
                 generator: that needs {needed} CPUs and this machine gives throng {cpus}; \
                 remove `duet` to compare them in interleaved slices instead"
            );
        }
        self.check_duet_pair()
    }

    fn check_duet_pair(&self) -> anyhow::Result<()> {
        if self.servers.len() != 2 {
            bail!(
                "duet = true compares exactly two servers; the study lists {}",
                self.servers.len()
            );
        }
        Ok(())
    }
}
