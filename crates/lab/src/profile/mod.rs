//! A server's stacks sampled over a diagnostic round: `perf record` on its
//! processes and their threads, call graphs of kernel and user frames,
//! folded and stored compressed with the diagnosis, so a report draws and
//! reads them again anywhere.
//!
//! The event is `cpu-clock`, a software timer: it needs no hardware
//! counters (a VM often exposes none) and a sample stands for a fixed slice
//! of CPU time, so samples times the period is the server's CPU. perf
//! starts with its events disabled and is enabled and disabled over its
//! control pipe, so the window is the round, not perf's setup.

mod control;
pub mod counters;
mod fold;
mod window;

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use base64::Engine as _;
use nix::fcntl::OFlag;
use nix::sys::signal::{kill, Signal};
use nix::unistd::{pipe2, Pid};
use throng_model::{HwCounters, StackProfile};

use control::{acks, ask, wait_within, Unacknowledged, SETUP_WITHIN};
use counters::Counters;
pub use fold::{fold, Folded};
pub use window::{from_server_host, Window};

pub const EVENT: &str = "cpu-clock";
/// 100 µs of a thread's CPU between samples: 10 000 samples a second of a
/// busy CPU, a few thousand over a diagnostic round, cheap enough to leave
/// the round's syscall counts as they were.
pub const PERIOD_NS: u64 = 100_000;
/// How long perf may take to write its data and exit, and `perf script`
/// to read it back (symbols are loaded once per binary).
const STOP_WITHIN: Duration = Duration::from_secs(30);

/// A sampler attached to a server's processes.
pub struct Sampler {
    child: Child,
    commands: File,
    acks: Receiver<String>,
    perf: PathBuf,
    dir: PathBuf,
    cpus: Vec<usize>,
    leaders: Vec<i32>,
    kept: HashSet<i32>,
    started: Instant,
    /// The window's length, once stopped.
    seconds: Option<f64>,
    finished: bool,
    /// The hardware counters' perf stat, or why it could not start.
    counters: Result<Counters, String>,
    /// What it counted, once stopped.
    counted: Option<HwCounters>,
}

/// A program looked up on PATH as a shell would.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl Sampler {
    /// Starts sampling these processes (their threads and the children
    /// they start) with `perf` (None: there is none, and the profile is
    /// absent). Returns once sampling is enabled.
    pub fn start(perf: Option<&Path>, leaders: &[i32]) -> Result<Sampler, String> {
        let tree = throng_servers::usage::trees(leaders);
        if tree.is_empty() {
            return Err(format!("no process of {leaders:?} is running"));
        }
        let list: Vec<String> = tree.iter().map(i32::to_string).collect();
        let cpus = cpus_of(&tree);
        Sampler::spawn(
            perf,
            ["-p".to_string(), list.join(",")],
            leaders,
            tree,
            cpus,
        )
    }

    /// Starts sampling these threads of this process only (a server inside
    /// a test, beside its client).
    pub fn start_threads(perf: Option<&Path>, tids: &[i32]) -> Result<Sampler, String> {
        let list: Vec<String> = tids.iter().map(i32::to_string).collect();
        let me = std::process::id() as i32;
        let cpus = cpus_of(tids);
        Sampler::spawn(
            perf,
            ["-t".to_string(), list.join(",")],
            &[],
            vec![me],
            cpus,
        )
    }

    /// Sampling only the server's own tasks, not its CPUs, keeps `perf
    /// script` from loading the symbols of whatever else ran there (a
    /// compiler's libraries are hundreds of megabytes).
    fn spawn(
        perf: Option<&Path>,
        target: [String; 2],
        leaders: &[i32],
        tree: Vec<i32>,
        cpus: Vec<usize>,
    ) -> Result<Sampler, String> {
        let perf = perf.ok_or("no perf on PATH (Debian package linux-perf)")?;
        let dir = scratch()?;
        let pipe = || pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot make a pipe: {e}"));
        let (ctl_read, ctl_write) = pipe()?;
        let (ack_read, ack_write) = pipe()?;
        let inherited = [ctl_read.as_raw_fd(), ack_write.as_raw_fd()];
        // Started before sampling is enabled, so both windows open together.
        let counters = Counters::start(perf, &target);
        let mut cmd = Command::new(perf);
        // Without BPF side-band events perf record exits in milliseconds
        // rather than 0.4 s on SIGINT; a web server runs no BPF program
        // whose symbols a stack would want.
        cmd.args([
            "record",
            "-q",
            "-g",
            "--no-buildid",
            "--no-bpf-event",
            "-D",
            "-1",
            "-e",
            EVENT,
        ])
        .arg("-c")
        .arg(PERIOD_NS.to_string())
        .args(&target)
        .arg(format!("--control=fd:{},{}", inherited[0], inherited[1]))
        .arg("-o")
        .arg(dir.join("perf.data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        throng_servers::syscalls::hand_to_perf(&mut cmd, inherited);
        let child = cmd.spawn().map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            format!("cannot start perf record: {e}")
        })?;
        drop((ctl_read, ack_write));
        let mut sampler = Sampler {
            child,
            commands: File::from(ctl_write),
            acks: acks(File::from(ack_read)),
            perf: perf.to_path_buf(),
            dir,
            cpus,
            leaders: leaders.to_vec(),
            kept: tree.into_iter().collect(),
            started: Instant::now(),
            seconds: None,
            finished: false,
            counters,
            counted: None,
        };
        sampler.command("enable")?;
        if let Ok(c) = &mut sampler.counters {
            if let Err(e) = c.enable() {
                sampler.counters = Err(e);
            }
        }
        sampler.started = Instant::now();
        Ok(sampler)
    }

    /// Stops sampling, at the end of the window: perf writes its data.
    pub fn stop(&mut self) -> Result<(), String> {
        if self.seconds.is_some() {
            return Ok(());
        }
        self.command("disable")?;
        self.seconds = Some(self.started.elapsed().as_secs_f64());
        let mut counters = std::mem::replace(&mut self.counters, Err(String::new()));
        if let Err(e) = counters.as_mut().map(Counters::disable).unwrap_or(Ok(())) {
            counters = Err(e);
        }
        // A child born during the round is the server's too.
        self.kept
            .extend(throng_servers::usage::trees(&self.leaders));
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT);
        let status = wait_within(&mut self.child, STOP_WITHIN)?;
        self.finished = true;
        // perf record writes its data on SIGINT, then raises it again.
        use std::os::unix::process::ExitStatusExt;
        self.counted = Some(match counters {
            Ok(c) => c.finish(),
            Err(why) => HwCounters {
                absent: Some(why),
                ..HwCounters::default()
            },
        });
        if !status.success() && status.signal() != Some(libc::SIGINT) {
            return Err(format!("perf record ended with {status}"));
        }
        Ok(())
    }

    /// Stops sampling if it has not stopped, and folds what was sampled.
    pub fn finish(mut self) -> Result<StackProfile, String> {
        self.stop()?;
        let seconds = self.seconds.unwrap_or_default();
        let mut child = Command::new(&self.perf)
            .args([
                "script",
                "--no-inline",
                "-F",
                "comm,pid,tid,ip,sym,dso",
                "-i",
            ])
            .arg(self.dir.join("perf.data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start perf script: {e}"))?;
        // Folded as perf script writes, on a thread of its own, so a perf
        // that hangs is killed at the bound and its pipe closes.
        let stdout = child.stdout.take().ok_or("no pipe from perf script")?;
        let kept = self.kept.clone();
        let folding = std::thread::spawn(move || fold(BufReader::new(stdout), &kept));
        let status = match wait_within(&mut child, STOP_WITHIN) {
            Ok(s) => s,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = folding.join();
                return Err(e);
            }
        };
        let folded = folding
            .join()
            .map_err(|_| "folding perf script's output failed".to_string())?
            .map_err(|e| format!("cannot read perf script's output: {e}"))?;
        if !status.success() {
            return Err(format!("perf script ended with {status}"));
        }
        let mut profile = profile_of(&folded, &self.cpus, seconds);
        profile.counters = self.counted.take();
        Ok(profile)
    }

    /// Sends perf a control command and waits for its acknowledgement.
    fn command(&mut self, what: &str) -> Result<(), String> {
        match ask(&mut self.commands, &self.acks, what) {
            Ok(()) => Ok(()),
            Err(Unacknowledged::Answered(a)) => {
                Err(format!("perf record answered {a:?} to {what:?}"))
            }
            Err(Unacknowledged::TimedOut) => Err(format!(
                "perf record did not acknowledge {what:?} within {SETUP_WITHIN:?}"
            )),
            Err(Unacknowledged::Gone) => {
                let how = wait_within(&mut self.child, Duration::from_secs(2))
                    .map_or_else(|e| e, |s| s.to_string());
                self.finished = true;
                Err(format!(
                    "perf record ended before sampling ({how}): not permitted, or no {EVENT} event"
                ))
            }
        }
    }
}

impl Drop for Sampler {
    /// A sampler dropped unfinished (an error, a panic) leaves no perf
    /// behind, and no file.
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The stored profile of what was folded: the stacks compressed.
pub fn profile_of(f: &Folded, cpus: &[usize], seconds: f64) -> StackProfile {
    StackProfile {
        absent: None,
        event: EVENT.to_string(),
        period_ns: PERIOD_NS,
        seconds,
        cpus: cpus.to_vec(),
        samples: f.samples,
        // Without a readable symbol table every kernel frame is an address.
        kernel_symbols: f.kernel_frames_named * 2 > f.kernel_frames,
        user_frames: f.user_frames,
        user_frames_named: f.user_frames_named,
        folded_gz: compress(&f.stacks),
        counters: None,
    }
}

/// Folded lines, gzipped and base64-encoded: a few kilobytes for a server
/// serving one file.
fn compress(stacks: &std::collections::BTreeMap<String, u64>) -> String {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for (stack, n) in stacks {
        // Writing to memory cannot fail.
        let _ = writeln!(gz, "{stack} {n}");
    }
    let bytes = gz.finish().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The CPUs any of these processes may run on.
fn cpus_of(pids: &[i32]) -> Vec<usize> {
    let mut cpus: Vec<usize> = pids
        .iter()
        .filter_map(|&p| nix::sched::sched_getaffinity(Pid::from_raw(p)).ok())
        .flat_map(|set| {
            (0..nix::sched::CpuSet::count()).filter(move |&c| set.is_set(c).unwrap_or(false))
        })
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// A private directory for perf's data, removed with the sampler.
fn scratch() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "throng-profile-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_perf_the_profile_is_absent_and_says_why() {
        let why = Sampler::start(None, &[std::process::id() as i32])
            .err()
            .expect("no sampler without perf");
        assert_eq!(why, "no perf on PATH (Debian package linux-perf)");
        let p = StackProfile::absent(why);
        assert_eq!(p.cpu_us_per_request(1000), None);
        assert!(p.folded_gz.is_empty());
    }
}
