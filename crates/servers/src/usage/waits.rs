//! Each thread's run-queue wait, read from /proc/PID/task/TID/schedstat
//! with the files kept open between readings.
//!
//! A server of a thousand threads (Apache's event MPM as the lab sizes
//! it) costs a thousand files at each reading, and a round reads them
//! twice: opened, read and closed each time, that was 10–15 ms of the
//! client's CPU a reading, at the start of the next slice when the
//! server's sampler ran on the load's CPU (a server host's samplers share
//! a CPU with a client host's load when both are namespaces of one
//! machine). Kept open, a reading is one `pread` a thread. A file kept
//! for a thread that has gone answers no more (ESRCH), and its thread id,
//! if the kernel gives it to a new thread, is opened again. At most
//! `MAX_OPEN` files are kept: a load of thousands of connections has the
//! process's open-file limit to share, and the threads past it are read
//! as before.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;

use super::{read_schedstat, tasks};

/// Files kept open at most, of all the trees a process samples at once
/// through one reader (each round's sampler has its own reader).
const MAX_OPEN: usize = 2048;

/// The open schedstat files of one tree's threads.
#[derive(Debug, Default)]
pub struct WaitFiles {
    files: HashMap<i32, File>,
    /// Files opened by the last reading (tests read it).
    pub(crate) opened: usize,
}

impl WaitFiles {
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

    /// Opens `tid`'s file and reads it, keeping it while there is room.
    fn open(&mut self, pid: i32, tid: i32) -> Option<u64> {
        self.files.remove(&tid);
        self.opened += 1;
        if self.files.len() >= MAX_OPEN {
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

    #[test]
    fn a_threads_file_is_opened_once_and_read_again_until_it_goes() {
        // A process of three threads that ends a thread when told to; it
        // ends by itself should this test die first.
        let script = "import sys, threading, time\n\
            stop = threading.Event()\n\
            ts = [threading.Thread(target=stop.wait, daemon=True) for _ in range(2)]\n\
            [t.start() for t in ts]\n\
            print('ready', flush=True)\n\
            sys.stdin.readline()\n\
            stop.set(); [t.join() for t in ts]\n\
            print('joined', flush=True)\n\
            time.sleep(30)\n";
        let mut p = crate::forker::Forker::run(script);
        assert_eq!(p.line(), "ready");
        let pid = p.pid();
        let mut w = WaitFiles::default();
        let first = w.read(&[pid]);
        let opened_first = w.opened;
        let again = w.read(&[pid]);
        let opened_again = w.opened;
        p.go_on();
        assert_eq!(p.line(), "joined");
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
}
