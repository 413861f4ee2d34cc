//! `throng hosts check` and `throng load --hosts`: the CLI's side of
//! running on other machines. What a host is, lacks and measured is
//! worded here; reaching it is throng-remote's.

use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use throng_engine::LoadSpec;
use throng_model::{Summary, Verdict};
use throng_remote::protocol::{HostFacts, PathFacts};
use throng_remote::{Fleet, FleetRun, Place, Transport, CLOCK_LIMIT};
use throng_trust::verdict::PortUse;

use crate::cmd_load::{json_document, LoadArgs};
use crate::fmt::{human_bytes, human_count, human_us};
use crate::load_render::{render, render_verdict};

#[derive(clap::Args, Debug)]
pub struct HostsArgs {
    #[command(subcommand)]
    pub command: HostsCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum HostsCommand {
    /// Reach every host and report its CPU, cores, memory, kernel, throng
    /// build, open-file limit and clock offset, the path from each client
    /// host to the server host, and what is missing.
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// A study whose server_host and client_hosts are checked.
    pub study: Option<PathBuf>,
    /// Client hosts (ssh://[user@]host[:port] or local, comma-separated).
    #[arg(long, value_name = "HOSTS")]
    pub hosts: Option<String>,
    /// The server host.
    #[arg(long, value_name = "HOST")]
    pub server: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: HostsArgs) -> Result<u8> {
    match a.command {
        HostsCommand::Check(c) => check(c),
    }
}

/// What a check needs: the places, the transport and the programs the
/// server host must have.
struct Plan {
    server: Option<Place>,
    clients: Vec<Place>,
    transport: Transport,
    programs: Vec<String>,
    connections: usize,
    /// The study's `server_address`: where clients will connect.
    address: Option<std::net::IpAddr>,
}

fn plan(a: &CheckArgs) -> Result<Plan> {
    let mut p = match &a.study {
        Some(path) => {
            let recipes = throng_servers::Recipes::builtin();
            let study = throng_lab::study::Study::load(&path.to_string_lossy(), &recipes)?;
            let hosts = &study.hosts;
            Plan {
                server: Some(hosts.server.clone()),
                clients: hosts.clients.clone(),
                transport: hosts.transport.clone(),
                programs: study.programs(),
                connections: study.max_concurrency() as usize,
                address: hosts.address,
            }
        }
        None => Plan {
            server: None,
            clients: Vec::new(),
            transport: Transport::ssh(None),
            programs: Vec::new(),
            connections: 0,
            address: None,
        },
    };
    if let Some(h) = &a.hosts {
        p.clients = Place::parse_list(h).map_err(|e| anyhow!("--hosts: {e}"))?;
    }
    if let Some(s) = &a.server {
        p.server = Some(Place::parse(s).map_err(|e| anyhow!("--server: {e}"))?);
    }
    if p.clients.is_empty() && p.server.is_none() {
        bail!("name the hosts to check: a study, --hosts or --server");
    }
    Ok(p)
}

fn check(a: CheckArgs) -> Result<u8> {
    let plan = plan(&a)?;
    let mut places: Vec<Place> = plan.clients.clone();
    if let Some(s) = &plan.server {
        if !places.contains(s) {
            places.push(s.clone());
        }
    }
    let mut fleet = Fleet::connect(&places, &plan.transport).map_err(|e| anyhow!("{e}"))?;
    let mut lines = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let mut offsets = Vec::new();
    for l in &mut fleet.links {
        let o = l
            .measure_clock_within(CLOCK_LIMIT)
            .map_err(|e| anyhow!("{e}"))?;
        offsets.push(o);
        if o.uncertainty_ns > CLOCK_LIMIT.as_nanos() as u64 {
            missing.push(format!(
                "{}: clock offset known only to ±{:.3} ms, more than the {:.0} ms a synchronised start needs",
                l.place,
                o.uncertainty_ns as f64 / 1e6,
                CLOCK_LIMIT.as_secs_f64() * 1e3
            ));
        }
    }
    for (l, o) in fleet.links.iter().zip(&offsets) {
        lines.push(host_line(&l.place, &l.facts, o));
    }
    // Open files each client host needs for its share of the connections.
    if plan.connections > 0 && !plan.clients.is_empty() {
        let per_host = plan.connections.div_ceil(plan.clients.len()) as u64;
        let need = per_host + throng_model::SPARE_FDS;
        for l in fleet
            .links
            .iter()
            .filter(|l| plan.clients.contains(&l.place))
        {
            let soft = l.facts.environment.nofile.0;
            if soft < need {
                missing.push(format!(
                    "{}: open-file limit {soft} is below the {need} that {per_host} connections need (ulimit -n)",
                    l.place
                ));
            }
        }
    }
    if let Some(server) = &plan.server {
        if !plan.programs.is_empty() {
            let k = fleet
                .links
                .iter()
                .position(|l| &l.place == server)
                .expect("the server host was connected");
            let reply = fleet.links[k].call(
                throng_remote::protocol::Request::Have {
                    programs: plan.programs.clone(),
                },
                std::time::Duration::from_secs(30),
            );
            match reply {
                Ok(throng_remote::protocol::Reply::Have { missing: m }) => {
                    for p in m {
                        missing.push(format!("{server}: {p} is not installed"));
                    }
                }
                Ok(_) => bail!("{server}: unexpected reply to a program check"),
                Err(e) => bail!("{e}"),
            }
        }
    }
    let mut paths: Vec<(Place, PathFacts)> = Vec::new();
    if let (Some(server), false) = (&plan.server, plan.clients.is_empty()) {
        match probe_addr(server, plan.address) {
            Some(addr) => {
                let clients: Vec<usize> = fleet
                    .links
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| plan.clients.contains(&l.place))
                    .map(|(i, _)| i)
                    .collect();
                for i in clients {
                    let l = &mut fleet.links[i];
                    match l.call(
                        throng_remote::protocol::Request::Path { addr, samples: 10 },
                        std::time::Duration::from_secs(60),
                    ) {
                        Ok(throng_remote::protocol::Reply::Path(p)) => {
                            if let Some(e) = &p.error {
                                missing.push(format!("{}: cannot reach {addr}: {e}", l.place));
                            }
                            paths.push((l.place.clone(), p));
                        }
                        Ok(_) => bail!("{}: unexpected reply to a path probe", l.place),
                        Err(e) => bail!("{e}"),
                    }
                }
            }
            None => missing.push(format!(
                "{server}: its address cannot be resolved here, so no path was measured"
            )),
        }
    }
    let topology = topology(plan.clients.len(), plan.server.as_ref(), &paths);
    if a.json {
        let doc = serde_json::json!({
            "hosts": fleet.links.iter().zip(&offsets).map(|(l, o)| serde_json::json!({
                "host": l.place.to_string(),
                "role": role(&l.place, &plan),
                "facts": l.facts,
                "clock_offset_ms": o.offset_ns as f64 / 1e6,
                "clock_uncertainty_ms": o.uncertainty_ns as f64 / 1e6,
            })).collect::<Vec<_>>(),
            "paths": paths.iter().map(|(p, f)| serde_json::json!({"from": p.to_string(), "path": f})).collect::<Vec<_>>(),
            "missing": missing,
            "topology": topology,
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        for (l, line) in fleet.links.iter().zip(&lines) {
            outln!("{:<7} {line}", role(&l.place, &plan))?;
        }
        for (from, p) in &paths {
            outln!("path    {from} → {}", path_line(p))?;
        }
        outln!("topology {topology}")?;
        if missing.is_empty() {
            outln!("missing  nothing")?;
        } else {
            for m in &missing {
                outln!("missing  {m}")?;
            }
        }
    }
    Ok(if missing.is_empty() { 0 } else { 1 })
}

fn role(p: &Place, plan: &Plan) -> &'static str {
    match (plan.server.as_ref() == Some(p), plan.clients.contains(p)) {
        (true, true) => "both",
        (true, false) => "server",
        _ => "client",
    }
}

/// Where a client's round trip to the server host is measured: the ssh
/// port, which is listening before any server is, at the address the
/// clients will load (`server_address`) when the study names one.
fn probe_addr(p: &Place, address: Option<std::net::IpAddr>) -> Option<std::net::SocketAddr> {
    match (p, address) {
        (Place::Local, Some(a)) => Some(std::net::SocketAddr::new(a, 22)),
        (Place::Local, None) => None,
        (Place::Ssh { port, .. }, Some(a)) => {
            Some(std::net::SocketAddr::new(a, port.unwrap_or(22)))
        }
        (Place::Ssh { host, port, .. }, None) => (host.as_str(), port.unwrap_or(22))
            .to_socket_addrs()
            .ok()?
            .next(),
    }
}

fn host_line(p: &Place, f: &HostFacts, o: &throng_remote::clock::Offset) -> String {
    let e = &f.environment;
    format!(
        "{p}: {} {}, {} CPUs ({} usable), {} memory, Linux {}, throng {}, open files {}/{}, clock {:+.3} ms ±{:.3}",
        f.arch,
        if e.cpu_model.is_empty() { "?" } else { &e.cpu_model },
        e.cpus_online,
        f.cpus.len(),
        human_bytes(e.memory_bytes as f64),
        e.kernel,
        f.build,
        e.nofile.0,
        e.nofile.1,
        o.offset_ns as f64 / 1e6,
        o.uncertainty_ns as f64 / 1e6,
    )
}

pub fn path_line(p: &PathFacts) -> String {
    let rtt = match (p.rtt_min_us, p.rtt_median_us) {
        (Some(a), Some(m)) => format!("RTT {} (median {}, {} connects)", ms(a), ms(m), p.samples),
        _ => format!(
            "RTT unknown ({})",
            p.error.as_deref().unwrap_or("no sample")
        ),
    };
    let mtu = match (p.mtu, p.path_mtu) {
        (Some(i), Some(pm)) if pm != i => format!("MTU {i} (path {pm})"),
        (Some(i), _) => format!("MTU {i}"),
        (None, Some(pm)) => format!("path MTU {pm}"),
        (None, None) => "MTU unknown".into(),
    };
    let link = match (&p.interface, p.speed_mbps) {
        (Some(i), Some(s)) => format!("via {i} at {s} Mb/s"),
        (Some(i), None) => format!("via {i}"),
        _ => "interface unknown".into(),
    };
    format!(
        "{}: {rtt}, {mtu}, {link}, {}",
        p.target,
        if p.loopback {
            "loopback (same machine)"
        } else {
            "crosses a network interface"
        }
    )
}

fn ms(us: f64) -> String {
    format!("{:.3} ms", us / 1e3)
}

/// "2 client hosts → 1 server host, 0.21 ms RTT".
pub fn topology(clients: usize, server: Option<&Place>, paths: &[(Place, PathFacts)]) -> String {
    let rtt = paths
        .iter()
        .filter_map(|(_, p)| p.rtt_min_us)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))));
    let c = format!(
        "{clients} client host{}",
        if clients == 1 { "" } else { "s" }
    );
    let s = match server {
        Some(p) if p.is_local() => "this machine as server".to_string(),
        Some(_) => "1 server host".to_string(),
        None => "the target".to_string(),
    };
    match rtt {
        Some(r) => format!("{c} → {s}, {} RTT", ms(r)),
        None => format!("{c} → {s}"),
    }
}

/// `throng load --hosts`: the spec split over the hosts, started together,
/// merged exactly, each host's share shown and judged apart, since one
/// saturated client host hides in an average.
pub fn load_on_hosts(a: LoadArgs) -> Result<u8> {
    let spec = &crate::cmd_load::build_spec(&a)?;
    let thresholds = crate::load_thresholds::parse(&a.thresholds)?;
    let hosts = a.hosts.as_deref().unwrap_or_default();
    let places = Place::parse_list(hosts).map_err(|e| anyhow!("--hosts: {e}"))?;
    if places.is_empty() {
        bail!("--hosts names no host");
    }
    throng_remote::split(spec, places.len()).map_err(|e| anyhow!("{e}"))?;
    // A loopback target names each host's own loopback, not this machine.
    if let Some(p) = places.iter().find(|p| !p.is_local()) {
        if let Some(t) = spec.targets.iter().find(|t| t.addr.ip().is_loopback()) {
            bail!(
                "{} is a loopback address: from {p} it would reach that host itself; \
                 give the server's address on the network the hosts share",
                t.url
            );
        }
    }
    let transport = Transport::ssh(None);
    let mut fleet = Fleet::connect(&places, &transport).map_err(|e| anyhow!("{e}"))?;
    fleet
        .check_clocks(CLOCK_LIMIT)
        .map_err(|e| anyhow!("{e}"))?;
    let target = spec.targets[0].addr;
    let mut paths = Vec::new();
    for (p, r) in places.iter().zip(fleet.paths_sampled(target, 3)) {
        paths.push((p.clone(), r.map_err(|e| anyhow!("{e}"))?));
    }
    let flag = Arc::new(AtomicBool::new(false));
    {
        let f = flag.clone();
        crate::signals::on_interrupt(move || f.store(true, Ordering::SeqCst))?;
    }
    let run = fleet
        .load(spec, a.threads.is_none(), &|| flag.load(Ordering::SeqCst))
        .map_err(|e| anyhow!("{e}"))?;
    drop(fleet);
    let mut summary = throng_lab::spread::summarize_fleet(&run);
    summary.thresholds = throng_load::thresholds::judge_all(&thresholds, &summary);
    let (verdict, host_verdicts) = judge(&run, &summary, spec);
    let topology = topology(places.len(), None, &paths);
    if a.json {
        let mut doc = json_document(&summary, &verdict)?;
        // `hosts[]` below holds each host's whole document; the brief
        // shares are for stored rounds.
        if let Some(o) = doc.as_object_mut() {
            o.remove("per_host");
        }
        doc["hosts"] = serde_json::Value::Array(
            run.hosts
                .iter()
                .zip(&host_verdicts)
                .zip(&paths)
                .map(|((h, (s, v)), (_, p))| {
                    Ok(serde_json::json!({
                        "host": h.place.to_string(),
                        "clock_offset_ms": h.offset.offset_ns as f64 / 1e6,
                        "clock_uncertainty_ms": h.offset.uncertainty_ns as f64 / 1e6,
                        "path": p,
                        "ports": {"range": h.ports.range, "time_wait": h.ports.time_wait},
                        "summary": json_document(s, v)?,
                    }))
                })
                .collect::<Result<Vec<_>>>()?,
        );
        doc["start_skew_ms"] = serde_json::json!(run.start_skew_s * 1e3);
        doc["topology"] = serde_json::json!(topology);
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out!("{}", render(spec, &summary, a.timeline))?;
        outln!(
            "  topology     {topology}; starts within {}",
            ms(run.start_skew_s * 1e6)
        )?;
        for ((h, (s, _)), (_, p)) in run.hosts.iter().zip(&host_verdicts).zip(&paths) {
            outln!(
                "  host         {}: {} requests, {} req/s, p50 {}, p99 {}, {} threads, clock {:+.3} ms ±{:.3}; {}",
                h.place,
                human_count(s.completed),
                human_count(s.requests_per_sec as u64),
                human_us(s.latency_us.p50 as f64),
                human_us(s.latency_us.p99 as f64),
                s.threads,
                h.offset.offset_ns as f64 / 1e6,
                h.offset.uncertainty_ns as f64 / 1e6,
                path_line(p),
            )?;
        }
        out!("{}", render_verdict(&verdict, summary.interrupted))?;
    }
    let crossed = crate::load_thresholds::report(&a.thresholds, &thresholds, &summary, a.json)?;
    crate::cmd_runs::save(
        crate::cmd_runs::save_path(a.db.as_ref(), a.save),
        spec,
        crate::cmd_runs::Outcome::Measured {
            result: &run.merged,
            summary: &summary,
            verdict: &verdict,
        },
        Some(crate::cmd_runs::spread(&run, &paths, &topology)),
    )?;
    Ok(if summary.interrupted {
        crate::signals::INTERRUPTED
    } else if crossed {
        crate::load_thresholds::CROSSED
    } else if a.strict && !verdict.is_valid() {
        1
    } else {
        0
    })
}

/// The merged verdict and each host's own. The merged summary carries each
/// host's share, so `client_bound` is judged host by host and named (the
/// merged CPU figures average a saturated host with idle ones). Port use
/// is a client host's own, read there as its load ended: each host's
/// verdict judges its own, the merged one the host closest to running out.
fn judge(run: &FleetRun, merged: &Summary, spec: &LoadSpec) -> (Verdict, Vec<(Summary, Verdict)>) {
    use throng_load::verdict::{outside, Ports};
    let close_mode = !spec.keep_alive;
    let v = throng_load::verdict::load(
        merged,
        &run.merged.latency,
        &outside(merged.threads, close_mode),
        Ports::Read(PortUse::worst(run.hosts.iter().map(|h| h.ports.clone()))),
    );
    let per_host = run
        .hosts
        .iter()
        .map(|h| {
            let s = throng_load::record::summarize(&h.result);
            let hv = throng_load::verdict::round(
                &s,
                &h.result.latency,
                &outside(s.threads, close_mode),
                Ports::Read(h.ports.clone()),
            );
            (s, hv)
        })
        .collect();
    (v, per_host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_engine::result::{Counts, LoadModel};
    use throng_model::ReasonCode;
    use throng_remote::clock::Offset;
    use throng_remote::HostRun;

    fn result(cpu_s: f64) -> throng_engine::LoadResult {
        let mut latency = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        latency.record(100).unwrap();
        throng_engine::LoadResult {
            model: LoadModel::Closed,
            urls: 1,
            threads: 1,
            pipeline: 1,
            keep_alive: true,
            coalesce: true,
            io: throng_engine::IoBackend::Epoll,
            started_unix_s: 0.0,
            duration_s: 10.0,
            counts: Counts {
                completed: 1000,
                sent: 1000,
                status: vec![(200, 1000)],
                ..Counts::default()
            },
            connections_requested: 5,
            connections_established: 5,
            reconnects: 0,
            connect_time: latency.clone(),
            connection_time: None,
            in_flight_at_end: 0,
            cpu_user_s: cpu_s,
            cpu_sys_s: 0.0,
            runqueue_s: 0.0,
            naps: 0,
            spins: 0,
            spins_answered: 0,
            spun_ns: 0,
            sleep_cost_ns: 0,
            sleep_late_ns: 0,
            hold_ns: 0,
            holds: 0,
            rate: None,
            warmup: None,
            timeline: vec![],
            warnings: vec![],
            latency,
            latency_uncorrected: None,
            first_byte: None,
            interrupted: false,
            sessions: None,
            tls: None,
            http2: None,
            http3: None,
        }
    }

    fn host(place: &str, result: throng_engine::LoadResult, ports: PortUse) -> HostRun {
        HostRun {
            place: Place::parse(place).unwrap(),
            offset: Offset::ZERO,
            result,
            ports: PortUse {
                host: Some(place.to_string()),
                ..ports
            },
            tcp: None,
        }
    }

    /// The verdicts of a run of `hosts` under `spec`, merged and each
    /// host's.
    fn judged(hosts: Vec<HostRun>, spec: &LoadSpec) -> (Verdict, Vec<(Summary, Verdict)>) {
        let results: Vec<_> = hosts.iter().map(|h| h.result.clone()).collect();
        let run = FleetRun {
            merged: throng_engine::LoadResult::combine(&results).unwrap(),
            hosts,
            start_skew_s: 0.0,
        };
        let merged = throng_lab::spread::summarize_fleet(&run);
        judge(&run, &merged, spec)
    }

    fn messages(v: &Verdict, code: ReasonCode) -> Vec<String> {
        v.reasons
            .iter()
            .filter(|r| r.code == code)
            .map(|r| r.message.clone())
            .collect()
    }

    /// Ports are a client host's own: in close mode, the host whose
    /// ephemeral ports are three quarters in TIME_WAIT is named, in the
    /// merged verdict and in its own, and the other host's verdict is
    /// clean.
    #[test]
    fn the_client_host_running_out_of_ports_is_named() {
        let held = |n| PortUse {
            range: Some(1000),
            time_wait: Some(n),
            host: None,
        };
        let mut spec = LoadSpec::new(vec![]);
        spec.keep_alive = false;
        let (v, per_host) = judged(
            vec![
                host("ssh://a", result(0.2), held(10)),
                host("ssh://b", result(0.2), held(750)),
            ],
            &spec,
        );
        let ports = messages(&v, ReasonCode::Ports);
        assert_eq!(ports.len(), 1, "{v:?}");
        assert!(
            ports[0].starts_with(
                "client host ssh://b: 750 of the 1000 ephemeral ports (75%) were held in TIME_WAIT"
            ),
            "{}",
            ports[0]
        );
        assert!(!per_host[0].1.has(ReasonCode::Ports));
        assert!(per_host[1].1.has(ReasonCode::Ports));
    }

    #[test]
    fn one_saturated_client_host_is_named_though_the_average_is_not_busy() {
        // One host's thread busy the whole run, the other idle: merged, the
        // two threads were 50% busy, which alone would not fire.
        let (v, per_host) = judged(
            vec![
                host("ssh://a", result(0.2), PortUse::default()),
                host("ssh://b", result(10.0), PortUse::default()),
            ],
            &LoadSpec::new(vec![]),
        );
        let bound = messages(&v, ReasonCode::ClientBound);
        assert_eq!(bound.len(), 1, "{bound:?}");
        assert!(
            bound[0].starts_with(
                "client host ssh://b: the load generator's 1 thread(s) were 100% busy"
            ),
            "{}",
            bound[0]
        );
        assert!(per_host[0].1.is_valid());
        assert!(per_host[1].1.has(ReasonCode::ClientBound));
    }
}
