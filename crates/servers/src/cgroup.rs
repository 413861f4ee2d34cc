//! A cgroup v2 group of a server's own for a diagnostic window, so that
//! perf counts and samples the group (`-G`) on each CPU rather than each
//! of the server's threads: a counter per CPU and event opens and closes
//! in milliseconds where one per thread and event (Apache's threaded MPMs
//! run a thousand threads) takes a second or two, and a child or thread
//! the server starts during the window is born in the group and counted.
//!
//! The group is made beside the server's own (a child of the first
//! process's group), so the limits its parents set still hold over it; its
//! tasks are moved back and the group removed when it is released, dropped
//! or left on an error.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a group whose last tasks are exiting may take to become
/// removable.
const EMPTY_WITHIN: Duration = Duration::from_secs(2);

/// A group holding some processes (and whatever they start) until
/// released.
#[derive(Debug)]
pub struct Group {
    /// Its directory, under the cgroup2 mount.
    dir: PathBuf,
    /// Its path from the hierarchy's root, as `perf -G` names it.
    name: String,
    /// Each moved process's former group's directory; the first one's takes
    /// back the tasks born in the group.
    homes: Vec<(i32, PathBuf)>,
    released: bool,
}

impl Group {
    /// Moves these processes, with all their threads, into a new group.
    /// Fails (leaving nothing behind) where there is no cgroup2 hierarchy,
    /// it is not writable, or a process cannot be moved.
    pub fn enclose(pids: &[i32]) -> Result<Group, String> {
        let mount = mount().ok_or("no cgroup2 hierarchy mounted")?;
        let first = *pids.first().ok_or("no process to enclose")?;
        let home = group_of(first)?;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let leaf = format!(
            "throng-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let name = Path::new(&home).join(&leaf);
        let name = name.to_string_lossy().trim_start_matches('/').to_string();
        let dir = mount.join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let mut group = Group {
            dir,
            name,
            homes: Vec::new(),
            released: false,
        };
        for &pid in pids {
            let home = mount.join(group_of(pid)?.trim_start_matches('/'));
            move_to(&group.dir, pid)?;
            group.homes.push((pid, home));
        }
        Ok(group)
    }

    /// The group's path from the hierarchy's root, for `perf -G`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves every task in the group back (each moved process to where it
    /// was, those born in the group to the first one's group) and removes
    /// the group.
    pub fn release(mut self) -> Result<(), String> {
        self.empty()
    }

    fn empty(&mut self) -> Result<(), String> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let fallback = self.homes.first().map(|(_, h)| h.clone());
        let deadline = Instant::now() + EMPTY_WITHIN;
        let mut failed = None;
        loop {
            for pid in procs(&self.dir) {
                let home = self
                    .homes
                    .iter()
                    .find(|(p, _)| *p == pid)
                    .map(|(_, h)| h.clone())
                    .or_else(|| fallback.clone());
                if let Some(home) = home {
                    // A process that has exited since cannot be moved and
                    // needs not be.
                    let gone = || !Path::new(&format!("/proc/{pid}")).exists();
                    if let Err(e) = move_to(&home, pid) {
                        if !gone() {
                            failed.get_or_insert(e);
                        }
                    }
                }
            }
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return failed.map_or(Ok(()), Err),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                    // A task exiting leaves the group a moment later.
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(format!("cannot remove {}: {e}", self.dir.display())),
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = self.empty();
    }
}

/// Whether groups can be made here: a cgroup2 hierarchy this process may
/// write.
pub fn writable() -> bool {
    mount().is_some_and(|m| nix::unistd::access(&m, nix::unistd::AccessFlags::W_OK).is_ok())
}

/// Where the cgroup2 hierarchy is mounted (beside cgroup v1's ones on a
/// hybrid machine).
pub fn mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_in(&info)
}

/// The cgroup2 mount point in a mountinfo table, if its root is the
/// hierarchy's root (a bind mount of a subtree would name groups wrongly).
fn mount_in(info: &str) -> Option<PathBuf> {
    info.lines().find_map(|l| {
        let (fields, after) = l.split_once(" - ")?;
        let f: Vec<&str> = fields.split(' ').collect();
        let fstype = after.split(' ').next()?;
        let point = f.get(4)?;
        (fstype == "cgroup2" && f.get(3) == Some(&"/")).then(|| PathBuf::from(point))
    })
}

/// A process's cgroup2 group, from the hierarchy's root ("/" or "/a/b").
fn group_of(pid: i32) -> Result<String, String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map_err(|e| format!("cannot read the cgroup of {pid}: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
        .ok_or_else(|| format!("process {pid} is in no cgroup2 group"))
}

fn move_to(dir: &Path, pid: i32) -> Result<(), String> {
    std::fs::write(dir.join("cgroup.procs"), pid.to_string())
        .map_err(|e| format!("cannot move {pid} into {}: {e}", dir.display()))
}

/// The processes in a group.
fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_beside_v1_ones() {
        let hybrid = "\
30 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
41 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(
            mount_in(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let subtree = "41 30 0:38 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw";
        assert_eq!(mount_in(subtree), None);
    }
}
