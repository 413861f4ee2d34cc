//! Server processes: started in their own process group, pinned to their
//! cores before exec (so every child inherits the mask), optionally as an
//! unprivileged user, and always stopped: by `stop`, by `Drop` on errors and
//! panics, and by the interrupt handler through the registry of live groups.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sched::sched_setaffinity;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{Gid, Pid, Uid};

/// Process groups of servers that are running, with their tags, for the
/// interrupt handler.
static LIVE_GROUPS: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

/// Names each server's processes in their environment (see `TAG`).
static NEXT_TAG: AtomicU64 = AtomicU64::new(0);

/// The environment variable that marks a server's processes. A server that
/// puts itself in the background (fork, setsid, fork again) leaves both
/// its process group and its parent's tree, and kept serving, and holding
/// its port, after the lab had stopped it; its environment goes with it.
pub const TAG: &str = "THRONG_SERVER";

/// Kills every server group still registered, and every process carrying
/// its tag. Safe to call from any thread.
pub fn kill_all_servers() {
    let groups = LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for (g, tag) in groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
        for p in tagged(&tag) {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
    }
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Launch {
    pub name: String,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub cpus: Vec<usize>,
    /// Start as this user (root only).
    pub run_as: Option<RunAs>,
    /// stdout and stderr go here.
    pub log: PathBuf,
    pub stop_signal: Signal,
    /// A shared object the process loads before its own (`LD_PRELOAD`):
    /// the futex-hash shim of `crate::futex`.
    pub preload: Option<PathBuf>,
}

#[derive(Debug)]
pub struct ServerProcess {
    pub name: String,
    child: Child,
    pid: i32,
    log: PathBuf,
    stop_signal: Signal,
    stopped: bool,
    /// This server's value of `TAG`.
    tag: String,
}

impl ServerProcess {
    pub fn spawn(l: &Launch) -> anyhow::Result<ServerProcess> {
        let (prog, args) = l.argv.split_first().context("empty command")?;
        let log = File::create(&l.log).with_context(|| format!("creating {}", l.log.display()))?;
        let log2 = log.try_clone()?;
        let tag = format!(
            "{}.{}",
            std::process::id(),
            NEXT_TAG.fetch_add(1, Ordering::Relaxed)
        );
        let mut cmd = Command::new(prog);
        cmd.args(args)
            .envs(l.env.iter().map(|(k, v)| (k, v)))
            .env(TAG, &tag)
            .current_dir(&l.cwd)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        if let Some(p) = &l.preload {
            cmd.env("LD_PRELOAD", p);
        }
        let set = throng_engine::affinity::cpu_set(&l.cpus)?;
        let cpus_empty = l.cpus.is_empty();
        let run_as = l.run_as.as_ref().map(|u| (u.uid, u.gid));
        // SAFETY: between fork and exec only async-signal-safe calls are made
        // (setpgid, sched_setaffinity, setgroups, setgid, setuid), on values
        // prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if !cpus_empty {
                    sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)?;
                }
                if let Some((uid, gid)) = run_as {
                    let groups = [gid as libc::gid_t];
                    if libc::setgroups(1, groups.as_ptr()) != 0
                        || libc::setgid(gid as libc::gid_t) != 0
                        || libc::setuid(uid as libc::uid_t) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}: {}", l.name, l.argv.join(" ")))?;
        let pid = child.id() as i32;
        if let Ok(mut g) = LIVE_GROUPS.lock() {
            g.push((pid, tag.clone()));
        }
        Ok(ServerProcess {
            name: l.name.clone(),
            child,
            pid,
            log: l.log.clone(),
            stop_signal: l.stop_signal,
            stopped: false,
            tag,
        })
    }

    /// Process id of the group leader (also the process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// `None` while running; the exit description once it has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot wait: {e}")),
        }
    }

    /// Every process of the server: its group, the leader's descendants,
    /// and whatever carries its tag (a server gone to the background).
    pub fn tree(&self) -> Vec<i32> {
        // A process of the server inherits the tag: what the tag finds
        // needs no tree of its own.
        let mut all: BTreeSet<i32> = process_tree(self.pid).into_iter().collect();
        all.extend(tagged(&self.tag));
        all.into_iter().collect()
    }

    /// The last `lines` lines of the server's output and error logs.
    pub fn log_tail(&self, extra: &[PathBuf], lines: usize) -> String {
        let mut out = String::new();
        let mut silent = Vec::new();
        for p in std::iter::once(&self.log).chain(extra) {
            let t = tail(p, lines);
            if t.is_empty() {
                silent.push(p.display().to_string());
            } else {
                out.push_str(&format!("==> {} <==\n{t}", p.display()));
            }
        }
        if !silent.is_empty() {
            out.push_str(&format!("(nothing written to {})\n", silent.join(", ")));
        }
        out
    }

    /// Stop signal to the group, then SIGKILL after `grace`; returns when no
    /// process of the server is left (or after a further bounded wait).
    pub fn stop(&mut self, grace: Duration) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let leader = self.pid;
        let pids = self.tree();
        let _ = killpg(Pid::from_raw(leader), self.stop_signal);
        for &p in &pids {
            let _ = kill(Pid::from_raw(p), self.stop_signal);
        }
        if !self.wait_gone(&pids, grace) {
            let _ = killpg(Pid::from_raw(leader), Signal::SIGKILL);
            for p in pids.iter().copied().chain(self.tree()) {
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            }
            self.wait_gone(&pids, Duration::from_secs(5));
        }
        if let Ok(mut g) = LIVE_GROUPS.lock() {
            g.retain(|(x, _)| *x != leader);
        }
    }

    fn wait_gone(&mut self, pids: &[i32], within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let _ = self.child.try_wait();
            let left: Vec<i32> = pids
                .iter()
                .copied()
                .chain(self.tree())
                .filter(|&p| is_alive(p))
                .collect();
            if left.is_empty() {
                // Reap the leader if it died since the last look, so it
                // does not linger as a zombie.
                let _ = self.child.try_wait();
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}

/// Live processes whose environment carries `TAG` = `tag`. (Root reads any
/// process's environment; otherwise the servers run as this user.)
fn tagged(tag: &str) -> Vec<i32> {
    let want = format!("{TAG}={tag}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        })
        .filter(|&pid| is_alive(pid))
        .collect()
}

/// A process that exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !matches!(stat_fields(&s).first(), Some(&"Z") | Some(&"X")),
        Err(_) => false,
    }
}

/// Fields of /proc/PID/stat after the command name (state is the first).
fn stat_fields(stat: &str) -> Vec<&str> {
    match stat.rfind(')') {
        Some(i) => stat[i + 1..].split_whitespace().collect(),
        None => Vec::new(),
    }
}

/// Processes in `leader`'s process group plus all descendants of `leader`
/// (a server that forks into another group is still the server's).
pub fn process_tree(leader: i32) -> Vec<i32> {
    let mut parent: HashMap<i32, i32> = HashMap::new();
    let mut in_group = BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let f = stat_fields(&s);
        if f.len() < 3 || f[0] == "Z" || f[0] == "X" {
            continue;
        }
        let ppid: i32 = f[1].parse().unwrap_or(0);
        let pgrp: i32 = f[2].parse().unwrap_or(0);
        parent.insert(pid, ppid);
        if pgrp == leader {
            in_group.insert(pid);
        }
    }
    let mut tree: BTreeSet<i32> = in_group;
    if parent.contains_key(&leader) {
        tree.insert(leader);
    }
    loop {
        let before = tree.len();
        for (&pid, &ppid) in &parent {
            if tree.contains(&ppid) {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    tree.into_iter().collect()
}

/// A process's command name (/proc/PID/comm).
pub fn command_name(pid: i32) -> Option<String> {
    let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(c.trim_end().to_string())
}

/// The CPUs a process may run on, from /proc/PID/status.
pub fn cpus_allowed(pid: i32) -> anyhow::Result<Vec<usize>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = s
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .context("no Cpus_allowed_list")?;
    throng_model::parse_cpu_list(line).with_context(|| format!("Cpus_allowed_list {line:?}"))
}

/// Checks that every process of the tree is pinned to exactly `cpus`.
pub fn check_pinning(pids: &[i32], cpus: &[usize]) -> anyhow::Result<()> {
    let want: BTreeSet<usize> = cpus.iter().copied().collect();
    for &p in pids {
        let Ok(got) = cpus_allowed(p) else {
            continue; // exited meanwhile
        };
        let got: BTreeSet<usize> = got.into_iter().collect();
        if got != want {
            bail!("process {p} may run on CPUs {got:?}, not only on the server's {want:?}");
        }
    }
    Ok(())
}

/// The unprivileged user a server runs as when the lab runs as root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    /// The user's primary group's name, for configs that name a group.
    pub group: String,
    pub uid: u32,
    pub gid: u32,
}

impl RunAs {
    /// Debian's www-data when this process is root; `None` otherwise (a
    /// server started by an ordinary user runs as that user).
    pub fn unprivileged() -> Option<RunAs> {
        if !Uid::effective().is_root() {
            return None;
        }
        let u = nix::unistd::User::from_name("www-data").ok().flatten()?;
        let g: Gid = u.gid;
        let group = nix::unistd::Group::from_gid(g)
            .ok()
            .flatten()
            .map_or_else(|| u.name.clone(), |g| g.name);
        Some(RunAs {
            name: u.name,
            group,
            uid: u.uid.as_raw(),
            gid: g.as_raw(),
        })
    }
}

impl RunAs {
    /// The first folder on the way to `dir` (itself included) this user
    /// may not pass through, with its mode: a server running as www-data
    /// under a folder only root may enter answers every request with 403,
    /// which said nothing of why. `None` when the way is open, or when a
    /// folder cannot be read (the error then comes where it is used).
    pub fn cannot_reach(&self, dir: &Path) -> Option<(PathBuf, u32)> {
        use std::os::unix::fs::MetadataExt;
        let dir = std::fs::canonicalize(dir).ok()?;
        let mut way: Vec<&Path> = dir.ancestors().collect();
        way.reverse();
        for d in way {
            let m = std::fs::metadata(d).ok()?;
            let mode = m.mode();
            let x = if m.uid() == self.uid {
                mode & 0o100
            } else if m.gid() == self.gid {
                mode & 0o010
            } else {
                mode & 0o001
            };
            if x == 0 {
                return Some((d.to_path_buf(), mode & 0o7777));
            }
        }
        None
    }
}

/// Last `lines` lines of a file, empty when it is missing.
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(data) = std::fs::read(path) else {
        return String::new();
    };
    let keep = &data[data.len().saturating_sub(64 * 1024)..];
    let text = String::from_utf8_lossy(keep);
    let all: Vec<&str> = text.lines().collect();
    let mut out = all[all.len().saturating_sub(lines)..].join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_the_servers_user_cannot_pass_through_is_named() {
        use std::os::unix::fs::PermissionsExt;
        // Someone else's uid and gid: only the "others" bits apply.
        let user = RunAs {
            name: "www-data".into(),
            group: "www-data".into(),
            uid: 4_000_000_001,
            gid: 4_000_000_001,
        };
        let top = tempfile::tempdir().unwrap();
        let inner = top.path().join("runs");
        std::fs::create_dir(&inner).unwrap();
        let set = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(top.path(), 0o700);
        let top_path = std::fs::canonicalize(top.path()).unwrap();
        assert_eq!(user.cannot_reach(&inner), Some((top_path, 0o700)));
        set(top.path(), 0o711);
        assert_eq!(user.cannot_reach(&inner), None);
        set(&inner, 0o750);
        let inner_path = std::fs::canonicalize(&inner).unwrap();
        assert_eq!(user.cannot_reach(&inner), Some((inner_path, 0o750)));
    }

    fn launch(argv: &[&str], cpus: Vec<usize>, dir: &Path) -> Launch {
        Launch {
            name: "test".into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: vec![],
            cwd: dir.to_path_buf(),
            cpus,
            run_as: None,
            log: dir.join("out.log"),
            stop_signal: Signal::SIGTERM,
            preload: None,
        }
    }

    fn wait_for(mut f: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn cpu_lists_parse() {
        use throng_model::parse_cpu_list;
        assert_eq!(parse_cpu_list("0-2,5\n").unwrap(), [0, 1, 2, 5]);
        assert_eq!(parse_cpu_list("1").unwrap(), [1]);
        assert!(parse_cpu_list("a-b").is_none());
    }

    #[test]
    fn a_tree_is_pinned_found_and_stopped_including_term_ignorers() {
        let dir = tempfile::tempdir().unwrap();
        // A parent with two children, one of which ignores SIGTERM, so the
        // stop must escalate to SIGKILL.
        let script = "sleep 30 & (trap '' TERM; sleep 30) & echo started; wait";
        let mut p =
            ServerProcess::spawn(&launch(&["/bin/sh", "-c", script], vec![0], dir.path())).unwrap();
        // sh and two sleeps (the subshell execs its last command).
        assert!(wait_for(|| p.tree().len() == 3), "tree: {:?}", p.tree());
        let pids = p.tree();
        assert_eq!(pids[0], p.pid());
        check_pinning(&pids, &[0]).unwrap();
        assert!(check_pinning(&pids, &[0, 1]).is_err());
        assert!(LIVE_GROUPS
            .lock()
            .unwrap()
            .iter()
            .any(|(g, _)| *g == p.pid()));
        assert!(wait_for(
            || tail(&dir.path().join("out.log"), 5) == "started\n"
        ));
        p.stop(Duration::from_millis(300));
        for pid in &pids {
            assert!(!is_alive(*pid), "{pid} survived");
        }
        assert!(!LIVE_GROUPS
            .lock()
            .unwrap()
            .iter()
            .any(|(g, _)| *g == p.pid()));
    }

    #[test]
    fn a_server_that_goes_to_the_background_is_found_and_stopped() {
        let dir = tempfile::tempdir().unwrap();
        // A daemon: a subshell starts it in a session of its own and exits,
        // so it leaves the group and the leader's tree, and ignores TERM.
        let script = "(setsid /bin/sh -c 'trap \"\" TERM; echo $$ > daemon.pid; \
                      while :; do sleep 1; done' &); exec sleep 30";
        let mut p =
            ServerProcess::spawn(&launch(&["/bin/sh", "-c", script], vec![], dir.path())).unwrap();
        let pidfile = dir.path().join("daemon.pid");
        assert!(wait_for(
            || std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
        ));
        let daemon: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!process_tree(p.pid()).contains(&daemon), "not a descendant");
        assert!(p.tree().contains(&daemon), "tree: {:?}", p.tree());
        p.stop(Duration::from_millis(300));
        // It used to keep running, and serving, after the study.
        assert!(!is_alive(daemon), "{daemon} survived the stop");
    }

    #[test]
    fn drop_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pids = {
            let p = ServerProcess::spawn(&launch(
                &["/bin/sh", "-c", "sleep 30 & wait"],
                vec![],
                dir.path(),
            ))
            .unwrap();
            assert!(wait_for(|| p.tree().len() == 2));
            p.tree()
        };
        for pid in pids {
            assert!(!is_alive(pid));
        }
    }

    #[test]
    fn exit_is_noticed_and_log_tail_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = ServerProcess::spawn(&launch(
            &[
                "/bin/sh",
                "-c",
                "for i in 1 2 3 4; do echo line$i; done; exit 3",
            ],
            vec![],
            dir.path(),
        ))
        .unwrap();
        assert!(wait_for(|| p.exited().is_some()));
        assert_eq!(p.exited().unwrap(), "exit status: 3");
        let t = p.log_tail(&[], 2);
        assert!(t.ends_with("line3\nline4\n"), "{t}");
    }
}
