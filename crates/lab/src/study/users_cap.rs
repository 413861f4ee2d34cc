//! How far each server's max-users search may go. Every search stops at
//! the study's cap and at the machine's (the open files a process may
//! hold). A server whose config takes a thread or a process for every
//! connection it allows (Apache's MPMs) stops besides where those tasks
//! would take more than half of the kernel's task ids (kernel.pid_max),
//! which every process and thread of the machine shares: past that the
//! server would fail to start, or starve the rest of the machine of task
//! ids, which says nothing of how many users it takes. Each cap says
//! which of these set it, so a search that found no failure says why it
//! stopped where it did.

use super::{Study, StudyServer, WorkloadLoad};

/// What set a server's cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapLimit {
    /// The study's `max_users_cap` (or its default).
    Study,
    /// The open files a process may hold: the load generator's and the
    /// server's, one per connection each.
    Machine,
    /// The kernel's task ids, of which one server may take half.
    Tasks { task_ids: u32 },
    /// The open files a process may hold, of which the server keeps
    /// `per_connection` for each connection by its own rule.
    Files { per_connection: u32, files: u64 },
}

/// The highest level a server's search tries, and what set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsersCap {
    pub users: u32,
    pub limit: CapLimit,
}

/// What the machine allows: the users the load generator's open files
/// take, the kernel's task ids, and the open files a process may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineBounds {
    pub users: u32,
    pub task_ids: Option<u32>,
    pub files: u64,
}

/// What one server takes for each connection, from its recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerNeeds {
    pub task_per_connection: bool,
    pub files_per_connection: u32,
}

/// Users a server that takes a task per connection may be searched to:
/// its config allows twice the users it is searched to
/// ([`throng_servers::max_connections_for`]), each user holds `per_user`
/// connections, and it may take half of `task_ids`.
pub fn task_users(task_ids: u32, per_user: u32) -> u32 {
    (task_ids / 2 / 2 / per_user.max(1)).max(1)
}

/// The cap of one server: the least of the study's cap, the machine's,
/// and what the server's own needs leave (its share of the kernel's task
/// ids, the connections its rule allows in a process's open files). A tie
/// names the limit that is no choice of the user's: a study's cap is
/// already no higher than the machine's, and a cap that meets another is
/// that other's.
pub fn users_cap(study: u32, m: &MachineBounds, needs: &ServerNeeds, per_user: u32) -> UsersCap {
    let per_user = per_user.max(1);
    let mut cap = UsersCap {
        users: study,
        limit: CapLimit::Study,
    };
    let mut lower = |users: u32, limit: CapLimit| {
        if users <= cap.users {
            cap = UsersCap { users, limit };
        }
    };
    lower(m.users, CapLimit::Machine);
    if let (true, Some(ids)) = (needs.task_per_connection, m.task_ids) {
        lower(task_users(ids, per_user), CapLimit::Tasks { task_ids: ids });
    }
    if needs.files_per_connection > 1 {
        let users = m.files / u64::from(needs.files_per_connection) / u64::from(per_user);
        lower(
            users.min(u64::from(u32::MAX)) as u32,
            CapLimit::Files {
                per_connection: needs.files_per_connection,
                files: m.files,
            },
        );
    }
    cap
}

/// The kernel's task ids: the lesser of `kernel.pid_max` and
/// `kernel.threads-max`, `None` where /proc does not say.
pub fn read_task_ids() -> Option<u32> {
    let read = |p: &str| -> Option<u32> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    match (
        read("/proc/sys/kernel/pid_max"),
        read("/proc/sys/kernel/threads-max"),
    ) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Study {
    /// Highest number of connections a level opens for any server: the
    /// most any server is configured to accept.
    pub fn max_concurrency(&self) -> u32 {
        let search = self
            .servers
            .iter()
            .filter_map(|s| self.users_cap(s))
            .map(|c| c.users)
            .max()
            .unwrap_or(0);
        self.sweep_concurrency()
            .max(search.saturating_mul(self.conns_per_user()))
    }

    /// The connections `server` is configured to accept: its sweep's, and
    /// its max-users search's up to its own cap, or the search would only
    /// find its configured limit.
    pub fn max_concurrency_of(&self, server: &StudyServer) -> u32 {
        let search = self.users_cap(server).map_or(0, |c| c.users);
        self.sweep_concurrency()
            .max(search.saturating_mul(self.conns_per_user()))
    }

    /// How far `server`'s max-users search goes, and what set it; `None`
    /// when the study searches no max users.
    pub fn users_cap(&self, server: &StudyServer) -> Option<UsersCap> {
        let study = self.max_users_cap?;
        let machine = MachineBounds {
            users: self.machine_users(),
            task_ids: self.task_ids,
            files: throng_engine::max_connections() + throng_model::SPARE_FDS,
        };
        let needs = ServerNeeds {
            task_per_connection: server.recipe.task_per_connection,
            files_per_connection: server.recipe.files_per_connection,
        };
        Some(users_cap(study, &machine, &needs, self.conns_per_user()))
    }

    /// The most connections one level of the sweep opens.
    fn sweep_concurrency(&self) -> u32 {
        self.loads
            .iter()
            .flat_map(|w| {
                w.concurrency
                    .iter()
                    .map(move |&c| c.saturating_mul(w.conns_per_user()))
            })
            .max()
            .unwrap_or(1)
    }

    /// The most connections a user of any workload holds.
    fn conns_per_user(&self) -> u32 {
        self.loads
            .iter()
            .map(WorkloadLoad::conns_per_user)
            .max()
            .unwrap_or(1)
    }

    /// The most users a level can open on this machine: the load
    /// generator's open files, less its spare ones, shared among each
    /// user's connections.
    pub fn machine_users(&self) -> u32 {
        super::cap_by_open_files(u32::MAX) / self.conns_per_user().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine: open files for 19,936 users, 20,000 in a process,
    /// pid_max 32,768.
    const HERE: MachineBounds = MachineBounds {
        users: 19_936,
        task_ids: Some(32_768),
        files: 20_000,
    };
    const EVENT_LOOP: ServerNeeds = ServerNeeds {
        task_per_connection: false,
        files_per_connection: 1,
    };

    #[test]
    fn a_server_that_takes_a_task_per_connection_is_capped_by_half_the_task_ids() {
        let apache = ServerNeeds {
            task_per_connection: true,
            ..EVENT_LOOP
        };
        assert_eq!(
            users_cap(20_000, &HERE, &apache, 1),
            UsersCap {
                users: 8_192,
                limit: CapLimit::Tasks { task_ids: 32_768 }
            }
        );
        assert_eq!(
            users_cap(20_000, &HERE, &EVENT_LOOP, 1),
            UsersCap {
                users: 19_936,
                limit: CapLimit::Machine
            }
        );
        // Users of six connections each take six tasks apiece.
        assert_eq!(task_users(32_768, 6), 1_365);
    }

    #[test]
    fn a_server_that_keeps_two_files_a_connection_is_capped_by_half_the_files() {
        let lighttpd = ServerNeeds {
            files_per_connection: 2,
            ..EVENT_LOOP
        };
        assert_eq!(
            users_cap(20_000, &HERE, &lighttpd, 1),
            UsersCap {
                users: 10_000,
                limit: CapLimit::Files {
                    per_connection: 2,
                    files: 20_000
                }
            }
        );
        assert_eq!(users_cap(20_000, &HERE, &lighttpd, 4).users, 2_500);
    }

    #[test]
    fn a_tie_names_the_limit_the_user_did_not_choose_and_unknown_task_ids_cap_nothing() {
        let apache = ServerNeeds {
            task_per_connection: true,
            ..EVENT_LOOP
        };
        assert_eq!(
            users_cap(8_192, &HERE, &apache, 1).limit,
            CapLimit::Tasks { task_ids: 32_768 }
        );
        let unknown = MachineBounds {
            task_ids: None,
            ..HERE
        };
        assert_eq!(
            users_cap(19_936, &unknown, &apache, 1),
            UsersCap {
                users: 19_936,
                limit: CapLimit::Machine
            }
        );
        assert_eq!(
            users_cap(300, &HERE, &apache, 1),
            UsersCap {
                users: 300,
                limit: CapLimit::Study
            }
        );
    }
}
