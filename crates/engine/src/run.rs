//! Spreading a spec over threads, and merging what they counted.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::clock::now_ns;
use crate::driver::{histogram, Job, Plan, ThreadResult, Worker, STATUS_SLOTS};
use crate::request::serialize;
use crate::spec::{LoadSpec, Stop};
use crate::summary::{
    Connections, CpuTime, ErrorKind, Latency, LoadResult, RateReport, Summary, TimelineRow, Warmup,
    SCHEMA_VERSION,
};

/// Stops a running load from another thread (Ctrl-C, the lab's supervisor).
/// Workers read the flag once per event-loop iteration, never per request.
#[derive(Clone, Default, Debug)]
pub struct Control {
    stop: Arc<AtomicBool>,
}

impl Control {
    pub fn new() -> Self {
        Control::default()
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

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Invalid(String),
    #[error("{url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error(
        "-c {connections} needs {needed} open files but the limit is {soft} (hard limit {hard}): \
         raise it with `ulimit -n {needed}` (the hard limit is set in /etc/security/limits.conf \
         or with `prlimit --nofile={needed}:{needed} --pid $$` as root), or lower -c"
    )]
    FileLimit {
        connections: usize,
        needed: u64,
        soft: u64,
        hard: u64,
    },
    #[error("cannot run the load: {0}")]
    Io(#[from] std::io::Error),
}

/// Descriptors needed beyond one per connection: stdio, epoll and timer fds
/// per thread, the probe, and whatever the embedding program holds open.
const SPARE_FDS: u64 = 64;

/// Run the load described by `spec` and return what was measured.
pub fn run(spec: &LoadSpec, control: &Control) -> Result<LoadResult, EngineError> {
    validate(spec)?;
    ensure_file_limit(spec.connections)?;
    let requests: Vec<Vec<u8>> = spec.targets.iter().map(|t| serialize(spec, t)).collect();
    check_reachable(spec)?;

    let threads = spec.threads.clamp(1, spec.connections);
    let rate_interval = spec
        .rate
        .map(|r| ((spec.connections as f64) * 1e9 / r).max(1.0) as u64);
    let stagger = spec.rate.map_or(0, |r| (1e9 / r) as u64);

    let start_ns = now_ns();
    let start_unix = unix_now();
    let warmup_ns = spec.warmup.as_nanos() as u64;
    let warmup_end_ns = start_ns + warmup_ns;
    let end_ns = match spec.stop {
        Stop::Duration(d) => Some(warmup_end_ns + d.as_nanos() as u64),
        Stop::Requests(_) => None,
    };
    let plan = Plan {
        spec,
        requests: &requests,
        start_ns,
        warmup_end_ns,
        end_ns,
        stop: &control.stop,
        interval_ns: rate_interval,
        stagger_ns: stagger,
    };

    let mut jobs = Vec::with_capacity(threads);
    let mut first_conn = 0;
    for t in 0..threads {
        let conns = spec.connections / threads + usize::from(t < spec.connections % threads);
        let quota = match spec.stop {
            Stop::Requests(n) => {
                Some(n / threads as u64 + u64::from((t as u64) < n % threads as u64))
            }
            Stop::Duration(_) => None,
        };
        let cpu = (!spec.cpus.is_empty()).then(|| spec.cpus[t % spec.cpus.len()]);
        jobs.push(Job {
            index: t,
            first_conn,
            conns,
            quota,
            cpu,
        });
        first_conn += conns;
    }

    let results: Vec<std::io::Result<ThreadResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let plan = &plan;
                std::thread::Builder::new()
                    .name(format!("throng-load-{}", job.index))
                    .spawn_scoped(s, move || Worker::new(plan, job).map(Worker::run))
                    .expect("spawning a load thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("load thread panicked"))
            .collect()
    });
    let mut done = Vec::with_capacity(results.len());
    for r in results {
        let r = r?;
        if let Some(e) = r.fatal {
            return Err(EngineError::Io(e));
        }
        done.push(r);
    }
    Ok(merge(
        spec,
        threads,
        done,
        warmup_end_ns,
        start_unix + warmup_ns as f64 / 1e9,
    ))
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn validate(spec: &LoadSpec) -> Result<(), EngineError> {
    let bad = |m: &str| Err(EngineError::Invalid(m.to_string()));
    if spec.targets.is_empty() {
        return bad("no URL to load");
    }
    if spec.connections == 0 {
        return bad("-c must be at least 1");
    }
    if spec.pipeline == 0 || spec.pipeline > 1024 {
        return bad("--pipeline must be between 1 and 1024");
    }
    if let Some(r) = spec.rate {
        if !(r.is_finite() && r > 0.0) {
            return bad("--rate must be a positive number of requests per second");
        }
        if spec.pipeline > 1 {
            return bad("--rate and --pipeline cannot be combined: the schedule is per request");
        }
    }
    if !spec.keep_alive && spec.pipeline > 1 {
        return bad(
            "--close and --pipeline cannot be combined: a closed connection carries one request",
        );
    }
    match spec.stop {
        Stop::Requests(0) => return bad("-n must be at least 1"),
        Stop::Requests(n) if n < spec.connections as u64 => {
            return Err(EngineError::Invalid(format!(
                "-n {n} is less than -c {}: some connections would never send a request",
                spec.connections
            )))
        }
        Stop::Duration(d) if d.is_zero() => return bad("-d must be longer than 0"),
        _ => {}
    }
    Ok(())
}

fn ensure_file_limit(connections: usize) -> Result<(), EngineError> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
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

/// Connect once to each address before the load, so an unreachable host
/// is one clear error rather than a run full of refusals. Only a handshake:
/// no request is sent, so the server sees exactly the requests counted.
fn check_reachable(spec: &LoadSpec) -> Result<(), EngineError> {
    let mut seen = Vec::new();
    for t in &spec.targets {
        if seen.contains(&t.addr) {
            continue;
        }
        seen.push(t.addr);
        std::net::TcpStream::connect_timeout(&t.addr, spec.timeout).map_err(|e| {
            EngineError::Unreachable {
                url: t.url.clone(),
                reason: format!("cannot connect to {}: {e}", t.addr),
            }
        })?;
    }
    Ok(())
}

fn merge(
    spec: &LoadSpec,
    threads: usize,
    parts: Vec<ThreadResult>,
    warmup_end_ns: u64,
    started_unix_s: f64,
) -> LoadResult {
    let mut measured = parts[0].measured.clone();
    let mut warmup = parts[0].warmup.clone();
    let mut latency = histogram();
    let mut uncorrected = histogram();
    let mut connect = histogram();
    let mut lateness = histogram();
    let (mut late_sends, mut established, mut reconnects, mut in_flight) = (0, 0, 0, 0);
    let (mut user, mut sys, mut runqueue) = (0.0, 0.0, 0.0);
    let mut naps = 0;
    let mut end_ns = warmup_end_ns;
    let mut timeline: Vec<[u64; 3]> = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        if k > 0 {
            measured.add(&p.measured);
            warmup.add(&p.warmup);
        }
        // Same bounds everywhere, so adding cannot fail.
        let _ = latency.add(&p.latency);
        let _ = uncorrected.add(&p.uncorrected);
        let _ = connect.add(&p.connect);
        let _ = lateness.add(&p.lateness);
        late_sends += p.late_sends;
        established += p.established;
        reconnects += p.reconnects;
        in_flight += p.in_flight_at_end;
        user += p.cpu_user;
        sys += p.cpu_sys;
        runqueue += p.runqueue_wait;
        naps += p.naps;
        end_ns = end_ns.max(p.end_ns);
        if timeline.len() < p.timeline.len() {
            timeline.resize(p.timeline.len(), [0; 3]);
        }
        for (a, b) in timeline.iter_mut().zip(&p.timeline) {
            for j in 0..3 {
                a[j] += b[j];
            }
        }
    }
    let duration_s = end_ns.saturating_sub(warmup_end_ns) as f64 / 1e9;
    let per_sec = |x: u64| {
        if duration_s > 0.0 {
            x as f64 / duration_s
        } else {
            0.0
        }
    };
    let rate = spec.rate.is_some();

    let mut status = BTreeMap::new();
    for (code, &n) in measured.status.iter().enumerate().take(STATUS_SLOTS) {
        if n > 0 {
            status.insert(code.to_string(), n);
        }
    }
    let errors: BTreeMap<String, u64> = ErrorKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), measured.errors[k.index()]))
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
            warnings.push(format!(
                "threads saw different first responses for {} (body sizes {:?}): the \
                 response changed during the run, so size checks hold each thread to its own",
                target.url, sizes
            ));
        }
    }
    if established < requested {
        warnings.push(format!(
            "only {established} of {requested} connections could be established: \
             the load was lighter than asked"
        ));
    }
    if rate && late_sends > 0 {
        let sent = measured.sent.max(1);
        warnings.push(format!(
            "{late_sends} of {sent} sends ({:.1}%) went out more than 1 ms after their intended \
             time: latency includes that wait (no coordinated omission), but the client or \
             server could not keep up with the schedule",
            late_sends as f64 * 100.0 / sent as f64
        ));
    }
    let timeline_rows = timeline
        .iter()
        .enumerate()
        .map(|(i, r)| TimelineRow {
            t_unix: started_unix_s + i as f64,
            completed: r[0],
            errors: r[1],
            bytes_read: r[2],
        })
        .collect();

    let summary = Summary {
        schema: SCHEMA_VERSION,
        model: if rate { "open" } else { "closed" }.to_string(),
        urls: spec.targets.len() as u64,
        threads: threads as u64,
        pipeline: spec.pipeline as u64,
        keep_alive: spec.keep_alive,
        coalesce: spec.naps(),
        started_unix_s,
        duration_s,
        completed: measured.completed,
        sent: measured.sent,
        requests_per_sec: per_sec(measured.completed),
        bytes_read: measured.bytes_read,
        bytes_written: measured.bytes_written,
        body_bytes: measured.body_bytes,
        mb_per_sec: per_sec(measured.bytes_read) / 1e6,
        latency_us: Latency::from_histogram(&latency),
        latency_uncorrected_us: rate.then(|| Latency::from_histogram(&uncorrected)),
        status,
        errors_total: measured.errors_total(),
        errors,
        connections: Connections {
            requested,
            established,
            reconnects,
            per_sec: per_sec(measured.connects),
            connect_time_us: Latency::from_histogram(&connect),
        },
        in_flight_at_end: in_flight,
        client_cpu_s: CpuTime {
            user,
            sys,
            runqueue,
        },
        client_naps: naps,
        rate: spec.rate.map(|target| RateReport {
            target,
            late_sends,
            lateness_us: Latency::from_histogram(&lateness),
        }),
        warmup: (!spec.warmup.is_zero()).then(|| Warmup {
            duration_s: spec.warmup.as_secs_f64(),
            completed: warmup.completed,
            errors: warmup.errors_total(),
        }),
        timeline: timeline_rows,
        warnings,
    };
    LoadResult {
        summary,
        latency,
        latency_uncorrected: rate.then_some(uncorrected),
    }
}
