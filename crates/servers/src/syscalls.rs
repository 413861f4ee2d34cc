//! Counting a server's syscalls during a window: what one request costs
//! the live server, counted over a diagnostic round of its own so the
//! counting never slows the measured rounds.
//!
//! `perf stat` counts the kernel's syscall tracepoints without stopping the
//! server. It is started with its counters disabled and enabled over its
//! control pipe, so the window is exactly what [`Counter::attach`] and
//! [`Counter::finish`] bracket, not perf's own setup and teardown. It
//! counts the server's processes moved into a cgroup of their own
//! ([`crate::cgroup`]), a counter per CPU and event; where that cannot be
//! (no cgroup2 hierarchy, or perf cannot filter by it), each of their
//! threads, a counter per thread and event. Where perf cannot count (not
//! installed, no tracefs, no permission), `strace -c` can, at the price of
//! stopping the server at every syscall: its counts hold, but it slows the
//! server and adds context switches of its own.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::sys::resource::{getrlimit, Resource};
use nix::sys::signal::{kill, Signal};
use nix::unistd::{pipe2, Pid};

use crate::cgroup::Group;
use crate::recipe::find_on_path;
use crate::usage::{tasks, trees};

/// How long perf may take to enable or disable its counters and strace to
/// attach. Measured here with the list below: perf acknowledges `enable`
/// 25-75 ms after it starts for a server of a few threads and about 0.5 s
/// for Apache's threaded MPMs (19 events on each of ~1000 threads), since
/// it opens every counter first; strace attaches in 10-110 ms.
const SETUP_WITHIN: Duration = Duration::from_secs(10);
/// How long either tool may take to exit after SIGINT. perf takes about
/// 35 ms per event here to close its counters on threads (0.9-1.8 s); that
/// is after the window has closed, so it delays the lab, not the counts.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// The syscalls web servers make per request serving files and proxying,
/// by tracepoint name and the name strace (and the man pages) give them,
/// the ones servers here make on every request first. Each event costs
/// perf about 35 ms at its exit, whatever the threads or CPUs it counts
/// on: the kernel waits out a grace period when a tracepoint's last
/// counter closes, one tracepoint at a time. So the list stops at 24,
/// within the diagnostic window's 2 s a step; syscalls no server here makes
/// per request (sendto, ppoll, lseek, nanosleep...) are left to the total.
/// Counting per thread, perf needs a descriptor per event and thread, and a
/// server with more threads than the descriptor limit allows for the whole
/// list (Apache's threaded MPMs run a thousand) gets the head of it; the
/// first 18 cover Apache's.
const SYSCALLS: &[(&str, &str)] = &[
    ("read", "read"),
    ("write", "write"),
    ("writev", "writev"),
    ("sendfile64", "sendfile"),
    ("openat", "openat"),
    ("close", "close"),
    ("newfstatat", "newfstatat"),
    ("accept4", "accept4"),
    ("epoll_wait", "epoll_wait"),
    ("epoll_ctl", "epoll_ctl"),
    ("futex", "futex"),
    ("poll", "poll"),
    ("fcntl", "fcntl"),
    ("mmap", "mmap"),
    ("munmap", "munmap"),
    ("shutdown", "shutdown"),
    ("pread64", "pread64"),
    ("recvfrom", "recvfrom"),
    ("setsockopt", "setsockopt"),
    ("getsockname", "getsockname"),
    ("newfstat", "fstat"),
    ("statx", "statx"),
    ("epoll_pwait", "epoll_pwait"),
    ("recvmsg", "recvmsg"),
];

/// Every syscall entry, named or not: the total the named ones are part of.
const TOTAL_EVENT: &str = "raw_syscalls:sys_enter";
const SYSCALL_EVENT: &str = "syscalls:sys_enter_";

/// The program that counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// perf stat on the server's cgroup.
    PerfCgroup,
    /// perf stat on each of the server's threads.
    Perf,
    Strace,
}

impl Tool {
    /// As stored with a diagnosis.
    pub fn name(self) -> &'static str {
        match self {
            Tool::PerfCgroup => "perf stat (cgroup)",
            Tool::Perf => "perf stat",
            Tool::Strace => "strace",
        }
    }
}

/// What was counted in the window. Serialisable: a server host's agent
/// counts where its server runs and sends the counts back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub tool: String,
    /// perf: every syscall of the list it counted, zeros included (only
    /// the head of the list for a server of many threads); strace: every
    /// syscall it saw.
    pub by_name: BTreeMap<String, u64>,
    /// Every syscall, named or not.
    pub total: Option<u64>,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// perf's control pipe: commands in, acknowledgements out.
struct Control {
    commands: File,
    acks: Receiver<String>,
}

/// Context switches of each thread, voluntary and not.
type Switches = HashMap<i32, (u64, u64)>;

/// A counting tool attached to a server's processes.
pub struct Counter {
    tool: Tool,
    child: Child,
    /// The tool's stderr, line by line: its messages and, at its exit,
    /// its counts.
    output: Receiver<String>,
    control: Option<Control>,
    /// The group perf counts, released once perf has ended.
    group: Option<Group>,
    pids: Vec<i32>,
    switches: Switches,
    /// The context switches over the window, once stopped.
    switched: Option<(u64, u64)>,
    finished: bool,
}

impl Counter {
    /// Starts counting the syscalls of these processes (and their threads
    /// and children) by name, with perf on their cgroup, on their threads,
    /// or else strace. Returns once counting is enabled.
    pub fn attach(pids: &[i32]) -> Result<Counter, String> {
        if trees(pids).is_empty() {
            return Err(format!("cannot count syscalls: {}", none_running(pids)));
        }
        Counter::attach_using(pids, Tool::PerfCgroup)
            .or_else(|_| Counter::attach_using(pids, Tool::Perf))
            .or_else(|perf| {
                Counter::attach_using(pids, Tool::Strace).map_err(|strace| {
                    format!("cannot count syscalls: perf stat: {perf}; strace: {strace}")
                })
            })
    }

    /// The cgroup perf counts, from the hierarchy's root, while counting
    /// by cgroup: a sampler may watch the same group.
    pub fn group(&self) -> Option<&str> {
        self.group.as_ref().map(Group::name)
    }

    /// [`Counter::attach`] with one tool only.
    pub fn attach_using(pids: &[i32], tool: Tool) -> Result<Counter, String> {
        // Both tools follow children born while they count, not the ones
        // that exist already: those are named too.
        let all = trees(pids);
        if all.is_empty() {
            return Err(none_running(pids));
        }
        let mut counter = match tool {
            Tool::PerfCgroup => Counter::perf_cgroup(&all)?,
            Tool::Perf => Counter::perf(&all)?,
            Tool::Strace => Counter::strace(&all)?,
        };
        counter.switches = switches(&all);
        Ok(counter)
    }

    /// perf stat on every CPU, counting only the group's tasks: the
    /// processes are moved into it first, and perf's events are then
    /// opened per CPU, not per thread.
    fn perf_cgroup(pids: &[i32]) -> Result<Counter, String> {
        let group = Group::enclose(pids)?;
        // SAFETY: sysconf reads a constant of the system.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
        let target = ["-a".to_string(), "-G".to_string(), group.name().to_string()];
        let mut counter = Counter::perf_on(Tool::PerfCgroup, pids, cpus, &target)?;
        counter.group = Some(group);
        Ok(counter)
    }

    fn perf(pids: &[i32]) -> Result<Counter, String> {
        let threads: usize = pids.iter().map(|&p| tasks(p).len()).sum();
        let list: Vec<String> = pids.iter().map(i32::to_string).collect();
        let target = ["-p".to_string(), list.join(",")];
        Counter::perf_on(Tool::Perf, pids, threads, &target)
    }

    /// perf stat on `target`, which opens `per_event` descriptors for each
    /// event; `-G` must follow the events it filters.
    fn perf_on(
        tool: Tool,
        pids: &[i32],
        per_event: usize,
        target: &[String],
    ) -> Result<Counter, String> {
        let program = find_on_path("perf").ok_or("no perf on PATH (Debian package linux-perf)")?;
        let (_, fds) = getrlimit(Resource::RLIMIT_NOFILE)
            .map_err(|e| format!("cannot read the descriptor limit: {e}"))?;
        let events = perf_events(per_event, fds)?;
        let pipe = || pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot make a pipe: {e}"));
        let (ctl_read, ctl_write) = pipe()?;
        let (ack_read, ack_write) = pipe()?;
        let inherited = [ctl_read.as_raw_fd(), ack_write.as_raw_fd()];
        let mut cmd = Command::new(program);
        cmd.args(["stat", "-x,", "--no-big-num", "--inherit", "--delay=-1"])
            .arg(format!("--control=fd:{},{}", inherited[0], inherited[1]))
            .arg("-e")
            .arg(events.join(","))
            .args(target);
        hand_to_perf(&mut cmd, inherited);
        let mut counter = Counter::spawn(tool, cmd, pids)?;
        // perf's ends are perf's alone now: its exit must close the pipes.
        drop((ctl_read, ack_write));
        counter.control = Some(Control {
            commands: File::from(ctl_write),
            acks: lines(File::from(ack_read)),
        });
        counter.command("enable")?;
        Ok(counter)
    }

    fn strace(pids: &[i32]) -> Result<Counter, String> {
        let program = find_on_path("strace").ok_or("no strace on PATH (Debian package strace)")?;
        let mut cmd = Command::new(program);
        cmd.args(["-c", "-f"]);
        for p in pids {
            cmd.arg("-p").arg(p.to_string());
        }
        let mut counter = Counter::spawn(Tool::Strace, cmd, pids)?;
        counter.await_attached()?;
        Ok(counter)
    }

    fn spawn(tool: Tool, mut cmd: Command, pids: &[i32]) -> Result<Counter, String> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", tool.name()))?;
        let stderr = child.stderr.take().ok_or("no stderr pipe")?;
        Ok(Counter {
            tool,
            child,
            output: lines(stderr),
            control: None,
            group: None,
            pids: pids.to_vec(),
            switches: Switches::new(),
            switched: None,
            finished: false,
        })
    }

    /// Sends perf a control command and waits for its acknowledgement.
    fn command(&mut self, what: &str) -> Result<(), String> {
        let control = self.control.as_mut().ok_or("no control pipe")?;
        let sent = writeln!(control.commands, "{what}");
        let ack = match sent {
            Ok(()) => control.acks.recv_timeout(SETUP_WITHIN),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        match ack {
            // perf ends its acknowledgement with a NUL.
            Ok(a) if a.trim_matches(|c: char| c == '\0' || c.is_whitespace()) == "ack" => Ok(()),
            Ok(a) => Err(format!("perf stat answered {a:?} to {what:?}")),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "perf stat did not acknowledge {what:?} within {SETUP_WITHIN:?}"
            )),
            Err(RecvTimeoutError::Disconnected) => Err(self.died()),
        }
    }

    /// Waits until strace has reported every process attached.
    fn await_attached(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + SETUP_WITHIN;
        let mut pending: HashSet<i32> = self.pids.iter().copied().collect();
        while !pending.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(line) if line.contains("attach: ") => return Err(line),
                Ok(line) => {
                    if let Some(pid) = attached_pid(&line) {
                        pending.remove(&pid);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "strace did not attach to {pending:?} within {SETUP_WITHIN:?}"
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.died()),
            }
        }
        Ok(())
    }

    /// Closes the window: perf stops counting (strace counts until it is
    /// ended). perf then spends its exit closing its counters, a wait
    /// for the kernel (a grace period per tracepoint) that
    /// [`Counter::finish`] may do while something else runs.
    pub fn stop(&mut self) -> Result<(), String> {
        if self.switched.is_some() {
            return Ok(());
        }
        if self.tool != Tool::Strace {
            self.command("disable")?;
        }
        let now = switches(&trees(&self.pids));
        self.switched = Some(switch_delta(&self.switches, &now));
        Ok(())
    }

    /// Stops counting if it has not stopped, and returns what was counted.
    pub fn finish(mut self) -> Result<Counts, String> {
        self.stop()?;
        let (voluntary_switches, involuntary_switches) = self.switched.unwrap_or_default();
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT);
        if !self.exited_within(STOP_WITHIN) {
            return Err(format!(
                "{} did not stop within {STOP_WITHIN:?}",
                self.tool.name()
            ));
        }
        self.finished = true;
        if let Some(group) = self.group.take() {
            group.release()?;
        }
        let output = collect(&self.output, Instant::now() + STOP_WITHIN);
        let (by_name, total) = match self.tool {
            Tool::Perf | Tool::PerfCgroup => parse_perf(&output),
            Tool::Strace => parse_strace(&output),
        };
        if total.is_none() {
            return Err(format!(
                "{} printed no counts: {}",
                self.tool.name(),
                gist(&output)
            ));
        }
        Ok(Counts {
            tool: self.tool.name().to_string(),
            by_name,
            total,
            voluntary_switches,
            involuntary_switches,
        })
    }

    fn exited_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Why the tool ended before it was told to: its exit and first words.
    fn died(&mut self) -> String {
        let status = match self.exited_within(Duration::from_secs(2)) {
            true => self.child.try_wait().ok().flatten().map(|s| s.to_string()),
            false => None,
        };
        let output = collect(&self.output, Instant::now() + Duration::from_secs(1));
        format!(
            "{} ended ({}): {}",
            self.tool.name(),
            status.unwrap_or_else(|| "still running".to_string()),
            gist(&output)
        )
    }
}

impl Drop for Counter {
    /// A counter dropped unfinished (an error, a panic) leaves no tool
    /// attached to the server.
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn none_running(pids: &[i32]) -> String {
    format!("no process of {pids:?} is running")
}

/// Descriptors perf keeps for itself beyond its counters.
const PERF_OWN_FDS: u64 = 64;

/// Where the kernel's tracepoints are. tracefs is mounted on demand: perf
/// mounts it itself the first time it needs it, so a machine on which
/// nothing has traced yet has an empty /sys/kernel/tracing. As perf does,
/// it is mounted there then (root only; otherwise the directory stays
/// empty and perf is not used).
fn tracepoints() -> Option<&'static Path> {
    const ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    let found = || {
        ROOTS
            .into_iter()
            .map(Path::new)
            .find(|d| d.join("events/raw_syscalls/sys_enter").is_dir())
    };
    found().or_else(|| {
        // SAFETY: mount(2) with valid NUL-terminated strings and no data;
        // it changes nothing but the mount table, and fails harmlessly.
        unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                c"/sys/kernel/tracing".as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        found()
    })
}

/// The events perf counts: the total, and as many of the listed syscalls
/// this kernel has tracepoints for as `fds` descriptors allow over
/// `threads` threads.
fn perf_events(threads: usize, fds: u64) -> Result<Vec<String>, String> {
    let per_thread = fds.saturating_sub(PERF_OWN_FDS) / threads.max(1) as u64;
    if per_thread < 2 {
        return Err(format!(
            "{threads} threads are too many for {fds} descriptors (one per thread and event)"
        ));
    }
    let root = tracepoints().ok_or(
        "no syscall tracepoints under /sys/kernel/tracing (tracefs not mounted or not readable)",
    )?;
    let mut events: Vec<String> = SYSCALLS
        .iter()
        .filter(|(tp, _)| {
            root.join(format!("events/syscalls/sys_enter_{tp}"))
                .is_dir()
        })
        .map(|(tp, _)| format!("{SYSCALL_EVENT}{tp}"))
        .take(per_thread as usize - 1)
        .collect();
    events.push(TOTAL_EVENT.to_string());
    Ok(events)
}

/// perf's CSV (`count,unit,event,...`): counts by syscall name, and the
/// total. A counter that never fired reads `<not counted>`.
fn parse_perf(output: &[String]) -> (BTreeMap<String, u64>, Option<u64>) {
    let mut by_name = BTreeMap::new();
    let mut total = None;
    for line in output {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(count), Some(event)) = (f.first(), f.get(2)) else {
            continue;
        };
        let count = match count.trim().parse::<u64>() {
            Ok(n) => n,
            Err(_) if count.contains("not counted") => 0,
            Err(_) => continue,
        };
        if *event == TOTAL_EVENT {
            total = Some(count);
        } else if let Some(tp) = event.strip_prefix(SYSCALL_EVENT) {
            let name = SYSCALLS
                .iter()
                .find(|(t, _)| *t == tp)
                .map_or(tp, |(_, n)| n);
            by_name.insert(name.to_string(), count);
        }
    }
    (by_name, total)
}

/// strace's summary table (`% time seconds usecs/call calls [errors]
/// syscall`): calls by name, and its `total` row.
fn parse_strace(output: &[String]) -> (BTreeMap<String, u64>, Option<u64>) {
    let mut by_name = BTreeMap::new();
    let mut total = None;
    for line in output {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 || f[0].parse::<f64>().is_err() {
            continue;
        }
        let (Ok(calls), Some(name)) = (f[3].parse::<u64>(), f.last()) else {
            continue;
        };
        if *name == "total" {
            total = Some(calls);
        } else {
            by_name.insert(name.to_string(), calls);
        }
    }
    (by_name, total)
}

/// The pid of strace's "<argv0>: Process 123 attached[ with 4 threads]".
fn attached_pid(line: &str) -> Option<i32> {
    let rest = &line[line.find(": Process ")? + ": Process ".len()..];
    let (pid, what) = rest.split_once(' ')?;
    what.starts_with("attached").then(|| pid.parse().ok())?
}

/// Context switches of every thread of `pids`.
fn switches(pids: &[i32]) -> Switches {
    let mut all = Switches::new();
    for &pid in pids {
        for tid in tasks(pid) {
            let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")) else {
                continue;
            };
            let field = |key: &str| {
                s.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            all.insert(
                tid,
                (
                    field("voluntary_ctxt_switches:"),
                    field("nonvoluntary_ctxt_switches:"),
                ),
            );
        }
    }
    all
}

/// Switches since `before`: a thread born since counts from zero; one gone
/// since is lost with its last switches.
fn switch_delta(before: &Switches, now: &Switches) -> (u64, u64) {
    now.iter().fold((0, 0), |(v, nv), (tid, (v1, nv1))| {
        let (v0, nv0) = before.get(tid).copied().unwrap_or((0, 0));
        (v + v1.saturating_sub(v0), nv + nv1.saturating_sub(nv0))
    })
}

/// The lines of `r` as they come, until it ends.
fn lines<R: Read + Send + 'static>(r: R) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Every line still to come, until the writer ends or `deadline` passes.
fn collect(rx: &Receiver<String>, deadline: Instant) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        out.push(line);
    }
    out
}

/// The first informative line of a tool's output, for an error in one line.
fn gist(output: &[String]) -> String {
    output
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.eq_ignore_ascii_case("error:"))
        .unwrap_or("no output")
        .to_string()
}

/// Makes `cmd`, a perf command, inherit `inherited` (its control pipe's
/// read end and its acknowledgement pipe's write end, for `--control=fd`)
/// and raise its open-file limit to the hard one, since perf opens a
/// descriptor per event, thread and CPU.
pub fn hand_to_perf(cmd: &mut Command, inherited: [std::os::fd::RawFd; 2]) {
    // SAFETY: only fcntl, getrlimit and setrlimit, which are
    // async-signal-safe, run between fork and exec, on descriptors the
    // parent keeps open until the spawn.
    unsafe {
        cmd.pre_exec(move || {
            for fd in inherited {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    const OPENS: usize = 1000;
    const WITHIN: Duration = Duration::from_secs(10);

    /// A forked child that, told to go by a newline on its pipe, opens and
    /// closes /dev/null exactly [`OPENS`] times with no other syscall in
    /// between (or, `forking`, has a child it forks then do so and waits
    /// for it), says "done" and waits for its pipe to close. Forked rather
    /// than a program started, so no runtime of its own adds opens.
    struct Opener {
        pid: i32,
        go: Option<File>,
        said: Receiver<String>,
    }

    impl Opener {
        fn start(forking: bool) -> Opener {
            let path = CString::new("/dev/null").unwrap();
            let (go_read, go_write) = pipe2(OFlag::O_CLOEXEC).unwrap();
            let (said_read, said_write) = pipe2(OFlag::O_CLOEXEC).unwrap();
            let fds = [
                go_read.as_raw_fd(),
                go_write.as_raw_fd(),
                said_read.as_raw_fd(),
                said_write.as_raw_fd(),
            ];
            // SAFETY: the child makes raw syscalls only (no allocation, no
            // locks, no destructors) and leaves through _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                // SAFETY: as above; every pointer is to live memory.
                unsafe {
                    let [go_r, go_w, said_r, said_w] = fds;
                    let mut b = 0u8;
                    let byte: *mut libc::c_void = (&mut b as *mut u8).cast();
                    libc::close(go_w);
                    libc::close(said_r);
                    libc::write(said_w, b"ready\n".as_ptr().cast(), 6);
                    while libc::read(go_r, byte, 1) == 1 && b != b'\n' {}
                    let child = if forking { libc::fork() } else { 0 };
                    if child == 0 {
                        for _ in 0..OPENS {
                            libc::close(libc::open(path.as_ptr(), libc::O_RDONLY));
                        }
                        if forking {
                            libc::_exit(0);
                        }
                    } else {
                        libc::waitpid(child, std::ptr::null_mut(), 0);
                    }
                    libc::write(said_w, b"done\n".as_ptr().cast(), 5);
                    while libc::read(go_r, byte, 1) == 1 {}
                    libc::_exit(0);
                }
            }
            drop((go_read, said_write));
            let said = lines(File::from(said_read));
            assert_eq!(said.recv_timeout(WITHIN).as_deref(), Ok("ready"));
            Opener {
                pid,
                go: Some(File::from(go_write)),
                said,
            }
        }

        /// Lets it open and close, and waits until it has.
        fn run(&mut self) {
            writeln!(self.go.as_mut().unwrap()).unwrap();
            assert_eq!(self.said.recv_timeout(WITHIN).as_deref(), Ok("done"));
        }
    }

    impl Drop for Opener {
        fn drop(&mut self) {
            drop(self.go.take());
            let _ = kill(Pid::from_raw(self.pid), Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(Pid::from_raw(self.pid), None);
        }
    }

    /// Counts the opener's window with `tool`; `None` (after saying why)
    /// where the tool is not installed.
    fn count_opens(tool: Tool, forking: bool) -> Option<Counts> {
        let program = match tool {
            Tool::Perf | Tool::PerfCgroup => "perf",
            Tool::Strace => "strace",
        };
        if find_on_path(program).is_none() {
            eprintln!("skipped: no {program} on PATH");
            return None;
        }
        if tool == Tool::PerfCgroup && !crate::cgroup::writable() {
            eprintln!("skipped: no writable cgroup2 hierarchy");
            return None;
        }
        let mut opener = Opener::start(forking);
        let started = Instant::now();
        let counter = Counter::attach_using(&[opener.pid], tool).unwrap();
        eprintln!("{} attached in {:?}", tool.name(), started.elapsed());
        opener.run();
        let started = Instant::now();
        let counts = counter.finish().unwrap();
        eprintln!("{} finished in {:?}", tool.name(), started.elapsed());
        Some(counts)
    }

    #[test]
    fn perf_counts_exactly_the_syscalls_made_in_the_window() {
        let Some(c) = count_opens(Tool::Perf, false) else {
            return;
        };
        assert_eq!(c.tool, "perf stat");
        assert_eq!(c.by_name["openat"], OPENS as u64);
        assert_eq!(c.by_name["close"], OPENS as u64);
        assert_eq!(c.by_name["write"], 1);
        // The read that waits for the pipe to close may have begun before
        // counting stopped, or not.
        assert!(c.by_name["read"] <= 1, "{c:?}");
        let named: u64 = c.by_name.values().sum();
        assert_eq!(c.total, Some(named), "{c:?}");
        // Every listed syscall with a tracepoint is there, zeros included.
        assert_eq!(c.by_name["sendfile"], 0);
        assert_eq!(c.by_name.len(), perf_events(1, 1 << 20).unwrap().len() - 1);
    }

    #[test]
    fn by_cgroup_perf_counts_what_it_counts_by_thread() {
        let (Some(threads), Some(group)) = (
            count_opens(Tool::Perf, false),
            count_opens(Tool::PerfCgroup, false),
        ) else {
            return;
        };
        assert_eq!(group.tool, "perf stat (cgroup)");
        assert_eq!(group.by_name["openat"], OPENS as u64);
        assert_eq!(group.by_name["close"], OPENS as u64);
        assert_eq!(group.by_name["write"], 1);
        assert_eq!(group.total, Some(group.by_name.values().sum()), "{group:?}");
        // The same syscalls, zeros included, but for the read that may have
        // begun before counting stopped.
        let but_read = |c: &Counts| {
            let mut m = c.by_name.clone();
            m.remove("read");
            m
        };
        assert_eq!(but_read(&group), but_read(&threads));
    }

    #[test]
    fn by_cgroup_perf_counts_a_child_born_in_the_window() {
        let Some(c) = count_opens(Tool::PerfCgroup, true) else {
            return;
        };
        assert_eq!(c.by_name["openat"], OPENS as u64);
        assert_eq!(c.by_name["close"], OPENS as u64);
        assert_eq!(c.by_name["write"], 1);
        // The fork, the wait and the child's exit are not listed.
        assert!(c.total > Some(c.by_name.values().sum()), "{c:?}");
    }

    #[test]
    fn the_cgroup_is_gone_and_the_process_home_after_counting() {
        if find_on_path("perf").is_none() || !crate::cgroup::writable() {
            eprintln!("skipped: no perf, or no writable cgroup2 hierarchy");
            return;
        }
        let cgroup = |pid: i32| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        let opener = Opener::start(false);
        let home = cgroup(opener.pid);
        let finished = Counter::attach_using(&[opener.pid], Tool::PerfCgroup).unwrap();
        let dir = crate::cgroup::mount()
            .unwrap()
            .join(finished.group().unwrap());
        assert!(dir.is_dir());
        assert_ne!(cgroup(opener.pid), home);
        finished.finish().unwrap();
        assert!(!dir.exists());
        assert_eq!(cgroup(opener.pid), home);
        // Dropped unfinished, as on an error.
        let dropped = Counter::attach_using(&[opener.pid], Tool::PerfCgroup).unwrap();
        let dir = crate::cgroup::mount()
            .unwrap()
            .join(dropped.group().unwrap());
        drop(dropped);
        assert!(!dir.exists());
        assert_eq!(cgroup(opener.pid), home);
    }

    #[test]
    fn strace_counts_the_same_window() {
        let Some(c) = count_opens(Tool::Strace, false) else {
            return;
        };
        assert_eq!(c.tool, "strace");
        assert_eq!(c.by_name["openat"], OPENS as u64);
        assert_eq!(c.by_name["close"], OPENS as u64);
        assert_eq!(c.by_name["write"], 1);
        assert_eq!(c.total, Some(c.by_name.values().sum()));
    }

    #[test]
    fn a_process_that_is_gone_cannot_be_counted() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert_eq!(
            Counter::attach(&[pid]).err().unwrap(),
            format!("cannot count syscalls: no process of [{pid}] is running")
        );
        assert_eq!(
            Counter::attach(&[]).err().unwrap(),
            "cannot count syscalls: no process of [] is running"
        );
    }

    #[test]
    fn perf_csv_and_strace_tables_are_read() {
        let perf: Vec<String> = [
            "Events enabled",
            "1000,,syscalls:sys_enter_openat,2000,100.00,,",
            "<not counted>,,syscalls:sys_enter_sendfile64,0,100.00,,",
            "12,,syscalls:sys_enter_newfstat,2000,100.00,,",
            "<not supported>,,syscalls:sys_enter_nope,0,100.00,,",
            "1020,,raw_syscalls:sys_enter,2000,100.00,,",
        ]
        .map(String::from)
        .to_vec();
        let (by_name, total) = parse_perf(&perf);
        let want: BTreeMap<String, u64> = [("openat", 1000), ("sendfile", 0), ("fstat", 12)]
            .map(|(n, c)| (n.to_string(), c))
            .into();
        assert_eq!((by_name, total), (want, Some(1020)));
        let strace: Vec<String> = [
            "strace: Process 7 detached",
            "% time     seconds  usecs/call     calls    errors syscall",
            "------ ----------- ----------- --------- --------- ----------------",
            " 52.94    0.000018           0      1000           openat",
            " 47.06    0.000016           0      1000         3 close",
            "------ ----------- ----------- --------- --------- ----------------",
            "100.00    0.000034           0      2000         3 total",
        ]
        .map(String::from)
        .to_vec();
        let (by_name, total) = parse_strace(&strace);
        assert_eq!(by_name.len(), 2);
        assert_eq!((by_name["close"], total), (1000, Some(2000)));
        assert_eq!(
            attached_pid("/usr/bin/strace: Process 12 attached with 3 threads"),
            Some(12)
        );
        assert_eq!(attached_pid("strace: Process 12 detached"), None);
    }

    #[test]
    fn many_threads_get_the_head_of_the_list_within_the_descriptor_limit() {
        let Ok(all) = perf_events(1, 1 << 20) else {
            eprintln!("skipped: no syscall tracepoints");
            return;
        };
        assert_eq!(all.last().map(String::as_str), Some(TOTAL_EVENT));
        // 1000 threads and 20000 descriptors: 19 events a thread.
        let some = perf_events(1000, 20_000).unwrap();
        assert_eq!(some.len(), 19);
        assert_eq!(some[..18], all[..18]);
        assert_eq!(some[18], TOTAL_EVENT);
        let e = perf_events(20_000, 20_000).unwrap_err();
        assert_eq!(
            e,
            "20000 threads are too many for 20000 descriptors (one per thread and event)"
        );
    }

    #[test]
    fn switches_count_new_threads_from_zero() {
        let before: Switches = [(1, (10, 2)), (2, (5, 5))].into();
        let now: Switches = [(1, (15, 3)), (3, (4, 1))].into();
        // Thread 1: 5 and 1 more; thread 3 is new; thread 2 is gone.
        assert_eq!(switch_delta(&before, &now), (9, 2));
        let mine = switches(&[std::process::id() as i32]);
        assert!(!mine.is_empty());
    }
}
