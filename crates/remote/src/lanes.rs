//! Loads from parts of a fleet at one instant: each lane's client hosts
//! load their own server (a duet apart), and every host's start is sent
//! in one go, for the same instant of this machine's clock, so the lanes'
//! loads are simultaneous as closely as the hosts' clocks are known.

use std::time::Duration;

use throng_engine::{LoadSpec, Stop};

use crate::clock::Offset;
use crate::fleet::{split, Fleet, FleetRun};
use crate::protocol::Request;
use crate::RemoteError;

/// One lane: the hosts (indices into the fleet) that run `spec` between
/// them, split as [`Fleet::load`] splits a load.
#[derive(Debug, Clone)]
pub struct Lane {
    pub hosts: Vec<usize>,
    pub spec: LoadSpec,
}

/// Each lane's hosts and their requests, in lane order: the lane's spec
/// split over its hosts, every start `start_local` (Unix ns, this
/// machine's clock) in the host's own clock by its offset in `offsets`.
/// A host in two lanes, or beyond `offsets`, is refused: one agent runs
/// one load at a time.
pub fn lane_requests(
    lanes: &[Lane],
    offsets: &[Offset],
    auto_threads: bool,
    start_local: u64,
) -> Result<Vec<(usize, Request)>, RemoteError> {
    let mut out = Vec::new();
    for lane in lanes {
        let parts = split(&lane.spec, lane.hosts.len())?;
        for (&k, part) in lane.hosts.iter().zip(parts) {
            let Some(offset) = offsets.get(k) else {
                return Err(RemoteError::Split(format!(
                    "no client host {} among {}",
                    k + 1,
                    offsets.len()
                )));
            };
            if out.iter().any(|&(h, _)| h == k) {
                return Err(RemoteError::Split(format!(
                    "client host {} is in two lanes",
                    k + 1
                )));
            }
            out.push((
                k,
                Request::Load {
                    spec: Box::new(part),
                    auto_threads,
                    start_unix_ns: offset.to_host_ns(start_local),
                },
            ));
        }
    }
    Ok(out)
}

impl Fleet {
    /// Runs every lane at once from `start_local` (Unix ns, this machine's
    /// clock): one run per lane, in lane order, each merged from its own
    /// hosts alone. Hosts in no lane run nothing.
    pub fn load_lanes(
        &mut self,
        lanes: &[Lane],
        auto_threads: bool,
        start_local: u64,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Vec<FleetRun>, RemoteError> {
        let offsets: Vec<Offset> = self.links.iter().map(|l| l.offset).collect();
        let (hosts, bodies): (Vec<usize>, Vec<Request>) =
            lane_requests(lanes, &offsets, auto_threads, start_local)?
                .into_iter()
                .unzip();
        let bound = lanes
            .iter()
            .map(|l| match l.spec.stop {
                Stop::Duration(d) => l.spec.warmup + l.spec.timeout + d + Duration::from_secs(60),
                // As for one load: lost hosts are noticed by ssh's keepalive.
                Stop::Requests(_) => Duration::from_secs(6 * 3600),
            })
            .max()
            .unwrap_or_default();
        let deadline = Fleet::deadline(start_local, bound);
        let mut replies = self
            .ask_hosts(&hosts, bodies, deadline, interrupted)?
            .into_iter();
        let mut runs = Vec::with_capacity(lanes.len());
        let mut late = Duration::ZERO;
        for lane in lanes {
            let mine: Vec<_> = replies.by_ref().take(lane.hosts.len()).collect();
            let run = self.runs_of(&lane.hosts, mine)?;
            late = late.max(run.late(start_local + lane.spec.warmup.as_nanos() as u64));
            runs.push(run);
        }
        // One start, however many lanes: its latest host is what counts.
        self.observe_late(late);
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_engine::Target;

    fn spec(addr: &str, connections: usize, stop: Stop) -> LoadSpec {
        let mut s = LoadSpec::new(vec![Target {
            addr: addr.parse().unwrap(),
            host_header: "x".into(),
            path: "/".into(),
            url: "http://x/".into(),
            method: None,
            body: None,
            expect_body: None,
        }]);
        s.connections = connections;
        s.stop = stop;
        s
    }

    fn offset(offset_ns: i64) -> Offset {
        Offset {
            offset_ns,
            uncertainty_ns: 20_000,
            rtt_ns: 40_000,
        }
    }

    #[test]
    fn both_lanes_start_at_one_instant_each_host_loading_its_own_lanes_server() {
        let a = spec("198.18.0.20:8080", 6, Stop::Requests(600));
        let b = spec("198.18.0.20:8081", 6, Stop::Requests(600));
        // Four client hosts, the first two for the first server; their
        // clocks run 5 ms behind, on time, 3 ms ahead and 1 ms ahead.
        let offsets = [
            offset(-5_000_000),
            offset(0),
            offset(3_000_000),
            offset(1_000_000),
        ];
        let lanes = [
            Lane {
                hosts: vec![0, 1],
                spec: a,
            },
            Lane {
                hosts: vec![2, 3],
                spec: b,
            },
        ];
        let start = 1_000_000_000_000u64;
        let got = lane_requests(&lanes, &offsets, true, start).unwrap();
        let seen: Vec<(usize, String, usize, u64, u64)> = got
            .iter()
            .map(|(k, r)| match r {
                Request::Load {
                    spec,
                    start_unix_ns,
                    ..
                } => {
                    let Stop::Requests(n) = spec.stop else {
                        panic!("{spec:?}")
                    };
                    (
                        *k,
                        spec.targets[0].addr.to_string(),
                        spec.connections,
                        n,
                        *start_unix_ns,
                    )
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            seen,
            [
                (0, "198.18.0.20:8080".into(), 3, 300, start - 5_000_000),
                (1, "198.18.0.20:8080".into(), 3, 300, start),
                (2, "198.18.0.20:8081".into(), 3, 300, start + 3_000_000),
                (3, "198.18.0.20:8081".into(), 3, 300, start + 1_000_000),
            ]
        );
    }

    #[test]
    fn a_host_in_two_lanes_or_none_known_is_refused() {
        let a = spec(
            "198.18.0.20:8080",
            2,
            Stop::Duration(Duration::from_secs(1)),
        );
        let lane = |hosts: Vec<usize>| Lane {
            hosts,
            spec: a.clone(),
        };
        let offsets = [offset(0), offset(0)];
        let e = lane_requests(&[lane(vec![0]), lane(vec![0])], &offsets, true, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("client host 1 is in two lanes"), "{e}");
        let e = lane_requests(&[lane(vec![0, 2])], &offsets, true, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no client host 3 among 2"), "{e}");
    }
}
