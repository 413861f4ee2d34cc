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
use throng_load::live::{gather, Endpoint, Watchers};
use throng_load::metrics::{valid_run_label, Board};

use crate::args::parse_duration;

#[derive(clap::Args, Debug, Default)]
pub struct LiveArgs {
    /// Write the latency of each second of the measured phase to FILE as
    /// an HdrHistogram interval log (values in microseconds), the format
    /// HistogramLogProcessor and wrk2's plotters read. FILE appears, whole,
    /// when the load ends.
    #[arg(long, value_name = "FILE", value_parser = crate::args::out_path, conflicts_with = "hosts")]
    pub hdr_log: Option<PathBuf>,
    /// Serve the run's figures at http://ADDR/metrics in Prometheus's text
    /// format while it runs (an IP address and port, e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR", conflicts_with = "hosts")]
    pub metrics_addr: Option<String>,
    /// Keep serving the final figures this long after the load ends, so a
    /// scraper sees them [default: 0s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "metrics_addr")]
    pub metrics_linger: Option<Duration>,
    /// The `run` label of every series [default: the start's Unix time
    /// and the process id, e.g. 1764427000-4242].
    #[arg(long, value_name = "NAME", requires = "metrics_addr")]
    pub metrics_run: Option<String>,
}

/// What watches a run, opened at the edge.
pub struct Live {
    log: Option<IntervalLog>,
    endpoint: Option<(Endpoint, Board, Arc<Mutex<String>>)>,
    linger: Duration,
    /// Why the log could not be written, found during the run.
    failed: Option<String>,
}

impl Live {
    pub fn open(a: &LiveArgs) -> Result<Live> {
        let log = match &a.hdr_log {
            Some(p) => Some(
                IntervalLog::create(p)
                    .map_err(|e| anyhow::anyhow!("--hdr-log {}: {e}", p.display()))?,
            ),
            None => None,
        };
        let endpoint = match &a.metrics_addr {
            Some(s) => {
                let addr: SocketAddr = s.trim().parse().map_err(|_| {
                    anyhow::anyhow!(
                        "--metrics-addr `{s}` is not an IP address and port (e.g. 127.0.0.1:9464)"
                    )
                })?;
                let run = match &a.metrics_run {
                    Some(r) if valid_run_label(r) => r.clone(),
                    Some(r) => bail!(
                        "--metrics-run `{r}`: use 1 to 64 letters, digits, '-', '_', '.' or ':'"
                    ),
                    None => format!("{}-{}", throng_model::unix_now() as u64, std::process::id()),
                };
                let listener = TcpListener::bind(addr)
                    .map_err(|e| anyhow::anyhow!("--metrics-addr {addr}: cannot listen: {e}"))?;
                let board = Board::new(&run);
                let text = Arc::new(Mutex::new(board.render()));
                let endpoint = Endpoint::serve(listener, text.clone())?;
                eprintln!(
                    "throng: metrics at http://{}/metrics, run=\"{run}\"",
                    endpoint.addr()
                );
                Some((endpoint, board, text))
            }
            None => None,
        };
        Ok(Live {
            log,
            endpoint,
            linger: a.metrics_linger.unwrap_or_default(),
            failed: None,
        })
    }

    fn watching(&self) -> bool {
        self.log.is_some() || self.endpoint.is_some()
    }

    /// The load, its seconds handed to what watches it.
    pub fn run(&mut self, spec: &LoadSpec, control: &Control) -> Result<LoadResult, EngineError> {
        if !self.watching() {
            return throng_engine::run(spec, control);
        }
        let (board, endpoint) = match self.endpoint.take() {
            Some((e, b, t)) => (Some((b, t)), Some(e)),
            None => (None, None),
        };
        let watchers = Watchers {
            log: self.log.take(),
            board,
        };
        let (tap, gathering) = gather(watchers);
        let result = throng_engine::run_tapped(spec, control, Some(tap));
        // Every sender went with the run: the thread has ended, or ends now.
        match gathering.join() {
            Ok(Ok(w)) => {
                self.log = w.log;
                if let (Some((b, t)), Some(e)) = (w.board, endpoint) {
                    self.endpoint = Some((e, b, t));
                }
            }
            Ok(Err(e)) => self.failed = Some(e.to_string()),
            Err(_) => self.failed = Some("the thread writing it panicked".into()),
        }
        result
    }

    /// After the output: the log takes its name, and the endpoint serves
    /// the final figures for the linger, then stops.
    pub fn finish(self, result: &LoadResult) -> Result<()> {
        if let Some(why) = self.failed {
            bail!("--hdr-log: cannot write: {why}");
        }
        if let Some(log) = self.log {
            log.finish(result.started_unix_s)
                .map_err(|e| anyhow::anyhow!("--hdr-log: cannot write: {e}"))?;
        }
        if let Some((endpoint, _, _)) = self.endpoint {
            if !self.linger.is_zero() {
                std::thread::sleep(self.linger);
            }
            endpoint.stop();
        }
        Ok(())
    }
}
