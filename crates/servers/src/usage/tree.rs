//! Finding a server's process tree ten times a second without reading
//! every process's /proc/PID/stat each time.
//!
//! The tree is the leaders' descendants and the members of their process
//! groups (`process::process_tree`), which only every process's parent and
//! group can tell: this kernel may lack /proc/PID/task/TID/children, and a
//! daemon's worker is reparented out of its leader's descendants anyway.
//! What costs is opening and formatting each stat file, ~100 of them on a
//! quiet machine and many more on a busy one, on the CPU of the load being
//! measured. So each process's parent and group are read when it is first
//! seen and kept while it lives outside the tree; the tree's own members,
//! and every process on a full walk (every `full_every`), are read again.
//! Listing /proc each reading still finds every new process, so a worker
//! forked within a round is seen at the next reading, as before; but
//! listing it costs a dentry per process (a quarter of the sampler's time
//! beside a keep-alive load), so a reading between full walks lists it
//! only when a process was made since the last: /proc/loadavg ends with
//! the newest PID the kernel gave, and while it stands still no process
//! or thread was born. What a reading between full walks can miss is a
//! process already alive outside the tree that joins it (`setpgid` into a
//! leader's group, or adopted by a subreaper of the tree): seen within
//! `full_every`.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Parent and process group of one process that is neither a zombie nor
/// being reaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lineage {
    ppid: i32,
    pgrp: i32,
}

fn read_lineage(pid: i32) -> Option<Lineage> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = s[s.rfind(')')? + 1..].split_whitespace();
    let state = f.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    Some(Lineage {
        ppid: f.next()?.parse().ok()?,
        pgrp: f.next()?.parse().ok()?,
    })
}

/// The newest PID the kernel gave, from /proc/loadavg's last field.
fn newest_pid() -> Option<i32> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().last()?.parse().ok()
}

/// The numeric entries of /proc: every process now.
fn pids_now() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The leaders' trees out of every process's lineage, each process once,
/// sorted: what `usage::trees` finds from a full walk.
fn trees_of(all: &HashMap<i32, Lineage>, leaders: &[i32]) -> Vec<i32> {
    let mut tree = BTreeSet::new();
    for &leader in leaders {
        let mut mine: BTreeSet<i32> = all
            .iter()
            .filter(|(_, l)| l.pgrp == leader)
            .map(|(&p, _)| p)
            .collect();
        if all.contains_key(&leader) {
            mine.insert(leader);
        }
        // Bounded: each pass adds a process or ends.
        loop {
            let before = mine.len();
            for (&pid, l) in all {
                if mine.contains(&l.ppid) {
                    mine.insert(pid);
                }
            }
            if mine.len() == before {
                break;
            }
        }
        tree.extend(mine);
    }
    tree.into_iter().collect()
}

/// Finds the leaders' trees reading by reading.
#[derive(Debug)]
pub struct TreeFinder {
    leaders: Vec<i32>,
    /// Lineage of the processes outside the tree at the last reading.
    outside: HashMap<i32, Lineage>,
    full_every: Duration,
    last_full: Option<Instant>,
    /// The newest PID at the last reading, and the tree it found.
    newest: Option<i32>,
    tree: Vec<i32>,
    /// Stat files read by the last reading (tests read it).
    pub(crate) last_reads: usize,
    /// Whether the last reading listed /proc (tests read it).
    pub(crate) listed: bool,
}

impl TreeFinder {
    pub fn new(leaders: &[i32], full_every: Duration) -> TreeFinder {
        TreeFinder {
            leaders: leaders.to_vec(),
            outside: HashMap::new(),
            full_every,
            last_full: None,
            newest: None,
            tree: Vec::new(),
            last_reads: 0,
            listed: false,
        }
    }

    /// A finder for a sampler's readings: every process read again once a
    /// second, as the readings between miss only a process already alive
    /// that joins the tree.
    pub fn sampling(leaders: &[i32]) -> TreeFinder {
        TreeFinder::new(leaders, super::FULL_WALK_EVERY)
    }

    /// The leaders whose trees it finds.
    pub fn leaders(&self) -> &[i32] {
        &self.leaders
    }

    /// The trees now, from every process's stat when a full walk is due.
    pub fn find(&mut self) -> Vec<i32> {
        let full = self
            .last_full
            .is_none_or(|t| t.elapsed() >= self.full_every);
        self.walk(full)
    }

    /// The trees now, every process read again.
    pub fn find_all(&mut self) -> Vec<i32> {
        self.walk(true)
    }

    fn walk(&mut self, full: bool) -> Vec<i32> {
        self.walk_told(full, newest_pid())
    }

    /// A reading told the newest PID (tests tell it what they need).
    fn walk_told(&mut self, full: bool, newest: Option<i32>) -> Vec<i32> {
        if full {
            self.outside.clear();
            self.last_full = Some(Instant::now());
        }
        // No process born since the last reading: the processes are the
        // ones known then, less those gone (their stat unread).
        let unborn = !full && newest.is_some() && newest == self.newest;
        self.newest = newest;
        self.listed = !unborn;
        let pids = if unborn {
            let mut known: Vec<i32> = self.outside.keys().copied().collect();
            known.extend(&self.tree);
            known
        } else {
            pids_now()
        };
        let mut all = HashMap::with_capacity(pids.len());
        let mut reads = 0;
        for pid in pids {
            let known = self.outside.get(&pid).copied();
            let lineage = known.or_else(|| {
                reads += 1;
                read_lineage(pid)
            });
            if let Some(l) = lineage {
                all.insert(pid, l);
            }
        }
        self.last_reads = reads;
        let tree = trees_of(&all, &self.leaders);
        for pid in &tree {
            all.remove(pid);
        }
        self.outside = all;
        self.tree.clone_from(&tree);
        tree
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::process_tree;

    fn l(ppid: i32, pgrp: i32) -> Lineage {
        Lineage { ppid, pgrp }
    }

    #[test]
    fn a_tree_is_its_descendants_and_its_group() {
        // 10 leads; 11 and 12 its children, 13 a grandchild in its own
        // group; 20 a daemon reparented to 1 but still in 10's group; 30
        // and 31 nothing of 10's.
        let all: HashMap<i32, Lineage> = [
            (1, l(0, 1)),
            (10, l(1, 10)),
            (11, l(10, 10)),
            (12, l(10, 10)),
            (13, l(12, 13)),
            (20, l(1, 10)),
            (21, l(20, 10)),
            (30, l(1, 30)),
            (31, l(30, 30)),
        ]
        .into_iter()
        .collect();
        assert_eq!(trees_of(&all, &[10]), vec![10, 11, 12, 13, 20, 21]);
        assert_eq!(trees_of(&all, &[12, 30]), vec![12, 13, 30, 31]);
        // A leader gone leaves its group's members.
        assert_eq!(trees_of(&all, &[99]), Vec::<i32>::new());
    }

    #[test]
    fn a_reading_lists_proc_only_when_a_process_was_born_since_the_last() {
        let mut p = crate::forker::Forker::ready_to_fork();
        let pid = p.pid();
        let mut f = TreeFinder::new(&[pid], Duration::from_secs(3600));
        assert_eq!((f.find(), f.listed), (vec![pid], true));
        // Told that no PID was given since: the processes known are read
        // again, /proc is not listed, and the tree is the same.
        let newest = f.newest;
        assert_eq!(f.walk_told(false, newest), vec![pid]);
        assert!(!f.listed);
        assert_eq!(f.last_reads, 1, "only the tree's member is read again");
        // The fork gave a PID, so the next reading lists /proc and finds it.
        p.go_on();
        let child = p.pid_line();
        let tree = f.find();
        let listed = f.listed;
        p.end(child);
        let mut both = vec![pid, child];
        both.sort_unstable();
        assert_eq!((tree, listed), (both, true));
    }

    #[test]
    fn a_full_walk_finds_what_process_tree_finds() {
        // A parent and its child, apart from this test's process (whose
        // tree the other tests grow and shrink as they run); both end by
        // themselves should this test die first.
        let script = "import os, time\n\
            pid = os.fork()\n\
            if pid == 0:\n    time.sleep(30); os._exit(0)\n\
            print(pid, flush=True)\n\
            time.sleep(30)\n";
        let mut p = crate::forker::Forker::run(script);
        let child = p.pid_line();
        let pid = p.pid();
        let mut f = TreeFinder::new(&[pid], Duration::from_secs(3600));
        let (tree, walked) = (f.find(), f.last_reads);
        let truth = process_tree(pid);
        // The next reading, no full walk due, reads the tree's members and
        // whatever is new, not the processes already known outside.
        let (again, reads, outside) = (f.find(), f.last_reads, f.outside.len());
        p.end(child);
        let mut both = vec![pid, child];
        both.sort_unstable();
        assert_eq!((&tree, &truth, &again), (&both, &both, &both));
        assert!(walked > outside / 2, "{walked} read of {outside}");
        assert!(reads < walked, "{reads} read again, {walked} at first");
    }
}
