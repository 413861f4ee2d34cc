//! The one place the lab turns what it wants of a round into the engine's
//! [`LoadSpec`]: measured rounds, the warmup of a started server and the
//! max-users search all describe their load as a [`RoundLoad`] and meet a
//! server's port here. Defaults not named here are the engine's own
//! ([`LoadSpec::new`]), the same ones `throng load` starts from.

use std::time::Duration;

use throng_engine::{LoadSpec, Order, Stop, Target};

use crate::group::Group;
use crate::study::Study;

/// A round's load before it meets a server.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundLoad {
    pub concurrency: u32,
    /// Measured time, after the warmup.
    pub seconds: f64,
    pub warmup_s: f64,
    /// A request with no complete response by then is a timeout.
    pub timeout: Duration,
    /// Several URLs requested in random order (else in turn).
    pub random_order: bool,
    /// Closed-model naps before waiting (docs/methodology.md).
    pub naps: bool,
    /// Seed of the random order, so a round is repeatable.
    pub seed: u64,
    /// CPUs the client threads are pinned to, one thread each.
    pub client_cpus: Vec<usize>,
}

impl RoundLoad {
    /// A measured round of `study` in `group` at `concurrency`: the
    /// study's round length, the workload's timeout and order.
    pub fn measured(study: &Study, group: &Group, concurrency: u32, seed: u64) -> RoundLoad {
        RoundLoad {
            concurrency,
            seconds: study.round_s,
            warmup_s: study.round_warmup_s,
            timeout: group.workload.kind.request_timeout(),
            random_order: group.workload.kind.random_order(),
            naps: study.client_naps,
            seed,
            client_cpus: group.client_cpus.clone(),
        }
    }
}

/// The loopback URLs of a server on `port`.
pub fn targets(port: u16, paths: &[String]) -> Vec<Target> {
    let addr = throng_servers::loopback::addr(port);
    paths
        .iter()
        .map(|path| Target {
            addr,
            host_header: format!("127.0.0.1:{port}"),
            url: format!("http://127.0.0.1:{port}{path}"),
            path: path.clone(),
        })
        .collect()
}

/// The engine's spec for `load` against `targets`. Every lab round checks
/// every body against the first response (sizes and checksums), since a
/// server that answers wrongly must not look fast.
pub fn load_spec(targets: Vec<Target>, load: &RoundLoad) -> LoadSpec {
    let mut spec = LoadSpec::new(targets);
    let connections = load.concurrency.max(1) as usize;
    spec.connections = connections;
    spec.threads = load.client_cpus.len().clamp(1, connections);
    spec.cpus = load.client_cpus.clone();
    spec.stop = Stop::Duration(Duration::from_secs_f64(load.seconds));
    spec.warmup = Duration::from_secs_f64(load.warmup_s);
    spec.timeout = load.timeout;
    spec.order = if load.random_order {
        Order::Random
    } else {
        Order::Sequential
    };
    spec.checksum = true;
    spec.seed = load.seed;
    spec.coalesce = load.naps;
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_becomes_a_checked_spec_on_the_servers_port() {
        let load = RoundLoad {
            concurrency: 50,
            seconds: 1.5,
            warmup_s: 0.25,
            timeout: Duration::from_secs(5),
            random_order: true,
            naps: false,
            seed: 7,
            client_cpus: vec![1],
        };
        let spec = load_spec(targets(8080, &["/a".into(), "/b".into()]), &load);
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(
            (spec.connections, spec.threads, spec.cpus.clone()),
            (50, 1, vec![1])
        );
        assert_eq!(spec.stop, Stop::Duration(Duration::from_millis(1500)));
        assert_eq!(spec.warmup, Duration::from_millis(250));
        assert_eq!(
            (spec.order, spec.checksum, spec.seed),
            (Order::Random, true, 7)
        );
        assert!(!spec.coalesce);
        assert_eq!(spec.targets[1].url, "http://127.0.0.1:8080/b");
        assert_eq!(spec.targets[1].host_header, "127.0.0.1:8080");
        // Threads never outnumber connections.
        let two = RoundLoad {
            concurrency: 1,
            client_cpus: vec![0, 1],
            ..load
        };
        assert_eq!(load_spec(targets(1, &["/".into()]), &two).threads, 1);
    }
}
