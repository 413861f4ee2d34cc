//! The seam between the sweep and the world. The sweep decides what to
//! measure and in which order; an [`Executor`] starts servers and runs load
//! rounds against them. [`Local`] does it for real (processes on this
//! machine, the load engine on loopback); the sweep's tests script a fake,
//! so rotation, the precision loop, failures, interrupts and the max-users
//! search are checked in milliseconds without a server.

use std::time::Duration;

use throng_model::{ConfigFile, Diagnosis, Environment, Finding, Summary};
use throng_servers::launch::{self, Site, Start, StartFailure};
use throng_servers::loopback::{self, Expected};
use throng_servers::process::check_pinning;
use throng_servers::usage::{Carry, Sampler};
use throng_servers::Running;
pub use throng_trust::doctor::Plan as DoctorPlan;

use crate::group::Group;
use crate::interrupt::Interrupt;
pub use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::RoundLoad;
use crate::study::StudyServer;

/// How far a server got before it could not be measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// It did not come up: it exited, its backend or helper failed, or it
    /// was not ready in time.
    Start,
    /// It came up, but its processes were not on the CPUs it was given.
    Pinning,
    /// It came up and answered, but not with the workload's exact bytes.
    Verification,
}

/// A server that cannot be measured: how far it got, and what went wrong.
#[derive(Debug)]
pub struct NotReady {
    pub stage: Stage,
    pub failure: StartFailure,
}

impl NotReady {
    /// The failure as stored with the server's steps: "did not start: ..."
    /// only for a server that did not come up.
    pub fn message(&self) -> String {
        let m = &self.failure.message;
        match self.stage {
            Stage::Start => format!("did not start: {m}"),
            Stage::Pinning => format!("started but was not pinned to its CPUs: {m}"),
            Stage::Verification => format!("started but failed verification: {m}"),
        }
    }
}

/// A server an executor started.
#[derive(Debug, Clone)]
pub struct Started {
    /// The leader of its process group.
    pub pid: i32,
    /// Every config file it was given, relative to the run directory.
    pub configs: Vec<ConfigFile>,
}

pub trait Executor {
    /// Starts `server`, known from now on as `id`, for `group`: up, pinned
    /// and answering every URL of the workload exactly. The configs it was
    /// given come back either way, and a failure says how far the server
    /// got.
    fn start(
        &mut self,
        group: &Group,
        id: ServerId,
        server: &StudyServer,
    ) -> Result<Started, NotReady>;
    /// One load round of `kind` against a started server; a measured
    /// slice's samples the server's resource use.
    fn round(
        &mut self,
        server: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
    ) -> Result<Measured, RoundError>;
    /// Measured slices of several servers at the same time (a duet), each
    /// on its own CPUs under its own load; results in the order asked.
    fn rounds_together(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
    ) -> Vec<Result<Measured, RoundError>> {
        loads
            .iter()
            .map(|&(server, load)| self.round(server, load, RoundKind::Slice))
            .collect()
    }
    /// Before a level's slices: connections to each server for its
    /// load, kept open and idle between the slices, so that a slice
    /// measures serving rather than connecting. Rounds of these servers use
    /// them until [`Executor::close_level`]; a server whose connections
    /// cannot be opened gets fresh ones per round.
    fn open_level(&mut self, _loads: &[(ServerId, RoundLoad)]) {}
    /// After a level: the connections of [`Executor::open_level`] closed.
    fn close_level(&mut self) {}
    /// Before each block of a level opened with [`Executor::open_level`]:
    /// the measured slices the level asks for next, in order, if each is
    /// measured and none ends the level early. An executor whose slices
    /// each need a start arranged ahead (client hosts apart) schedules
    /// them at once and serves the rounds asked from that schedule while
    /// they match it, running any other round on its own. A forecast
    /// only: what is measured and decided is still the rounds asked.
    fn plan(&mut self, _upcoming: &[(ServerId, RoundLoad)]) {}
    /// A diagnostic round: `load` while the server's syscalls and context
    /// switches are counted. Never a measured round.
    fn diagnose(&mut self, server: ServerId, load: &RoundLoad) -> Result<Diagnosis, RoundError>;
    /// `None` while the server is up; how it ended otherwise ("exited
    /// (signal: 9 (SIGKILL))").
    fn exited(&mut self, server: ServerId) -> Option<String>;
    /// After a round without a single response: whether the server answers
    /// one request on its own (a stalled machine) or not (a dead server),
    /// and what the request got.
    fn answers(&mut self, server: ServerId) -> Result<(), String>;
    fn log_tail(&mut self, server: ServerId) -> String;
    fn stop(&mut self, server: ServerId);
    /// Processes the kernel's OOM killer has killed since boot, to name a
    /// server that ran out of memory; `None` where unknown.
    fn oom_kills(&self) -> Option<u64>;
    /// A duet's lanes for a group of `cores` cores where the hosts, not
    /// this machine's CPUs, decide them (apart); `None` here.
    fn duet_lanes(&self, _cores: u32) -> Option<Vec<crate::group::Lane>> {
        None
    }
    /// The CPUs servers and clients may be pinned to.
    fn cpus(&self) -> Vec<usize> {
        throng_engine::affinity::own_cpus()
    }
    /// The load comes from other hosts: every CPU of [`Executor::cpus`]
    /// may serve.
    fn clients_apart(&self) -> bool {
        false
    }
    /// The ACME feature table's probes of `server`, on an instance of its
    /// own pinned to `cpus`, where the servers run.
    fn probe_features(
        &mut self,
        site: Site,
        server: &StudyServer,
        cpus: &[usize],
    ) -> Vec<throng_model::FeatureResult> {
        crate::features::probe_server(site, server, cpus)
    }
    /// The machine checks for a run planned as `plan`, and the machine's
    /// description, stored with the run.
    fn survey(&mut self, plan: &DoctorPlan) -> (Vec<Finding>, Environment);
    /// The prices of `cpu` while no server runs on it; `None` where they
    /// cannot be read (a server host apart, a failed reading).
    fn core_prices(&mut self, _cpu: usize) -> Option<throng_servers::prices::Reading> {
        None
    }
}

/// Servers as processes on this machine, load from the engine.
pub struct Local<'a> {
    site: Site<'a>,
    interrupt: &'a Interrupt,
    running: Vec<Server>,
    /// The address servers listen on: loopback, or the server host's
    /// benchmark-network address when the load comes from other hosts.
    pub listen: std::net::IpAddr,
    /// The run's certificate, made when the first TLS server starts.
    tls: Option<throng_servers::launch::TlsFiles>,
}

/// The engine's spec for `load` against a server on `addr` serving
/// `paths`, spoken to over `protocol`: over TLS (trusting what `tls`
/// trusts) when it serves TLS, with streams over HTTP/2 and HTTP/3 only,
/// since over HTTP/1.1 the level's connections are all there is. The same
/// whether the load runs here or from client hosts.
pub fn server_load_spec(
    addr: std::net::SocketAddr,
    paths: &[String],
    load: &RoundLoad,
    tls: Option<&throng_engine::tls::TlsSpec>,
    protocol: crate::study::Protocol,
) -> throng_engine::LoadSpec {
    let mut t = crate::spec::targets(addr, paths);
    if tls.is_some() {
        for x in &mut t {
            x.url = x.url.replacen("http://", "https://", 1);
        }
    }
    let mut spec = crate::spec::load_spec(t, load);
    spec.tls = tls.cloned();
    spec.http.version = protocol.http_version();
    spec.http.streams = if protocol.multiplexed() {
        load.shape.streams
    } else {
        1
    };
    spec
}

struct Server {
    id: ServerId,
    running: Running,
    paths: Vec<String>,
    /// The size and FNV-1a hash of each file's body, by URL path: what
    /// every response must be, not only what the first one was. A server
    /// that passed the check and answered the load otherwise (another
    /// body, a shorter one) was measured as valid.
    bodies: Vec<(String, (u64, u64))>,
    client_cpus: Vec<usize>,
    first_path: String,
    timeout: Duration,
    /// Connections kept open between a level's slices, and their level.
    session: Option<(u32, throng_engine::Session)>,
    /// Over TLS: how the load reaches it (trusting the run's certificate).
    tls: Option<throng_engine::tls::TlsSpec>,
    protocol: crate::study::Protocol,
    /// What its last round's sampler left the next (`usage::Carry`).
    sampled: Option<Carry>,
}

impl Server {
    /// The engine's spec for `load` against this server, over TLS when it
    /// serves TLS.
    fn spec(&self, load: &RoundLoad) -> throng_engine::LoadSpec {
        let mut spec = server_load_spec(
            self.running.addr(),
            &self.paths,
            load,
            self.tls.as_ref(),
            self.protocol,
        );
        for t in &mut spec.targets {
            t.expect_body = self
                .bodies
                .iter()
                .find(|(path, _)| *path == t.path)
                .map(|(_, b)| *b);
        }
        spec
    }

    /// One round against this server: over its level's connections when
    /// they are open for this concurrency, fresh ones otherwise.
    fn round(
        &mut self,
        load: &RoundLoad,
        kind: RoundKind,
        control: &throng_engine::Control,
    ) -> Result<Measured, RoundError> {
        let spec = self.spec(load);
        let carry = self.sampled.take();
        let sampler = kind.sampled().then(|| {
            Sampler::start_window_carried(
                carry,
                self.running.pid(),
                &self.running.behind_pids(),
                &self.client_cpus,
                Duration::from_secs_f64(load.warmup_s),
                Some(Duration::from_secs_f64(load.seconds)),
                Duration::from_millis(100),
            )
        });
        let result = match &mut self.session {
            Some((c, session)) if *c == load.concurrency => session.window(
                Duration::from_secs_f64(load.warmup_s),
                Duration::from_secs_f64(load.seconds),
                control,
            ),
            _ => throng_engine::run(&spec, control),
        };
        let usage = match sampler.map(Sampler::finish_carried) {
            Some((usage, carry)) => {
                self.sampled = carry;
                usage
            }
            None => Default::default(),
        };
        let r = result.map_err(RoundError::Engine)?;
        Ok(Measured {
            summary: throng_load::record::summarize(&r),
            latency: r.latency,
            usage,
            ports: None,
        })
    }
}

impl<'a> Local<'a> {
    pub fn new(site: Site<'a>, interrupt: &'a Interrupt) -> Local<'a> {
        Local {
            site,
            interrupt,
            running: Vec::new(),
            listen: std::net::Ipv4Addr::LOCALHOST.into(),
            tls: None,
        }
    }

    /// The port a started server listens on.
    pub fn port(&self, id: ServerId) -> Option<u16> {
        self.find(id).map(|s| s.running.port)
    }

    /// How a started TLS server is reached: the run's certificate to
    /// trust, and the one protocol ALPN offers.
    pub fn tls_spec(&self, id: ServerId) -> Option<throng_engine::tls::TlsSpec> {
        self.find(id).and_then(|s| s.tls.clone())
    }

    /// A started server's leader and those behind it (its backend's, its
    /// helper's), for sampling.
    pub fn pids(&self, id: ServerId) -> Option<(i32, Vec<i32>)> {
        self.find(id)
            .map(|s| (s.running.pid(), s.running.behind_pids()))
    }

    /// A started server's processes and run directory, for counting.
    pub fn tree(&self, id: ServerId) -> Option<(Vec<i32>, std::path::PathBuf)> {
        self.find(id)
            .map(|s| (s.running.processes(), s.running.dir.clone()))
    }

    /// Every started server stopped.
    pub fn stop_all(&mut self) {
        for mut s in self.running.drain(..) {
            s.running.stop();
        }
    }

    fn find(&self, id: ServerId) -> Option<&Server> {
        self.running.iter().find(|s| s.id == id)
    }

    fn get(&mut self, id: ServerId) -> Option<&mut Server> {
        self.running.iter_mut().find(|s| s.id == id)
    }
}

impl Executor for Local<'_> {
    fn start(
        &mut self,
        group: &Group,
        id: ServerId,
        server: &StudyServer,
    ) -> Result<Started, NotReady> {
        self.stop(id);
        let w = &group.workload;
        let early = |message: String| NotReady {
            stage: Stage::Start,
            failure: StartFailure {
                message,
                log_tail: String::new(),
                configs: Vec::new(),
            },
        };
        let recipe = match w.kind.builtin() {
            Some(kind) => server
                .recipe
                .for_workload(kind)
                .map_err(|e| early(format!("{e:#}")))?,
            // A site of the user's own is static files: the recipe as it is.
            None => server.recipe.clone(),
        };
        // A cache passes a dynamic workload to its backend, which serves
        // it as it would alone: its config and its helper.
        let backend = match (&server.backend, w.kind.builtin()) {
            (Some(b), Some(kind)) => Some(
                b.for_workload(kind)
                    .map_err(|e| early(format!("backend {}: {e:#}", b.name)))?,
            ),
            (b, _) => b.clone(),
        };
        let helper = match backend.as_ref().unwrap_or(&server.recipe).workload(w.kind) {
            Ok(Some(c)) => c.helper,
            _ => None,
        };
        let group_dir = group.dir_name();
        // phpinfo() alone has no exact body, only a checked one.
        let first_path = w.paths().first().cloned().unwrap_or_default();
        let tls_files = match server.protocol.tls() {
            false => None,
            true => {
                if self.tls.is_none() {
                    self.tls = Some(
                        crate::certs::for_address(self.listen, server.certificate)
                            .map_err(|e| early(format!("making the run's certificate: {e:#}")))?,
                    );
                }
                self.tls.clone()
            }
        };
        let start = Start {
            name: &server.name,
            recipe: &recipe,
            backend: backend.as_ref(),
            helper,
            group_dir: &group_dir,
            docroot: w.docroot.clone(),
            workers: group.cores,
            concurrency: group.max_concurrency,
            cpus: group.server_cpus.clone(),
            listen: self.listen,
            ready_path: &first_path,
            patch: None,
            tls: tls_files.as_ref(),
        };
        let running = launch::start(self.site, &start).map_err(|failure| NotReady {
            stage: Stage::Start,
            failure,
        })?;
        let expected = Expected {
            files: w.files.clone(),
            stable: w.checked.clone(),
            timeout: w.kind.request_timeout(),
        };
        let checks = check_pinning(&running.processes(), &group.server_cpus)
            .map_err(|e| (Stage::Pinning, e))
            .and_then(|()| {
                loopback::verify_at(&running.endpoint(), &expected)
                    .map_err(|e| (Stage::Verification, e))
            });
        // Its TCP side answered; over h3 its QUIC side must answer too,
        // through the loop its rounds run, or it is not measured.
        let checks = checks.and_then(|()| match (server.protocol, &tls_files) {
            (crate::study::Protocol::H3, Some(t)) => {
                let tls = throng_engine::tls::TlsSpec {
                    ca_pem: Some(t.cert_pem.clone()),
                    ..throng_engine::tls::TlsSpec::default()
                };
                crate::h3::get(running.addr(), &first_path, &tls, expected.timeout)
                    .map(|_| ())
                    .map_err(|e| (Stage::Verification, anyhow::anyhow!(e)))
            }
            _ => Ok(()),
        });
        if let Err((stage, e)) = checks {
            return Err(NotReady {
                stage,
                failure: running.fail(e),
            });
        }
        let started = Started {
            pid: running.pid(),
            configs: running.configs.clone(),
        };
        self.running.push(Server {
            id,
            running,
            paths: w.paths(),
            bodies: w
                .files
                .iter()
                .filter_map(|(path, file)| {
                    let body = std::fs::read(file).ok()?;
                    let sum = throng_engine::http1::fnv1a64(&body);
                    Some((path.clone(), (body.len() as u64, sum)))
                })
                .collect(),
            client_cpus: group.client_cpus.clone(),
            first_path,
            timeout: w.kind.request_timeout(),
            session: None,
            tls: tls_files.map(|t| throng_engine::tls::TlsSpec {
                ca_pem: Some(t.cert_pem),
                // One protocol per server, as the study names it: ALPN
                // offers that one alone.
                alpn: vec![server.protocol.alpn().to_string()],
                ..throng_engine::tls::TlsSpec::default()
            }),
            protocol: server.protocol,
            sampled: None,
        });
        Ok(started)
    }

    fn open_level(&mut self, loads: &[(ServerId, RoundLoad)]) {
        // Every server's connections stay open at once; when they would not
        // leave room under the open-file limit for one more load, each
        // round opens its own instead.
        let most = loads.iter().map(|(_, l)| u64::from(l.concurrency)).max();
        let all: u64 = loads.iter().map(|(_, l)| u64::from(l.concurrency)).sum();
        if all + most.unwrap_or(0) > throng_engine::max_connections() {
            return;
        }
        for (id, load) in loads {
            if let Some(s) = self.get(*id) {
                let spec = s.spec(load);
                s.session = throng_engine::Session::open(&spec)
                    .ok()
                    .map(|x| (load.concurrency, x));
            }
        }
    }

    fn close_level(&mut self) {
        for s in &mut self.running {
            s.session = None;
        }
    }

    fn diagnose(&mut self, server: ServerId, load: &RoundLoad) -> Result<Diagnosis, RoundError> {
        let s = self.get(server).ok_or(RoundError::NotRunning)?;
        let pids = s.running.processes();
        let dir = s.running.dir.clone();
        let logs_before = throng_servers::parity::log_bytes(&dir);
        let window = crate::profile::Window::open(&pids).map_err(RoundError::Uncounted)?;
        let t0 = std::time::Instant::now();
        let measured = self.round(server, load, RoundKind::Diagnosis);
        let seconds = t0.elapsed().as_secs_f64();
        let (counts, profile) = window.close().map_err(RoundError::Uncounted)?;
        let m = measured?;
        let logs_after = throng_servers::parity::log_bytes(&dir);
        Ok(Diagnosis {
            profile: Some(profile),
            ..diagnosis(
                &counts,
                &m.summary,
                seconds,
                logs_after.saturating_sub(logs_before),
            )
        })
    }

    fn round(
        &mut self,
        server: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
    ) -> Result<Measured, RoundError> {
        let control = self.interrupt.control();
        let s = self.get(server).ok_or(RoundError::NotRunning)?;
        s.round(load, kind, &control)
    }

    fn rounds_together(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
    ) -> Vec<Result<Measured, RoundError>> {
        let control = self.interrupt.control();
        // Each server is measured by a thread of its own, on its own client
        // CPUs, so that the rounds overlap in time as closely as threads
        // can start together.
        let mut mine: Vec<(usize, &mut Server, &RoundLoad)> = Vec::new();
        let mut servers: Vec<Option<&mut Server>> = self.running.iter_mut().map(Some).collect();
        for (k, &(id, load)) in loads.iter().enumerate() {
            let found = servers
                .iter_mut()
                .find(|s| s.as_ref().is_some_and(|s| s.id == id))
                .and_then(Option::take);
            if let Some(s) = found {
                mine.push((k, s, load));
            }
        }
        let mut out: Vec<Result<Measured, RoundError>> =
            loads.iter().map(|_| Err(RoundError::NotRunning)).collect();
        let done: Vec<(usize, Result<Measured, RoundError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = mine
                .into_iter()
                .map(|(k, s, load)| {
                    let control = control.clone();
                    scope.spawn(move || (k, s.round(load, RoundKind::Slice, &control)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a round's thread panicked"))
                .collect()
        });
        for (k, r) in done {
            out[k] = r;
        }
        out
    }

    fn exited(&mut self, server: ServerId) -> Option<String> {
        match self.get(server) {
            Some(s) => s.running.exited(),
            None => Some("was not running".to_string()),
        }
    }

    fn answers(&mut self, server: ServerId) -> Result<(), String> {
        let s = self
            .get(server)
            .ok_or_else(|| "it is not running".to_string())?;
        let timeout = s.timeout;
        s.running
            .endpoint()
            .get(&s.first_path, &[], timeout)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn log_tail(&mut self, server: ServerId) -> String {
        self.get(server)
            .map(|s| s.running.log_tail())
            .unwrap_or_default()
    }

    fn stop(&mut self, server: ServerId) {
        if let Some(i) = self.running.iter().position(|s| s.id == server) {
            let mut s = self.running.remove(i);
            s.running.stop();
        }
    }

    fn oom_kills(&self) -> Option<u64> {
        let text = std::fs::read_to_string("/proc/vmstat").ok()?;
        oom_kills_in(&text)
    }

    fn core_prices(&mut self, cpu: usize) -> Option<throng_servers::prices::Reading> {
        throng_servers::prices::read(cpu).ok()
    }

    fn survey(&mut self, plan: &DoctorPlan) -> (Vec<Finding>, Environment) {
        // The interface that carries the servers' traffic: loopback here,
        // the benchmark network's on a server host.
        let nic = throng_trust::serving::interface_of(std::path::Path::new("/"), self.listen);
        (
            throng_trust::doctor::check_serving(plan, nic.as_deref()),
            throng_trust::doctor::environment(),
        )
    }
}

/// What a diagnostic round counted, per request. The server answered the
/// responses completed in the round and those still in flight at its end
/// (read while the connections drained, or abandoned after it had done the
/// work): both are its requests.
pub fn diagnosis(
    counts: &throng_servers::syscalls::Counts,
    summary: &Summary,
    seconds: f64,
    log_bytes: u64,
) -> Diagnosis {
    let requests = summary.completed + summary.in_flight_at_end;
    let per = |n: u64| {
        if requests == 0 {
            0.0
        } else {
            n as f64 / requests as f64
        }
    };
    Diagnosis {
        tool: counts.tool.clone(),
        unavailable: None,
        seconds,
        requests,
        syscalls_per_request: counts
            .by_name
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.clone(), per(n)))
            .collect(),
        total_per_request: counts.total.map(per),
        voluntary_switches_per_request: per(counts.voluntary_switches),
        involuntary_switches_per_request: per(counts.involuntary_switches),
        log_bytes_per_request: per(log_bytes),
        profile: None,
    }
}

/// `oom_kill` from /proc/vmstat: processes the OOM killer has killed.
pub fn oom_kills_in(vmstat: &str) -> Option<u64> {
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_says_how_far_the_server_got() {
        let at = |stage| {
            NotReady {
                stage,
                failure: StartFailure {
                    message: "GET /index.html: status 404 instead of 200".into(),
                    log_tail: String::new(),
                    configs: Vec::new(),
                },
            }
            .message()
        };
        assert_eq!(
            at(Stage::Start),
            "did not start: GET /index.html: status 404 instead of 200"
        );
        assert_eq!(
            at(Stage::Verification),
            "started but failed verification: GET /index.html: status 404 instead of 200"
        );
        assert_eq!(
            at(Stage::Pinning),
            "started but was not pinned to its CPUs: GET /index.html: status 404 instead of 200"
        );
    }

    #[test]
    fn oom_kills_are_read_from_vmstat() {
        assert_eq!(oom_kills_in("pgfault 12\noom_kill 3\nother 1\n"), Some(3));
        assert_eq!(oom_kills_in("pgfault 12\n"), None);
    }
}
