//! Each thread's run-queue wait, read from /proc/PID/task/TID/schedstat,
//! with the files kept open between readings where the process may hold
//! them.
//!
//! A server of a thousand threads (Apache's event MPM as the lab sizes
//! it) costs a thousand files at each reading, and a window reads them
//! twice: opened, read and closed each time, that was 5–6 ms of CPU a
//! reading on this machine, at the start of the next slice when a server
//! host's samplers share a CPU with a client host's load (both namespaces
//! of one machine). Kept open, a reading is one `pread` a thread (1.2 ms
//! a reading of 1,000 threads).
//!
//! Only a process that runs no load keeps them: at home the sampler shares
//! its process's open-file limit with the load, whose budget counts its
//! connections alone, so a level whose connections fill that limit would
//! fail to connect. A server host's agent has the limit to itself; it
//! keeps at most an eighth of its soft limit a reader, and no more than
//! `MAX_OPEN` (a duet's two servers, each with a window closing as the
//! next opens, hold four readers at once). A file kept for a thread that
//! has gone answers no more (ESRCH), and its thread id, if the kernel
//! gives it to a new thread, is opened again.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;

use super::{read_schedstat, tasks};

/// Files one reader keeps open at most.
const MAX_OPEN: usize = 2048;

/// The schedstat files of one tree's threads, and how many of them may be
/// kept open between readings.
#[derive(Debug, Default)]
pub struct WaitFiles {
    files: HashMap<i32, File>,
    room: usize,
    /// Files opened by the last reading (tests read it).
    pub(crate) opened: usize,
}

impl WaitFiles {
    /// A reader that opens, reads and closes each file at every reading:
    /// for a process whose open files are the load's to use.
    pub fn closing() -> WaitFiles {
        WaitFiles::default()
    }

    /// A reader that keeps files open, as many as this process's soft
    /// open-file limit allows it (an eighth of it, at most `MAX_OPEN`).
    pub fn keeping() -> WaitFiles {
        let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _)| soft);
        WaitFiles::with_room((soft / 8).min(MAX_OPEN as u64) as usize)
    }

    fn with_room(room: usize) -> WaitFiles {
        WaitFiles {
            room,
            ..WaitFiles::default()
        }
    }

    /// Files held open now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.files.len()
    }

    /// The same room, no file held: for another tree.
    pub(crate) fn emptied(self) -> WaitFiles {
        WaitFiles::with_room(self.room)
    }

    /// Each thread's run-queue wait now (ns), by thread id, for every
    /// thread of `pids`.
    pub fn read(&mut self, pids: &[i32]) -> HashMap<i32, u64> {
        let mut out = HashMap::new();
        let mut seen = HashSet::new();
        self.opened = 0;
        for &pid in pids {
            for tid in tasks(pid) {
                seen.insert(tid);
                let kept = self.files.get(&tid).and_then(wait_in);
                let wait = match kept {
                    Some(w) => Some(w),
                    None => self.open(pid, tid),
                };
                if let Some(w) = wait {
                    out.insert(tid, w);
                }
            }
        }
        // Bounded by the threads listed: the files of those gone go.
        self.files.retain(|tid, _| seen.contains(tid));
        out
    }

    /// Reads `tid`'s file, and keeps it open while there is room.
    fn open(&mut self, pid: i32, tid: i32) -> Option<u64> {
        self.files.remove(&tid);
        self.opened += 1;
        if self.files.len() >= self.room {
            return read_schedstat(pid, tid).map(|(_, d)| d);
        }
        let f = File::open(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
        let wait = wait_in(&f)?;
        self.files.insert(tid, f);
        Some(wait)
    }
}

/// The wait field of an open schedstat file, read from its start.
fn wait_in(f: &File) -> Option<u64> {
    let mut buf = [0u8; 96];
    let n = f.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut fields = text.split_whitespace();
    fields.next()?;
    fields.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process of three threads that ends two of them when told to; it
    /// ends by itself should the test die first.
    const THREADS: &str = "import sys, threading, time\n\
        stop = threading.Event()\n\
        ts = [threading.Thread(target=stop.wait, daemon=True) for _ in range(2)]\n\
        [t.start() for t in ts]\n\
        print('ready', flush=True)\n\
        sys.stdin.readline()\n\
        stop.set(); [t.join() for t in ts]\n\
        print('joined', flush=True)\n\
        time.sleep(30)\n";

    #[test]
    fn a_threads_file_is_opened_once_and_read_again_until_it_goes() {
        let mut p = crate::forker::Forker::run(THREADS);
        assert_eq!(p.line(), "ready");
        let pid = p.pid();
        let mut w = WaitFiles::with_room(16);
        let first = w.read(&[pid]);
        let opened_first = w.opened;
        let again = w.read(&[pid]);
        let opened_again = w.opened;
        p.go_on();
        assert_eq!(p.line(), "joined");
        // A joined thread may still be leaving the kernel's task list.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        throng_testkit::wait::poll_until(deadline, || (tasks(pid).len() == 1).then_some(()));
        let after = w.read(&[pid]);
        let kept = w.files.len();
        p.stop();
        assert_eq!((first.len(), opened_first), (3, 3));
        assert_eq!(
            (again.len(), opened_again),
            (3, 0),
            "read again, none opened"
        );
        // A wait never goes back.
        for (tid, d) in &first {
            assert!(again[tid] >= *d);
        }
        assert_eq!(
            (after.len(), kept),
            (1, 1),
            "the gone threads' files let go"
        );
        assert!(after.contains_key(&pid));
    }

    #[test]
    fn a_reader_holds_no_more_files_than_its_room() {
        let mut p = crate::forker::Forker::run(THREADS);
        assert_eq!(p.line(), "ready");
        let pid = p.pid();
        let mut closing = WaitFiles::closing();
        let mut two = WaitFiles::with_room(2);
        let (c1, t1) = (closing.read(&[pid]), two.read(&[pid]));
        let (held_closing, held_two) = (closing.files.len(), two.files.len());
        let (c2, t2) = (closing.read(&[pid]), two.read(&[pid]));
        let (opened_closing, opened_two) = (closing.opened, two.opened);
        let emptied = two.emptied();
        p.stop();
        // Every thread read each time, whatever is kept.
        assert_eq!((c1.len(), t1.len(), c2.len(), t2.len()), (3, 3, 3, 3));
        assert_eq!((held_closing, held_two), (0, 2));
        // The third thread's file is opened at each reading, the two kept
        // are not.
        assert_eq!((opened_closing, opened_two), (3, 1));
        assert_eq!((emptied.files.len(), emptied.room), (0, 2));
        // An agent keeps no more than its share of its open-file limit.
        let keeping = WaitFiles::keeping();
        let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .unwrap()
            .0 as usize;
        assert_eq!(keeping.room, (soft / 8).min(MAX_OPEN));
    }
}
