//! A study whose servers run on a host of their own, or whose load comes
//! from other hosts: client and server apart, as serious benchmarks run
//! them, so neither fights the other for CPUs, caches or the loopback.
//!
//! Two halves speak through throng-remote's agent. [`ServerHost`] is the
//! server host's side: it parses the same study, starts the same recipes
//! with the same [`Local`] executor this machine uses, and samples and
//! counts the server where it runs. [`Apart`] is the coordinator's
//! [`Executor`]: it sends the server host what to start and the client
//! hosts what load to run, starts the server's sampling window and every
//! client at one instant, and merges the clients' counts and histograms.
//! When the server runs on this machine (clients elsewhere), the same
//! [`ServerHost`] is called in-process.

use std::cell::RefCell;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use throng_model::{Diagnosis, Environment, Finding, HostRecord, HostRole, ServerUsage, Severity};
use throng_remote::protocol::{Reply, Request};
use throng_remote::{Fleet, Place, CLOCK_LIMIT};
use throng_servers::launch::StartFailure;

use crate::executor::{server_load_spec, DoctorPlan, Executor, NotReady, Stage, Started};
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::RoundLoad;
use crate::study::{Study, StudyServer};

mod archive;
mod duet;
mod lanes;
mod plan;
mod server_host;
mod site;
mod wire;

pub use server_host::ServerHost;
use wire::stage_of;
pub use wire::{LabReply, LabRequest};

/// Where the server side is: on another host through its agent, or in
/// this process.
enum ServerEnd {
    Remote(Fleet),
    Here(Box<ServerHost>),
}

/// Lab requests wait this long: a server's start (readiness, pinning,
/// every URL verified) or a diagnostic count can take tens of seconds.
const LAB_CALL: Duration = Duration::from_secs(300);

impl ServerEnd {
    fn call(&mut self, req: LabRequest) -> Result<LabReply, String> {
        match self {
            ServerEnd::Here(h) => h.handle(req),
            ServerEnd::Remote(f) => {
                let body = serde_json::to_value(&req).map_err(|e| e.to_string())?;
                let link = &mut f.links[0];
                match link.call(Request::Ext { body }, LAB_CALL) {
                    Ok(Reply::Ext { body }) => serde_json::from_value(body)
                        .map_err(|e| format!("{}: unreadable lab reply: {e}", link.place)),
                    Ok(other) => Err(format!("{}: unexpected reply {other:?}", link.place)),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    fn place(&self) -> Place {
        match self {
            ServerEnd::Here(_) => Place::Local,
            ServerEnd::Remote(f) => f.links[0].place.clone(),
        }
    }
}

/// A started server as the coordinator knows it: the server host and the
/// client hosts call it by its name.
struct Remote {
    id: ServerId,
    name: String,
    port: u16,
    paths: Vec<String>,
    tls: Option<throng_engine::tls::TlsSpec>,
    protocol: crate::study::Protocol,
}

/// The coordinator's executor for a study spread over hosts.
pub struct Apart<'a> {
    server: RefCell<ServerEnd>,
    clients: Fleet,
    listen: IpAddr,
    interrupt: &'a Interrupt,
    running: Vec<Remote>,
    /// Servers whose level's connections the client hosts keep between
    /// slices, and that level's concurrency.
    kept: Vec<(ServerId, u32)>,
    /// The level's slices the client hosts run as one plan.
    plan: Option<plan::LevelPlan>,
    /// Between a plan's slices: as short as the client hosts keep up with.
    gap: throng_remote::plan::Gap,
    /// A duet's hosts, placed for each group's cores.
    duet: Option<duet::DuetHosts>,
    /// The cores of the group whose servers were started last.
    cores: u32,
    cpus: Vec<usize>,
    hosts: Vec<HostRecord>,
    topology: String,
}

/// The address servers listen on and clients connect to: the study's
/// `server_address`, else the server host's name resolved here.
fn listen_address(study: &Study) -> anyhow::Result<IpAddr> {
    if let Some(a) = study.hosts.address {
        return Ok(a);
    }
    match &study.hosts.server {
        Place::Local => anyhow::bail!(
            "server_address: the servers run on this machine and the clients elsewhere, \
             so name the address the client hosts reach this machine at"
        ),
        Place::Ssh { host, .. } => (host.as_str(), 0)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip())
            .ok_or_else(|| {
                anyhow::anyhow!("server_host {host:?} cannot be resolved here; give server_address")
            }),
    }
}

impl<'a> Apart<'a> {
    /// Reaches every host, checks their clocks, and opens the study on the
    /// server host. Fails before anything starts, naming the host.
    pub fn connect(
        study: &Study,
        interrupt: &'a Interrupt,
        keep: bool,
    ) -> anyhow::Result<Apart<'a>> {
        let h = &study.hosts;
        if h.server.is_local() && h.clients.iter().any(Place::is_local) {
            anyhow::bail!(
                "client_hosts: this machine runs the servers, so it cannot also be a client host"
            );
        }
        let listen = listen_address(study)?;
        if listen.is_loopback() && h.clients.iter().any(|c| !c.is_local()) {
            anyhow::bail!(
                "server_address {listen} is a loopback address, which client hosts cannot reach"
            );
        }
        let mut clients =
            Fleet::connect(&h.clients, &h.transport).map_err(|e| anyhow::anyhow!("{e}"))?;
        clients
            .check_clocks(CLOCK_LIMIT)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let server = if h.server.is_local() {
            ServerEnd::Here(Box::new(ServerHost::new()))
        } else {
            let mut f = Fleet::connect(std::slice::from_ref(&h.server), &h.transport)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            f.check_clocks(CLOCK_LIMIT)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            ServerEnd::Remote(f)
        };
        let mut server = server;
        let facts = |place: &Place, cpus: &[usize]| duet::HostCpus {
            host: place.to_string(),
            cpus: cpus.to_vec(),
        };
        let server_cpus = match &server {
            ServerEnd::Remote(f) => f.links[0].facts.cpus.clone(),
            ServerEnd::Here(_) => throng_engine::affinity::own_cpus(),
        };
        let client_cpus: Vec<_> = (clients.links.iter())
            .map(|l| facts(&l.place, &l.facts.cpus))
            .collect();
        let duet = duet::check_apart(study, &facts(&h.server, &server_cpus), &client_cpus)?;
        let recipes = study
            .recipes
            .iter()
            .map(throng_servers::Recipes::text_of)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let cpus = match server
            .call(LabRequest::Open {
                study_toml: study.toml.clone(),
                recipes,
                listen,
                keep_workdir: keep,
            })
            .map_err(|e| anyhow::anyhow!("{}: {e}", h.server))?
        {
            LabReply::Opened { cpus } => cpus,
            other => anyhow::bail!("{}: unexpected reply {other:?}", h.server),
        };
        for s in &study.sites {
            site::send(&mut |r| server.call(r), &h.server, s, &|| {
                interrupt.is_set()
            })?;
        }
        // Each client's path to the server's host, before any server runs:
        // its ssh port answers, or the port 22 of a server on this machine.
        let probe = match &server {
            ServerEnd::Remote(f) => match &f.links[0].place {
                Place::Ssh { port, .. } => SocketAddr::new(listen, port.unwrap_or(22)),
                Place::Local => SocketAddr::new(listen, 22),
            },
            ServerEnd::Here(_) => SocketAddr::new(listen, 22),
        };
        let paths = clients.paths_sampled(probe, 5);
        let mut hosts = Vec::new();
        let server_place = server.place();
        if let ServerEnd::Remote(f) = &server {
            hosts.push(record(&f.links[0], HostRole::Server, None));
        }
        let mut best_rtt: Option<f64> = None;
        for (l, p) in clients.links.iter().zip(paths) {
            let p = p.ok();
            if let Some(r) = p.as_ref().and_then(|p| p.rtt_min_us) {
                best_rtt = Some(best_rtt.map_or(r, |b: f64| b.min(r)));
            }
            hosts.push(record(l, HostRole::Client, p.as_ref()));
        }
        let n = clients.links.len();
        let topology = format!(
            "{n} client host{} → {}{}",
            if n == 1 { "" } else { "s" },
            if server_place.is_local() {
                "this machine as server".to_string()
            } else {
                "1 server host".to_string()
            },
            best_rtt
                .map(|r| format!(", {:.3} ms RTT", r / 1e3))
                .unwrap_or_default()
        );
        Ok(Apart {
            server: RefCell::new(server),
            clients,
            listen,
            interrupt,
            running: Vec::new(),
            kept: Vec::new(),
            plan: None,
            gap: Default::default(),
            duet,
            cores: 1,
            cpus,
            hosts,
            topology,
        })
    }

    fn get(&self, id: ServerId) -> Result<&Remote, RoundError> {
        self.running
            .iter()
            .find(|r| r.id == id)
            .ok_or(RoundError::NotRunning)
    }

    /// The name the hosts know a started server by.
    fn name(&self, id: ServerId) -> Result<String, RoundError> {
        self.get(id).map(|r| r.name.clone())
    }

    fn call(&self, req: LabRequest) -> Result<LabReply, String> {
        self.server.borrow_mut().call(req)
    }

    /// The server host's round trip over the transport, as its clock
    /// exchanges measured it; none for a server host that is this machine.
    fn server_rtt(&self) -> Duration {
        match &*self.server.borrow() {
            ServerEnd::Here(_) => Duration::ZERO,
            ServerEnd::Remote(f) => f.worst_rtt(),
        }
    }

    /// A request of a round to the server host.
    fn call_in_round(&self, req: LabRequest) -> Result<LabReply, RoundError> {
        self.call(req).map_err(RoundError::ServerHost)
    }

    /// The server host's usage of `server` over the window it was asked
    /// for (of `slice`, in a plan), or none when the round is not sampled.
    fn window_usage(
        &self,
        sampled: bool,
        server: String,
        slice: Option<u32>,
    ) -> Result<ServerUsage, RoundError> {
        if !sampled {
            return Ok(ServerUsage::default());
        }
        match self.call_in_round(LabRequest::WindowEnd { server, slice })? {
            LabReply::Usage { usage } => Ok(usage),
            other => Err(unexpected(other)),
        }
    }

    /// The engine's spec of a round against `server` from the client hosts.
    fn spec(
        &self,
        server: ServerId,
        load: &RoundLoad,
    ) -> Result<throng_engine::LoadSpec, RoundError> {
        let r = self.get(server)?;
        Ok(server_load_spec(
            SocketAddr::new(self.listen, r.port),
            &r.paths,
            load,
            r.tls.as_ref(),
            r.protocol,
        ))
    }

    /// Whether every client host has room under its open-file limit for
    /// all of `loads`' connections at once and one more load beside them,
    /// as this machine's executor asks of its own.
    fn room_for(&self, loads: &[(ServerId, RoundLoad)]) -> bool {
        let n = self.clients.links.len().max(1) as u64;
        let share = |l: &RoundLoad| u64::from(l.concurrency).div_ceil(n);
        let all: u64 = loads.iter().map(|(_, l)| share(l)).sum();
        let most = loads.iter().map(|(_, l)| share(l)).max().unwrap_or(0);
        self.clients.links.iter().all(|l| {
            let (soft, hard) = l.facts.environment.nofile;
            all + most + throng_model::SPARE_FDS <= soft.max(hard)
        })
    }

    /// One round from the client hosts, the server sampled (for a measured
    /// slice) over the same window on its own host.
    fn round_apart(
        &mut self,
        server: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
    ) -> Result<Measured, RoundError> {
        // A duet's server is loaded from its own lane's hosts alone.
        if self.duet.is_some() {
            return self
                .lane_results(&[(server, load)], kind)
                .pop()
                .unwrap_or(Err(RoundError::NotRunning));
        }
        // Hosts run one load at a time: a plan under way ends first.
        self.end_plan();
        let asked = throng_remote::agent::unix_ns();
        let spec = self.spec(server, load)?;
        let name = self.name(server)?;
        let kept = self
            .kept
            .iter()
            .any(|&(s, c)| s == server && c == load.concurrency);
        let lead = self.clients.lead();
        if kind.sampled() {
            // The start is set once the server host has its window, so the
            // lead covers the client hosts' way alone. The sampler's delay
            // is counted from when the request arrived there: taken as
            // half the server host's round trip after it was sent, the
            // window begins with the counted time, as near as that round
            // trip's spread, and ends by its own clock.
            let delay = lead + self.server_rtt() / 2;
            self.call_in_round(LabRequest::WindowBegin {
                server: name.clone(),
                delay_s: delay.as_secs_f64() + load.warmup_s,
                seconds: load.seconds,
                slice: None,
            })?;
        }
        let start = throng_remote::agent::unix_ns() + lead.as_nanos() as u64;
        let interrupt = self.interrupt;
        let run = if kept {
            self.clients.window_at(
                &name,
                spec.warmup,
                Duration::from_secs_f64(load.seconds),
                spec.timeout,
                start,
                &|| interrupt.is_set(),
            )
        } else {
            self.clients
                .load_at(&spec, true, start, &|| interrupt.is_set())
        };
        let usage = self.window_usage(kind.sampled(), name, None)?;
        let run = run.map_err(RoundError::Clients)?;
        Ok(finish_round(&run, usage, load, spec.warmup, asked))
    }
}

/// A round run on its own, asked at `asked` (Unix ns, this machine's
/// clock): its figures, with how long the coordinator waited for it
/// beyond its own time and for its start.
fn finish_round(
    run: &throng_remote::FleetRun,
    usage: ServerUsage,
    load: &RoundLoad,
    warmup: Duration,
    asked: u64,
) -> Measured {
    // A counted round's own time is what its requests took; `seconds`
    // only bounds its sampling.
    let counted = match load.requests {
        Some(_) => run.merged.duration_s,
        None => load.seconds,
    };
    let own = Duration::try_from_secs_f64(load.warmup_s + counted).unwrap_or_default();
    let waited = Duration::from_nanos(throng_remote::agent::unix_ns().saturating_sub(asked));
    let mut m = measured(run, usage, waited.saturating_sub(own));
    let started = run.late(asked + warmup.as_nanos() as u64);
    m.summary.start_wait_ms = Some(started.as_secs_f64() * 1e3);
    m
}

/// A round's figures from the client hosts' run, the server's usage over
/// it, and how long the coordinator waited beyond the round's own time.
fn measured(run: &throng_remote::FleetRun, usage: ServerUsage, coordination: Duration) -> Measured {
    let mut summary = crate::spread::summarize_fleet(run);
    summary.coordination_ms = Some(coordination.as_secs_f64() * 1e3);
    Measured {
        summary,
        ports: Some(throng_trust::PortUse::worst(
            run.hosts.iter().map(|h| h.ports.clone()),
        )),
        latency: run.merged.latency.clone(),
        usage,
    }
}

fn unexpected(reply: LabReply) -> RoundError {
    RoundError::ServerHost(format!("unexpected reply {reply:?}"))
}

fn record(
    l: &throng_remote::Link,
    role: HostRole,
    path: Option<&throng_remote::protocol::PathFacts>,
) -> HostRecord {
    let e = &l.facts.environment;
    HostRecord {
        host: l.place.to_string(),
        role,
        arch: l.facts.arch.clone(),
        cpu_model: e.cpu_model.clone(),
        cpus_online: e.cpus_online,
        memory_bytes: e.memory_bytes,
        kernel: e.kernel.clone(),
        nofile: e.nofile,
        throng_build: l.facts.build.clone(),
        clock_offset_ms: l.offset.offset_ns as f64 / 1e6,
        clock_uncertainty_ms: l.offset.uncertainty_ns as f64 / 1e6,
        rtt_ms: path.and_then(|p| p.rtt_min_us).map(|r| r / 1e3),
        mtu: path.and_then(|p| p.path_mtu.or(p.mtu)),
        interface: path.and_then(|p| p.interface.clone()),
        link_mbps: path.and_then(|p| p.speed_mbps),
        loopback: path.is_some_and(|p| p.loopback),
        doctor: Vec::new(),
    }
}

impl Executor for Apart<'_> {
    fn start(
        &mut self,
        group: &Group,
        id: ServerId,
        server: &StudyServer,
    ) -> Result<Started, NotReady> {
        self.stop(id);
        self.cores = group.cores;
        let fail = |message: String| NotReady {
            stage: Stage::Start,
            failure: StartFailure {
                message,
                log_tail: String::new(),
                configs: Vec::new(),
            },
        };
        let reply = self
            .call(LabRequest::Start {
                server: server.name.clone(),
                cores: group.cores,
                server_cpus: group.server_cpus.clone(),
                workload: group.workload.kind.name().to_string(),
                max_concurrency: group.max_concurrency,
            })
            .map_err(fail)?;
        match reply {
            LabReply::Started {
                pid,
                port,
                configs,
                paths,
                tls,
            } => {
                if server.protocol.tls() && tls.is_none() {
                    return Err(fail(format!(
                        "the server host started {} without its certificate",
                        server.name
                    )));
                }
                self.running.push(Remote {
                    id,
                    name: server.name.clone(),
                    port,
                    paths,
                    tls,
                    protocol: server.protocol,
                });
                Ok(Started { pid, configs })
            }
            LabReply::NotReady {
                stage,
                message,
                log_tail,
                configs,
            } => Err(NotReady {
                stage: stage_of(&stage),
                failure: StartFailure {
                    message,
                    log_tail,
                    configs,
                },
            }),
            other => Err(fail(format!("unexpected reply {other:?}"))),
        }
    }

    fn round(
        &mut self,
        server: ServerId,
        load: &RoundLoad,
        kind: RoundKind,
    ) -> Result<Measured, RoundError> {
        if let Some(r) = self.planned_round(server, load, kind) {
            return r;
        }
        self.round_apart(server, load, kind)
    }

    fn rounds_together(
        &mut self,
        loads: &[(ServerId, &RoundLoad)],
    ) -> Vec<Result<Measured, RoundError>> {
        if self.duet.is_none() {
            return loads
                .iter()
                .map(|&(server, load)| self.round(server, load, RoundKind::Slice))
                .collect();
        }
        self.lane_results(loads, RoundKind::Slice)
    }

    fn duet_lanes(&self, cores: u32) -> Option<Vec<crate::group::Lane>> {
        self.duet.as_ref()?.lanes(cores)
    }

    fn plan(&mut self, upcoming: &[(ServerId, RoundLoad)]) {
        self.plan_slices(upcoming);
    }

    fn open_level(&mut self, loads: &[(ServerId, RoundLoad)]) {
        // A duet's lanes load from hosts of their own: each slice opens
        // its connections there.
        if self.duet.is_some() || !self.room_for(loads) {
            return;
        }
        for &(id, ref load) in loads {
            // A server whose connections cannot be opened is measured
            // with fresh ones each slice, as on one machine.
            let (Ok(spec), Ok(name)) = (self.spec(id, load), self.name(id)) else {
                continue;
            };
            if self.clients.open(&name, &spec, true).is_ok() {
                self.kept.push((id, load.concurrency));
            }
        }
    }

    fn close_level(&mut self) {
        self.end_plan();
        for (id, _) in std::mem::take(&mut self.kept) {
            if let Ok(name) = self.name(id) {
                let _ = self.clients.shut(&name);
            }
        }
    }

    fn diagnose(&mut self, server: ServerId, load: &RoundLoad) -> Result<Diagnosis, RoundError> {
        let name = self.name(server)?;
        self.call_in_round(LabRequest::DiagnoseBegin {
            server: name.clone(),
        })?;
        let t0 = std::time::Instant::now();
        let measured = self.round_apart(server, load, RoundKind::Diagnosis);
        let seconds = t0.elapsed().as_secs_f64();
        let counted = self.call_in_round(LabRequest::DiagnoseEnd { server: name })?;
        let m = measured?;
        match counted {
            LabReply::Counted {
                counts,
                log_bytes,
                profile,
            } => Ok(Diagnosis {
                profile: Some(crate::profile::from_server_host(profile)),
                ..crate::executor::diagnosis(&counts, &m.summary, seconds, log_bytes)
            }),
            other => Err(unexpected(other)),
        }
    }

    fn exited(&mut self, server: ServerId) -> Option<String> {
        let Ok(name) = self.name(server) else {
            return Some("was not running".to_string());
        };
        match self.call(LabRequest::Exited { server: name }) {
            Ok(LabReply::Exited { how }) => how,
            Ok(other) => Some(format!("unexpected reply {other:?}")),
            Err(e) => Some(e),
        }
    }

    fn answers(&mut self, server: ServerId) -> Result<(), String> {
        let Ok(name) = self.name(server) else {
            return Err("it is not running".to_string());
        };
        match self.call(LabRequest::Answers { server: name })? {
            LabReply::Answers { error: None } => Ok(()),
            LabReply::Answers { error: Some(e) } => Err(e),
            other => Err(format!("unexpected reply {other:?}")),
        }
    }

    fn log_tail(&mut self, server: ServerId) -> String {
        let Ok(name) = self.name(server) else {
            return String::new();
        };
        match self.call(LabRequest::LogTail { server: name }) {
            Ok(LabReply::LogTail { text }) => text,
            _ => String::new(),
        }
    }

    fn stop(&mut self, server: ServerId) {
        let Ok(name) = self.name(server) else {
            return;
        };
        if let Some(k) = self.kept.iter().position(|&(s, _)| s == server) {
            self.end_plan();
            self.kept.remove(k);
            let _ = self.clients.shut(&name);
        }
        self.running.retain(|r| r.id != server);
        let _ = self.call(LabRequest::Stop { server: name });
    }

    fn oom_kills(&self) -> Option<u64> {
        match self.call(LabRequest::OomKills) {
            Ok(LabReply::OomKills { kills }) => kills,
            _ => None,
        }
    }

    fn cpus(&self) -> Vec<usize> {
        self.cpus.clone()
    }

    fn clients_apart(&self) -> bool {
        true
    }

    fn probe_features(
        &mut self,
        _site: throng_servers::Site,
        server: &StudyServer,
        cpus: &[usize],
    ) -> Vec<throng_model::FeatureResult> {
        // Probed where the servers run: the probes start an instance of
        // their own there and ask it over that host's loopback.
        let why = match self.call(LabRequest::Features {
            server: server.name.clone(),
            cpus: cpus.to_vec(),
        }) {
            Ok(LabReply::Features { found }) => return found,
            Ok(other) => format!("unexpected reply {other:?}"),
            Err(e) => e,
        };
        throng_model::Feature::ALL
            .iter()
            .map(|&f| {
                throng_model::FeatureResult::new(
                    f,
                    throng_model::FeatureStatus::Untested,
                    format!("the server host did not probe it: {why}"),
                )
            })
            .collect()
    }

    fn survey(&mut self, plan: &DoctorPlan) -> (Vec<Finding>, Environment) {
        let (mut findings, mut environment) = match self.call(LabRequest::Survey {
            connections: plan.connections,
            server_cpus: plan.server_cpus.clone(),
        }) {
            Ok(LabReply::Survey {
                findings,
                environment,
            }) => (findings, environment),
            Ok(other) => (
                vec![unsurveyed(&format!("unexpected reply {other:?}"))],
                Environment::default(),
            ),
            Err(e) => (vec![unsurveyed(&e)], Environment::default()),
        };
        // Every client host's own doctor, for its share of the connections.
        let n = self.clients.links.len().max(1) as u64;
        let share = plan.connections.div_ceil(n);
        for (i, l) in self.clients.links.iter_mut().enumerate() {
            let found = match l.call(
                Request::Doctor { connections: share },
                Duration::from_secs(60),
            ) {
                Ok(Reply::Doctor { findings }) => findings,
                Ok(_) | Err(_) => vec![unsurveyed("its doctor did not answer")],
            };
            let host = l.place.to_string();
            for f in &found {
                findings.push(Finding {
                    message: format!("client host {host}: {}", f.message),
                    ..f.clone()
                });
            }
            let k = self
                .hosts
                .iter()
                .position(|h| h.host == host && h.role == HostRole::Client);
            if let Some(k) = k.or(Some(i)) {
                if let Some(h) = self.hosts.get_mut(k) {
                    h.doctor = found;
                }
            }
        }
        if let Some(h) = self.hosts.iter_mut().find(|h| h.role == HostRole::Server) {
            h.doctor = findings
                .iter()
                .filter(|f| !f.message.starts_with("client host "))
                .cloned()
                .collect();
        }
        environment.topology = self.topology.clone();
        environment.hosts = self.hosts.clone();
        (findings, environment)
    }
}

fn unsurveyed(why: &str) -> Finding {
    Finding {
        check: "hosts.survey".into(),
        severity: Severity::Warn,
        message: format!("a host could not be checked: {why}"),
        fix: String::new(),
    }
}

impl Drop for Apart<'_> {
    fn drop(&mut self) {
        let ids: Vec<ServerId> = self.running.iter().map(|r| r.id).collect();
        for id in ids {
            self.stop(id);
        }
        if let ServerEnd::Here(h) = &mut *self.server.borrow_mut() {
            h.shutdown();
        }
    }
}
