//! A load whose connections outlive its measured windows.
//!
//! The lab measures several servers in short interleaved windows; a server
//! measured on fresh connections every few hundred milliseconds would be
//! measured on handshakes. A [`Session`] opens its connections once, and
//! between its windows its threads block on a channel, so its connections
//! sit open, idle, and cost nothing while other sessions run theirs.
//!
//! A window is a run of the closed model for a duration, on the very same
//! driver and merge as [`crate::run`]; what a session adds is the edges of a
//! window. At its start, connections the server closed while they were idle
//! (its keep-alive timeout) are reopened quietly, counted as reconnects and
//! never as errors. At its end, no request is issued or written any more,
//! and the responses still in flight are read, counted in no window (see
//! [`Drain`]), for a short bound; connections still busy then are closed, and
//! reopened by the next window.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::driver::{Job, Shared, Stats, ThreadResult, Window, Worker};
use crate::request::Prepared;
use crate::result::Drain;
use crate::run::{collect, jobs, merge, prepare, window_from_now, HELD};
use crate::spec::{LoadSpec, SpecError, Stop};
use crate::{Control, EngineError, LoadResult};

/// How long dropping a session waits for its threads, which have nothing
/// left to do but close their connections.
const DROP_WAIT: Duration = Duration::from_secs(1);

/// A closed-model load whose connections stay open between its windows.
/// Its threads are pinned and spread like [`crate::run`]'s.
pub struct Session {
    spec: LoadSpec,
    links: Vec<Link>,
    drain: Drain,
}

/// The session's end of one thread.
struct Link {
    /// Dropped to tell the thread to close its connections and end.
    cmd: Option<Sender<Cmd>>,
    reply: Receiver<Reply>,
    handle: Option<JoinHandle<()>>,
    /// The thread sent a window's figures and has its drain still to
    /// report.
    draining: bool,
}

enum Cmd {
    Window(Window),
    /// A window's stats, merged: the thread resets them for a later window.
    Recycle(Box<Stats>),
}

enum Reply {
    Opened(io::Result<()>),
    Done(Box<ThreadResult>),
    /// After `Done`, once the window's drain has ended.
    Drained(Drain),
}

impl Session {
    /// Validates `spec`, which must be the closed model for a duration
    /// (refused as [`EngineError::Io`] of kind `InvalidInput`); checks the
    /// file limit and that every address answers, as [`crate::run`] does;
    /// starts `spec.threads` threads and opens `spec.connections`
    /// connections. Returns once each is open or has failed; failures are
    /// opened again, and counted, in the first window. `spec.warmup` is not
    /// used: each window has its own.
    pub fn open(spec: &LoadSpec) -> Result<Session, EngineError> {
        if spec.rate.is_some() || spec.users.is_some() || !matches!(spec.stop, Stop::Duration(_)) {
            return Err(EngineError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a session runs the closed model without users, for a duration",
            )));
        }
        // Its windows are the TCP loop's; HTTP/3 runs in a loop of its own.
        if spec.http.version == crate::spec::HttpVersion::Http3 {
            return Err(SpecError::H3Unsupported("a session's windows").into());
        }
        let requests = prepare(spec)?;
        let mut session = Session {
            spec: spec.clone(),
            links: Vec::new(),
            drain: Drain::default(),
        };
        HELD.fetch_add(spec.connections, Ordering::Relaxed);
        for job in jobs(spec) {
            let (cmd, cmds) = channel();
            let (replies, reply) = channel();
            let (spec, requests) = (spec.clone(), requests.clone());
            let handle = std::thread::Builder::new()
                .name(format!("throng-session-{}", job.index))
                .spawn(move || serve(&spec, &requests, job, &cmds, replies))?;
            session.links.push(Link {
                cmd: Some(cmd),
                reply,
                handle: Some(handle),
                draining: false,
            });
        }
        for link in &session.links {
            match link.reply.recv() {
                Ok(Reply::Opened(Ok(()))) => {}
                Ok(Reply::Opened(Err(e))) => return Err(EngineError::Io(e)),
                _ => return Err(EngineError::Io(gone())),
            }
        }
        Ok(session)
    }

    /// One window: `warmup` (requests flow, counted apart as
    /// [`LoadResult::warmup`]), then `measure` of counted time, then the
    /// drain (see [`Session::drained`]). The result is what [`crate::run`]
    /// returns for a run of that warmup and duration; its connects and
    /// reconnects are those made in the window. A stopped `control` ends
    /// the window early, as it ends a run, and skips the drain.
    pub fn window(
        &mut self,
        warmup: Duration,
        measure: Duration,
        control: &Control,
    ) -> Result<LoadResult, EngineError> {
        let r = self.window_unsettled(warmup, measure, control);
        self.settle();
        r
    }

    /// [`Session::window`], returning as soon as the window's figures are
    /// merged, while its threads still drain what was in flight: a host
    /// that sends the figures on meanwhile takes the drain out of their
    /// way. The drain is waited for by [`Session::settle`], the next
    /// window or [`Session::drained`]; nothing of this session runs after
    /// any of them returns.
    pub fn window_unsettled(
        &mut self,
        warmup: Duration,
        measure: Duration,
        control: &Control,
    ) -> Result<LoadResult, EngineError> {
        if measure.is_zero() {
            return Err(SpecError::ZeroDuration.into());
        }
        self.settle();
        let (window, started_unix_s) = window_from_now(warmup, Some(measure), control);
        let mut started = 0;
        for link in &self.links {
            let Some(cmd) = &link.cmd else { break };
            if cmd.send(Cmd::Window(window.clone())).is_err() {
                break;
            }
            started += 1;
        }
        // Every thread that started the window is waited for, so that none
        // is left running one when this returns.
        let mut results: Vec<io::Result<ThreadResult>> = self.links[..started]
            .iter()
            .map(|l| match l.reply.recv() {
                Ok(Reply::Done(r)) => Ok(*r),
                _ => Err(gone()),
            })
            .collect();
        if started < self.links.len() {
            results.push(Err(gone()));
        }
        for link in &mut self.links[..started] {
            link.draining = true;
        }
        self.drain = Drain::default();
        let parts = collect(results)?;
        let result = merge(
            &self.spec,
            &parts,
            window.warmup_end_ns,
            started_unix_s,
            warmup,
        );
        for (link, part) in self.links.iter().zip(parts) {
            if let Some(cmd) = &link.cmd {
                let _ = cmd.send(Cmd::Recycle(Box::new(part.stats)));
            }
        }
        Ok(result)
    }

    /// Waits for every thread's drain after the last window, and adds up
    /// what they found. A bounded wait: a drain ends by its own bound.
    pub fn settle(&mut self) {
        for link in &mut self.links {
            if !std::mem::take(&mut link.draining) {
                continue;
            }
            if let Ok(Reply::Drained(d)) = link.reply.recv() {
                self.drain.responses += d.responses;
                self.drain.abandoned += d.abandoned;
            }
        }
    }

    /// What the drain after the last window found (zero before the first),
    /// once it has ended.
    pub fn drained(&mut self) -> Drain {
        self.settle();
        self.drain
    }
}

impl Drop for Session {
    /// Tells the threads to close their connections and end, and joins
    /// those that do within `DROP_WAIT`; one that does not is left to end
    /// on its own.
    fn drop(&mut self) {
        HELD.fetch_sub(self.spec.connections, Ordering::Relaxed);
        for link in &mut self.links {
            link.cmd = None;
        }
        let deadline = Instant::now() + DROP_WAIT;
        for link in &mut self.links {
            // A thread's replies end when it does, its connections closed.
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match link.reply.recv_timeout(left) {
                    Ok(_) => continue,
                    Err(RecvTimeoutError::Disconnected) => {
                        if let Some(h) = link.handle.take() {
                            let _ = h.join();
                        }
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
        }
    }
}

fn gone() -> io::Error {
    io::Error::other("a session's load thread has ended")
}

/// A session's thread: opens its connections, then runs the windows it is
/// sent until the session lets go of it.
fn serve(
    spec: &LoadSpec,
    requests: &Prepared,
    job: Job,
    cmds: &Receiver<Cmd>,
    replies: Sender<Reply>,
) {
    let plan = Shared {
        spec,
        requests,
        interval_ns: None,
        stagger_ns: 0,
        tick_ns: 0,
        server_names: crate::run::server_names(spec),
        io: spec.io,
    };
    let mut worker = match Worker::new(&plan, job) {
        Ok(w) => w,
        Err(e) => {
            let _ = replies.send(Reply::Opened(Err(e)));
            return;
        }
    };
    worker.settle_thread();
    worker.open_all();
    if replies.send(Reply::Opened(Ok(()))).is_err() {
        return;
    }
    let mut spare = None;
    // Between windows the thread waits here, and its connections with it.
    while let Ok(cmd) = cmds.recv() {
        match cmd {
            Cmd::Window(window) => {
                let stats = spare.take().unwrap_or_else(Stats::new);
                let (r, ended_ns) = worker.session_window(window, stats);
                if replies.send(Reply::Done(Box::new(r))).is_err() {
                    break;
                }
                let drain = worker.session_drain(ended_ns);
                if replies.send(Reply::Drained(drain)).is_err() {
                    break;
                }
            }
            Cmd::Recycle(mut stats) => {
                stats.reset();
                spare = Some(*stats);
            }
        }
    }
    // The connections close before the session sees the thread end.
    drop(worker);
    drop(replies);
}
