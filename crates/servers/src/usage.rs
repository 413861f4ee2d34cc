//! Resource sampling of a server's whole process tree during a round.
//!
//! A sampler thread reads /proc every `interval`: RSS and PSS sums,
//! process and thread counts, each process's ticks. Peaks are over the
//! samples, "end" is the final sample. The CPU a round used is each
//! process's CPU-time clock (`clock_getcpuclockid`, in ns, every thread's
//! time, gone threads' included) read at the round's start and end, split
//! into user and system time in the proportion of the processes' ticks (a
//! process first seen mid-round counts from zero, one gone by the end at
//! its last ticks, and the leader's cutime/cstime catch children that
//! exited). Ticks alone (10 ms) would put a 0.1 s slice's CPU 10% off
//! either way.
//!
//! It also reads whether the server got the CPU it wanted: each thread's
//! run-queue wait (/proc/PID/task/TID/schedstat, a thread born in the round
//! from zero, one gone before its end not counted), and, for the CPUs the
//! tree may run on, /proc/stat's busy and steal time, from which the CPU
//! other processes took on those cores follows.
//!
//! Over the same window it reads the host's TCP counters
//! (/proc/net/snmp), so a round says what its traffic made the server's
//! host send again; they are the network namespace's, not the tree's.
//!
//! The tree's shape (its processes, threads and listening sockets) is
//! kept as the last reading found it, with the fewest and most of each
//! when they changed within the round: a server whose pool grew or shrank
//! while it was measured measured two servers. Listening sockets are read
//! with PSS, on the slower readings (the first, every fifth and the last),
//! and counted from every descriptor of the tree only when the tree, the
//! namespace's listening sockets or a descriptor a listener was found at
//! changed since the last count ([`ListenerCount`]): a server holding
//! thousands of connections made each count tens of milliseconds.
//!
//! Threads are read twice a round, the first time before its measured part
//! begins (during its warmup) when it has one. A server of a thousand
//! threads (Apache's event MPM) costs a thousand files a reading, on the
//! client's CPU; read every 100 ms, and at the start of each 0.1 s slice,
//! the load generator waited for it in that server's rounds alone and was
//! judged client-bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use throng_model::{ServerUsage, Shape, ShapeRange, TcpCounters};

use crate::sockets::ListenerCount;

mod tree;
mod waits;
pub use tree::TreeFinder;
use waits::WaitFiles;

/// How often a sampler reads every process's stat to find its tree; the
/// readings between read only the tree's own and new processes'.
const FULL_WALK_EVERY: Duration = Duration::from_secs(1);

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

/// Time on CPU and time runnable but waiting, of one thread, in
/// nanoseconds: the first two fields of /proc/PID/task/TID/schedstat.
/// Exact, where /proc/PID/stat counts in ticks of 10 ms: a 0.1 s slice
/// would read 10% either way from its ticks alone.
fn read_schedstat(pid: i32, tid: i32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    let mut f = text.split_whitespace();
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// Threads of a process, from /proc/PID/task.
pub(crate) fn tasks(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Time of a set of CPUs, in clock ticks, from /proc/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system: time the CPUs ran processes. Interrupt and
    /// softirq time is left out, as the processes' own times leave it out.
    pub busy: u64,
    /// Time the hypervisor ran something else while these CPUs had work.
    pub steal: u64,
}

/// [`CpuTicks`] summed over `cpus`, from the text of /proc/stat; `None`
/// when one of them has no line (offline, or not a CPU of this machine).
pub fn parse_cpu_ticks(stat: &str, cpus: &[usize]) -> Option<CpuTicks> {
    let mut t = CpuTicks::default();
    for &cpu in cpus {
        let name = format!("cpu{cpu}");
        let f: Vec<u64> = stat.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name.as_str())).then(|| w.filter_map(|x| x.parse().ok()).collect())
        })?;
        // user nice system idle iowait irq softirq steal guest guest_nice;
        // guest time is already inside user.
        t.busy += f.iter().take(3).sum::<u64>();
        t.steal += f.get(7).copied().unwrap_or(0);
    }
    Some(t)
}

fn read_cpu_ticks(cpus: &[usize]) -> Option<CpuTicks> {
    if cpus.is_empty() {
        return None;
    }
    parse_cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
}

/// The CPUs any process of the tree may run on: the server's cores when
/// it is pinned, every CPU when it is not.
fn tree_cpus(pids: &[i32]) -> Vec<usize> {
    let mut cpus: Vec<usize> = pids
        .iter()
        .filter_map(|&p| crate::process::cpus_allowed(p).ok())
        .flatten()
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
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

/// Every process of the leaders' trees, each once, sorted: one walk of
/// every process for all the leaders (a server found by its listening
/// socket has one leader for each process holding it).
pub fn trees(leaders: &[i32]) -> Vec<i32> {
    TreeFinder::new(leaders, FULL_WALK_EVERY).find_all()
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
    /// Finds their trees at each reading.
    finder: TreeFinder,
    /// Ticks of each process when first seen; 0 for processes born later.
    base: HashMap<i32, u64>,
    last: HashMap<i32, u64>,
    leader_children_base: u64,
    leader_children_last: u64,
    /// Run-queue wait (ns) of each thread at the first reading; 0 for
    /// threads born later.
    delay_base: HashMap<i32, u64>,
    /// Run-queue wait of every thread at the last reading.
    delay_last: HashMap<i32, u64>,
    /// Each process's CPU-time clock (ns) at the start.
    clock_base: HashMap<i32, u64>,
    /// The CPUs the tree may run on, and their times at the start.
    cpus: Vec<usize>,
    cpu_base: Option<CpuTicks>,
    started: Instant,
    usage: ServerUsage,
    /// The shapes the readings found so far.
    shapes: Option<ShapeRange>,
    samples: u32,
    /// The host's TCP counters at the start: what the window's traffic
    /// made it send again is read against them.
    tcp_base: Option<TcpCounters>,
    /// The last count of the tree's listening sockets, read again only
    /// where what it rests on changed.
    listeners: Option<ListenerCount>,
    /// The threads' schedstat files, kept open between readings where
    /// this process may hold them.
    waits: WaitFiles,
}

/// The CPU time of every thread of process `pid`, gone ones included, in
/// ns: one system call, however many threads it has.
fn cpu_clock_ns(pid: i32) -> Option<u64> {
    let id = nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(pid)).ok()?;
    let t = nix::time::clock_gettime(id).ok()?;
    Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

impl Usage {
    /// Takes the baseline reading.
    pub fn start(leaders: &[i32]) -> Usage {
        Usage::start_from(Start::fresh(TreeFinder::sampling(leaders)), None)
    }

    /// The baseline reading, from the finder's last walk of every process
    /// when it is recent (one walk every `FULL_WALK_EVERY`, as between
    /// readings), else from a new one; the window starts as it begins, as
    /// its end is after the final reading.
    fn start_from(start: Start, waits: Option<HashMap<i32, u64>>) -> Usage {
        let Start {
            mut finder,
            listeners,
            waits: mut files,
        } = start;
        let started = Instant::now();
        let leaders = finder.leaders().to_vec();
        let leaders = &leaders[..];
        let pids = finder.find();
        let waits = waits.unwrap_or_else(|| files.read(&pids));
        let mut base = HashMap::new();
        let mut clock_base = HashMap::new();
        for &pid in &pids {
            if let Some(s) = read_stat(pid) {
                base.insert(pid, s.utime + s.stime);
            }
            if let Some(c) = cpu_clock_ns(pid) {
                clock_base.insert(pid, c);
            }
        }
        let cpus = tree_cpus(&pids);
        let lc = children_ticks(leaders);
        Usage {
            leaders: leaders.to_vec(),
            finder,
            last: base.clone(),
            base,
            leader_children_base: lc,
            leader_children_last: lc,
            delay_last: waits.clone(),
            delay_base: waits,
            clock_base,
            cpu_base: read_cpu_ticks(&cpus),
            cpus,
            started,
            usage: ServerUsage::default(),
            shapes: None,
            samples: 0,
            tcp_base: TcpCounters::read(),
            listeners,
            waits: files,
        }
    }

    /// One reading; `with_pss` also reads smaps_rollup (slower).
    pub fn sample(&mut self, with_pss: bool) {
        let pids = self.finder.find();
        self.sample_of(&pids, with_pss);
    }

    fn sample_of(&mut self, pids: &[i32], with_pss: bool) {
        let page = page_size();
        let mut rss = 0u64;
        let mut pss = 0u64;
        let mut procs = 0u32;
        let mut threads = 0u32;
        for &pid in pids {
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
        if self.cpu_base.is_none() {
            // The tree was not there yet at the start: its CPUs count from
            // the first sample that finds it.
            self.cpus = tree_cpus(pids);
            self.cpu_base = read_cpu_ticks(&self.cpus);
        }
        self.leader_children_last = children_ticks(&self.leaders).max(self.leader_children_last);
        self.usage.processes = procs;
        self.usage.threads = threads;
        let listeners = if with_pss {
            self.listeners = ListenerCount::read(pids, self.listeners.as_ref());
            self.listeners.as_ref().map(|l| l.held)
        } else {
            None
        };
        if let Some(l) = listeners {
            self.usage.listeners = l;
        }
        let now = ShapeRange::of(Shape {
            processes: procs,
            threads,
            listeners: listeners.unwrap_or(0),
        });
        match &mut self.shapes {
            Some(r) => r.cover(&now),
            None => self.shapes = Some(now),
        }
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
    pub fn finish(self) -> ServerUsage {
        self.finish_carried().0
    }

    /// [`Usage::finish`], and what the next window of the same tree may
    /// start from.
    pub fn finish_carried(mut self) -> (ServerUsage, Carry) {
        // The last reading walks every process: whatever joined the tree
        // since the last full walk is in the round's end.
        let pids = self.finder.find_all();
        self.sample_of(&pids, true);
        self.usage.shape_range = self.shapes.filter(ShapeRange::varied);
        for (tid, d) in self.waits.read(&pids) {
            self.delay_last.insert(tid, d);
            self.delay_base.entry(tid).or_insert(0);
        }
        let hz = ticks_per_second();
        // Ticks of the processes still there, for the split between user
        // and system time, and of those whose clock could not be read.
        let (mut user, mut sys, mut unclocked) = (0u64, 0u64, 0u64);
        let mut clocked_ns = 0u64;
        for pid in pids {
            if let Some(s) = read_stat(pid) {
                let base = self.base.get(&pid).copied().unwrap_or(0);
                let total = (s.utime + s.stime).saturating_sub(base);
                let all = (s.utime + s.stime).max(1);
                let u = total * s.utime / all;
                user += u;
                sys += total - u;
                match cpu_clock_ns(pid) {
                    // A process born in the round counts from zero.
                    Some(c) => {
                        clocked_ns +=
                            c.saturating_sub(self.clock_base.get(&pid).copied().unwrap_or(0))
                    }
                    None => unclocked += total,
                }
                self.last.remove(&pid);
            }
        }
        // Processes gone before the end: their last ticks count, split
        // evenly as their split is no longer known.
        let gone: u64 = self
            .last
            .iter()
            .map(|(pid, last)| last.saturating_sub(self.base.get(pid).copied().unwrap_or(0)))
            .sum();
        let share = if user + sys > 0 {
            user as f64 / (user + sys) as f64
        } else {
            0.5
        };
        let alive = clocked_ns as f64 / 1e9 + unclocked as f64 / hz;
        let user_s = alive * share + (gone / 2) as f64 / hz;
        let sys_s = alive * (1.0 - share) + (gone - gone / 2) as f64 / hz;
        let reaped = self
            .leader_children_last
            .saturating_sub(self.leader_children_base);
        self.usage.cpu_user_s = user_s + (reaped / 2) as f64 / hz;
        self.usage.cpu_sys_s = sys_s + (reaped - reaped / 2) as f64 / hz;
        self.usage.wall_s = self.started.elapsed().as_secs_f64();
        let waited: u64 = self
            .delay_last
            .iter()
            .map(|(tid, last)| last.saturating_sub(self.delay_base.get(tid).copied().unwrap_or(0)))
            .sum();
        self.usage.runqueue_s = waited as f64 / 1e9;
        self.usage.tcp = self
            .tcp_base
            .and_then(|b| TcpCounters::read().map(|now| now.since(&b)));
        if let (Some(base), Some(now)) = (self.cpu_base, read_cpu_ticks(&self.cpus)) {
            let busy = now.busy.saturating_sub(base.busy) as f64 / hz;
            self.usage.steal_s = now.steal.saturating_sub(base.steal) as f64 / hz;
            // The cores' busy time is counted on scheduler ticks, the tree's
            // own from its exact run time: a quiet core can come out a tick
            // below zero.
            self.usage.others_cpu_s =
                (busy - self.usage.cpu_user_s - self.usage.cpu_sys_s).max(0.0);
        }
        let carry = Carry {
            finder: Some(self.finder),
            listeners: self.listeners,
            waits: self.waits,
        };
        (self.usage, carry)
    }
}

/// What one window's sampler leaves the next window of the same server:
/// its walk of every process (the last reading's), its count of the
/// tree's listening sockets and, where the process may hold them, its
/// threads' open schedstat files. A level's slices follow one another
/// every ~0.1 s, and each slice's sampler would otherwise walk every
/// process and read every descriptor of the tree again as its window
/// starts, on the load's CPU, in the window's first milliseconds.
#[derive(Debug)]
pub struct Carry {
    /// `None` before any window: nothing found yet.
    finder: Option<TreeFinder>,
    listeners: Option<ListenerCount>,
    waits: WaitFiles,
}

/// What a sampler starts from: a carry made sure of its leaders.
struct Start {
    finder: TreeFinder,
    listeners: Option<ListenerCount>,
    waits: WaitFiles,
}

impl Start {
    /// With nothing carried: `finder` alone, each schedstat file closed
    /// after its reading.
    fn fresh(finder: TreeFinder) -> Start {
        Start {
            finder,
            listeners: None,
            waits: WaitFiles::closing(),
        }
    }
}

impl Carry {
    /// Nothing carried yet, in a process that runs no load and may keep
    /// the threads' schedstat files open between readings (a server
    /// host's agent; [`WaitFiles::keeping`]).
    pub fn keeping_files() -> Carry {
        Carry {
            finder: None,
            listeners: None,
            waits: WaitFiles::keeping(),
        }
    }

    /// What a window of these leaders starts from: what was carried if it
    /// was theirs, else a fresh start with the same room for open files
    /// (a server started again has another pid, and starts afresh).
    fn start_for(self, leaders: &[i32]) -> Start {
        match self.finder {
            Some(finder) if finder.leaders() == leaders => Start {
                finder,
                listeners: self.listeners,
                waits: self.waits,
            },
            _ => Start {
                waits: self.waits.emptied(),
                ..Start::fresh(TreeFinder::sampling(leaders))
            },
        }
    }
}

/// A thread sampling one tree until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(ServerUsage, Carry)>,
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
        Sampler::start_window_carried(
            None,
            leader,
            backend.as_slice(),
            cpus,
            delay,
            None,
            interval,
        )
    }

    /// Samples from `delay` after now for `length` (until stopped when
    /// `None`), and takes its final reading at that end by its own clock:
    /// whatever the caller does after a round's measured end (draining
    /// connections, merging counts) is not in the server's figures. A
    /// 0.1 s slice would otherwise show the server idle for the last few
    /// percent of it. It starts from what the last window of the same
    /// server left ([`Sampler::finish_carried`]), when it was this tree's.
    pub fn start_window_carried(
        carry: Option<Carry>,
        leader: i32,
        behind: &[i32],
        cpus: &[usize],
        delay: Duration,
        length: Option<Duration>,
        interval: Duration,
    ) -> Sampler {
        let leaders: Vec<i32> = std::iter::once(leader)
            .chain(behind.iter().copied())
            .collect();
        let start = match carry {
            Some(c) => c.start_for(&leaders),
            None => Start::fresh(TreeFinder::sampling(&leaders)),
        };
        Sampler::spawn(start, cpus, delay, length, interval)
    }

    /// [`Sampler::start_window_carried`] over the trees a finder found, when the
    /// server was found rather than started (every process holding its
    /// listening socket a leader): the finder's walk of every process, if
    /// recent, is the baseline's, so a server found just before its load
    /// starts is not looked for twice.
    pub fn start_found(
        finder: TreeFinder,
        cpus: &[usize],
        delay: Duration,
        length: Option<Duration>,
        interval: Duration,
    ) -> Sampler {
        Sampler::spawn(Start::fresh(finder), cpus, delay, length, interval)
    }

    fn spawn(
        mut start: Start,
        cpus: &[usize],
        delay: Duration,
        length: Option<Duration>,
        interval: Duration,
    ) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let cpus = cpus.to_vec();
        let handle = std::thread::spawn(move || {
            if !cpus.is_empty() {
                // Best effort: an unpinned sampler only costs accuracy.
                let _ = throng_engine::affinity::pin_current_thread(&cpus);
            }
            let begin = Instant::now() + delay;
            let end = length.map(|l| begin + l);
            // Sleeps end at the next reading, the window's end or the stop,
            // whichever comes first: `finish` wakes the thread as it sets
            // the flag. The sampler shares the load generator's CPU where
            // no other is spare, so it wakes for its readings alone rather
            // than every few milliseconds to look at the flag.
            let wait_until = |t: Instant| {
                while !flag.load(Ordering::Acquire) {
                    let now = Instant::now();
                    if now >= t {
                        break;
                    }
                    std::thread::park_timeout(t - now);
                }
            };
            // Read before the measured part, in the round's warmup, where
            // the cost of reading every thread falls on no measured time.
            let waits = (!delay.is_zero()).then(|| start.waits.read(&start.finder.find()));
            wait_until(begin);
            let mut u = Usage::start_from(start, waits);
            let mut n = 0u32;
            loop {
                // PSS walks every mapping: read it on every fifth sample only.
                u.sample(n.is_multiple_of(5));
                n += 1;
                let next = Instant::now() + interval;
                let next = end.map_or(next, |e| next.min(e));
                wait_until(next);
                if flag.load(Ordering::Acquire) || end.is_some_and(|e| Instant::now() >= e) {
                    break;
                }
            }
            u.finish_carried()
        });
        Sampler { stop, handle }
    }

    pub fn finish(self) -> ServerUsage {
        self.finish_carried().0
    }

    /// [`Sampler::finish`], and what the next window of the same server
    /// may start from; `None` beside an empty usage when the thread died.
    pub fn finish_carried(self) -> (ServerUsage, Option<Carry>) {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        match self.handle.join() {
            Ok((u, c)) => (u, Some(c)),
            Err(_) => (ServerUsage::default(), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{Launch, ServerProcess};

    /// The tests that spin on CPU 0 take turns: each would otherwise be the
    /// other's competitor.
    static CPU0: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn cpu0() -> std::sync::MutexGuard<'static, ()> {
        CPU0.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn a_busy_child_is_counted() {
        let _cpu0 = cpu0();
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
            preload: None,
        };
        let mut p = ServerProcess::spawn(&l).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.tree().len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let outer = Instant::now();
        let s = Sampler::start(p.pid(), &[], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(600));
        let u = s.finish();
        let outer = outer.elapsed().as_secs_f64();
        p.stop(Duration::from_secs(1));
        assert_eq!(u.processes, 2);
        assert_eq!(u.threads, 2);
        // It held its shape throughout, and listened on nothing.
        assert_eq!((u.listeners, u.shape_range), (0, None));
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
        // The window runs from the sampler thread's first reading, a few
        // milliseconds after it was asked for on a busy machine, to the
        // last.
        assert!(
            u.wall_s <= outer && u.wall_s >= 0.5,
            "{} of {outer}",
            u.wall_s
        );
    }

    #[test]
    fn a_tree_that_grows_within_the_round_keeps_its_range() {
        // A server listening, that forks a child (sharing its listener)
        // when told to, and says so; it ends by itself should this test
        // die first.
        let script = "import os, socket, sys, time\n\
            a = socket.socket(); a.bind(('127.0.0.1', 0)); a.listen()\n\
            print('listening', flush=True)\n\
            sys.stdin.readline()\n\
            pid = os.fork()\n\
            if pid == 0:\n    time.sleep(30); os._exit(0)\n\
            print(pid, flush=True)\n\
            time.sleep(30)\n";
        let mut p = crate::forker::Forker::run(script);
        p.line();
        let pid = p.pid();
        let mut u = Usage::start(&[pid]);
        u.sample(true);
        p.go_on();
        let child = p.pid_line();
        let u = u.finish();
        p.end(child);
        let one = Shape {
            processes: 1,
            threads: 1,
            listeners: 1,
        };
        let two = Shape {
            processes: 2,
            threads: 2,
            listeners: 1,
        };
        assert_eq!(u.shape(), two);
        assert_eq!(u.shape_range, Some(ShapeRange { min: one, max: two }));
    }

    #[test]
    fn a_baseline_after_a_fresh_walk_reads_only_the_tree_again() {
        // `throng load` finds the server's tree with one walk of every
        // process, then hands that finder to the sampler: the baseline
        // reads the tree's members (and whatever was born since), not
        // every process again.
        let p = crate::forker::Forker::ready_to_fork();
        let pid = p.pid();
        let mut finder = TreeFinder::sampling(&[pid]);
        assert_eq!(finder.find_all(), vec![pid]);
        let everyone = finder.last_reads;
        let u = Usage::start_from(Start::fresh(finder), None);
        let reads = u.finder.last_reads;
        // A finder that never walked walks every process for its baseline.
        let fresh = Usage::start(&[pid]).finder.last_reads;
        p.stop();
        assert!(everyone > 1, "a full walk read {everyone} stat files");
        assert!(
            reads < everyone && reads < fresh,
            "{reads} stat files read after a walk, {fresh} without one, {everyone} in a full walk"
        );
    }

    #[test]
    fn a_window_starts_from_what_the_last_window_of_its_tree_left() {
        // A level's slices follow one another: the next window of the same
        // server takes the last one's walk of every process, its count of
        // listeners and, on a server host's agent, its threads' open
        // schedstat files, and reads only the tree's own stat at its
        // start; another tree (a server started again) starts afresh.
        let p = crate::forker::Forker::ready_to_fork();
        let pid = p.pid();
        // At home the load's process holds no file between readings.
        let mut home = Usage::start(&[pid]);
        home.sample(true);
        let (_, home) = home.finish_carried();
        let mut u = Usage::start_from(Carry::keeping_files().start_for(&[pid]), None);
        u.sample(true);
        let (usage, carry) = u.finish_carried();
        let everyone = carry.finder.as_ref().map(|f| f.last_reads);
        let held = carry.waits.held();
        let start = carry.start_for(&[pid]);
        let listeners = start.listeners.as_ref().map(|l| l.held);
        let mut next = Usage::start_from(start, None);
        let reads = next.finder.last_reads;
        let opened = next.waits.opened;
        next.sample(false);
        let (_, other) = next.finish_carried();
        let restarted = other.start_for(&[pid, i32::MAX]);
        p.stop();
        assert_eq!(usage.processes, 1);
        assert_eq!(listeners, Some(0), "its count of listeners");
        let everyone = everyone.expect("a finder carried");
        assert!(everyone > 1, "the last reading walked {everyone}");
        assert!(
            reads < everyone,
            "{reads} stat files read at the next start, {everyone} at the last reading"
        );
        assert_eq!(home.waits.held(), 0, "files held at home");
        assert_eq!((held, opened), (1, 0), "its thread's schedstat, kept");
        assert_eq!(restarted.finder.leaders(), &[pid, i32::MAX]);
        assert!(restarted.listeners.is_none(), "another tree took the count");
        assert_eq!(restarted.waits.held(), 0, "another tree took the files");
    }

    #[test]
    fn a_child_forked_mid_round_is_seen_at_the_next_reading() {
        // As above, without a listener: a parent that forks a child when
        // told to.
        let mut p = crate::forker::Forker::ready_to_fork();
        let pid = p.pid();
        let mut u = Usage::start(&[pid]);
        // No full walk falls due within the test: the reading after the
        // fork is one that reads only the tree's and the new processes.
        u.finder = TreeFinder::new(&[pid], Duration::from_secs(3600));
        u.finder.find_all();
        let everyone = u.finder.last_reads;
        u.sample(false);
        assert_eq!((u.usage.processes, u.usage.threads), (1, 1));
        p.go_on();
        let child = p.pid_line();
        u.sample(false);
        let (procs, threads, reads) = (u.usage.processes, u.usage.threads, u.finder.last_reads);
        p.end(child);
        assert_eq!((procs, threads), (2, 2));
        assert!(
            reads < everyone,
            "{reads} stat files read, {everyone} in a full walk"
        );
        let one = Shape {
            processes: 1,
            threads: 1,
            listeners: 0,
        };
        let two = Shape {
            processes: 2,
            threads: 2,
            listeners: 0,
        };
        assert_eq!(u.shapes, Some(ShapeRange { min: one, max: two }));
    }

    #[test]
    fn threads_born_and_gone_within_the_round_are_counted() {
        let _cpu0 = cpu0();
        let dir = tempfile::tempdir().unwrap();
        // A thread per "request", each spinning 5 ms and gone: no reading
        // of the threads ever finds one, as a thread-per-connection server
        // at load. Their CPU was missed, and counted as other processes'.
        let script = "import threading, time\n\
            end = time.time() + 30\n\
            def spin():\n    t = time.time() + 0.005\n    while time.time() < t: pass\n\
            while time.time() < end:\n    th = threading.Thread(target=spin); th.start(); th.join()\n";
        let mut l = spinner(dir.path(), "threads", "");
        l.argv = vec!["/usr/bin/python3".into(), "-c".into(), script.into()];
        let mut p = ServerProcess::spawn(&l).unwrap();
        let ticks = |pid| read_stat(pid).map_or(0, |s| s.utime + s.stime);
        // Python started and spinning: its first ticks are in.
        let deadline = Instant::now() + Duration::from_secs(5);
        while ticks(p.pid()) < 5 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let before = ticks(p.pid());
        let s = Sampler::start(p.pid(), &[], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(800));
        let u = s.finish();
        let after = ticks(p.pid());
        p.stop(Duration::from_secs(1));
        let hz = ticks_per_second();
        let truth = (after - before) as f64 / hz;
        let cpu = u.cpu_user_s + u.cpu_sys_s;
        assert!(truth > 0.2, "the threads ran {truth} s: {u:?}");
        // Inside the ticks' window, and at most a few ticks short of it.
        assert!(
            cpu <= truth + 2.0 / hz && cpu >= truth - 5.0 / hz,
            "{cpu} s counted, {truth} s ran: {u:?}"
        );
    }

    fn spinner(dir: &std::path::Path, name: &str, script: &str) -> Launch {
        Launch {
            name: name.into(),
            argv: ["/bin/sh", "-c", script]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            env: vec![],
            cwd: dir.to_path_buf(),
            cpus: vec![0],
            run_as: None,
            log: dir.join(format!("{name}.log")),
            stop_signal: nix::sys::signal::Signal::SIGKILL,
            preload: None,
        }
    }

    #[test]
    fn a_competitor_on_the_servers_core_shows_as_wait() {
        let _cpu0 = cpu0();
        let dir = tempfile::tempdir().unwrap();
        // The "server": a shell waiting for a spinner, both on CPU 0, the
        // spinner bounded to 30 s should this test die before stopping it.
        let mut server = ServerProcess::spawn(&spinner(
            dir.path(),
            "server",
            "timeout 30 sh -c 'while :; do :; done' & wait",
        ))
        .unwrap();
        // Another process, outside the server's tree, spinning on CPU 0 too.
        let mut rival = ServerProcess::spawn(&spinner(
            dir.path(),
            "rival",
            "exec timeout 30 sh -c 'while :; do :; done'",
        ))
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while (server.tree().len() < 3 || rival.tree().len() < 2) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!server.tree().contains(&rival.pid()));
        let s = Sampler::start(server.pid(), &[], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(1000));
        let u = s.finish();
        rival.stop(Duration::from_secs(1));
        server.stop(Duration::from_secs(1));
        assert_eq!(u.processes, 3, "{u:?}");
        // Two spinners on one CPU: the scheduler gives each about half of
        // it (less if this machine's other work lands on CPU 0 too), and
        // the server's spinner waits in the run queue for the rest.
        let share = |x: f64| x / u.wall_s;
        assert!(u.wall_s >= 1.0, "{u:?}");
        assert!(u.cpu_utilisation() < 0.7, "{u:?}");
        assert!(share(u.runqueue_s) > 0.3, "{u:?}");
        // The rival's time is what CPU 0 ran besides the server.
        assert!(share(u.others_cpu_s) > 0.3, "{u:?}");
        // The whole of CPU 0 is accounted for: the server, the others, and
        // whatever the hypervisor stole (idle is the remainder).
        let accounted = u.cpu_user_s + u.cpu_sys_s + u.others_cpu_s + u.steal_s;
        assert!(accounted <= u.wall_s * 1.05, "{u:?}");
        assert!(accounted > u.wall_s * 0.8, "{u:?}");
    }

    #[test]
    fn the_servers_own_threads_queueing_is_not_a_competitor() {
        let _cpu0 = cpu0();
        let dir = tempfile::tempdir().unwrap();
        // Two spinners of the same tree on CPU 0: a server with more busy
        // workers than cores. They wait for each other, not for anyone else.
        let mut server = ServerProcess::spawn(&spinner(
            dir.path(),
            "server",
            "timeout 30 sh -c 'while :; do :; done' & \
             timeout 30 sh -c 'while :; do :; done' & wait",
        ))
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.tree().len() < 5 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let s = Sampler::start(server.pid(), &[], Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(1000));
        let u = s.finish();
        server.stop(Duration::from_secs(1));
        assert_eq!(u.processes, 5, "{u:?}");
        let share = |x: f64| x / u.wall_s;
        // Each spinner waits whenever the other runs: a whole core's worth
        // of waiting in all, with CPU 0 to the server alone (on a quiet
        // machine: 1.00 s waited, 1.00 s of server CPU, 0.00 s of others).
        // This machine's other work on CPU 0, if any, adds the same to the
        // wait and to the others' CPU, so the wait beyond what others ran
        // is the tree's own queueing, and it is the core's whole time.
        assert!(share(u.runqueue_s) > 0.8, "{u:?}");
        assert!(share(u.runqueue_s - u.others_cpu_s) > 0.8, "{u:?}");
        // And CPU 0's time is the server's, the others', or stolen.
        let accounted = u.cpu_user_s + u.cpu_sys_s + u.others_cpu_s + u.steal_s;
        assert!(accounted <= u.wall_s * 1.05, "{u:?}");
        assert!(accounted > u.wall_s * 0.8, "{u:?}");
    }

    #[test]
    fn cpu_ticks_are_summed_over_the_given_cpus() {
        let stat = "cpu  300 6 90 5000 10 0 7 12 40 0\n\
                    cpu0 100 2 30 2500 5 0 3 4 40 0\n\
                    cpu1 200 4 60 2500 5 0 4 8 0 0\n\
                    intr 12345\n";
        assert_eq!(
            parse_cpu_ticks(stat, &[1]),
            Some(CpuTicks {
                busy: 264,
                steal: 8
            })
        );
        assert_eq!(
            parse_cpu_ticks(stat, &[0, 1]),
            Some(CpuTicks {
                busy: 396,
                steal: 12
            })
        );
        // Not "cpu" (the total) for an empty list, and no guess for a CPU
        // the file does not list.
        assert_eq!(parse_cpu_ticks(stat, &[]), Some(CpuTicks::default()));
        assert_eq!(parse_cpu_ticks(stat, &[2]), None);
        assert_eq!(read_cpu_ticks(&[]), None);
    }

    #[test]
    fn pss_and_stat_of_this_process_read() {
        let me = std::process::id() as i32;
        let s = read_stat(me).unwrap();
        assert!(s.threads >= 1 && s.rss_pages > 0);
        assert!(read_pss(me).unwrap() > 0);
        assert_eq!(read_stat(-5), None);
        let tids = tasks(me);
        assert!(tids.contains(&me), "{tids:?}");
        assert!(read_schedstat(me, me).is_some());
        assert_eq!(read_schedstat(me, -5), None);
        assert!(!tree_cpus(&[me]).is_empty());
    }
}
