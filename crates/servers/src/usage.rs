//! Resource sampling of a server's whole process tree during a round.
//!
//! A sampler thread reads /proc every `interval`: CPU ticks per process
//! (a process first seen mid-round counts from zero, and the leader's
//! cutime/cstime catch children that exited), RSS and PSS sums, process and
//! thread counts. Peaks are over the samples, "end" is the final sample.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use throng_model::ServerUsage;

use crate::process::process_tree;

/// One reading of one process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcStat {
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    pub threads: u32,
    pub rss_pages: u64,
}

pub fn read_stat(pid: i32) -> Option<ProcStat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s[s.rfind(')')? + 1..].split_whitespace().collect();
    let n = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
            .max(0) as u64
    };
    Some(ProcStat {
        utime: n(11),
        stime: n(12),
        cutime: n(13),
        cstime: n(14),
        threads: n(17) as u32,
        rss_pages: n(21),
    })
}

/// Proportional set size in bytes from /proc/PID/smaps_rollup.
pub fn read_pss(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

fn trees(leaders: &[i32]) -> Vec<i32> {
    let mut v: Vec<i32> = leaders.iter().flat_map(|&l| process_tree(l)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// CPU ticks of the leaders' children that have exited and been waited for.
fn children_ticks(leaders: &[i32]) -> u64 {
    leaders
        .iter()
        .filter_map(|&l| read_stat(l))
        .map(|s| s.cutime + s.cstime)
        .sum()
}

/// Accumulates samples of one process tree.
#[derive(Debug)]
pub struct Usage {
    /// Group leaders: the server, and its backend if it has one.
    leaders: Vec<i32>,
    /// Ticks of each process when first seen; 0 for processes born later.
    base: HashMap<i32, u64>,
    last: HashMap<i32, u64>,
    leader_children_base: u64,
    leader_children_last: u64,
    started: Instant,
    usage: ServerUsage,
    samples: u32,
}

impl Usage {
    /// Takes the baseline reading.
    pub fn start(leaders: &[i32]) -> Usage {
        let mut base = HashMap::new();
        for pid in trees(leaders) {
            if let Some(s) = read_stat(pid) {
                base.insert(pid, s.utime + s.stime);
            }
        }
        let lc = children_ticks(leaders);
        Usage {
            leaders: leaders.to_vec(),
            last: base.clone(),
            base,
            leader_children_base: lc,
            leader_children_last: lc,
            started: Instant::now(),
            usage: ServerUsage::default(),
            samples: 0,
        }
    }

    /// One reading; `with_pss` also reads smaps_rollup (slower).
    pub fn sample(&mut self, with_pss: bool) {
        let page = page_size();
        let mut rss = 0u64;
        let mut pss = 0u64;
        let mut procs = 0u32;
        let mut threads = 0u32;
        for pid in trees(&self.leaders) {
            let Some(s) = read_stat(pid) else { continue };
            procs += 1;
            threads += s.threads;
            rss += s.rss_pages * page;
            if with_pss {
                pss += read_pss(pid).unwrap_or(0);
            }
            self.last.insert(pid, s.utime + s.stime);
            self.base.entry(pid).or_insert(0);
        }
        self.leader_children_last = children_ticks(&self.leaders).max(self.leader_children_last);
        self.usage.processes = procs;
        self.usage.threads = threads;
        self.usage.rss_end_bytes = rss;
        self.usage.rss_peak_bytes = self.usage.rss_peak_bytes.max(rss);
        if with_pss {
            self.usage.pss_end_bytes = pss;
            self.usage.pss_peak_bytes = self.usage.pss_peak_bytes.max(pss);
        }
        self.samples += 1;
    }

    /// Final reading and totals. User and system time are split in the
    /// proportion of the processes' own user and system ticks.
    pub fn finish(mut self) -> ServerUsage {
        self.sample(true);
        let hz = ticks_per_second();
        let mut user = 0u64;
        let mut sys = 0u64;
        for pid in trees(&self.leaders) {
            if let Some(s) = read_stat(pid) {
                let base = self.base.get(&pid).copied().unwrap_or(0);
                let total = (s.utime + s.stime).saturating_sub(base);
                let all = (s.utime + s.stime).max(1);
                let u = total * s.utime / all;
                user += u;
                sys += total - u;
                self.last.remove(&pid);
            }
        }
        // Processes gone before the end: their last reading counts, split evenly
        // as their split is no longer known.
        for (pid, last) in &self.last {
            let base = self.base.get(pid).copied().unwrap_or(0);
            let d = last.saturating_sub(base);
            user += d / 2;
            sys += d - d / 2;
        }
        let reaped = self
            .leader_children_last
            .saturating_sub(self.leader_children_base);
        user += reaped / 2;
        sys += reaped - reaped / 2;
        self.usage.cpu_user_s = user as f64 / hz;
        self.usage.cpu_sys_s = sys as f64 / hz;
        self.usage.wall_s = self.started.elapsed().as_secs_f64();
        self.usage
    }
}

/// A thread sampling one tree until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Usage>,
}

impl Sampler {
    /// Starts sampling; the thread is pinned to `cpus` (the client's) so it
    /// never takes time from the server's cores.
    pub fn start(leader: i32, cpus: &[usize], interval: Duration) -> Sampler {
        Sampler::start_after(leader, None, cpus, Duration::ZERO, interval)
    }

    /// Starts sampling after `delay` (the load's warmup, which is not
    /// measured either), covering `backend`'s tree too when given.
    pub fn start_after(
        leader: i32,
        backend: Option<i32>,
        cpus: &[usize],
        delay: Duration,
        interval: Duration,
    ) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let leaders: Vec<i32> = std::iter::once(leader).chain(backend).collect();
        let flag = stop.clone();
        let cpus = cpus.to_vec();
        let handle = std::thread::spawn(move || {
            if !cpus.is_empty() {
                // Best effort: an unpinned sampler only costs accuracy.
                let _ = throng_engine::affinity::pin_current_thread(&cpus);
            }
            let until = Instant::now() + delay;
            while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut u = Usage::start(&leaders);
            let mut n = 0u32;
            while !flag.load(Ordering::Relaxed) {
                // PSS walks every mapping: read it on every fifth sample only.
                u.sample(n.is_multiple_of(5));
                n += 1;
                let until = Instant::now() + interval;
                while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            u
        });
        Sampler { stop, handle }
    }

    pub fn finish(self) -> ServerUsage {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.join() {
            Ok(u) => u.finish(),
            Err(_) => ServerUsage::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{Launch, ServerProcess};

    #[test]
    fn a_busy_child_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        // Two processes: a parent waiting and a child spinning on one core.
        let l = Launch {
            name: "spin".into(),
            argv: ["/bin/sh", "-c", "(while :; do :; done) & wait"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            env: vec![],
            cwd: dir.path().to_path_buf(),
            cpus: vec![0],
            run_as: None,
            log: dir.path().join("log"),
            stop_signal: nix::sys::signal::Signal::SIGTERM,
        };
        let mut p = ServerProcess::spawn(&l).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.tree().len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let s = Sampler::start(p.pid(), &[], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(600));
        let u = s.finish();
        p.stop(Duration::from_secs(1));
        assert_eq!(u.processes, 2);
        assert_eq!(u.threads, 2);
        // The spinner has core 0 to itself or shares it with this test's
        // build; either way it gets a good part of the wall time.
        assert!(
            u.cpu_utilisation() > 0.3 && u.cpu_utilisation() < 1.1,
            "{u:?}"
        );
        assert!(u.rss_peak_bytes >= u.rss_end_bytes && u.rss_end_bytes > 100_000);
        assert!(
            u.pss_end_bytes > 0 && u.pss_end_bytes <= u.rss_end_bytes,
            "{u:?}"
        );
        assert!(u.wall_s >= 0.6);
    }

    #[test]
    fn pss_and_stat_of_this_process_read() {
        let me = std::process::id() as i32;
        let s = read_stat(me).unwrap();
        assert!(s.threads >= 1 && s.rss_pages > 0);
        assert!(read_pss(me).unwrap() > 0);
        assert_eq!(read_stat(-5), None);
    }
}
