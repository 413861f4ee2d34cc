//! `throng load`'s options for watching a run while it goes: an HDR
//! interval log and a Prometheus endpoint. Both are checked and opened
//! before the load (a path that cannot be written, an address that cannot
//! be bound: one line and exit 2, before any request).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Result};
use throng_engine::{Control, EngineError, LoadResult, LoadSpec};
use throng_load::hdr_log::IntervalLog;
use throng_load::live::{gather, Endpoint, Push, Watchers};
use throng_load::metrics::{valid_run_label, Board};
use throng_load::remote_write::Receiver;

use crate::args::parse_duration;

#[derive(clap::Args, Debug, Default)]
pub struct LiveArgs {
    /// Write the latency of each second of the measured phase to FILE as
    /// an HdrHistogram interval log (values in microseconds), the format
    /// HistogramLogProcessor and wrk2's plotters read. FILE appears, whole,
    /// when the load ends. Not with --hosts: an agent sends its histograms
    /// once, at the end, so no host's seconds reach this machine.
    #[arg(long, value_name = "FILE", value_parser = crate::args::out_path, conflicts_with = "hosts")]
    pub hdr_log: Option<PathBuf>,
    /// Serve the run's figures at http://ADDR/metrics in Prometheus's text
    /// format while it runs (an IP address and port, e.g. 127.0.0.1:9464).
    /// Not with --hosts: the live figures are this machine's threads'; an
    /// agent reports only when its share ends.
    #[arg(long, value_name = "ADDR", conflicts_with = "hosts")]
    pub metrics_addr: Option<String>,
    /// Keep serving the final figures this long after the load ends, so a
    /// scraper sees them [default: 0s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "metrics_addr")]
    pub metrics_linger: Option<Duration>,
    /// The `run` label of every series, served or pushed [default: the
    /// start's Unix time and the process id, e.g. 1764427000-4242].
    #[arg(long, value_name = "NAME")]
    pub metrics_run: Option<String>,
    /// Push the same figures to a Prometheus remote-write receiver
    /// (http://host:port/api/v1/write) while the load runs, and once at
    /// its end. Not with --hosts, as --metrics-addr.
    #[arg(long, value_name = "URL", conflicts_with = "hosts")]
    pub remote_write: Option<String>,
    /// How often --remote-write pushes [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "remote_write")]
    pub remote_write_interval: Option<Duration>,
}

/// What watches a run, opened at the edge.
pub struct Live {
    watchers: Watchers,
    endpoint: Option<Endpoint>,
    linger: Duration,
    /// Why the log could not be written, found during the run.
    failed: Option<String>,
}

impl Live {
    pub fn open(a: &LiveArgs) -> Result<Live> {
        let mut w = Watchers::default();
        if let Some(p) = &a.hdr_log {
            w.log = Some(
                IntervalLog::create(p)
                    .map_err(|e| anyhow::anyhow!("--hdr-log {}: {e}", p.display()))?,
            );
        }
        if a.metrics_run.is_some() && a.metrics_addr.is_none() && a.remote_write.is_none() {
            bail!("--metrics-run names the series of --metrics-addr or --remote-write: give one");
        }
        let run = match &a.metrics_run {
            Some(r) if valid_run_label(r) => r.clone(),
            Some(r) => {
                bail!("--metrics-run `{r}`: use 1 to 64 letters, digits, '-', '_', '.' or ':'")
            }
            None => format!("{}-{}", throng_model::unix_now() as u64, std::process::id()),
        };
        if let Some(url) = &a.remote_write {
            let to =
                Receiver::parse(url).map_err(|e| anyhow::anyhow!("--remote-write {url}: {e}"))?;
            let every = a.remote_write_interval.unwrap_or(Duration::from_secs(5));
            if every < Duration::from_millis(100) {
                bail!("--remote-write-interval: at least 100ms");
            }
            w.push = Some(Push::new(to, every));
        }
        let mut endpoint = None;
        if let Some(s) = &a.metrics_addr {
            let addr: SocketAddr = s.trim().parse().map_err(|_| {
                anyhow::anyhow!(
                    "--metrics-addr `{s}` is not an IP address and port (e.g. 127.0.0.1:9464)"
                )
            })?;
            let listener = TcpListener::bind(addr)
                .map_err(|e| anyhow::anyhow!("--metrics-addr {addr}: cannot listen: {e}"))?;
            let text = Arc::new(Mutex::new(Board::new(&run).render()));
            let e = Endpoint::serve(listener, text.clone())?;
            eprintln!(
                "throng: metrics at http://{}/metrics, run=\"{run}\"",
                e.addr()
            );
            w.text = Some(text);
            endpoint = Some(e);
        }
        if w.text.is_some() || w.push.is_some() {
            w.board = Some(Board::new(&run));
        }
        Ok(Live {
            watchers: w,
            endpoint,
            linger: a.metrics_linger.unwrap_or_default(),
            failed: None,
        })
    }

    /// The load, its seconds handed to what watches it.
    pub fn run(&mut self, spec: &LoadSpec, control: &Control) -> Result<LoadResult, EngineError> {
        if self.watchers.log.is_none() && self.watchers.board.is_none() {
            return throng_engine::run(spec, control);
        }
        let (tap, gathering) = gather(std::mem::take(&mut self.watchers));
        let result = throng_engine::run_tapped(spec, control, Some(tap));
        // Every sender went with the run: the thread has ended, or ends now.
        match gathering.join() {
            Ok(Ok(w)) => self.watchers = w,
            Ok(Err(e)) => self.failed = Some(e.to_string()),
            Err(_) => self.failed = Some("the thread writing it panicked".into()),
        }
        result
    }

    /// After the output: the log takes its name, failed pushes are said,
    /// and the endpoint serves the final figures for the linger, then stops.
    pub fn finish(self, result: &LoadResult) -> Result<()> {
        if let Some(why) = self.failed {
            bail!("--hdr-log: cannot write: {why}");
        }
        if let Some(log) = self.watchers.log {
            log.finish(result.started_unix_s)
                .map_err(|e| anyhow::anyhow!("--hdr-log: cannot write: {e}"))?;
        }
        if let Some(p) = &self.watchers.push {
            if let Some(why) = &p.first_failure {
                eprintln!(
                    "throng: --remote-write: {} of {} pushes failed, the first: {why}",
                    p.failures, p.pushes
                );
            }
        }
        if let Some(endpoint) = self.endpoint {
            if !self.linger.is_zero() {
                std::thread::sleep(self.linger);
            }
            endpoint.stop();
        }
        Ok(())
    }
}
