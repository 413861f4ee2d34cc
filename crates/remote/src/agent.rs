//! `throng agent`: the far end of a coordinator's transport.
//!
//! It reads requests from stdin and writes replies to stdout, one JSON
//! object per line. Nothing it starts may outlive the connection that
//! started it: when stdin ends (the coordinator quit, or ssh dropped) it
//! stops its load and exits, and the kernel sends it SIGTERM when its
//! parent (sshd's session process) dies, which it answers the same way.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use throng_engine::{Control, LoadSpec, Session};
use throng_model::TcpCounters;

use crate::binary::Binary;
use crate::facts;
use crate::protocol::{Banner, Envelope, PlanSlice, Reply, Request, SliceStamps, PROTOCOL};

/// Furthest ahead a start may be scheduled: a coordinator sends starts a
/// fraction of a second ahead, so anything beyond this is a wrong clock.
const MAX_LEAD: Duration = Duration::from_secs(30);
/// Latest a start may arrive and still run (the clock offset check keeps
/// real lateness under a millisecond).
const MAX_LATE: Duration = Duration::from_secs(5);

/// Set by a coordinator for an agent it starts on its own machine.
pub const LOCAL_ENV: &str = "THRONG_AGENT_LOCAL";
/// The build a coordinator started, `VERSION-HASH`.
pub const BUILD_ENV: &str = "THRONG_AGENT_BUILD";

type Out = Arc<Mutex<Box<dyn Write + Send>>>;

pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn send(out: &Out, id: u64, reply: Reply) {
    let line = serde_json::to_string(&Envelope { id, body: reply })
        .unwrap_or_else(|e| format!("{{\"id\":{id},\"reply\":\"failed\",\"message\":\"{e}\"}}"));
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    // A closed stdout means the coordinator is gone: stdin's end follows.
    let _ = writeln!(w, "{line}");
    let _ = w.flush();
}

/// What an agent can do beyond load: the lab's server-host side plugs in
/// here, so this crate never links the lab.
pub trait Extension {
    /// One request; runs on the agent's main thread, so requests are
    /// answered in order.
    fn handle(&mut self, body: serde_json::Value) -> Result<serde_json::Value, String>;
    /// The coordinator is gone (stdin ended): stop everything started.
    fn shutdown(&mut self);
}

/// An agent with no extension.
pub struct NoExtension;

impl Extension for NoExtension {
    fn handle(&mut self, _: serde_json::Value) -> Result<serde_json::Value, String> {
        Err("this agent runs no lab".into())
    }
    fn shutdown(&mut self) {}
}

/// Serve requests until stdin ends. Returns the process's exit code.
pub fn serve() -> u8 {
    serve_with(&mut NoExtension, || {})
}

/// [`serve`] with an extension, and `on_signal` run before the agent exits
/// on a signal (its parent's death among them), to kill what the
/// extension started.
pub fn serve_with(ext: &mut dyn Extension, on_signal: fn()) -> u8 {
    // The parent-death signal follows the parent *thread*: a local agent's
    // parent is one thread of a coordinator that opens links in parallel
    // and ends that thread at once, so only a remote agent (whose parent
    // is sshd's session process) sets it; stdin's end covers both.
    if std::env::var_os(LOCAL_ENV).is_none() {
        // SAFETY: prctl with PR_SET_PDEATHSIG and a valid signal number.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
        }
    }
    let control = Control::new();
    {
        let c = control.clone();
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
            signal_hook::consts::SIGINT,
        ]) {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    c.stop();
                    on_signal();
                    std::process::exit(1);
                }
            });
        }
    }
    let out: Out = Arc::new(Mutex::new(Box::new(std::io::stdout())));
    {
        let banner = Banner {
            throng_agent: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").to_string(),
        };
        let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(w, "{}", serde_json::to_string(&banner).unwrap_or_default());
        let _ = w.flush();
    }
    // The coordinator names the build it started (the agent's directory is
    // named by it), so the agent need not hash its own binary at every
    // start; only an agent started by hand does.
    let build = std::env::var(BUILD_ENV).unwrap_or_else(|_| {
        Binary::current()
            .map(|b| b.id)
            .unwrap_or_else(|_| "unknown".into())
    });
    let stdin = std::io::stdin();
    // Loads and the connections kept between windows live on a thread of
    // their own, so that this one keeps reading (a `Stop` among them).
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    let busy = Arc::new(AtomicBool::new(false));
    let loader = {
        let (out, busy) = (out.clone(), busy.clone());
        std::thread::spawn(move || loader(&queue, &out, &busy))
    };
    let mut current: Option<Control> = None;
    // The last slice the plan under way may run.
    let mut plan_last: Option<Arc<AtomicU32>> = None;
    for line in stdin.lock().lines() {
        let received = unix_ns();
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let env: Envelope<Request> = match serde_json::from_str(&line) {
            Ok(e) => e,
            Err(e) => {
                let id = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(|i| i.as_u64()))
                    .unwrap_or(0);
                send(
                    &out,
                    id,
                    Reply::Failed {
                        message: format!(
                            "this agent (protocol {PROTOCOL}) cannot read the request: {e}"
                        ),
                    },
                );
                continue;
            }
        };
        let id = env.id;
        match env.body {
            Request::Hello => send(&out, id, Reply::Hello(Box::new(facts::host_facts(&build)))),
            Request::Clock => send(
                &out,
                id,
                Reply::Clock {
                    t1: received,
                    t2: unix_ns(),
                },
            ),
            Request::Path { addr, samples } => {
                send(&out, id, Reply::Path(facts::path_facts(addr, samples)))
            }
            Request::Have { programs } => send(
                &out,
                id,
                Reply::Have {
                    missing: facts::missing_programs(&programs),
                },
            ),
            Request::Doctor { connections } => {
                let cpus = throng_engine::affinity::own_cpus();
                let findings = throng_trust::doctor::check(&throng_trust::doctor::Plan {
                    connections,
                    close_mode: false,
                    client_cpus: cpus,
                    server_cpus: Vec::new(),
                });
                send(&out, id, Reply::Doctor { findings })
            }
            Request::Ext { body } => match ext.handle(body) {
                Ok(body) => send(&out, id, Reply::Ext { body }),
                Err(message) => send(&out, id, Reply::Failed { message }),
            },
            Request::Stop => {
                if let Some(c) = &current {
                    c.stop();
                }
                send(&out, id, Reply::Stopping);
            }
            Request::Open {
                key,
                spec,
                auto_threads,
            } => {
                let _ = jobs.send(Job::Open {
                    id,
                    key,
                    spec,
                    auto_threads,
                });
            }
            Request::Shut { key } => {
                let _ = jobs.send(Job::Shut { id, key });
            }
            Request::Plan { slices } => {
                if let Some(control) = begin_load(&busy, &out, id) {
                    current = Some(control.clone());
                    let last = Arc::new(AtomicU32::new(u32::MAX));
                    plan_last = Some(last.clone());
                    let _ = jobs.send(Job::Plan {
                        id,
                        slices,
                        control,
                        last,
                    });
                }
            }
            Request::Cut { after } => {
                if let Some(last) = &plan_last {
                    last.fetch_min(after, Ordering::AcqRel);
                }
                send(&out, id, Reply::Cut);
            }
            Request::Load {
                spec,
                auto_threads,
                start_unix_ns,
            } => {
                if let Some(control) = begin_load(&busy, &out, id) {
                    current = Some(control.clone());
                    let _ = jobs.send(Job::Load {
                        id,
                        spec,
                        auto_threads,
                        start_unix_ns,
                        control,
                    });
                }
            }
            Request::Window {
                key,
                warmup_s,
                seconds,
                start_unix_ns,
            } => {
                if let Some(control) = begin_load(&busy, &out, id) {
                    current = Some(control.clone());
                    let _ = jobs.send(Job::Window {
                        id,
                        key,
                        warmup_s,
                        seconds,
                        start_unix_ns,
                        control,
                    });
                }
            }
        }
    }
    // The coordinator is gone: stop whatever runs, close what is held and
    // leave nothing behind.
    if let Some(c) = current.take() {
        c.stop();
    }
    drop(jobs);
    let _ = loader.join();
    control.stop();
    ext.shutdown();
    0
}

/// A load's (or a window's) control, or `None`, with the refusal sent,
/// while another runs: two at once would share this host's CPUs and
/// measure each other.
fn begin_load(busy: &AtomicBool, out: &Out, id: u64) -> Option<Control> {
    if busy.swap(true, Ordering::AcqRel) {
        send(
            out,
            id,
            Reply::Failed {
                message: "a load is already running on this host".into(),
            },
        );
        return None;
    }
    Some(Control::new())
}

/// What the loader thread is asked to do, in the order asked.
enum Job {
    Load {
        id: u64,
        spec: Box<LoadSpec>,
        auto_threads: bool,
        start_unix_ns: u64,
        control: Control,
    },
    Open {
        id: u64,
        key: String,
        spec: Box<LoadSpec>,
        auto_threads: bool,
    },
    Window {
        id: u64,
        key: String,
        warmup_s: f64,
        seconds: f64,
        start_unix_ns: u64,
        control: Control,
    },
    Plan {
        id: u64,
        slices: Vec<PlanSlice>,
        control: Control,
        /// The last slice it may run, lowered by a `Cut`.
        last: Arc<AtomicU32>,
    },
    Shut {
        id: u64,
        key: String,
    },
}

/// Runs jobs until the queue closes, then closes every kept connection.
fn loader(queue: &Receiver<Job>, out: &Out, busy: &AtomicBool) {
    let mut kept: HashMap<String, Session> = HashMap::new();
    for job in queue {
        match job {
            Job::Load {
                id,
                spec,
                auto_threads,
                start_unix_ns,
                control,
            } => {
                let reply = run_load(*spec, auto_threads, start_unix_ns, &control);
                busy.store(false, Ordering::Release);
                send(out, id, reply);
            }
            Job::Open {
                id,
                key,
                spec,
                auto_threads,
            } => {
                // A key opened again replaces what it held, closed first so
                // both are never held at once.
                kept.remove(&key);
                let reply = match here(*spec, auto_threads)
                    .and_then(|s| Session::open(&s).map_err(|e| e.to_string()))
                {
                    Ok(session) => {
                        kept.insert(key, session);
                        Reply::Opened
                    }
                    Err(message) => Reply::Failed { message },
                };
                send(out, id, reply);
            }
            Job::Window {
                id,
                key,
                warmup_s,
                seconds,
                start_unix_ns,
                control,
            } => {
                let reply = match kept.get_mut(&key) {
                    Some(session) => window(session, warmup_s, seconds, start_unix_ns, &control),
                    None => Reply::Failed {
                        message: format!("no connections are held for {key}"),
                    },
                };
                busy.store(false, Ordering::Release);
                send(out, id, reply);
            }
            Job::Plan {
                id,
                slices,
                control,
                last,
            } => {
                let ran = plan(&mut kept, &slices, (&control, &last), out, id);
                busy.store(false, Ordering::Release);
                send(out, id, Reply::PlanEnded { ran });
            }
            Job::Shut { id, key } => {
                kept.remove(&key);
                send(out, id, Reply::Shut);
            }
        }
    }
}

/// `spec` made to run on this host: its threads on the host's own CPUs.
fn here(mut spec: LoadSpec, auto_threads: bool) -> Result<LoadSpec, String> {
    let cpus = throng_engine::affinity::own_cpus();
    if auto_threads {
        spec.threads = cpus.len().max(1);
    }
    spec.cpus = cpus;
    spec.validate()
        .map_err(|e| format!("the load cannot run here: {e}"))?;
    Ok(spec)
}

/// Waits for `start_unix_ns`, the synchronised start itself: every client
/// host sleeps to the same instant of the coordinator's clock, translated
/// by its measured offset. Slept in short steps so a stop is seen. A start
/// too far ahead or behind this host's clock is refused.
fn wait_for(start_unix_ns: u64, c: &Control) -> Result<(), String> {
    let now = unix_ns();
    if start_unix_ns > now + MAX_LEAD.as_nanos() as u64 {
        return Err(format!(
            "the start is {:.1} s ahead of this host's clock",
            (start_unix_ns - now) as f64 / 1e9
        ));
    }
    if now > start_unix_ns + MAX_LATE.as_nanos() as u64 {
        return Err(format!(
            "the start was {:.1} s ago by this host's clock",
            (now - start_unix_ns) as f64 / 1e9
        ));
    }
    loop {
        let now = unix_ns();
        if now >= start_unix_ns || c.is_stopped() {
            return Ok(());
        }
        let left = Duration::from_nanos(start_unix_ns - now);
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

/// A load's reply: its result, with the ports and the TCP segments this
/// host's traffic left (counters read since `tcp_before`).
fn loaded(
    r: Result<throng_engine::LoadResult, throng_engine::EngineError>,
    tcp_before: Option<TcpCounters>,
) -> Reply {
    match r {
        Ok(r) => Reply::Load {
            result: Box::new(r),
            ports: throng_trust::PortUse::read(),
            tcp: tcp_before.and_then(|b| TcpCounters::read().map(|now| now.since(&b))),
        },
        Err(e) => Reply::Failed {
            message: e.to_string(),
        },
    }
}

fn window(session: &mut Session, warmup_s: f64, seconds: f64, start: u64, c: &Control) -> Reply {
    let r = window_run(session, warmup_s, seconds, start, c);
    session.settle();
    match r {
        Ok((r, tcp)) => Reply::Load {
            result: Box::new(r),
            ports: throng_trust::PortUse::read(),
            tcp,
        },
        Err(message) => Reply::Failed { message },
    }
}

/// A window's figures and the TCP segments this host sent over it.
type Windowed = (throng_engine::LoadResult, Option<throng_model::TcpSegments>);

fn window_run(
    session: &mut Session,
    warmup_s: f64,
    seconds: f64,
    start: u64,
    c: &Control,
) -> Result<Windowed, String> {
    let (Ok(warmup), Ok(measure)) = (
        Duration::try_from_secs_f64(warmup_s),
        Duration::try_from_secs_f64(seconds),
    ) else {
        return Err(format!(
            "a window of {seconds} s after {warmup_s} s of warmup cannot run"
        ));
    };
    wait_for(start, c)?;
    let before = TcpCounters::read();
    // The drain goes on behind the figures; the caller settles it.
    let r = session
        .window_unsettled(warmup, measure, c)
        .map_err(|e| e.to_string())?;
    let tcp = before.and_then(|b| TcpCounters::read().map(|now| now.since(&b)));
    Ok((r, tcp))
}

/// A plan's slices in order, each on time, its figures sent as it ends so
/// the coordinator sees a lost slice within the slice; a stop ends it.
/// The figures are encoded and written by a thread of their own, so the
/// next slice's start waits for none of it. A slice that opened
/// connections as it went carries the ports held as the slice before it
/// ended (the first such, as it ended): reading them walks the kernel's
/// whole socket table, tens of milliseconds on a busy machine, and a
/// slice's figures must not wait for that; the connections a plan runs
/// over are kept, so its port use moves slowly. A slice over its kept
/// connections alone carries none, as a round at home reads none: the
/// read ran on the load's CPU as the next slice started, made it late and
/// took its CPU.
/// Returns how many ran, once every figure is written.
fn plan(
    kept: &mut HashMap<String, Session>,
    slices: &[PlanSlice],
    (control, last): (&Control, &AtomicU32),
    out: &Out,
    id: u64,
) -> u32 {
    // Each slice's index, its figures, when it ended, and how long its
    // start waited past its instant for the drain before it.
    type Ran = (u32, Result<Windowed, String>, u64, u64);
    let (tx, rx) = std::sync::mpsc::channel::<Ran>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut ports: Option<throng_trust::PortUse> = None;
            for (index, r, ended_unix_ns, waited_ns) in rx {
                let churned = matches!(&r, Ok((r, _)) if throng_trust::opens_connections(r.keep_alive, r.reconnects));
                let reply = match r {
                    Ok((r, tcp)) => Reply::Slice {
                        index,
                        result: Some(Box::new(r)),
                        ports: match churned {
                            true => ports.take().unwrap_or_else(throng_trust::PortUse::read),
                            false => throng_trust::PortUse::default(),
                        },
                        tcp,
                        error: None,
                        stamps: Some(SliceStamps {
                            ended_unix_ns,
                            ready_unix_ns: unix_ns(),
                            waited_ns,
                        }),
                    },
                    Err(message) => Reply::Slice {
                        index,
                        result: None,
                        ports: throng_trust::PortUse::default(),
                        tcp: None,
                        error: Some(message),
                        stamps: None,
                    },
                };
                send(out, id, reply);
                if churned {
                    ports = Some(throng_trust::PortUse::read());
                }
            }
        });
        let mut ran = 0;
        // When the last slice's drain began and ended, and how late that
        // slice started for drains.
        let (mut draining, mut settled, mut carried) = (0u64, 0u64, 0u64);
        for (index, s) in (0u32..).zip(slices) {
            if control.is_stopped() || index > last.load(Ordering::Acquire) {
                break;
            }
            // Held past its instant by drains alone: the last slice's, and
            // the lateness drains gave that slice's start, which its end
            // carried (the gaps take it back a slice at a time). A slice
            // before it that ended late for the host's pace is not counted.
            let waited = settled
                .saturating_sub(s.start_unix_ns)
                .min(settled - draining + carried);
            carried = waited;
            let mut session = kept.get_mut(&s.key);
            let r = match session.as_deref_mut() {
                Some(session) => {
                    window_run(session, s.warmup_s, s.seconds, s.start_unix_ns, control)
                }
                None => Err(format!("no connections are held for {}", s.key)),
            };
            ran += 1;
            let _ = tx.send((index, r, unix_ns(), waited));
            // The figures are on their way; the responses still in flight
            // are read before the next slice, as at home.
            draining = unix_ns();
            if let Some(session) = session {
                session.settle();
            }
            settled = unix_ns().max(draining);
        }
        drop(tx);
        ran
    })
}

fn run_load(spec: LoadSpec, auto_threads: bool, start_unix_ns: u64, c: &Control) -> Reply {
    let spec = match here(spec, auto_threads) {
        Ok(s) => s,
        Err(message) => return Reply::Failed { message },
    };
    // Read before the wait: after it, the reading would make the start
    // late by its own time.
    let tcp = TcpCounters::read();
    if let Err(message) = wait_for(start_unix_ns, c) {
        return Reply::Failed { message };
    }
    loaded(throng_engine::run(&spec, c), tcp)
}
