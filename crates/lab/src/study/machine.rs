//! What a study asks of the machine it runs on, checked before anything
//! starts or is stored: connections its open-file limit allows, and
//! binaries the servers' unprivileged user can reach.

use anyhow::bail;

use super::Study;

impl Study {
    /// Refuses a level this machine's load generator cannot open: each
    /// connection is an open file, and the hard limit on them cannot be
    /// raised from inside. Found at the level, it would fail every round of
    /// it after the servers had started and the run had been stored.
    /// Clients on other hosts have limits of their own, checked there.
    pub fn check_open_files(&self, most: u64) -> anyhow::Result<()> {
        if !self.hosts.clients.iter().all(|c| c.is_local()) {
            return Ok(());
        }
        for w in &self.loads {
            let per_user = u64::from(w.conns_per_user());
            for &c in &w.concurrency {
                let conns = u64::from(c) * per_user;
                if conns > most {
                    let users = if per_user > 1 {
                        format!(" ({c} users of up to {per_user} connections)")
                    } else {
                        String::new()
                    };
                    bail!(
                        "[workload.{}] concurrency {c} opens {conns} connections{users}, and the \
                         open-file limit lets the load generator open at most {most}: lower the \
                         level, or raise the limit (ulimit -n) before the run",
                        w.kind.name()
                    );
                }
            }
        }
        Ok(())
    }

    /// Refuses a server the lab would start as `user` (one that drops no
    /// privileges itself, as a study's `command`) from a binary that user
    /// cannot reach: a command found on root's PATH under /root failed at
    /// start, "Permission denied", after the run was stored.
    pub fn check_reachable(
        &self,
        user: Option<&throng_servers::process::RunAs>,
    ) -> anyhow::Result<()> {
        let Some(user) = user.filter(|_| self.hosts.server.is_local()) else {
            return Ok(());
        };
        for s in &self.servers {
            for r in std::iter::once(&s.recipe).chain(&s.backend) {
                let dir = std::path::Path::new(&r.binary).parent();
                if let Some((blocked, mode)) = dir
                    .filter(|_| r.drop_privileges)
                    .and_then(|d| user.cannot_reach(d))
                {
                    bail!(
                        "{}: {} is under {} (mode {mode:o}), which {}, whom the server runs as, \
                         cannot pass through; install it elsewhere or give its path in a folder \
                         {} can reach",
                        s.name,
                        r.binary.escape_debug(),
                        blocked.display(),
                        user.name,
                        user.name
                    );
                }
            }
        }
        Ok(())
    }
}
