//! One host's agent as the coordinator holds it: the transport process
//! (ssh, a template's command, or a local child), its stdio, and replies
//! read on a thread so a wait can be bounded and interrupted.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bell::Bell;
use crate::binary::Binary;
use crate::clock::{self, Exchange, Offset};
use crate::protocol::{Banner, Envelope, HostFacts, Reply, Request, PROTOCOL};
use crate::{Place, RemoteError, Transport};

/// How long a host has to answer its first line: ssh's own connect
/// timeout is set below this, so ssh's message is what the user sees.
const FIRST_LINE: Duration = Duration::from_secs(30);
/// Bytes of a transport's stderr kept for messages.
const STDERR_TAIL: usize = 4096;

pub struct Link {
    pub place: Place,
    pub facts: HostFacts,
    pub offset: Offset,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Each line the agent wrote, with when it arrived here (Unix ns).
    lines: Receiver<(String, u64)>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Receiver<()>,
    next_id: u64,
    pending: Vec<(Envelope<Reply>, u64)>,
    /// When the last reply [`Link::wait`] or [`Link::poll`] returned
    /// arrived (Unix ns), read from the pipe before the caller got to it:
    /// how long figures travelled apart from how long they waited here.
    pub arrived_ns: u64,
}

/// What runs on the remote host: the cached agent when this build is
/// there, else one line saying it is not and what the host's machine is.
fn start_script(id: &str) -> String {
    format!(
        "d=\"${{XDG_CACHE_HOME:-$HOME/.cache}}/throng/{id}\"; \
         if [ -x \"$d/throng\" ]; then THRONG_AGENT_BUILD={id} exec \"$d/throng\" agent; fi; \
         echo \"throng-missing $(uname -m)\""
    )
}

/// Receives the binary on stdin, written aside and renamed into place so a
/// dropped copy never leaves a half-written agent that looks present.
fn copy_script(id: &str) -> String {
    format!(
        "set -e; d=\"${{XDG_CACHE_HOME:-$HOME/.cache}}/throng/{id}\"; mkdir -p \"$d\"; \
         t=\"$d/throng.part.$$\"; cat > \"$t\"; chmod 755 \"$t\"; mv -f \"$t\" \"$d/throng\"; \
         echo copied"
    )
}

impl Transport {
    /// The command that runs `script` (a POSIX shell script) on `place`.
    pub(crate) fn command(&self, place: &Place, control_dir: &Path, script: &str) -> Command {
        match self {
            Transport::Ssh { command } => {
                // As git runs GIT_SSH_COMMAND: through the shell, so the
                // user's words (`ssh -F ./ssh_config`) keep their quoting.
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("{command} \"$@\""))
                    .arg("throng-ssh");
                c.args(ssh_options(control_dir));
                if let Place::Ssh { port: Some(p), .. } = place {
                    c.arg("-p").arg(p.to_string());
                }
                c.arg(place.destination()).arg(script);
                c
            }
            Transport::Template(t) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("{} \"$@\"", t.replace("{host}", place.host())))
                    .arg("throng-transport")
                    .args(["sh", "-c", script]);
                c
            }
        }
    }

    /// Closes the shared ssh connection to `place`, if one was opened.
    pub(crate) fn close_master(&self, place: &Place, control_dir: &Path) {
        if let Transport::Ssh { command } = self {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("{command} \"$@\""))
                .arg("throng-ssh")
                .args(ssh_options(control_dir))
                .args(["-O", "exit"]);
            if let Place::Ssh { port: Some(p), .. } = place {
                c.arg("-p").arg(p.to_string());
            }
            c.arg(place.destination());
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Ok(mut child) = c.spawn() {
                wait_bounded(&mut child, Duration::from_secs(5));
            }
        }
    }
}

/// One authentication per host: every ssh to a host shares the first
/// connection's master through a socket in a directory only we can read.
fn ssh_options(control_dir: &Path) -> Vec<String> {
    let path = control_dir.join("%C");
    [
        "BatchMode=yes".to_string(),
        "ControlMaster=auto".to_string(),
        format!("ControlPath={}", path.display()),
        "ControlPersist=60".to_string(),
        "ConnectTimeout=10".to_string(),
        // A host that vanishes is noticed within 15 s, not TCP's minutes.
        "ServerAliveInterval=5".to_string(),
        "ServerAliveCountMax=3".to_string(),
    ]
    .into_iter()
    .flat_map(|o| ["-o".to_string(), o])
    .collect()
}

fn wait_bounded(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

fn tail_of(stderr: &Arc<Mutex<String>>) -> String {
    let s = stderr.lock().unwrap_or_else(|p| p.into_inner());
    let t = s.trim();
    if t.is_empty() {
        "no message".to_string()
    } else {
        t.lines().last().unwrap_or(t).to_string()
    }
}

impl Link {
    /// Reaches `place`, copying this build there first when it lacks it.
    pub(crate) fn open(
        place: &Place,
        transport: &Transport,
        binary: &Binary,
        control_dir: &Path,
        bell: &Bell,
    ) -> Result<Link, RemoteError> {
        match Link::spawn(place, transport, binary, control_dir, bell)? {
            Ok(link) => Ok(link),
            Err(arch) => {
                if arch != binary.arch {
                    return Err(RemoteError::Arch {
                        host: place.to_string(),
                        remote: arch,
                        local: binary.arch.to_string(),
                        version: env!("CARGO_PKG_VERSION").to_string(),
                    });
                }
                copy(place, transport, binary, control_dir)?;
                match Link::spawn(place, transport, binary, control_dir, bell)? {
                    Ok(link) => Ok(link),
                    Err(_) => Err(RemoteError::Unreachable {
                        host: place.to_string(),
                        detail: "the copied agent is still missing".into(),
                    }),
                }
            }
        }
    }

    /// Ok(Err(arch)): the host answered that it lacks this build.
    fn spawn(
        place: &Place,
        transport: &Transport,
        binary: &Binary,
        control_dir: &Path,
        bell: &Bell,
    ) -> Result<Result<Link, String>, RemoteError> {
        let mut cmd = if place.is_local() {
            let mut c = Command::new(&binary.path);
            c.arg("agent")
                .env(crate::agent::LOCAL_ENV, "1")
                .env(crate::agent::BUILD_ENV, &binary.id);
            c
        } else {
            transport.command(place, control_dir, &start_script(&binary.id))
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let host = place.to_string();
        let mut child = cmd.spawn().map_err(|e| RemoteError::Unreachable {
            host: host.clone(),
            detail: format!("cannot run the transport: {e}"),
        })?;
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (done_tx, stderr_done) = mpsc::channel();
        {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                let _done = done_tx;
                let mut r = BufReader::new(stderr_pipe);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match r.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let mut s = stderr.lock().unwrap_or_else(|p| p.into_inner());
                            s.push_str(&String::from_utf8_lossy(&buf));
                            if s.len() > STDERR_TAIL {
                                let cut = s.len() - STDERR_TAIL;
                                let cut =
                                    (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                                s.drain(..cut);
                            }
                        }
                    }
                }
            });
        }
        let (tx, lines) = mpsc::channel();
        {
            let bell = bell.clone();
            std::thread::spawn(move || {
                let r = BufReader::new(stdout);
                for line in r.lines() {
                    let Ok(line) = line else { break };
                    if tx.send((line, crate::agent::unix_ns())).is_err() {
                        break;
                    }
                    bell.ring();
                }
                // The channel's end is news too: a lost host.
                drop(tx);
                bell.ring();
            });
        }
        let stdin = child.stdin.take();
        let deadline = Instant::now() + FIRST_LINE;
        // A login banner or motd may come first; the agent's banner or the
        // script's answer is what counts.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok((line, _)) => {
                    if let Some(arch) = line.strip_prefix("throng-missing ") {
                        wait_bounded(&mut child, Duration::from_secs(5));
                        return Ok(Err(arch.trim().to_string()));
                    }
                    if let Ok(b) = serde_json::from_str::<Banner>(&line) {
                        if b.throng_agent != PROTOCOL {
                            return Err(RemoteError::Protocol {
                                host,
                                theirs: b.throng_agent,
                                ours: PROTOCOL,
                            });
                        }
                        let mut link = Link {
                            place: place.clone(),
                            facts: empty_facts(),
                            offset: Offset::ZERO,
                            child,
                            stdin,
                            lines,
                            stderr,
                            stderr_done,
                            next_id: 1,
                            pending: Vec::new(),
                            arrived_ns: 0,
                        };
                        match link.call(Request::Hello, Duration::from_secs(30))? {
                            Reply::Hello(f) => link.facts = *f,
                            other => return Err(link.unexpected(&other)),
                        }
                        return Ok(Ok(link));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(RemoteError::Unreachable {
                        host,
                        detail: format!("no answer within {} s", FIRST_LINE.as_secs()),
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = wait_bounded(&mut child, Duration::from_secs(5));
                    // ssh's last words may still be in the pipe.
                    let _ = stderr_done.recv_timeout(Duration::from_secs(1));
                    let code = status
                        .and_then(|s| s.code())
                        .map(|c| format!(" (exit {c})"))
                        .unwrap_or_default();
                    return Err(RemoteError::Unreachable {
                        host,
                        detail: format!("{}{code}", tail_of(&stderr)),
                    });
                }
            }
        }
    }

    /// Sends a request; its reply is collected by [`Link::wait`].
    pub fn send(&mut self, body: Request) -> Result<u64, RemoteError> {
        let id = self.next_id;
        self.next_id += 1;
        let line =
            serde_json::to_string(&Envelope { id, body }).map_err(|e| RemoteError::Agent {
                host: self.place.to_string(),
                message: format!("cannot encode a request: {e}"),
            })?;
        let ok = match self.stdin.as_mut() {
            Some(w) => writeln!(w, "{line}").and_then(|_| w.flush()).is_ok(),
            None => false,
        };
        if !ok {
            return Err(self.lost());
        }
        Ok(id)
    }

    /// The reply to request `id`, by `deadline`. `interrupted` is polled
    /// while waiting, and a wait it ends returns `Ok(None)`.
    pub fn wait(
        &mut self,
        id: u64,
        deadline: Instant,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Option<Reply>, RemoteError> {
        // In arrival order: a plan's replies share one id.
        if let Some(i) = self.pending.iter().position(|(e, _)| e.id == id) {
            let (e, at) = self.pending.remove(i);
            self.arrived_ns = at;
            return Ok(Some(e.body));
        }
        loop {
            if interrupted() {
                return Ok(None);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RemoteError::Timeout {
                    host: self.place.to_string(),
                });
            }
            let slice = (deadline - now).min(Duration::from_millis(50));
            match self.lines.recv_timeout(slice) {
                Ok((line, at)) => match serde_json::from_str::<Envelope<Reply>>(&line) {
                    Ok(e) if e.id == id => {
                        self.arrived_ns = at;
                        return Ok(Some(e.body));
                    }
                    Ok(e) => self.pending.push((e, at)),
                    Err(e) => {
                        return Err(RemoteError::Agent {
                            host: self.place.to_string(),
                            message: format!("unreadable reply ({e}): {line}"),
                        })
                    }
                },
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(self.lost()),
            }
        }
    }

    /// The reply to request `id` if it has arrived, without waiting:
    /// `Ok(None)` if not yet. Lets a caller watch several hosts at once,
    /// asleep on their fleet's bell between looks.
    pub fn poll(&mut self, id: u64) -> Result<Option<Reply>, RemoteError> {
        // In arrival order: a plan's replies share one id.
        if let Some(i) = self.pending.iter().position(|(e, _)| e.id == id) {
            let (e, at) = self.pending.remove(i);
            self.arrived_ns = at;
            return Ok(Some(e.body));
        }
        loop {
            match self.lines.try_recv() {
                Ok((line, at)) => match serde_json::from_str::<Envelope<Reply>>(&line) {
                    Ok(e) if e.id == id => {
                        self.arrived_ns = at;
                        return Ok(Some(e.body));
                    }
                    Ok(e) => self.pending.push((e, at)),
                    Err(e) => {
                        return Err(RemoteError::Agent {
                            host: self.place.to_string(),
                            message: format!("unreadable reply ({e}): {line}"),
                        })
                    }
                },
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => return Err(self.lost()),
            }
        }
    }

    pub fn call(&mut self, body: Request, limit: Duration) -> Result<Reply, RemoteError> {
        let id = self.send(body)?;
        match self.wait(id, Instant::now() + limit, &|| false)? {
            Some(Reply::Failed { message }) => Err(RemoteError::Agent {
                host: self.place.to_string(),
                message,
            }),
            Some(r) => Ok(r),
            None => unreachable!("a wait that cannot be interrupted returned without a reply"),
        }
    }

    /// The host's clock offset from rounds of `clock::SAMPLES` exchanges,
    /// until one round's best is within `limit` or `clock::ROUNDS` have
    /// run (`clock::settle`): the best of all, kept as the link's offset.
    pub fn measure_clock_within(&mut self, limit: Duration) -> Result<Offset, RemoteError> {
        let limit_ns = limit.as_nanos() as u64;
        let o = clock::settle(limit_ns, clock::ROUNDS, || {
            self.measure_clock(clock::SAMPLES)
        })?;
        self.offset = o;
        Ok(o)
    }

    /// The host's clock offset from `samples` exchanges.
    pub fn measure_clock(&mut self, samples: usize) -> Result<Offset, RemoteError> {
        let mut ex = Vec::with_capacity(samples);
        for _ in 0..samples {
            let t0 = crate::agent::unix_ns();
            match self.call(Request::Clock, Duration::from_secs(10))? {
                Reply::Clock { t1, t2 } => ex.push(Exchange {
                    t0,
                    t1,
                    t2,
                    t3: crate::agent::unix_ns(),
                }),
                other => return Err(self.unexpected(&other)),
            }
        }
        let o = clock::best(&ex).ok_or_else(|| RemoteError::Agent {
            host: self.place.to_string(),
            message: "no usable clock exchange".into(),
        })?;
        self.offset = o;
        Ok(o)
    }

    pub(crate) fn unexpected(&self, r: &Reply) -> RemoteError {
        match r {
            Reply::Failed { message } => RemoteError::Agent {
                host: self.place.to_string(),
                message: message.clone(),
            },
            other => RemoteError::Agent {
                host: self.place.to_string(),
                message: format!("unexpected reply {other:?}"),
            },
        }
    }

    fn lost(&mut self) -> RemoteError {
        let status = wait_bounded(&mut self.child, Duration::from_millis(500));
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(500));
        let code = status
            .and_then(|s| s.code())
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default();
        RemoteError::Lost {
            host: self.place.to_string(),
            detail: format!("{}{code}", tail_of(&self.stderr)),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // Closing stdin is the agent's signal to stop and exit; the kill
        // after the grace covers a transport that does not pass it on.
        self.stdin.take();
        wait_bounded(&mut self.child, Duration::from_secs(3));
    }
}

fn copy(
    place: &Place,
    transport: &Transport,
    binary: &Binary,
    control_dir: &Path,
) -> Result<(), RemoteError> {
    let host = place.to_string();
    let mut file = std::fs::File::open(&binary.path).map_err(|e| RemoteError::Unreachable {
        host: host.clone(),
        detail: format!("cannot read {}: {e}", binary.path.display()),
    })?;
    let mut cmd = transport.command(place, control_dir, &copy_script(&binary.id));
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| RemoteError::Unreachable {
        host: host.clone(),
        detail: format!("cannot run the transport: {e}"),
    })?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || std::io::copy(&mut file, &mut stdin).map(|_| ()));
    let mut out = String::new();
    let mut err = String::new();
    let (mut so, mut se) = (
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let errt = std::thread::spawn(move || {
        let _ = se.read_to_string(&mut err);
        err
    });
    let _ = so.read_to_string(&mut out);
    let wrote = writer.join().ok().and_then(|r| r.ok()).is_some();
    let status = wait_bounded(&mut child, Duration::from_secs(120));
    let err = errt.join().unwrap_or_default();
    if wrote && status.is_some_and(|s| s.success()) && out.trim() == "copied" {
        return Ok(());
    }
    Err(RemoteError::Unreachable {
        host,
        detail: format!(
            "copying throng there failed: {}",
            err.trim().lines().last().unwrap_or("no message")
        ),
    })
}

fn empty_facts() -> HostFacts {
    HostFacts {
        arch: String::new(),
        build: String::new(),
        environment: throng_model::Environment {
            hostname: String::new(),
            cpu_model: String::new(),
            cpus_online: 0,
            memory_bytes: 0,
            kernel: String::new(),
            os: String::new(),
            sysctls: Default::default(),
            nofile: (0, 0),
            throng_version: String::new(),
            ..Default::default()
        },
        cpus: Vec::new(),
    }
}

/// A private directory for ssh's control sockets, removed on drop.
pub struct ControlDir(PathBuf);

impl ControlDir {
    pub fn create() -> std::io::Result<ControlDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        for n in 0..1000u32 {
            let p = base.join(format!("throng-ssh-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(ControlDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free control directory name"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ControlDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
