//! `throng load`: options in, a validated `LoadSpec` out, the engine run,
//! and what it measured printed for people (or as JSON for programs).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use throng_engine::{Control, ExpectStatus, LoadSpec, Order, Stop, Target};
use throng_model::{Summary, Verdict};

use throng_load::target::{
    add_authorization, one_authorization, parse_target, url_credentials, url_list,
};

use crate::args::parse_duration;
use crate::load_errors::{engine_error, spec_error};
use crate::load_render::{render, render_verdict};

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
    /// [default: 128; 16 over HTTP/3, whose turns cost more].
    #[arg(long, value_name = "D", conflicts_with = "no_coalesce",
          value_parser = clap::value_parser!(u64).range(throng_engine::NAP_DIVISORS))]
    pub nap_divisor: Option<u64>,
    /// Closed model: before a thread sleeps for a response, look for one
    /// for up to this long (50us, say), busy meanwhile, and take no naps.
    /// A thread that sleeps is woken by the CPU that delivers its
    /// response, the server's when the server runs on this machine, and
    /// on a virtual machine each wake costs that CPU an interrupt; a spin
    /// as long as the gaps between responses leaves the server that CPU,
    /// and costs the client its own (the summary says how long it spun)
    /// [default: sleep at once].
    #[arg(long, value_name = "LENGTH", value_parser = crate::args::parse_duration,
          conflicts_with = "nap_divisor")]
    pub spin: Option<Duration>,
    /// How the load threads do their socket I/O: io_uring (one submission
    /// per loop turn, multishot receives) or epoll. auto: io_uring where
    /// it drives the load (cleartext HTTP/1.1), epoll over TLS, HTTP/2 and
    /// for users. Where the kernel refuses io_uring (disabled, or blocked
    /// in a container), the load runs on epoll and says so.
    #[arg(long, value_enum, default_value_t = IoArg::Auto)]
    pub io: IoArg,
    /// Open model: this many requests per second in all, on a fixed schedule;
    /// latency is measured from each request's intended send time.
    /// FROM..TO ramps between them over --ramp.
    #[arg(long, value_parser = crate::load_shape::parse_rate)]
    pub rate: Option<crate::load_shape::RateArg>,
    /// With --rate or --stages: keep the schedule in ticks of this length, as wrk2
    /// keeps it in milliseconds. The requests due within a tick go out
    /// together as it starts, and their latency runs from there; the
    /// server sees bursts of rate × tick, and the client wakes a few
    /// times a tick rather than at every send, which at tens of thousands
    /// a second costs it most of a CPU [default: each request at its own
    /// instant].
    #[arg(long, value_name = "LENGTH", value_parser = crate::args::parse_duration)]
    pub tick: Option<Duration>,
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
    pub thresholds: crate::load_thresholds::ThresholdArgs,
    #[command(flatten)]
    pub shape: crate::load_shape::ShapeArgs,
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
    spec.keep_alive = !a.close;
    spec.requests_per_connection = a.requests_per_connection;
    if let Some(p) = a.pipeline {
        spec.pipeline = p;
    }
    spec.coalesce = !a.no_coalesce;
    if let Some(d) = a.nap_divisor {
        spec.nap_divisor = d;
    }
    spec.spin = a.spin;
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
    // --threshold-abort judges the totals the timeline keeps per second.
    spec.timeline = a.timeline || a.thresholds.threshold_abort;
    if let Some(seed) = a.seed {
        spec.seed = seed;
    }
    crate::load_sessions::apply(&a.users, a.url.as_deref(), a.connections, &mut spec)?;
    crate::load_tls::apply(&a.tls, &mut spec)?;
    crate::load_h2::apply(&a.http, &mut spec)?;
    if a.nap_divisor.is_none() && spec.http.version == throng_engine::HttpVersion::Http3 {
        spec.nap_divisor = throng_engine::DEFAULT_NAP_DIVISOR_H3;
    }
    crate::load_conn::apply(&a.conn, &mut spec)?;
    let hosts = a.hosts.is_some();
    crate::load_shape::apply(&a.shape, a.rate, a.duration, hosts, &mut spec)?;
    spec.tick = a.tick;
    spec.validate()
        .map_err(|e| anyhow::anyhow!(spec_error(&e)))?;
    Ok(spec)
}

pub fn run(a: LoadArgs) -> Result<u8> {
    let spec = build_spec(&a)?;
    let thresholds = crate::load_thresholds::parse(&a.thresholds)?;
    // A database that cannot be written is said before the load, not
    // after it has run and printed.
    crate::cmd_runs::check_db(crate::cmd_runs::save_path(a.db.as_ref(), a.save).as_deref())?;
    crate::load_h3::refuse_live(
        &spec,
        a.live.hdr_log.is_some() || a.live.metrics_addr.is_some() || a.live.remote_write.is_some(),
    )?;
    let mut live = crate::load_live::Live::open(&a.live)?;
    let control = match a.thresholds.threshold_abort {
        true => Control::watching(spec.threads),
        false => Control::new(),
    };
    let stopper = control.clone();
    crate::signals::on_interrupt(move || stopper.stop())?;
    let watch = crate::load_server::watch(&spec);
    let abort = crate::load_thresholds::watch(&a.thresholds, &thresholds, &control, spec.warmup);
    let ran = live.run(&spec, &control);
    let stopped = abort.and_then(crate::load_thresholds::Abort::finish);
    let result = match ran {
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
    let (mut summary, mut verdict) =
        throng_load::verdict::judged_seeing(&result, !spec.keep_alive, server);
    if let Some(ramp) = &spec.ramp {
        throng_load::shape::judge_seconds(&mut summary, &mut verdict, ramp);
    }
    if let Some(ramp) = &spec.users_ramp {
        throng_load::shape::users_seconds(&mut summary, ramp);
    }
    summary.thresholds = throng_load::thresholds::judge_all(&thresholds, &summary);
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
    let crossed = crate::load_thresholds::report(&a.thresholds, &thresholds, s, a.json)?;
    if let Some(line) = &stopped {
        eprintln!("{line}");
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
    Ok(if stopped.is_some() {
        crate::load_thresholds::CROSSED
    } else if s.interrupted {
        crate::signals::INTERRUPTED
    } else if crossed {
        crate::load_thresholds::CROSSED
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn http3_naps_at_its_own_default_unless_told() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            load: LoadArgs,
        }
        use clap::Parser;
        let divisor = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["throng"], args].concat()).unwrap();
            build_spec(&cli.load).unwrap().nap_divisor
        };
        let url = "https://127.0.0.1:8443/";
        assert_eq!(divisor(&[url]), 128);
        assert_eq!(divisor(&[url, "--http2"]), 128);
        assert_eq!(divisor(&[url, "--http3"]), 16);
        assert_eq!(divisor(&[url, "--alpn", "h3"]), 16);
        assert_eq!(divisor(&[url, "--http3", "--nap-divisor", "128"]), 128);
        assert_eq!(divisor(&[url, "--nap-divisor", "32"]), 32);
    }
}
