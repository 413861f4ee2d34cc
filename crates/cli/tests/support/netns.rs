//! Several ssh-reachable "hosts" on one machine, for tests of what throng
//! does across machines: each host is a network namespace of its own, with an
//! OpenSSH server on a key the test generated, and all of them share one
//! Ethernet segment.
//!
//! The segment is a bridge in a namespace of its own rather than in the
//! machine's: that way nothing is added to the root namespace (no bridge, no
//! veth end, no route, no address a developer's own traffic could trip over),
//! and no host has any path out, so whatever a test does stays between its
//! namespaces. Addresses come from 198.18.0.0/15, which RFC 2544 sets aside
//! for benchmarking, so they can never be confused with a real network; since
//! every `Net` has its own segment, two `Net`s may use the same addresses.
//!
//! Everything a `Net` makes carries the test process's pid in its name, so a
//! later run can tell what a crashed run left behind and remove it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Every namespace a `Net` makes is named `thr-<pid>-...`.
const PREFIX: &str = "thr-";
/// sshd must be started by absolute path: it re-executes itself for every
/// connection and refuses to run otherwise.
const SSHD: &str = "/usr/sbin/sshd";
/// What one setup command (`ip`, `tc`, `ssh-keygen`) may take; they normally
/// take milliseconds, so reaching this means something is wedged.
const STEP: Duration = Duration::from_secs(10);
/// How long an sshd has to say it is listening.
const READY: Duration = Duration::from_secs(10);
/// How long cleanup keeps killing processes in a namespace that refuses to
/// empty (it cannot block a test's teardown for longer).
const KILL_PATIENCE: Duration = Duration::from_secs(5);

/// Distinguishes the `Net`s of one process; the pid distinguishes processes.
static COUNTER: AtomicU32 = AtomicU32::new(0);
/// Sweeps for stale namespaces run one at a time within a process, so the
/// first one can safely treat namespaces carrying our own pid as stale.
static SWEEP: Mutex<()> = Mutex::new(());
static OWN_PID_SWEPT: AtomicBool = AtomicBool::new(false);

/// One simulated machine.
#[derive(Debug, Clone)]
pub struct Host {
    pub name: String,
    pub netns: String,
    pub addr: Ipv4Addr,
}

/// A set of hosts on a private segment; dropping it removes every trace.
pub struct Net {
    hosts: Vec<Host>,
    /// Host-side veth name per host, in the order of `hosts`.
    veths: Vec<String>,
    /// Every namespace made so far, bridge first. A name is recorded before
    /// `ip netns add` runs, so a failure halfway still gets cleaned up.
    namespaces: Vec<String>,
    /// The sshd started per host, in the order of `hosts`, kept to be reaped:
    /// they are our children and would otherwise linger as zombies.
    sshds: Mutex<Vec<Option<Child>>>,
    ssh_config: PathBuf,
    dir: tempfile::TempDir,
}

impl Net {
    /// `hosts` are short logical names like "ctl", "c1", "c2", "srv". Every
    /// host gets a namespace, a veth into the bridge namespace, address
    /// 198.18.0.{10+i}/24 in order, `lo` up, and an sshd listening on
    /// addr:22 (started with `-D -e -f <config>`, readiness = its stderr
    /// line "Server listening on", bounded by a 10 s deadline).
    ///
    /// `None` (after a "skipped:" line on stderr) when this machine cannot
    /// make namespaces or run sshd: such a test cannot say anything there.
    /// Any later failure is a harness bug and panics with the command and
    /// its stderr; what was made up to then is removed as the panic unwinds.
    pub fn new(tag: &str, hosts: &[&str]) -> Option<Net> {
        // Before probing: the probe namespace must not be mistaken for stale
        // by this process's first sweep (see `sweep_stale`).
        sweep_stale();
        if let Err(why) = can_run() {
            eprintln!("skipped: {why}");
            return None;
        }
        assert!(
            !hosts.is_empty() && hosts.len() <= 244,
            "1 to 244 hosts fit 198.18.0.10-254, got {}",
            hosts.len()
        );
        for (i, h) in hosts.iter().enumerate() {
            // It goes into namespace and file names.
            let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            assert!(
                !h.is_empty() && h.chars().all(plain),
                "host name {h:?}: letters, digits, - and _ only"
            );
            assert!(!hosts[..i].contains(h), "host {h:?} named twice");
        }

        let pid = std::process::id();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = tempfile::Builder::new()
            .prefix(&format!("throng-netns-{tag}-"))
            .tempdir()
            .expect("temp dir for a Net");
        // ssh_command() is split on whitespace by whoever runs it.
        assert!(
            !dir.path().to_string_lossy().contains(char::is_whitespace),
            "temp dir {} contains whitespace; set TMPDIR to a plain path",
            dir.path().display()
        );
        let mut net = Net {
            hosts: Vec::new(),
            veths: Vec::new(),
            namespaces: Vec::new(),
            sshds: Mutex::new(Vec::new()),
            ssh_config: dir.path().join("ssh_config"),
            dir,
        };

        // sshd refuses to start without its privilege-separation directory,
        // which the package only creates when its service first runs.
        let run_sshd = Path::new("/run/sshd");
        if !run_sshd.is_dir() {
            std::fs::create_dir_all(run_sshd).expect("create /run/sshd");
            std::fs::set_permissions(run_sshd, std::fs::Permissions::from_mode(0o755))
                .expect("chmod /run/sshd");
        }

        let client_key = net.dir().join("client_key");
        keygen(&client_key);
        let authorized = net.dir().join("authorized_keys");
        std::fs::copy(client_key.with_extension("pub"), &authorized).expect("authorized_keys");
        std::fs::write(
            &net.ssh_config,
            format!(
                "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
                 StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  \
                 BatchMode yes\n  ConnectTimeout 5\n",
                client_key.display()
            ),
        )
        .expect("write ssh_config");

        let bridge = format!("{PREFIX}{pid}-{n}");
        net.namespaces.push(bridge.clone());
        must(ip(&["netns", "add", &bridge]));
        must(ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"]));
        must(ip(&["-n", &bridge, "link", "set", "br0", "up"]));

        for (i, name) in hosts.iter().enumerate() {
            let ns = format!("{PREFIX}{pid}-{n}-{name}");
            let addr = Ipv4Addr::new(198, 18, 0, 10 + i as u8);
            // The names live only in this Net's namespaces, so they cannot
            // clash with anything; pid and counter are in them so that an
            // interface seen in a listing can be traced back to its Net.
            let base = format!("t{}n{}h{i}", pid % 100_000, n % 1000);
            let (outer, inner) = (format!("{base}a"), format!("{base}b"));
            assert!(inner.len() <= 15, "interface name {inner} too long");

            net.namespaces.push(ns.clone());
            must(ip(&["netns", "add", &ns]));
            net.hosts.push(Host {
                name: name.to_string(),
                netns: ns.clone(),
                addr,
            });
            net.veths.push(inner.clone());
            net.lock_sshds().push(None);

            must(ip(&[
                "-n", &bridge, "link", "add", &outer, "type", "veth", "peer", "name", &inner,
                "netns", &ns,
            ]));
            must(ip(&[
                "-n", &bridge, "link", "set", &outer, "master", "br0", "up",
            ]));
            must(ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                &inner,
            ]));
            must(ip(&["-n", &ns, "link", "set", &inner, "up"]));
            must(ip(&["-n", &ns, "link", "set", "lo", "up"]));
            net.start_sshd(i, &authorized);
        }
        Some(net)
    }

    pub fn host(&self, name: &str) -> &Host {
        &self.hosts[self.index(name)]
    }

    /// "ssh://root@198.18.0.12" for that host
    pub fn url(&self, name: &str) -> String {
        format!("ssh://root@{}", self.host(name).addr)
    }

    /// Path of an ssh_config file that lets ssh reach every host with no
    /// prompt and no trace in anyone's known_hosts: the generated client key
    /// only, host keys not checked (they are made afresh each run), batch
    /// mode, errors only, 5 s connect timeout.
    pub fn ssh_config(&self) -> &Path {
        &self.ssh_config
    }

    /// "ssh -F <ssh_config>" — what a caller puts in THRONG_SSH_COMMAND
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.ssh_config.display())
    }

    /// `ip netns exec <ns> <program>` as a Command, for running something
    /// inside a host; add arguments to it.
    pub fn exec(&self, host: &str, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.host(host).netns, program]);
        cmd
    }

    /// Delay everything the host sends by `ms` (netem on its veth end, inside
    /// its namespace). One way only: a round trip to this host grows by `ms`.
    /// Calling it again replaces the earlier delay. Panics when the kernel
    /// has no netem (`CONFIG_NET_SCH_NETEM`).
    pub fn delay(&self, host: &str, ms: u32) {
        self.netem(host, &["delay", &format!("{ms}ms")]);
    }

    /// Lose `percent`% of what the host sends, at random (netem on its veth
    /// end, as [`Net::delay`]).
    pub fn lose(&self, host: &str, percent: u32) {
        self.netem(host, &["loss", &format!("{percent}%")]);
    }

    fn netem(&self, host: &str, what: &[&str]) {
        let mut all = vec!["netem"];
        all.extend_from_slice(what);
        self.qdisc(host, &all);
    }

    /// Puts queueing discipline `what` (its kind, then its options) on
    /// what the host sends, on its veth end; panics when `tc` refuses it.
    pub fn qdisc(&self, host: &str, what: &[&str]) {
        let i = self.index(host);
        let mut cmd = self.exec(host, "tc");
        cmd.args(["qdisc", "replace", "dev", &self.veths[i], "root"]);
        cmd.args(what);
        let shown = format!("{cmd:?}");
        let out = run(cmd, STEP).unwrap_or_else(|e| panic!("{e}"));
        let err = String::from_utf8_lossy(&out.stderr);
        let hint = if err.contains("kind is unknown") {
            " (this kernel was built without CONFIG_NET_SCH_NETEM)"
        } else {
            ""
        };
        assert!(
            out.status.success(),
            "{shown} failed: {}{hint}",
            err.trim_end()
        );
    }

    /// Kill every sshd process in that host's namespace (the listener and
    /// every session process), as a host whose ssh dies would; returns how
    /// many were killed. They are gone when this returns: the listening
    /// socket is closed, so a new connection is refused.
    pub fn kill_sshd(&self, host: &str) -> usize {
        let i = self.index(host);
        let deadline = Instant::now() + KILL_PATIENCE;
        let mut killed = std::collections::HashSet::new();
        // Repeat until none is left: the listener may fork a session process
        // between listing and killing.
        loop {
            let sshds: Vec<i32> = self
                .processes(host)
                .into_iter()
                .filter(|(_, comm)| is_sshd(comm))
                .map(|(pid, _)| pid)
                .collect();
            if sshds.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "sshd processes {sshds:?} in {} survive SIGKILL",
                self.hosts[i].netns
            );
            for pid in sshds {
                if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                    killed.insert(pid);
                }
            }
            // The listener is our child: reaping it is also the surest sign
            // that its socket is closed.
            if let Some(child) = self.lock_sshds()[i].take() {
                reap(child);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        killed.len()
    }

    /// Pids in that host's namespace (ip netns pids), with their
    /// /proc/PID/comm, excluding nothing
    pub fn processes(&self, host: &str) -> Vec<(i32, String)> {
        let ns = &self.host(host).netns;
        let pids = ns_pids(ns).unwrap_or_else(|e| panic!("{e}"));
        pids.into_iter()
            .filter_map(|pid| {
                // A process that exited since the listing is not there.
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
                Some((pid, comm.trim_end().to_string()))
            })
            .collect()
    }

    /// Same, excluding sshd processes: what a test checks is empty after
    /// cleanup
    pub fn leftovers(&self, host: &str) -> Vec<(i32, String)> {
        self.processes(host)
            .into_iter()
            .filter(|(_, comm)| !is_sshd(comm))
            .collect()
    }

    /// The temp dir of this Net (for configs, logs a test wants to put
    /// there); removed with the Net. sshd's log per host is
    /// `sshd-<host>.log` in it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn index(&self, name: &str) -> usize {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name:?} in this Net"))
    }

    fn lock_sshds(&self) -> MutexGuard<'_, Vec<Option<Child>>> {
        // A panic elsewhere while holding the lock leaves the list intact.
        self.sshds.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start_sshd(&self, i: usize, authorized: &Path) {
        let Host { name, netns, addr } = &self.hosts[i];
        let d = self.dir();
        let host_key = d.join(format!("host_key_{name}"));
        keygen(&host_key);
        let config = d.join(format!("sshd_config_{name}"));
        std::fs::write(
            &config,
            format!(
                "ListenAddress {addr}\nPort 22\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 MaxSessions 50\nMaxStartups 50\n",
                host_key.display(),
                d.join(format!("sshd-{name}.pid")).display(),
                authorized.display(),
            ),
        )
        .expect("write sshd_config");
        let log_path = d.join(format!("sshd-{name}.log"));
        let mut log = std::fs::File::create(&log_path).expect("sshd log file");

        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, SSHD, "-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        own_home(&mut cmd, &d.join(format!("home-{name}")));
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let stderr = child.stderr.take().expect("piped stderr");
        // Recorded before waiting, so a panic below still kills it.
        self.lock_sshds()[i] = Some(child);

        // The thread copies sshd's stderr to the log for as long as any sshd
        // process holds it, so sshd never blocks on a full pipe; it tells
        // the caller once the listening line has gone by. If sshd dies
        // first, the sender is dropped and the caller hears that instead.
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name(format!("sshd-{name}-stderr"))
            .spawn(move || {
                let mut tx = Some(tx);
                let mut lines = BufReader::new(stderr);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match lines.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let _ = log.write_all(&line);
                    if tx.is_some()
                        && String::from_utf8_lossy(&line).contains("Server listening on")
                    {
                        let _ = tx.take().map(|t| t.send(()));
                    }
                }
            })
            .expect("spawn sshd stderr thread");
        let why = match rx.recv_timeout(READY) {
            Ok(()) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => format!("not listening after {READY:?}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => "exited before listening".to_string(),
        };
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        panic!("sshd for {name} in {netns}: {why}: {cmd:?}\n{log}");
    }
}

impl Drop for Net {
    /// Never panics: it runs while tests unwind, where a second panic aborts.
    fn drop(&mut self) {
        // Our own children first: their pids cannot have been reused.
        for child in self.lock_sshds().drain(..).flatten() {
            reap(child);
        }
        // Then everything else in them (sessions, whatever a test started),
        // since a namespace outlives its deletion while a process is in it.
        for ns in &self.namespaces {
            kill_everything_in(ns);
        }
        for ns in self.namespaces.iter().rev() {
            let _ = run(ip(&["netns", "del", ns]), STEP);
        }
        // The temp dir goes when `dir` is dropped, right after this.
    }
}

/// Session processes are `sshd` up to OpenSSH 9.7 and `sshd-session` (or
/// `sshd-auth`) from 9.8 on.
fn is_sshd(comm: &str) -> bool {
    comm == "sshd" || comm.starts_with("sshd-")
}

/// Give `cmd` (an sshd) an empty home of its own for root, `home`, in a
/// mount namespace of its own, so that its sessions never see the machine's.
/// A session runs root's shell, and bash runs ~/.bashrc for commands that
/// come over ssh: whatever the machine's owner put there (on a developer's
/// machine, `pyenv init`, which rehashes under a lock in ~/.pyenv that a
/// killed session leaves held, stalling every later session for a minute)
/// would otherwise run on every command a test sends, and alter the
/// machine's own files. A fresh home per host is also what separate
/// machines would have.
fn own_home(cmd: &mut Command, home: &Path) {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;

    std::fs::create_dir(home).expect("create a host's home");
    let root_home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(0))
        .ok()
        .flatten()
        .map_or_else(|| PathBuf::from("/root"), |u| u.dir);
    let from = CString::new(home.as_os_str().as_bytes()).expect("home path");
    let onto = CString::new(root_home.as_os_str().as_bytes()).expect("root's home");
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (unshare and mount are plain system calls) and nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return fail();
            }
            // Private first, or the bind mount would propagate back into
            // the machine's mount namespace.
            let flags = libc::MS_REC | libc::MS_PRIVATE;
            let none = c"none".as_ptr();
            if libc::mount(
                none,
                c"/".as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            let bind = libc::MS_BIND;
            if libc::mount(
                from.as_ptr(),
                onto.as_ptr(),
                std::ptr::null(),
                bind,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            Ok(())
        });
    }
}

fn ip(args: &[&str]) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(args);
    cmd
}

fn keygen(path: &Path) {
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(path);
    must(cmd);
}

/// Whether this machine can host a Net; the reason why not otherwise.
fn can_run() -> Result<(), String> {
    if !Path::new(SSHD).is_file() {
        return Err(format!("no {SSHD} (package openssh-server)"));
    }
    for tool in ["ssh", "ssh-keygen", "tc"] {
        if !on_path(tool) {
            return Err(format!("no {tool} on PATH"));
        }
    }
    // The probe is named like everything else, so a crash right here still
    // gets swept by a later run.
    let probe = format!(
        "{PREFIX}{}-p{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let out = run(ip(&["netns", "add", &probe]), STEP)
        .map_err(|e| format!("cannot make a network namespace: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot make a network namespace (not root, or no CAP_SYS_ADMIN?): ip netns add: {}",
            first_line(&out.stderr)
        ));
    }
    // Making a namespace takes only CAP_SYS_ADMIN; what goes into it takes
    // CAP_NET_ADMIN, and the kernel must have bridges and veths.
    let tried = [
        ip(&["-n", &probe, "link", "add", "probe0", "type", "bridge"]),
        ip(&[
            "-n", &probe, "link", "add", "probe1", "type", "veth", "peer", "name", "probe2",
        ]),
    ]
    .into_iter()
    .try_for_each(|cmd| {
        let shown = format!("{cmd:?}");
        match run(cmd, STEP) {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "cannot set up a network namespace (CAP_NET_ADMIN?): {shown}: {}",
                first_line(&out.stderr)
            )),
            Err(e) => Err(e),
        }
    });
    let out = run(ip(&["netns", "del", &probe]), STEP)
        .map_err(|e| format!("cannot delete a network namespace: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot delete a network namespace: ip netns del {probe}: {}",
            first_line(&out.stderr)
        ));
    }
    tried
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Remove namespaces a crashed run left: named `thr-<pid>-...` for a pid
/// that no longer runs (or, the first time in a process, our own pid, which
/// a dead run may have had before). Best effort: nothing here may fail a
/// test, and another process may be sweeping the same ones.
fn sweep_stale() {
    let _one_at_a_time = SWEEP.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id();
    let first = !OWN_PID_SWEPT.swap(true, Ordering::Relaxed);
    let Ok(out) = run(ip(&["netns", "list"]), STEP) else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // Lines look like "thr-123-0-ctl (id: 3)" or just "thr-123-0-ctl".
        let Some(ns) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = ns
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let stale = if pid == me {
            first
        } else {
            // EPERM would mean alive but not ours to signal; only ESRCH is gone.
            kill(Pid::from_raw(pid as i32), None) == Err(nix::errno::Errno::ESRCH)
        };
        if stale {
            kill_everything_in(ns);
            let _ = run(ip(&["netns", "del", ns]), STEP);
        }
    }
}

/// SIGKILL a child and wait for it, within patience. Never panics.
fn reap(mut child: Child) {
    let _ = child.kill();
    let deadline = Instant::now() + KILL_PATIENCE;
    while let Ok(None) = child.try_wait() {
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// SIGKILL every process in `ns` until none is left (or patience runs out).
/// Never panics.
fn kill_everything_in(ns: &str) {
    let deadline = Instant::now() + KILL_PATIENCE;
    loop {
        let pids = match ns_pids(ns) {
            Ok(p) if !p.is_empty() => p,
            _ => return,
        };
        for pid in pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if Instant::now() > deadline {
            return;
        }
        // Killed processes take a moment to leave the listing.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `ip netns pids`: processes whose network namespace is `ns` (zombies are
/// not listed: they no longer have one).
fn ns_pids(ns: &str) -> Result<Vec<i32>, String> {
    let cmd = ip(&["netns", "pids", ns]);
    let shown = format!("{cmd:?}");
    let out = run(cmd, STEP)?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect())
}

/// Run a setup command that must work; a failure is a harness bug.
fn must(cmd: Command) -> Output {
    let shown = format!("{cmd:?}");
    let out = run(cmd, STEP).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{shown} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run a command to completion within `limit`, killing it otherwise. Unlike
/// `run_bounded` this never panics, so cleanup and the capability probe can
/// use it.
fn run(mut cmd: Command, limit: Duration) -> Result<Output, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{cmd:?} did not finish within {limit:?}"));
            }
            Err(e) => return Err(format!("waiting for {cmd:?}: {e}")),
        }
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}
