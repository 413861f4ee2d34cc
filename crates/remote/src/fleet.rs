//! The agents of one command, and a load spread over them.

use std::time::{Duration, Instant};

use throng_engine::{LoadResult, LoadSpec, Stop};

use crate::bell::{Bell, DOZE};
use crate::binary::Binary;
use crate::clock::Offset;
use crate::lead::Lead;
use crate::link::{ControlDir, Link};
use crate::protocol::{Reply, Request};
use crate::{Place, RemoteError, Transport};

/// Largest clock uncertainty at which hosts are started together: beyond
/// it, their shares of a load would not overlap to the millisecond.
pub const CLOCK_LIMIT: Duration = Duration::from_millis(1);

pub struct Fleet {
    pub links: Vec<Link>,
    transport: Transport,
    control: ControlDir,
    /// The start lead, from the hosts' round trips and recent lateness.
    lead: Lead,
    /// Rung by every link's reader: what a wait for several hosts sleeps on.
    pub(crate) bell: Bell,
}

/// One client host's share of a load, its times on this machine's clock.
#[derive(Debug, Clone)]
pub struct HostRun {
    pub place: Place,
    pub offset: Offset,
    pub result: LoadResult,
    /// The host's ephemeral ports as its load ended, named by the host.
    pub ports: throng_trust::PortUse,
    /// The TCP segments the host sent and sent again over its load.
    pub tcp: Option<throng_model::TcpSegments>,
}

#[derive(Debug, Clone)]
pub struct FleetRun {
    /// Every host's counts and histograms added.
    pub merged: LoadResult,
    pub hosts: Vec<HostRun>,
    /// Between the first and the last host's measured start, seconds.
    pub start_skew_s: f64,
}

impl FleetRun {
    /// How late the latest host began its counted time after
    /// `counted_local` (Unix ns, this machine's clock); zero when every
    /// host began on time or early.
    pub fn late(&self, counted_local: u64) -> Duration {
        let counted = counted_local as f64 / 1e9;
        let latest = self
            .hosts
            .iter()
            .map(|h| h.result.started_unix_s - counted)
            .fold(0.0, f64::max);
        Duration::try_from_secs_f64(latest).unwrap_or(Duration::ZERO)
    }
}

/// Shares of `spec` for `n` hosts: connections as evenly as they go, and
/// the rate and the request count in proportion to each host's
/// connections, so every connection carries the same pace.
pub fn split(spec: &LoadSpec, n: usize) -> Result<Vec<LoadSpec>, RemoteError> {
    if n == 0 {
        return Err(RemoteError::Split("no host to run the load".into()));
    }
    let c = spec.connections;
    // Users who think are spread whole: each host gets users, each with
    // its `conns_per_user` connections, and its share of the arrivals.
    let (units, per_unit) = match &spec.users {
        Some(u) => (u.slots(c), u.conns_per_user.max(1)),
        None => (c, 1),
    };
    if units < n {
        let what = match (spec.users.is_some(), units) {
            (true, 1) => "user",
            (true, _) => "users",
            (false, 1) => "connection",
            (false, _) => "connections",
        };
        return Err(RemoteError::Split(format!(
            "{units} {what} cannot be spread over {n} hosts: give at least one per host"
        )));
    }
    let shares: Vec<usize> = (0..n)
        .map(|i| units / n + usize::from(i < units % n))
        .collect();
    let conns: Vec<usize> = shares.iter().map(|&u| u * per_unit).collect();
    let c = units * per_unit;
    let requests = match spec.stop {
        Stop::Requests(total) => Some(throng_engine::proportional(total, &conns)),
        Stop::Duration(_) => None,
    };
    Ok(conns
        .iter()
        .enumerate()
        .map(|(i, &ci)| {
            let mut s = spec.clone();
            s.connections = ci;
            s.rate = spec.rate.map(|r| r * ci as f64 / c as f64);
            if let Some(u) = &mut s.users {
                if let throng_engine::users::Arrival::Open { per_sec, .. } = &mut u.arrival {
                    *per_sec *= ci as f64 / c as f64;
                }
            }
            if let Some(r) = &requests {
                s.stop = Stop::Requests(r[i]);
            }
            // Different random orders on each host, still repeatable.
            s.seed = spec.seed.wrapping_add(i as u64);
            s
        })
        .collect())
}

impl Fleet {
    /// Reaches every place at once; the first that cannot be reached fails
    /// the whole fleet (and the others' agents are closed).
    pub fn connect(places: &[Place], transport: &Transport) -> Result<Fleet, RemoteError> {
        let binary = Binary::current().map_err(|e| RemoteError::Unreachable {
            host: "local".into(),
            detail: format!("cannot read this throng's own binary: {e}"),
        })?;
        let control = ControlDir::create().map_err(|e| RemoteError::Unreachable {
            host: "local".into(),
            detail: format!("cannot create ssh's control directory: {e}"),
        })?;
        let bell = Bell::default();
        let opened: Vec<Result<Link, RemoteError>> = std::thread::scope(|s| {
            let handles: Vec<_> = places
                .iter()
                .map(|p| {
                    let (b, c, t, bell) = (&binary, control.path(), transport, &bell);
                    s.spawn(move || Link::open(p, t, b, c, bell))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(RemoteError::Agent {
                            host: "local".into(),
                            message: "a connecting thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut fleet = Fleet {
            links: Vec::new(),
            transport: transport.clone(),
            control,
            lead: Lead::default(),
            bell,
        };
        let mut first_error = None;
        for r in opened {
            match r {
                Ok(l) => fleet.links.push(l),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(fleet),
        }
    }

    /// Measures every host's clock offset and refuses one known less well
    /// than `limit`.
    pub fn check_clocks(&mut self, limit: Duration) -> Result<(), RemoteError> {
        for l in &mut self.links {
            let o = l.measure_clock_within(limit)?;
            if o.uncertainty_ns > limit.as_nanos() as u64 {
                return Err(RemoteError::Clock {
                    host: l.place.to_string(),
                    uncertainty_ms: o.uncertainty_ns as f64 / 1e6,
                    limit_ms: limit.as_secs_f64() * 1e3,
                });
            }
        }
        Ok(())
    }

    /// Runs `spec` split over every host, all starting at one instant.
    /// `interrupted` is polled while the hosts run; when it turns true every
    /// host is told to stop and what they measured is still merged.
    pub fn load(
        &mut self,
        spec: &LoadSpec,
        auto_threads: bool,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<FleetRun, RemoteError> {
        let start = crate::agent::unix_ns() + self.lead().as_nanos() as u64;
        self.load_at(spec, auto_threads, start, interrupted)
    }

    /// How far ahead of now a start must be for every host to have its
    /// request before it ([`Lead`]): from the slowest host's measured
    /// round trip and how late the hosts' recent starts were.
    pub fn lead(&self) -> Duration {
        self.lead.ahead(self.worst_rtt())
    }

    /// The slowest host's round trip over the transport, as its clock
    /// exchanges measured it.
    pub fn worst_rtt(&self) -> Duration {
        let worst = self.links.iter().map(|l| l.offset.rtt_ns).max();
        Duration::from_nanos(worst.unwrap_or(0))
    }

    /// Notes how late the latest host of `run` began its counted time
    /// after `start_local + warmup`, for the leads that follow.
    pub(crate) fn observe_start(&mut self, run: &FleetRun, start_local: u64, warmup: Duration) {
        self.observe_late(run.late(start_local + warmup.as_nanos() as u64));
    }

    /// Notes how late the latest host of a start was, once per start.
    pub(crate) fn observe_late(&mut self, late: Duration) {
        self.lead.observe(late);
    }

    /// [`Fleet::load`] starting at `start_local_ns` (Unix ns, this
    /// machine's clock), so a caller can start something else (the server
    /// host's sampler) at the same instant.
    pub fn load_at(
        &mut self,
        spec: &LoadSpec,
        auto_threads: bool,
        start_local: u64,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<FleetRun, RemoteError> {
        let parts = split(spec, self.links.len())?;
        let bound = match spec.stop {
            Stop::Duration(d) => d + Duration::from_secs(60),
            // A request count has no length of its own; lost hosts are
            // still noticed by ssh's keepalive within seconds.
            Stop::Requests(_) => Duration::from_secs(6 * 3600),
        };
        let deadline = Self::deadline(start_local, spec.warmup + spec.timeout + bound);
        let mut bodies = Vec::with_capacity(parts.len());
        for (l, part) in self.links.iter().zip(parts) {
            bodies.push(Request::Load {
                spec: Box::new(part),
                auto_threads,
                start_unix_ns: l.offset.to_host_ns(start_local),
            });
        }
        let replies = self.ask(bodies, deadline, interrupted)?;
        let run = self.runs(replies)?;
        self.observe_start(&run, start_local, spec.warmup);
        Ok(run)
    }

    /// Opens `spec`'s connections, split over every host as [`Fleet::load`]
    /// splits a load, and keeps them under `key` for [`Fleet::window_at`].
    /// When a host cannot, what the others opened is closed again.
    pub fn open(
        &mut self,
        key: &str,
        spec: &LoadSpec,
        auto_threads: bool,
    ) -> Result<(), RemoteError> {
        let parts = split(spec, self.links.len())?;
        // Each connection either opens or fails within the connect timeout.
        let deadline = Instant::now() + spec.timeout + Duration::from_secs(60);
        let bodies = parts
            .into_iter()
            .map(|part| Request::Open {
                key: key.to_string(),
                spec: Box::new(part),
                auto_threads,
            })
            .collect();
        let replies = self.ask(bodies, deadline, &|| false)?;
        for (k, reply) in replies.iter().enumerate() {
            if !matches!(reply, Reply::Opened) {
                let e = self.links[k].unexpected(reply);
                let _ = self.shut(key);
                return Err(e);
            }
        }
        Ok(())
    }

    /// One window over the connections every host keeps under `key`:
    /// `warmup` uncounted, then `seconds` counted, from `start_local`
    /// (Unix ns, this machine's clock); merged as [`Fleet::load_at`]'s.
    pub fn window_at(
        &mut self,
        key: &str,
        warmup: Duration,
        seconds: Duration,
        timeout: Duration,
        start_local: u64,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<FleetRun, RemoteError> {
        let deadline = Self::deadline(
            start_local,
            warmup + timeout + seconds + Duration::from_secs(60),
        );
        let bodies = self
            .links
            .iter()
            .map(|l| Request::Window {
                key: key.to_string(),
                warmup_s: warmup.as_secs_f64(),
                seconds: seconds.as_secs_f64(),
                start_unix_ns: l.offset.to_host_ns(start_local),
            })
            .collect();
        let replies = self.ask(bodies, deadline, interrupted)?;
        let run = self.runs(replies)?;
        self.observe_start(&run, start_local, warmup);
        Ok(run)
    }

    /// Closes the connections every host keeps under `key`.
    pub fn shut(&mut self, key: &str) -> Result<(), RemoteError> {
        let bodies = self
            .links
            .iter()
            .map(|_| Request::Shut {
                key: key.to_string(),
            })
            .collect();
        // Each host's threads get a second to close their connections.
        let deadline = Instant::now() + Duration::from_secs(30);
        for (k, reply) in self.ask(bodies, deadline, &|| false)?.iter().enumerate() {
            if !matches!(reply, Reply::Shut) {
                return Err(self.links[k].unexpected(reply));
            }
        }
        Ok(())
    }

    /// When a request starting at `start_local` and lasting at most `bound`
    /// is given up, on this machine's monotonic clock.
    pub(crate) fn deadline(start_local: u64, bound: Duration) -> Instant {
        let lead = Duration::from_nanos(start_local.saturating_sub(crate::agent::unix_ns()));
        Instant::now() + lead + bound
    }

    /// Sleeps until any host's line arrives after the look that read the
    /// bell at `seen`, for [`DOZE`] at most and never past `deadline`;
    /// returns the bell's count for the next look.
    pub(crate) fn doze(&self, seen: u64, deadline: Instant) -> u64 {
        let limit = DOZE.min(deadline.saturating_duration_since(Instant::now()));
        self.bell.wait_past(seen, limit)
    }

    /// Sends `bodies[k]` to host `k` and waits for every reply, in host
    /// order. `interrupted` is polled while the hosts work; when it turns
    /// true every host is told to stop and the replies are still awaited.
    fn ask(
        &mut self,
        bodies: Vec<Request>,
        deadline: Instant,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Vec<Reply>, RemoteError> {
        let all: Vec<usize> = (0..self.links.len()).collect();
        self.ask_hosts(&all, bodies, deadline, interrupted)
    }

    /// [`Fleet::ask`] of the hosts numbered `hosts` alone, `bodies[i]` to
    /// host `hosts[i]`; replies in that order.
    pub(crate) fn ask_hosts(
        &mut self,
        hosts: &[usize],
        bodies: Vec<Request>,
        deadline: Instant,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Vec<Reply>, RemoteError> {
        let mut ids = Vec::with_capacity(bodies.len());
        for (&k, body) in hosts.iter().zip(bodies) {
            match self.links[k].send(body) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    self.stop_all();
                    return Err(e);
                }
            }
        }
        // Every host is watched at once, so one lost mid-run is noticed
        // when its transport ends, not after the others finish; between
        // looks the coordinator sleeps until any host's line arrives.
        let mut replies: Vec<Option<Reply>> = vec![None; ids.len()];
        let mut stopped = false;
        let mut seen = self.bell.rung();
        while replies.iter().any(Option::is_none) {
            if !stopped && interrupted() {
                stopped = true;
                self.stop_all();
            }
            if Instant::now() > deadline {
                let i = replies.iter().position(Option::is_none).unwrap_or(0);
                let host = self.links[hosts[i]].place.to_string();
                self.stop_all();
                return Err(RemoteError::Timeout { host });
            }
            for i in 0..ids.len() {
                if replies[i].is_some() {
                    continue;
                }
                match self.links[hosts[i]].poll(ids[i]) {
                    Ok(Some(r)) => replies[i] = Some(r),
                    Ok(None) => {}
                    Err(e) => {
                        self.stop_all();
                        return Err(e);
                    }
                }
            }
            if replies.iter().any(Option::is_none) {
                seen = self.doze(seen, deadline);
            }
        }
        Ok(replies.into_iter().flatten().collect())
    }

    /// Every host's load reply, on this machine's clock, and their merge.
    pub(crate) fn runs(&mut self, replies: Vec<Reply>) -> Result<FleetRun, RemoteError> {
        let all: Vec<usize> = (0..replies.len()).collect();
        self.runs_of(&all, replies)
    }

    /// [`Fleet::runs`] of the hosts numbered `of`, `replies[i]` from host
    /// `of[i]`.
    pub(crate) fn runs_of(
        &mut self,
        of: &[usize],
        replies: Vec<Reply>,
    ) -> Result<FleetRun, RemoteError> {
        let mut hosts = Vec::with_capacity(replies.len());
        for (&k, reply) in of.iter().zip(replies) {
            let l = &self.links[k];
            match reply {
                Reply::Load {
                    result: mut r,
                    mut ports,
                    tcp,
                } => {
                    r.started_unix_s = l.offset.to_local_s(r.started_unix_s);
                    for s in &mut r.timeline {
                        s.t_unix = l.offset.to_local_s(s.t_unix);
                    }
                    ports.host = Some(l.place.to_string());
                    hosts.push(HostRun {
                        place: l.place.clone(),
                        offset: l.offset,
                        result: *r,
                        ports,
                        tcp,
                    });
                }
                other => {
                    let e = l.unexpected(&other);
                    self.stop_all();
                    return Err(e);
                }
            }
        }
        let results: Vec<LoadResult> = hosts.iter().map(|h| h.result.clone()).collect();
        let merged = LoadResult::combine(&results).expect("at least one host");
        let starts = hosts.iter().map(|h| h.result.started_unix_s);
        let skew =
            starts.clone().fold(f64::NEG_INFINITY, f64::max) - starts.fold(f64::INFINITY, f64::min);
        Ok(FleetRun {
            merged,
            hosts,
            start_skew_s: skew.max(0.0),
        })
    }

    /// Asks every host to stop its load; replies are collected by the
    /// waits already under way or dropped with the link.
    pub(crate) fn stop_all(&mut self) {
        for l in &mut self.links {
            let _ = l.send(Request::Stop);
        }
    }

    /// Paths from each host to `addr`, `samples` connects each.
    pub fn paths_sampled(
        &mut self,
        addr: std::net::SocketAddr,
        samples: u32,
    ) -> Vec<Result<crate::protocol::PathFacts, RemoteError>> {
        self.links
            .iter_mut()
            .map(
                |l| match l.call(Request::Path { addr, samples }, Duration::from_secs(60)) {
                    Ok(Reply::Path(p)) => Ok(p),
                    Ok(other) => Err(l.unexpected(&other)),
                    Err(e) => Err(e),
                },
            )
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let places: Vec<Place> = self.links.drain(..).map(|l| l.place.clone()).collect();
        for p in places.iter().filter(|p| !p.is_local()) {
            self.transport.close_master(p, self.control.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_engine::Target;

    fn spec(connections: usize, stop: Stop, rate: Option<f64>) -> LoadSpec {
        let mut s = LoadSpec::new(vec![Target {
            addr: "127.0.0.1:80".parse().unwrap(),
            host_header: "x".into(),
            path: "/".into(),
            url: "http://x/".into(),
            method: None,
            body: None,
            expect_body: None,
        }]);
        s.connections = connections;
        s.stop = stop;
        s.rate = rate;
        s
    }

    #[test]
    fn connections_rate_and_requests_split_exactly() {
        let parts = split(&spec(10, Stop::Requests(1001), Some(3000.0)), 3).unwrap();
        let conns: Vec<usize> = parts.iter().map(|p| p.connections).collect();
        assert_eq!(conns, [4, 3, 3]);
        let reqs: Vec<u64> = parts
            .iter()
            .map(|p| match p.stop {
                Stop::Requests(n) => n,
                _ => 0,
            })
            .collect();
        assert_eq!(reqs.iter().sum::<u64>(), 1001);
        assert_eq!(reqs, [401, 300, 300]);
        let rates: Vec<f64> = parts.iter().map(|p| p.rate.unwrap()).collect();
        assert_eq!(rates, [1200.0, 900.0, 900.0]);
        assert_eq!(parts[0].seed + 2, parts[2].seed);
    }

    #[test]
    fn users_are_spread_whole_with_their_connections_and_arrivals() {
        use throng_engine::users::{Arrival, Page, Script, Spacing, Think, Users};
        // 5 users of 6 connections each, arriving at 50 a second.
        let mut s = spec(30, Stop::Requests(7), None);
        s.users = Some(Users {
            scripts: vec![Script {
                pages: vec![Page {
                    request: 0,
                    burst: vec![],
                    think: None,
                }],
            }],
            arrival: Arrival::Open {
                per_sec: 50.0,
                spacing: Spacing::Uniform,
            },
            conns_per_user: 6,
            think: Think::Fixed(std::time::Duration::ZERO),
        });
        let parts = split(&s, 2).unwrap();
        let conns: Vec<usize> = parts.iter().map(|p| p.connections).collect();
        assert_eq!(conns, [18, 12]);
        let sessions: Vec<u64> = parts
            .iter()
            .map(|p| match p.stop {
                Stop::Requests(n) => n,
                _ => 0,
            })
            .collect();
        assert_eq!(sessions, [4, 3]);
        let rates: Vec<f64> = parts
            .iter()
            .map(|p| match p.users.as_ref().unwrap().arrival {
                Arrival::Open { per_sec, .. } => per_sec,
                Arrival::Population => 0.0,
            })
            .collect();
        assert_eq!(rates, [30.0, 20.0]);
        // Fewer users than hosts.
        s.connections = 6;
        let e = split(&s, 2).unwrap_err().to_string();
        assert!(e.contains("1 user cannot be spread over 2 hosts"), "{e}");
    }

    #[test]
    fn fewer_connections_than_hosts_is_refused() {
        assert!(split(&spec(1, Stop::Requests(10), None), 2).is_err());
        assert!(split(&spec(2, Stop::Requests(10), None), 0).is_err());
    }
}
