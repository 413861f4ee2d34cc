//! Spreading a spec over threads, and merging what they counted.

use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};

use crate::clock::now_ns;
use crate::driver::{
    histogram, Job, Shared, ThreadResult, ThreadTap, Window, Worker, STATUS_SLOTS,
};
use crate::request::Prepared;
use crate::result::{
    Counts, H2Outcome, LoadModel, LoadResult, RateOutcome, Second, SessionOutcome, TlsOutcome,
    WarmupCounts, Warning,
};
use crate::spec::SpecError;
use crate::spec::{IoBackend, LoadSpec, Stop};
use crate::tap::Tap;
use crate::users::Arrival;
use throng_model::SPARE_FDS;

/// Connections held open by live sessions, which the open-file limit must
/// allow for on top of any new load's.
pub(crate) static HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Stops a running load from another thread (Ctrl-C, the lab's supervisor).
/// Workers read the flag once per event-loop iteration, never per request;
/// an iteration is bounded (see the driver), so a stop takes effect within
/// a few milliseconds whatever the server does. A run stopped before its
/// own end says so in [`LoadResult::interrupted`].
#[derive(Clone, Default, Debug)]
pub struct Control {
    stop: Arc<AtomicBool>,
    /// Set by [`Control::watching`]: the run's threads publish their
    /// totals once a second, for [`Control::running`].
    running: Option<Arc<crate::running::Running>>,
}

impl Control {
    pub fn new() -> Self {
        Control::default()
    }
    /// A control whose run (of at most `threads` threads, and with a
    /// timeline) publishes its measured totals once a second.
    pub fn watching(threads: usize) -> Self {
        Control {
            running: Some(Arc::new(crate::running::Running::new(threads))),
            ..Control::default()
        }
    }
    /// The measured totals published so far; `None` unless made by
    /// [`Control::watching`].
    pub fn running(&self) -> Option<crate::running::Totals> {
        self.running.as_ref().map(|r| r.totals())
    }
    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    pub fn is_stopped(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// The flag itself, for signal handlers that can only store to an atomic.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }
}

/// Why a run could not start. Variants carry the figures; callers word
/// them for their own users (option names belong to the CLI).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid load spec: {0}")]
    Invalid(#[from] SpecError),
    #[error("{url}: cannot connect to {addr}: {source}")]
    Unreachable {
        url: String,
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "{connections} connections need {needed} open files; the limit is {soft} (hard {hard})"
    )]
    FileLimit {
        connections: usize,
        needed: u64,
        soft: u64,
        hard: u64,
    },
    /// The TLS handshake before the load failed: a certificate not
    /// trusted, no version or cipher in common.
    #[error("{url}: TLS handshake failed: {reason}")]
    Handshake { url: String, reason: String },
    /// HTTP/2 was required, and the server's ALPN chose `chose` instead.
    #[error("{url}: the server did not choose h2 over ALPN (chose: {chose:?})")]
    NoH2 { url: String, chose: Option<String> },
    /// A source address this machine cannot bind: no interface has it.
    /// Checked before the load, so that a run of failed connects is not
    /// taken for ephemeral ports running out (both are EADDRNOTAVAIL).
    #[error("cannot bind source address {addr}: {source}")]
    Source {
        addr: std::net::IpAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The most connections the open-file limit allows this process, after
/// the descriptors it needs for everything else.
pub fn max_connections() -> u64 {
    use nix::sys::resource::{getrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap_or((1024, 1024));
    // The engine raises the soft limit up to the hard one when it needs to.
    soft.max(hard).saturating_sub(SPARE_FDS).max(1)
}

/// Run the load described by `spec` and return what was measured.
pub fn run(spec: &LoadSpec, control: &Control) -> Result<LoadResult, EngineError> {
    run_tapped(spec, control, None)
}

/// [`run`], each thread handing its seconds to `tap` as they end.
pub fn run_tapped(
    spec: &LoadSpec,
    control: &Control,
    tap: Option<Tap>,
) -> Result<LoadResult, EngineError> {
    let requests = prepare(spec)?;
    let h3 = spec.http.version == crate::spec::HttpVersion::Http3;
    let plan = Shared {
        spec,
        requests: &requests,
        // Rounded up: cut to whole nanoseconds, a schedule runs fast and
        // its last request on a connection can fall due nanoseconds
        // before the end, one more than the rate asks (7 req/s on 2
        // connections for 2 s gave 15). Up, it is at most 1 ns per
        // interval slow.
        interval_ns: spec
            .rate
            .map(|r| ((spec.connections as f64) * 1e9 / r).ceil().max(1.0) as u64),
        stagger_ns: spec.rate.map_or(0, |r| (1e9 / r) as u64),
        tick_ns: spec.tick.map_or(0, |t| t.as_nanos() as u64),
        server_names: server_names(spec),
        io: spec.io_backend(),
    };
    let measure = match spec.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    };
    let jobs = jobs(spec);
    let threads = jobs.len();
    // HTTP/3's threads run their own loop over UDP (no tap yet).
    let (results, window, started_unix_s) = if h3 {
        let (window, started_unix_s) = window_from_now(spec.warmup, measure, control);
        let results = crate::quic::run_threads(&plan, jobs, &window);
        (results, window, started_unix_s)
    } else {
        std::thread::scope(|s| {
            // Each thread makes its worker, pins itself, learns what a
            // sleep costs on its CPU and, for a schedule, opens its
            // connections before the window starts: a schedule counted
            // from a start the threads were not ready for would charge
            // their setup to the first requests' latency.
            let (ready_tx, ready_rx) = mpsc::channel();
            let mut starts = Vec::with_capacity(threads);
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|job| {
                    let plan = &plan;
                    let ready = Ready(ready_tx.clone());
                    let (start_tx, start_rx) = mpsc::channel::<(Window, f64)>();
                    starts.push(start_tx);
                    let tap = tap.clone();
                    std::thread::Builder::new()
                        .name(format!("throng-load-{}", job.index))
                        .spawn_scoped(s, move || {
                            let mut w = Worker::new(plan, job)?;
                            w.settle_thread();
                            if plan.interval_ns.is_some() {
                                w.open_ahead();
                            }
                            drop(ready);
                            let Ok((window, started_unix_s)) = start_rx.recv() else {
                                return Err(std::io::Error::other("the load never started"));
                            };
                            if let Some(t) = tap {
                                w.set_tap(ThreadTap::new(t, threads, started_unix_s));
                            }
                            Ok(w.run(window))
                        })
                        .expect("spawning a load thread")
                })
                .collect();
            drop(ready_tx);
            // One word from each thread, ready or gone (`Ready` says so
            // as it drops, an error or a panic included).
            for _ in 0..threads {
                let _ = ready_rx.recv();
            }
            let (window, started_unix_s) = window_from_now(spec.warmup, measure, control);
            for start in starts {
                let _ = start.send((window.clone(), started_unix_s));
            }
            let results = handles
                .into_iter()
                .map(|h| h.join().expect("load thread panicked"))
                .collect();
            (results, window, started_unix_s)
        })
    };
    let done = collect(results)?;
    Ok(merge(
        spec,
        &done,
        window.warmup_end_ns,
        started_unix_s,
        spec.warmup,
    ))
}

/// Each target's TLS name (validated with the spec), or none without TLS.
pub(crate) fn server_names(spec: &LoadSpec) -> Vec<rustls::pki_types::ServerName<'static>> {
    if spec.tls.is_none() {
        return Vec::new();
    }
    spec.targets
        .iter()
        .filter_map(|t| crate::tls::server_name(&t.host_header).ok())
        .collect()
}

/// Everything a load checks and builds before its threads start: the
/// spec, the open-file limit, the request bytes, and that every address
/// answers.
pub(crate) fn prepare(spec: &LoadSpec) -> Result<Prepared, EngineError> {
    spec.validate()?;
    ensure_file_limit(spec.connections)?;
    let requests = Prepared::new(spec);
    check_sources(spec)?;
    check_reachable(spec)?;
    Ok(requests)
}

/// The spec's connections spread evenly over its threads.
pub(crate) fn jobs(spec: &LoadSpec) -> Vec<Job> {
    if let Some(users) = &spec.users {
        // Whole users per thread: a user's connections are one thread's.
        let per_user = users.conns_per_user.max(1);
        let slots = users.slots(spec.connections).max(1);
        let threads = spec.threads.clamp(1, slots);
        let mut unit = LoadSpec {
            connections: slots,
            threads,
            users: None,
            ..spec.clone()
        };
        unit.stop = spec.stop;
        return jobs(&unit)
            .into_iter()
            .map(|j| Job {
                first_conn: j.first_conn * per_user,
                conns: j.conns * per_user,
                ..j
            })
            .collect();
    }
    let threads = spec.threads.clamp(1, spec.connections);
    let mut jobs = Vec::with_capacity(threads);
    let mut first_conn = 0;
    let conns: Vec<usize> = (0..threads)
        .map(|t| spec.connections / threads + usize::from(t < spec.connections % threads))
        .collect();
    // The count in proportion to each thread's connections, so every
    // connection carries about the same share: split evenly by thread, a
    // thread of two connections would run twice as long as one of one.
    let quotas = match spec.stop {
        Stop::Requests(n) => Some(proportional(n, &conns)),
        Stop::Duration(_) => None,
    };
    let mut first_request = 0;
    for (t, &conns) in conns.iter().enumerate() {
        let quota = quotas.as_ref().map(|q| q[t]);
        let cpu = (!spec.cpus.is_empty()).then(|| spec.cpus[t % spec.cpus.len()]);
        jobs.push(Job {
            index: t,
            first_conn,
            conns,
            quota,
            cpu,
            first_request: quota.map_or(first_conn as u64, |_| first_request),
        });
        first_conn += conns;
        first_request += quota.unwrap_or(0);
    }
    jobs
}

/// `total` split in proportion to `weights`, summing exactly to `total`
/// (when any weight is above 0):
/// each part rounded down, and what is left given one each to the parts
/// that lost most to the rounding (the earlier first, among equals).
pub fn proportional(total: u64, weights: &[usize]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| w as u128).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let exact = |w: usize| u128::from(total) * w as u128;
    let mut out: Vec<u64> = weights.iter().map(|&w| (exact(w) / sum) as u64).collect();
    let mut rems: Vec<(u128, usize)> = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| (exact(w) % sum, i))
        .collect();
    rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let short = total - out.iter().sum::<u64>();
    for &(_, i) in rems.iter().take(short as usize) {
        out[i] += 1;
    }
    out
}

/// A load thread's word that it is ready for its window, sent as it drops,
/// so that a thread that failed to get ready still says it is done.
struct Ready(mpsc::Sender<()>);

impl Drop for Ready {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A window starting now: its times, and the Unix time its measured
/// phase starts.
pub(crate) fn window_from_now(
    warmup: std::time::Duration,
    measure: Option<std::time::Duration>,
    control: &Control,
) -> (Window, f64) {
    let start_ns = now_ns();
    let start_unix = throng_model::unix_now();
    let warmup_ns = warmup.as_nanos() as u64;
    let warmup_end_ns = start_ns + warmup_ns;
    let window = Window {
        start_ns,
        warmup_end_ns,
        end_ns: measure.map(|d| warmup_end_ns + d.as_nanos() as u64),
        stop: control.stop.clone(),
        running: control.running.clone(),
    };
    (window, start_unix + warmup_ns as f64 / 1e9)
}

/// The threads' results, or the first reason one of them could not run.
pub(crate) fn collect(
    results: Vec<std::io::Result<ThreadResult>>,
) -> Result<Vec<ThreadResult>, EngineError> {
    let mut done = Vec::with_capacity(results.len());
    for r in results {
        let r = r?;
        if let Some(e) = r.fatal {
            return Err(EngineError::Io(e));
        }
        done.push(r);
    }
    Ok(done)
}

fn ensure_file_limit(connections: usize) -> Result<(), EngineError> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    // Open sessions keep their connections between windows.
    let connections = connections + HELD.load(std::sync::atomic::Ordering::Relaxed);
    let needed = connections as u64 + SPARE_FDS;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(std::io::Error::from)?;
    if soft >= needed {
        return Ok(());
    }
    if hard >= needed && setrlimit(Resource::RLIMIT_NOFILE, needed, hard).is_ok() {
        return Ok(());
    }
    Err(EngineError::FileLimit {
        connections,
        needed,
        soft,
        hard,
    })
}

/// Bind a socket to each source address once before the load: an address
/// no interface of this machine has fails every connect with
/// EADDRNOTAVAIL, the same error as ports running out, so found here it
/// is named for what it is. A range is checked whole; even 65,536
/// addresses take a fraction of a second.
fn check_sources(spec: &LoadSpec) -> Result<(), EngineError> {
    let mut seen = std::collections::HashSet::new();
    for &addr in &spec.sources {
        if !seen.insert(addr) {
            continue;
        }
        crate::driver::socket::open(std::net::SocketAddr::new(addr, 0), Some(addr), false, 0)
            .map_err(|source| EngineError::Source { addr, source })?;
    }
    Ok(())
}

/// Connect once to each address before the load, so an unreachable host
/// is one clear error rather than a run full of refusals. Only a handshake:
/// no request is sent, so the server sees exactly the requests counted.
fn check_reachable(spec: &LoadSpec) -> Result<(), EngineError> {
    if spec.http.version == crate::spec::HttpVersion::Http3 {
        return crate::quic::probe(spec)
            .map_err(|(url, reason)| EngineError::Handshake { url, reason });
    }
    let mut seen = Vec::new();
    for t in &spec.targets {
        if seen.contains(&t.addr) {
            continue;
        }
        seen.push(t.addr);
        let stream = std::net::TcpStream::connect_timeout(&t.addr, spec.timeout).map_err(|e| {
            EngineError::Unreachable {
                url: t.url.clone(),
                addr: t.addr,
                source: e,
            }
        })?;
        if spec.linger_zero {
            // This connection too leaves no TIME_WAIT behind.
            use std::os::fd::AsRawFd;
            let _ = crate::driver::socket::linger_zero(stream.as_raw_fd());
        }
        if let Some(tls) = &spec.tls {
            let h2_only = spec.http.version == crate::spec::HttpVersion::Http2;
            let done = crate::tls::handshake(tls, &t.host_header, stream, spec.timeout).map_err(
                |reason| {
                    // A server that offers no protocol of ours refuses
                    // with this alert (nginx without http2, to h2 alone).
                    if h2_only && reason.contains("NoApplicationProtocol") {
                        EngineError::NoH2 {
                            url: t.url.clone(),
                            chose: None,
                        }
                    } else {
                        EngineError::Handshake {
                            url: t.url.clone(),
                            reason,
                        }
                    }
                },
            )?;
            // HTTP/2 asked for and refused is one clear error rather than
            // a run of failed connections.
            if spec.http.version == crate::spec::HttpVersion::Http2
                && done.alpn.as_deref() != Some("h2")
            {
                return Err(EngineError::NoH2 {
                    url: t.url.clone(),
                    chose: done.alpn,
                });
            }
        }
    }
    Ok(())
}

/// One result from the threads' results of one window (a run is one).
pub(crate) fn merge(
    spec: &LoadSpec,
    parts: &[ThreadResult],
    warmup_end_ns: u64,
    started_unix_s: f64,
    warmup_len: std::time::Duration,
) -> LoadResult {
    let threads = parts.len();
    let mut measured = parts[0].stats.measured.clone();
    let mut warmup = parts[0].stats.warmup.clone();
    let mut latency = histogram();
    let mut uncorrected = histogram();
    let mut connect = histogram();
    let mut conn_life = histogram();
    let mut lateness = histogram();
    let (mut late_sends, mut established, mut reconnects, mut in_flight) = (0, 0, 0, 0);
    let mut unsent = 0;
    let (mut user, mut sys, mut runqueue) = (0.0, 0.0, 0.0);
    let (mut naps, mut hold_ns, mut holds) = (0, 0, 0);
    let (mut spins, mut spins_answered, mut spun_ns) = (0, 0, 0);
    let (mut sleep_cost_ns, mut sleep_late_ns) = (0, 0);
    let mut interrupted = false;
    let mut end_ns = warmup_end_ns;
    let mut timeline: Vec<[u64; 3]> = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let st = &p.stats;
        if k > 0 {
            measured.add(&st.measured);
            warmup.add(&st.warmup);
        }
        // Same bounds everywhere, so adding cannot fail.
        let _ = latency.add(&st.latency);
        let _ = latency.add(&st.whole);
        let _ = uncorrected.add(&st.uncorrected);
        let _ = connect.add(&st.connect);
        let _ = conn_life.add(&st.conn_life);
        let _ = lateness.add(&st.lateness);
        late_sends += st.late_sends;
        unsent += st.unsent;
        established += p.established;
        reconnects += st.reconnects;
        in_flight += p.in_flight_at_end;
        user += p.cpu_user;
        sys += p.cpu_sys;
        runqueue += p.runqueue_wait;
        naps += st.naps;
        spins += st.spins;
        spins_answered += st.spins_answered;
        spun_ns += st.spun_ns;
        sleep_cost_ns = sleep_cost_ns.max(st.sleep_cost_ns);
        sleep_late_ns = sleep_late_ns.max(st.sleep_late_ns);
        hold_ns += st.hold_ns;
        holds += st.holds;
        interrupted |= p.interrupted;
        end_ns = end_ns.max(p.end_ns);
        if timeline.len() < st.timeline.len() {
            timeline.resize(st.timeline.len(), [0; 3]);
        }
        for (a, b) in timeline.iter_mut().zip(&st.timeline) {
            for j in 0..3 {
                a[j] += b[j];
            }
        }
    }
    let duration_s = end_ns.saturating_sub(warmup_end_ns) as f64 / 1e9;
    let rate = spec.rate.is_some();
    let status = measured
        .status
        .iter()
        .enumerate()
        .take(STATUS_SLOTS)
        .filter(|(_, &n)| n > 0)
        .map(|(code, &n)| (code as u16, n))
        .collect();

    let requested = spec.connections as u64;
    let mut warnings = Vec::new();
    for (t, target) in spec.targets.iter().enumerate() {
        let mut sizes: Vec<u64> = parts.iter().filter_map(|p| p.expect[t].size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut sums: Vec<u64> = parts.iter().filter_map(|p| p.expect[t].checksum).collect();
        sums.sort_unstable();
        sums.dedup();
        if sizes.len() > 1 || sums.len() > 1 {
            warnings.push(Warning::ResponseChanged {
                url: target.url.clone(),
                sizes,
            });
        }
    }
    // A user opens its burst connections only when a page needs them.
    if established < requested && spec.users.is_none() {
        warnings.push(Warning::FewerConnections {
            established,
            requested,
        });
    }
    // Said once, whichever threads it concerns.
    let mut io = spec.io_backend();
    if let Some(reason) = parts.iter().find_map(|p| p.io_fallback.clone()) {
        warnings.push(Warning::UringUnavailable { reason });
        io = IoBackend::Epoll;
    }
    if !spec.cpus.is_empty() && spec.threads > spec.cpus.len() {
        warnings.push(Warning::SharedCpus {
            threads: spec.threads as u64,
            cpus: spec.cpus.len() as u64,
        });
    }
    if rate && late_sends > 0 {
        warnings.push(Warning::LateSends {
            late: late_sends,
            sent: measured.sent,
        });
    }
    if rate && unsent > 0 {
        warnings.push(Warning::Unsent {
            unsent,
            sent: measured.sent,
        });
    }
    let timeline = timeline
        .iter()
        .enumerate()
        .map(|(i, r)| Second {
            t_unix: started_unix_s + i as f64,
            completed: r[0],
            errors: r[1],
            bytes_read: r[2],
        })
        .collect();
    let counts = Counts {
        completed: measured.completed,
        sent: measured.sent,
        bytes_read: measured.bytes_read,
        bytes_written: measured.bytes_written,
        body_bytes: measured.body_bytes,
        head_replies: measured.head_replies,
        head_bytes: measured.head_bytes,
        connects: measured.connects,
        resent: measured.resent,
        errors: measured.errors,
        status,
    };
    LoadResult {
        model: if rate {
            LoadModel::Open
        } else {
            LoadModel::Closed
        },
        urls: spec.targets.len() as u64,
        threads: threads as u64,
        pipeline: spec.pipeline as u64,
        keep_alive: spec.keep_alive,
        coalesce: spec.naps(),
        io,
        started_unix_s,
        duration_s,
        counts,
        connections_requested: requested,
        connections_established: established,
        reconnects,
        connect_time: connect,
        connection_time: Some(conn_life),
        in_flight_at_end: in_flight,
        cpu_user_s: user,
        cpu_sys_s: sys,
        runqueue_s: runqueue,
        naps,
        spins,
        spins_answered,
        spun_ns,
        sleep_cost_ns,
        sleep_late_ns,
        hold_ns,
        holds,
        rate: spec.rate.map(|target| RateOutcome {
            target,
            late_sends,
            unsent,
            lateness,
            tick_us: spec.tick.map(|t| t.as_micros() as u64),
        }),
        warmup: (!warmup_len.is_zero()).then(|| WarmupCounts {
            duration_s: warmup_len.as_secs_f64(),
            completed: warmup.completed,
            errors: warmup.errors_total(),
        }),
        timeline,
        warnings,
        latency,
        latency_uncorrected: rate.then_some(uncorrected),
        first_byte: {
            let mut h = histogram();
            for p in parts {
                let _ = h.add(&p.stats.first_byte);
                let _ = h.add(&p.stats.whole);
            }
            Some(h)
        },
        interrupted,
        tls: spec.tls.as_ref().map(|_| {
            let mut handshake_time = histogram();
            let (mut handshakes, mut resumed) = (0, 0);
            for p in parts {
                let _ = handshake_time.add(&p.stats.handshake);
                handshakes += p.stats.tls.handshakes;
                resumed += p.stats.tls.resumed;
            }
            let first = parts
                .iter()
                .map(|p| &p.stats.tls)
                .find(|t| t.version.is_some());
            TlsOutcome {
                version: first.and_then(|t| t.version.map(str::to_string)),
                cipher: first.and_then(|t| t.cipher.map(str::to_string)),
                alpn: first.and_then(|t| t.alpn.clone()),
                handshakes,
                resumed,
                handshake_time,
            }
        }),
        http2: spec.http.may_h2(spec.tls.is_some()).then(|| {
            let mut out = H2Outcome {
                streams: spec.http.streams as u64,
                ..H2Outcome::default()
            };
            for p in parts {
                let h = &p.stats.h2;
                let mut one = H2Outcome {
                    connections: h.connections,
                    server_max_streams: h.peer_max_streams,
                    retried: h.retried,
                    ..H2Outcome::default()
                };
                for (map, counts) in [(&mut one.resets, &h.resets), (&mut one.goaways, &h.goaways)]
                {
                    for (slot, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
                        map.insert(crate::h2::code_name(slot as u32).to_string(), n);
                    }
                }
                out.add(&one);
            }
            out
        }),
        http3: (spec.http.version == crate::spec::HttpVersion::Http3)
            .then(|| crate::quic::outcome(parts))
            .flatten(),
        sessions: spec.users.as_ref().and_then(|users| {
            let each: Vec<SessionOutcome> = parts
                .iter()
                .filter_map(|p| p.sessions.as_ref())
                .map(|s| SessionOutcome {
                    users: 0,
                    arrival_per_sec: None,
                    counts: s.counts,
                    duration: s.duration.clone(),
                    think: s.think.clone(),
                    active: s.active.clone(),
                    active_max: s.active_max,
                    lengths: {
                        let used = s.lengths.iter().rposition(|&n| n > 0).map_or(0, |k| k + 1);
                        s.lengths[..used].to_vec()
                    },
                })
                .collect();
            let mut out = SessionOutcome::sum(&each)?;
            out.users = users.slots(spec.connections) as u64;
            out.arrival_per_sec = match users.arrival {
                Arrival::Open { per_sec, .. } => Some(per_sec),
                Arrival::Population => None,
            };
            Some(out)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    /// The window starts once every thread has said it is ready or gone:
    /// a thread whose setup fails, or panics, says so as it goes, so that
    /// the others' window is not held for it.
    #[test]
    fn a_thread_that_fails_before_it_is_ready_still_says_so() {
        let (tx, rx) = mpsc::channel();
        let ready = Ready(tx.clone());
        let failed = Ready(tx.clone());
        let panicked = Ready(tx);
        let t = std::thread::spawn(move || -> std::io::Result<()> {
            let _word = failed;
            Err(std::io::Error::other("no ring, no epoll"))
        });
        assert!(t.join().unwrap().is_err());
        let t = std::thread::spawn(move || {
            let _word = panicked;
            panic!("setting up");
        });
        assert!(t.join().is_err());
        drop(ready);
        assert_eq!(rx.iter().count(), 3);
    }

    #[test]
    fn a_count_is_split_by_connections_not_by_threads() {
        // Three connections on two threads: the thread with two carries
        // two thirds, so each connection does 50 and both end together.
        let mut spec = LoadSpec::new(vec![Target::http("127.0.0.1:80".parse().unwrap(), "/")]);
        spec.connections = 3;
        spec.threads = 2;
        spec.stop = Stop::Requests(150);
        let j = jobs(&spec);
        let got: Vec<(usize, Option<u64>)> = j.iter().map(|j| (j.conns, j.quota)).collect();
        assert_eq!(got, [(2, Some(100)), (1, Some(50))]);
        // The second thread's requests go on where the first's stop.
        let starts: Vec<u64> = j.iter().map(|j| j.first_request).collect();
        assert_eq!(starts, [0, 100]);
        spec.stop = Stop::Requests(7);
        let q: Vec<Option<u64>> = jobs(&spec).iter().map(|j| j.quota).collect();
        assert_eq!(q, [Some(5), Some(2)]);
    }

    #[test]
    fn a_proportional_split_sums_exactly() {
        assert_eq!(proportional(1001, &[4, 3, 3]), [401, 300, 300]);
        assert_eq!(proportional(10, &[1, 1, 1]), [4, 3, 3]);
        assert_eq!(proportional(0, &[2, 1]), [0, 0]);
        assert_eq!(proportional(5, &[0, 0]), [0, 0]);
        assert_eq!(
            proportional(u64::MAX, &[1, 1]).iter().sum::<u64>(),
            u64::MAX
        );
    }
}
