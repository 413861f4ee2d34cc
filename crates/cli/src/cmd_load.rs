//! `throng load`: options in, a validated `LoadSpec` out, the engine run,
//! and what it measured printed for people (or as JSON for programs).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use throng_engine::{Control, ExpectStatus, LoadSpec, Order, Stop, Target};
use throng_model::{ErrorKind, IoBackend, Latency, Summary, Verdict};

use throng_load::target::{
    add_authorization, one_authorization, parse_target, url_credentials, url_list,
};

use crate::args::parse_duration;
use crate::fmt::{human_bytes, human_count, human_us};
use crate::load_errors::{engine_error, spec_error};

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// URL to load (http:// or https://host[:port]/path). Optional when --urls lists full URLs.
    pub url: Option<String>,
    /// Connections kept open (closed model: requests in flight at once)
    /// [default: 10].
    #[arg(short = 'c', long)]
    pub connections: Option<usize>,
    /// Threads, each pinned to one CPU of this process's affinity mask, in
    /// turn; more threads than CPUs share them, and a warning says so
    /// [default: the number of CPUs in the mask].
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// How long to measure, after the warmup (e.g. 10s, 500ms, 2m).
    #[arg(short = 'd', long, value_parser = parse_duration, conflicts_with = "requests")]
    pub duration: Option<Duration>,
    /// Complete exactly this many requests instead of running for a duration.
    #[arg(short = 'n', long = "requests")]
    pub requests: Option<u64>,
    /// Send `Connection: close` and open a new connection per request.
    #[arg(long)]
    pub close: bool,
    /// Close each connection after N requests, as a server's
    /// keepalive_requests would: the N-th is sent with `Connection: close`,
    /// and a new connection takes over [default: no limit].
    #[arg(long, value_name = "N", conflicts_with = "close")]
    pub requests_per_connection: Option<u64>,
    /// HTTP/1.1 pipelining depth [default: 1].
    #[arg(long)]
    pub pipeline: Option<usize>,
    /// Block on epoll as soon as no response is ready, as wrk does, instead
    /// of napping a few µs first to take responses in batches.
    #[arg(long)]
    pub no_coalesce: bool,
    /// Closed model: a nap is at most 1/D of the recent latency. A smaller
    /// D spends less client CPU per response and keeps more connections
    /// waiting on the client, which the summary's client hold says
    /// [default: 128].
    #[arg(long, value_name = "D", conflicts_with = "no_coalesce",
          value_parser = clap::value_parser!(u64).range(throng_engine::NAP_DIVISORS))]
    pub nap_divisor: Option<u64>,
    /// How the load threads do their socket I/O: io_uring (one submission
    /// per loop turn, multishot receives) or epoll. auto: io_uring where
    /// it drives the load (cleartext HTTP/1.1), epoll over TLS, HTTP/2 and
    /// for users. Where the kernel refuses io_uring (disabled, or blocked
    /// in a container), the load runs on epoll and says so.
    #[arg(long, value_enum, default_value_t = IoArg::Auto)]
    pub io: IoArg,
    /// Open model: this many requests per second in all, on a fixed schedule;
    /// latency is measured from each request's intended send time.
    #[arg(long)]
    pub rate: Option<f64>,
    /// File of paths or URLs, one per line (# comments allowed).
    #[arg(long)]
    pub urls: Option<PathBuf>,
    /// Order in which --urls entries are requested.
    #[arg(long, value_enum, default_value_t = OrderArg::Sequential)]
    pub order: OrderArg,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request method [default: GET].
    #[arg(short = 'm', long)]
    pub method: Option<String>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Load applied before measuring; reported apart, never mixed in
    /// [default: none].
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// A request with no complete response after this long is a timeout
    /// [default: 3s].
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Statuses that count as success, e.g. 200,304 [default: any 2xx or 3xx].
    #[arg(long, value_delimiter = ',')]
    pub expect_status: Vec<u16>,
    /// Body size every response must have [default: the first response's, per URL].
    #[arg(long)]
    pub expect_size: Option<u64>,
    /// Hash every body and compare it with the first one seen for its URL.
    #[arg(long)]
    pub checksum: bool,
    /// Print one line per second of the measured phase.
    #[arg(long)]
    pub timeline: bool,
    /// Print only JSON on stdout (schema: docs/json-schema.md).
    #[arg(long)]
    pub json: bool,
    /// Seed for --order random [default: 24301].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Exit with code 1 when the verdict is suspect (for CI).
    #[arg(long)]
    pub strict: bool,
    /// Store the run in the results database, as a run of one step that
    /// `throng report`, `throng compare` and `throng runs` read; the
    /// machine is checked as `throng doctor` does once the load has ended.
    #[arg(long)]
    pub save: bool,
    /// Results database for --save; giving it implies --save
    /// [default: throng.db].
    #[arg(long, value_name = "FILE", value_parser = crate::args::out_path)]
    pub db: Option<PathBuf>,
    /// Run the load from these hosts instead of this machine
    /// (ssh://[user@]host[:port] or local, comma-separated): -c, -n and
    /// --rate are split over them, they start together, and their counts
    /// and histograms are merged. -t is per host [default: each host's CPUs].
    /// The ssh command is THRONG_SSH_COMMAND's, else `ssh`.
    #[arg(long, value_name = "HOSTS")]
    pub hosts: Option<String>,
    #[command(flatten)]
    pub users: crate::load_sessions::SessionArgs,
    #[command(flatten)]
    pub tls: crate::load_tls::TlsArgs,
    #[command(flatten)]
    pub http: crate::load_h2::HttpArgs,
    #[command(flatten)]
    pub conn: crate::load_conn::ConnArgs,
    #[command(flatten)]
    pub live: crate::load_live::LiveArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoArg {
    Auto,
    Uring,
    Epoll,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum OrderArg {
    Sequential,
    Random,
}

/// The URLs of a `--urls` file, each with the `Authorization` value of
/// the credentials written in it.
fn read_url_list(
    file: &std::path::Path,
    base: Option<&str>,
) -> Result<Vec<(Target, Option<String>)>> {
    use throng_load::target::UrlListError;
    let text = crate::args::read_text("--urls", file)?;
    url_list(&text, base).map_err(|e| match e {
        UrlListError::Line { line, why } => anyhow::anyhow!("{}:{line}: {why}", file.display()),
        UrlListError::Empty => anyhow::anyhow!("{} lists no URL", file.display()),
        UrlListError::Base(e) => e.into(),
    })
}

/// The options into the engine's spec: what was not given keeps the
/// spec's default, and every check on the values is the spec's own
/// ([`LoadSpec::validate`]), worded here with the options' names.
pub fn build_spec(a: &LoadArgs) -> Result<LoadSpec> {
    let (targets, credentials): (Vec<Target>, Vec<Option<String>>) = match (&a.urls, &a.url) {
        // The session file's requests, set below.
        _ if a.users.sessions.is_some() => (Vec::new(), Vec::new()),
        (Some(f), base) => read_url_list(f, base.as_deref())?.into_iter().unzip(),
        (None, Some(u)) => (vec![parse_target(u)?], vec![url_credentials(u)?]),
        (None, None) => bail!("give a URL to load, or --urls FILE"),
    };
    let authorization = one_authorization(credentials)?;
    let mut spec = LoadSpec::new(targets);
    let cpus = throng_engine::affinity::own_cpus();
    spec.threads = a.threads.unwrap_or(cpus.len().max(1));
    spec.cpus = cpus;
    if let Some(c) = a.connections {
        spec.connections = c;
    }
    spec.stop = match (a.requests, a.duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, Some(d)) => Stop::Duration(d),
        (None, None) => spec.stop,
    };
    spec.rate = a.rate;
    spec.keep_alive = !a.close;
    spec.requests_per_connection = a.requests_per_connection;
    if let Some(p) = a.pipeline {
        spec.pipeline = p;
    }
    spec.coalesce = !a.no_coalesce;
    if let Some(d) = a.nap_divisor {
        spec.nap_divisor = d;
    }
    spec.io = match a.io {
        IoArg::Auto => throng_engine::IoBackend::Auto,
        IoArg::Uring => throng_engine::IoBackend::Uring,
        IoArg::Epoll => throng_engine::IoBackend::Epoll,
    };
    spec.order = match a.order {
        OrderArg::Sequential => Order::Sequential,
        OrderArg::Random => Order::Random,
    };
    if let Some(m) = &a.method {
        spec.method = m.to_ascii_uppercase();
    }
    for h in &a.headers {
        let field = throng_load::vocab::header(h)
            .map_err(|_| anyhow::anyhow!("header `{h}` must look like `Name: value`"))?;
        spec.headers.push(field);
    }
    add_authorization(&mut spec, authorization);
    spec.body = match (&a.body, &a.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(f)) => Some(crate::args::read_file("--body-file", f)?),
        (None, None) => None,
    };
    if let Some(w) = a.warmup {
        spec.warmup = w;
    }
    if let Some(t) = a.timeout {
        spec.timeout = t;
    }
    if !a.expect_status.is_empty() {
        spec.expect_status = ExpectStatus::Codes(a.expect_status.clone());
    }
    spec.expect_size = a.expect_size;
    spec.checksum = a.checksum;
    spec.timeline = a.timeline;
    if let Some(seed) = a.seed {
        spec.seed = seed;
    }
    crate::load_sessions::apply(&a.users, a.url.as_deref(), a.connections, &mut spec)?;
    crate::load_tls::apply(&a.tls, &mut spec)?;
    crate::load_h2::apply(&a.http, &mut spec)?;
    crate::load_conn::apply(&a.conn, &mut spec)?;
    spec.validate()
        .map_err(|e| anyhow::anyhow!(spec_error(&e)))?;
    Ok(spec)
}

pub fn run(a: LoadArgs) -> Result<u8> {
    let spec = build_spec(&a)?;
    // A database that cannot be written is said before the load, not
    // after it has run and printed.
    crate::cmd_runs::check_db(crate::cmd_runs::save_path(a.db.as_ref(), a.save).as_deref())?;
    let mut live = crate::load_live::Live::open(&a.live)?;
    let control = Control::new();
    let stopper = control.clone();
    crate::signals::on_interrupt(move || stopper.stop())?;
    let watch = crate::load_server::watch(&spec);
    let result = match live.run(&spec, &control) {
        Ok(r) => r,
        Err(e) => {
            drop(watch.map(crate::load_server::Watch::finish));
            let why = engine_error(&e);
            crate::cmd_runs::save(
                crate::cmd_runs::save_path(a.db.as_ref(), a.save),
                &spec,
                crate::cmd_runs::Outcome::Failed(&why),
                None,
            )?;
            bail!(why)
        }
    };
    let server = watch.map(crate::load_server::Watch::finish);
    let (summary, verdict) = throng_load::verdict::judged_seeing(&result, !spec.keep_alive, server);
    let s = &summary;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json_document(s, &verdict)?)?
        )?;
    } else {
        out!("{}", render(&spec, s, a.timeline))?;
        out!("{}", render_verdict(&verdict, s.interrupted))?;
    }
    live.finish(&result)?;
    crate::cmd_runs::save(
        crate::cmd_runs::save_path(a.db.as_ref(), a.save),
        &spec,
        crate::cmd_runs::Outcome::Measured {
            result: &result,
            summary: s,
            verdict: &verdict,
        },
        None,
    )?;
    // What was measured is printed either way; the exit code says that it
    // is not the run that was asked for, as a shell reports a Ctrl-C.
    Ok(if s.interrupted {
        crate::signals::INTERRUPTED
    } else if a.strict && !verdict.is_valid() {
        1
    } else {
        0
    })
}

/// The summary with its verdict, as documented in docs/json-schema.md.
pub fn json_document(s: &Summary, v: &Verdict) -> Result<serde_json::Value> {
    let mut doc = serde_json::to_value(s)?;
    // Stored as codes, printed in words, as they always were.
    doc["warnings"] = s.warnings.iter().map(crate::load_warnings::text).collect();
    doc["verdict"] = serde_json::json!({
        "valid": v.is_valid(),
        "reasons": v.reasons,
    });
    Ok(doc)
}

/// The verdict's lines. An interrupted run is never called valid: its
/// checks only saw the part that ran.
pub fn render_verdict(v: &Verdict, interrupted: bool) -> String {
    if v.is_valid() {
        return if interrupted {
            "  verdict      INTERRUPTED: no check fired on the part that ran, \
             which is not the run asked for\n"
                .to_string()
        } else {
            "  verdict      valid: no check fired\n".to_string()
        };
    }
    let mut o = String::from(if interrupted {
        "  verdict      SUSPECT, and INTERRUPTED\n"
    } else {
        "  verdict      SUSPECT\n"
    });
    for r in &v.reasons {
        o.push_str(&format!("    {}: {}\n", r.code, r.message));
    }
    o
}

fn latency_line(l: &Latency) -> String {
    format!(
        "p50 {}  p75 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}  (mean {} ± {})",
        human_us(l.p50 as f64),
        human_us(l.p75 as f64),
        human_us(l.p90 as f64),
        human_us(l.p99 as f64),
        human_us(l.p999 as f64),
        human_us(l.p9999 as f64),
        human_us(l.max as f64),
        human_us(l.mean),
        human_us(l.stdev),
    )
}

/// A TLS handshake finished and its ALPN chose other than h2.
fn h1_chosen(s: &Summary) -> bool {
    s.tls
        .as_ref()
        .is_some_and(|t| t.version.is_some() && t.alpn.as_deref() != Some("h2"))
}

/// The first line of the summary: what was loaded, and how.
fn headline(o: &mut String, spec: &LoadSpec, s: &Summary) {
    use std::fmt::Write;
    let what = if spec.targets.len() == 1 {
        spec.targets[0].url.clone()
    } else {
        format!("{} URLs", spec.targets.len())
    };
    let model = match spec.rate {
        Some(r) => format!("open model at {} req/s", human_count(r as u64)),
        None => "closed model".to_string(),
    };
    let _ = writeln!(
        o,
        "throng load {what}: {model}, {} connection{}{}{}{}, {} thread{}",
        spec.connections,
        if spec.connections == 1 { "" } else { "s" },
        if spec.keep_alive {
            ""
        } else {
            " (new connection per request)"
        },
        crate::load_conn::headline(spec),
        if spec.pipeline > 1 {
            format!(", pipeline {}", spec.pipeline)
        } else if spec.http.streams > 1 && !h1_chosen(s) {
            format!(", {} streams each", spec.http.streams)
        } else if spec.http.streams > 1 {
            // ALPN chose HTTP/1.1: the streams asked for were never there.
            format!(
                ", {} streams asked but HTTP/1.1 spoken: one request at a time each",
                spec.http.streams
            )
        } else {
            String::new()
        },
        s.threads,
        if s.threads == 1 { "" } else { "s" },
    );
}

/// The human summary. Everything the JSON has that a reader needs to judge
/// the numbers is here too; warnings come last and loud.
pub fn render(spec: &LoadSpec, s: &Summary, timeline: bool) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    if let Some(users) = &spec.users {
        let _ = writeln!(o, "{}", crate::load_sessions::headline(spec, users, s));
    } else {
        headline(&mut o, spec, s);
    }
    if s.interrupted {
        let _ = writeln!(o, "  interrupted  {}", interrupted_at(spec, s));
    }
    if let Some(w) = &s.warmup {
        let _ = writeln!(
            o,
            "  warmup       {:.1} s: {} responses, {} errors (not counted below)",
            w.duration_s,
            human_count(w.completed),
            human_count(w.errors)
        );
    }
    let _ = writeln!(
        o,
        "  completed    {} responses in {:.2} s: {:.1} req/s, {}/s read",
        human_count(s.completed),
        s.duration_s,
        s.requests_per_sec,
        human_bytes(s.mb_per_sec * 1e6)
    );
    let label = if s.rate.is_some() {
        "latency*"
    } else {
        "latency"
    };
    let _ = writeln!(o, "  {label:<12} {}", latency_line(&s.latency_us));
    if let Some(f) = s.first_byte_us.as_ref().filter(|f| f.count > 0) {
        let _ = writeln!(
            o,
            "  first byte   p50 {}  p99 {}  max {}  (from each request's send to its response's first byte)",
            human_us(f.p50 as f64),
            human_us(f.p99 as f64),
            human_us(f.max as f64),
        );
    }
    if let Some(u) = &s.latency_uncorrected_us {
        let _ = writeln!(o, "  uncorrected  {}", latency_line(u));
        let _ = writeln!(
            o,
            "               * from each request's intended send time (no coordinated omission)"
        );
    }
    o.push_str(&crate::load_sessions::lines(s));
    o.push_str(&crate::load_tls::line(s));
    o.push_str(&crate::load_h2::line(s));
    if let Some(r) = &s.rate {
        let _ = writeln!(
            o,
            "  schedule     {} sends late by > 1 ms; lateness p50 {} p99 {} max {}{}",
            human_count(r.late_sends),
            human_us(r.lateness_us.p50 as f64),
            human_us(r.lateness_us.p99 as f64),
            human_us(r.lateness_us.max as f64),
            if r.unsent > 0 {
                format!("; {} due but never sent", human_count(r.unsent))
            } else {
                String::new()
            },
        );
    }
    let statuses: Vec<String> = s
        .status
        .iter()
        .map(|(k, v)| format!("{k}: {}", human_count(*v)))
        .collect();
    let _ = writeln!(
        o,
        "  status       {}",
        if statuses.is_empty() {
            "none".to_string()
        } else {
            statuses.join(", ")
        }
    );
    let errs: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| s.error_count(**k) > 0)
        .map(|k| format!("{} {}", k.name(), human_count(s.error_count(*k))))
        .collect();
    let _ = writeln!(
        o,
        "  errors       {}",
        if errs.is_empty() {
            "none".to_string()
        } else {
            format!("{} ({})", human_count(s.errors_total), errs.join(", "))
        }
    );
    let c = &s.connections;
    let _ = write!(
        o,
        "  connections  {} requested, {} established, {} reconnects",
        c.requested,
        c.established,
        human_count(c.reconnects)
    );
    if !spec.keep_alive {
        let _ = write!(
            o,
            "; {:.1} conn/s, connect p50 {} p99 {}",
            c.per_sec,
            human_us(c.connect_time_us.p50 as f64),
            human_us(c.connect_time_us.p99 as f64)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  transfer     {} read, {} written, {} of bodies",
        human_bytes(s.bytes_read as f64),
        human_bytes(s.bytes_written as f64),
        human_bytes(s.body_bytes as f64)
    );
    let _ = write!(o, "  in flight    {} at the end", s.in_flight_at_end);
    if s.resent > 0 {
        let _ = write!(
            o,
            "; {} sent again after their connection closed unanswered (the server may have served both copies)",
            human_count(s.resent)
        );
    }
    o.push('\n');
    let cpu = s.client_cpu_s.user + s.client_cpu_s.sys;
    let _ = writeln!(
        o,
        "  client CPU   user {:.2} s, sys {:.2} s, waited {:.2} s for a CPU: {}, {} per response, \
         on {}",
        s.client_cpu_s.user,
        s.client_cpu_s.sys,
        s.client_cpu_s.runqueue,
        cpu_share(cpu, s.duration_s, s.threads),
        if s.completed > 0 {
            human_us(cpu * 1e6 / s.completed as f64)
        } else {
            "-".into()
        },
        match s.io {
            Some(IoBackend::Uring) => "io_uring",
            _ => "epoll",
        },
    );
    if s.coalesce {
        // On the ring a nap is a count of answers, not a time (the
        // engine's driver/nap.rs).
        let d = spec.nap_divisor;
        let how = if s.io == Some(IoBackend::Uring) {
            format!("waits for as many as 1/{d} of the recent latency brings (when that is more than one)")
        } else {
            format!("looks for them at most once per 1/{d} of the recent latency")
        };
        let _ = writeln!(
            o,
            "  naps         {} before waiting for responses: a thread {how}, so it takes them together",
            human_count(s.client_naps),
        );
    } else if spec.rate.is_none() && spec.users.is_none() {
        let _ = writeln!(
            o,
            "  naps         none: each thread waits for responses as soon as none is ready"
        );
    }
    let depth = spec.pipeline.max(spec.http.streams).max(1);
    let hold = s.client_hold_us.zip(s.client_held_connections);
    if let Some((hold_us, held)) = hold {
        let conns = s.connections.requested;
        // With several requests in flight a connection, what an answer
        // frees is one of its places, refilled with others.
        let (next, who) = if depth == 1 {
            (
                "its connection's next request",
                format!("{held:.1} of {conns} connections"),
            )
        } else {
            (
                "the request that took its place",
                format!("{held:.1} places (of up to {depth} on each of {conns} connections)"),
            )
        };
        let _ = writeln!(
            o,
            "  client hold  {} from a response to {next} on average: {who} waited on the \
             client, not the server",
            human_us(hold_us)
        );
    }
    o.push_str(&crate::load_server::line(s));
    if timeline && !s.timeline.is_empty() {
        let _ = writeln!(
            o,
            "  timeline (UTC)            responses   errors      read"
        );
        for r in &s.timeline {
            let _ = writeln!(
                o,
                "    {}  {:>10} {:>8} {:>9}",
                crate::fmt::utc(r.t_unix),
                r.completed,
                r.errors,
                human_bytes(r.bytes_read as f64)
            );
        }
    }
    for w in &s.warnings {
        let _ = writeln!(o, "WARNING: {}", crate::load_warnings::text(w));
    }
    o
}

/// How far an interrupted run got, against what was asked.
fn interrupted_at(spec: &LoadSpec, s: &Summary) -> String {
    let what = match spec.stop {
        Stop::Duration(d) if s.duration_s == 0.0 && s.warmup.is_some() => {
            format!(
                "during the warmup, before any of {}",
                seconds(d.as_secs_f64())
            )
        }
        Stop::Duration(d) => format!(
            "after {:.1} s of {}",
            s.duration_s,
            seconds(d.as_secs_f64())
        ),
        Stop::Requests(n) => format!(
            "after {} of {} requests",
            human_count(s.requests_ended()),
            human_count(n)
        ),
    };
    format!("{what}: the figures cover only the part that ran")
}

/// Seconds as asked for: one decimal, none for whole seconds.
fn seconds(x: f64) -> String {
    let t = format!("{x:.1}");
    format!("{} s", t.strip_suffix(".0").unwrap_or(&t))
}

/// CPU seconds over the measured phase, as a share of one core; with
/// several threads, also the average per thread (each thread runs on a
/// core of its own when it can, so 100% per thread is the ceiling).
fn cpu_share(cpu_s: f64, duration_s: f64, threads: u64) -> String {
    if duration_s <= 0.0 {
        return "no measured time".to_string();
    }
    let one_core = cpu_s / duration_s * 100.0;
    if threads <= 1 {
        format!("{one_core:.0}% of one core")
    } else {
        format!(
            "{one_core:.0}% of one core in all, {:.0}% per thread on average ({threads} threads)",
            one_core / threads as f64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_a_share_of_one_core() {
        assert_eq!(cpu_share(1.09, 1.0, 1), "109% of one core");
        assert_eq!(
            cpu_share(3.0, 2.0, 2),
            "150% of one core in all, 75% per thread on average (2 threads)"
        );
        assert_eq!(cpu_share(1.0, 0.0, 1), "no measured time");
    }

    #[test]
    fn interruptions_say_how_far_the_run_got() {
        let target = parse_target("http://127.0.0.1:1/").unwrap();
        let mut spec = LoadSpec::new(vec![target]);
        spec.stop = Stop::Duration(Duration::from_secs(60));
        let mut s = Summary {
            duration_s: 3.04,
            interrupted: true,
            sessions: None,
            tls: None,
            ..Summary::default()
        };
        assert_eq!(
            interrupted_at(&spec, &s),
            "after 3.0 s of 60 s: the figures cover only the part that ran"
        );
        s.duration_s = 0.0;
        s.warmup = Some(Default::default());
        assert!(interrupted_at(&spec, &s).starts_with("during the warmup, before any of 60 s"));
        spec.stop = Stop::Requests(10_000);
        s.completed = 1200;
        s.errors = [("timeout".to_string(), 34), ("status".to_string(), 5)].into();
        assert!(
            interrupted_at(&spec, &s).starts_with("after 1,234 of 10,000 requests"),
            "{}",
            interrupted_at(&spec, &s)
        );
        assert_eq!(seconds(1.5), "1.5 s");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5parsecs").is_err());
    }

    #[test]
    fn credentials_in_a_url_are_sent_as_basic_and_never_shown() {
        let raw = "http://user:pa%20ss@127.0.0.1:8080/a";
        let t = parse_target(raw).unwrap();
        assert_eq!(t.url, "http://user@127.0.0.1:8080/a");
        assert_eq!(
            url_credentials(raw).unwrap().as_deref(),
            Some("Basic dXNlcjpwYSBzcw==")
        );
        assert_eq!(
            url_credentials("http://al@127.0.0.1/").unwrap().as_deref(),
            Some("Basic YWw6")
        );
        assert_eq!(url_credentials("http://127.0.0.1/").unwrap(), None);
    }

    #[test]
    fn targets() {
        let t = parse_target("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        let t = parse_target("http://[::1]/").unwrap();
        assert_eq!(t.addr, "[::1]:80".parse().unwrap());
        assert_eq!(t.host_header, "[::1]");
        let t = parse_target("https://127.0.0.1/").unwrap();
        assert_eq!((t.addr.port(), t.is_tls()), (443, true));
        assert!(parse_target("ftp://127.0.0.1/")
            .unwrap_err()
            .to_string()
            .contains("give http:// or https://"));
        assert!(parse_target("127.0.0.1:80").is_err());
        assert!(parse_target("not a url").is_err());
    }
}
