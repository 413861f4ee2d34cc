//! The one place the lab turns what it wants of a round into the engine's
//! [`LoadSpec`]: measured rounds, the warmup of a started server and the
//! max-users search all describe their load as a [`RoundLoad`] and meet a
//! server's port here. Defaults not named here are the engine's own
//! ([`LoadSpec::new`]), the same ones `throng load` starts from, and so
//! are those of a [`RequestShape`] a study leaves unset.

use std::net::SocketAddr;
use std::time::Duration;

use throng_engine::{LoadSpec, Order, Stop, Target};
use throng_model::Summary;

use crate::workload::Workload;

/// Responses each connection should be able to complete in one round: a
/// round shorter than that measures transfers cut off by its end rather
/// than the server.
pub const RESPONSES_PER_CONNECTION: f64 = 3.0;

/// The longest round the lab makes when it lengthens one for slow
/// responses (docs/study-format.md, "Round length"). A study's own longer
/// `[rounds] seconds` is kept as it is.
pub const ROUND_CAP_S: f64 = 60.0;

/// How fast a server delivered a workload in a round: what it takes to
/// estimate how long one response lasts at another concurrency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Bytes read from the server per second (headers, bodies, and the
    /// part of transfers still under way when the round ended).
    pub bytes_per_s: f64,
    /// Body bytes of one response.
    pub bytes_per_response: f64,
}

impl Pace {
    /// The pace of one round: the bytes it read per second, and the mean
    /// body of its complete responses, or `known` (the workload's mean
    /// file size) when none completed. `None` when it read nothing.
    pub fn of(s: &Summary, known: Option<f64>) -> Option<Pace> {
        let bytes_per_s = s.mb_per_sec * 1e6;
        let bytes_per_response = if s.completed > 0 && s.body_bytes > 0 {
            s.body_bytes as f64 / s.completed as f64
        } else {
            known?
        };
        (bytes_per_s > 0.0 && bytes_per_response > 0.0).then_some(Pace {
            bytes_per_s,
            bytes_per_response,
        })
    }

    /// Seconds one response takes when `concurrency` connections share
    /// this bandwidth.
    pub fn response_s(&self, concurrency: u32) -> f64 {
        f64::from(concurrency.max(1)) * self.bytes_per_response / self.bytes_per_s
    }
}

/// How long a round at `concurrency` must be: the study's length, or
/// longer when `pace` says a response takes so long that a connection could
/// not complete [`RESPONSES_PER_CONNECTION`] of them: then that many
/// response times, in whole seconds, at most [`ROUND_CAP_S`].
pub fn round_seconds(study_s: f64, pace: Option<Pace>, concurrency: u32) -> f64 {
    let Some(p) = pace else {
        return study_s;
    };
    let raw = RESPONSES_PER_CONNECTION * p.response_s(concurrency);
    // Only a need beyond the study's own length lengthens a round (a
    // sub-second slice of quick responses stays as asked); then in whole
    // seconds, not fooled by a rounding error just above one.
    if raw.is_finite() && raw > study_s {
        (raw - 1e-6).ceil().min(ROUND_CAP_S).max(study_s)
    } else {
        study_s
    }
}

/// The mean body of a workload's responses, from its files; `None` when
/// it has none (its bodies are then learnt from complete responses).
pub fn known_response_bytes(w: &Workload) -> Option<f64> {
    (!w.files.is_empty()).then(|| w.total_bytes() as f64 / w.files.len() as f64)
}

/// The next length for a round at `concurrency` that ended before any
/// response: what the pace it measured asks for, and at least twice as
/// long as before; `None` when it already had [`ROUND_CAP_S`].
pub fn longer_round(tried_s: f64, pace: Option<Pace>, concurrency: u32) -> Option<f64> {
    if tried_s >= ROUND_CAP_S {
        return None;
    }
    Some(
        round_seconds(tried_s, pace, concurrency)
            .max((tried_s * 2.0).ceil())
            .min(ROUND_CAP_S),
    )
}

/// How each request of a round is made, as a study's `[load]` and
/// `[workload.NAME]` tables ask (docs/study-format.md, "Load"), with the
/// names and meanings of `throng load`'s options.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestShape {
    /// `false`: `Connection: close` and a new connection per request.
    pub keep_alive: bool,
    pub pipeline: usize,
    /// Concurrent streams per connection, for servers measured over
    /// HTTP/2 (`h2`, `h2c`); HTTP/1.1 servers carry one request at a time.
    pub streams: usize,
    /// Most requests one keep-alive connection carries; `None`: no limit.
    pub requests_per_connection: Option<u64>,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// Users who think, walking a session file's pages, instead of
    /// connections sending back to back: the level is then users.
    pub users: Option<UserShape>,
}

/// A study's `sessions` and the keys that shape its users.
#[derive(Debug, Clone, PartialEq)]
pub struct UserShape {
    /// Parsed once when the study is read; its requests are paths, aimed
    /// at each server in turn.
    pub file: std::sync::Arc<throng_load::sessions::SessionFile>,
    pub think: throng_engine::users::Think,
    pub arrival: throng_engine::users::Arrival,
    pub conns_per_user: usize,
}

impl UserShape {
    /// The session file's requests against the server at `addr`, and the
    /// scripts that name them. Paths were checked when the study was read,
    /// so nothing here can fail but a file over the compiler's caps, which
    /// the same check refused.
    pub fn at(&self, addr: SocketAddr) -> (Vec<Target>, Vec<throng_engine::users::Script>) {
        throng_load::sessions::compile(&self.file, |r| {
            Ok(Target::new(
                addr,
                addr.to_string(),
                r.target.clone(),
                format!("http://{addr}{}", r.target),
            ))
        })
        .unwrap_or_default()
    }
}

impl Default for RequestShape {
    /// The engine's defaults, so that a study without a `[load]` table
    /// loads servers as `throng load` does.
    fn default() -> Self {
        let d = LoadSpec::new(Vec::new());
        RequestShape {
            keep_alive: d.keep_alive,
            pipeline: d.pipeline,
            streams: d.http.streams,
            requests_per_connection: d.requests_per_connection,
            method: d.method,
            headers: d.headers,
            body: d.body,
            users: None,
        }
    }
}

/// The `seconds` of a round that ends at a request count: it is never
/// cut at a time, and the server's usage is sampled until it ends (this
/// long at most, which no round of a study comes near).
pub const COUNTED_ROUND_WATCH_S: f64 = 6.0 * 3600.0;

/// A round's load before it meets a server.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundLoad {
    pub concurrency: u32,
    /// Measured time, after the warmup; with `requests`, the longest the
    /// server's usage is sampled ([`COUNTED_ROUND_WATCH_S`]).
    pub seconds: f64,
    /// Complete exactly this many requests after the warmup (each ends as
    /// a response or an error) instead of measuring for `seconds`.
    pub requests: Option<u64>,
    pub warmup_s: f64,
    /// A request with no complete response by then is a timeout.
    pub timeout: Duration,
    /// Several URLs requested in random order (else in turn).
    pub random_order: bool,
    /// Closed-model naps before waiting (docs/methodology.md).
    pub naps: bool,
    /// A nap is at most 1/this of the recent latency.
    pub nap_divisor: u64,
    /// Closed model: a wait for a response spins this long before it
    /// sleeps, and takes no naps (`LoadSpec::spin`). Rounds of a rate or
    /// of users wait their own way and take none.
    pub spin: Option<Duration>,
    /// Open model: requests per second sent on a schedule over the
    /// connections, latency counted from each intended send. `None`: the
    /// closed model.
    pub rate: Option<f64>,
    /// With `rate`: the schedule kept in ticks of this length. `None`:
    /// each request at its own instant.
    pub tick: Option<Duration>,
    /// Seed of the random order, so a round is repeatable.
    pub seed: u64,
    /// CPUs the client threads are pinned to, one thread each.
    pub client_cpus: Vec<usize>,
    pub shape: RequestShape,
}

impl RoundLoad {
    /// The same load for `seconds`, whatever it was to end at: the warmup
    /// of a started server and the max-users search are timed.
    pub fn timed(self, seconds: f64) -> RoundLoad {
        RoundLoad {
            seconds,
            requests: None,
            ..self
        }
    }
}

/// The URLs of a server listening on `addr`.
pub fn targets(addr: SocketAddr, paths: &[String]) -> Vec<Target> {
    paths.iter().map(|path| Target::http(addr, path)).collect()
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
    spec.stop = match load.requests {
        Some(n) => Stop::Requests(n),
        None => Stop::Duration(Duration::from_secs_f64(load.seconds)),
    };
    spec.warmup = Duration::from_secs_f64(load.warmup_s);
    spec.timeout = load.timeout;
    let shape = &load.shape;
    spec.keep_alive = shape.keep_alive;
    spec.pipeline = shape.pipeline;
    spec.requests_per_connection = shape.requests_per_connection;
    spec.method = shape.method.clone();
    spec.headers = shape.headers.clone();
    spec.body = shape.body.clone();
    spec.order = if load.random_order {
        Order::Random
    } else {
        Order::Sequential
    };
    spec.checksum = true;
    spec.seed = load.seed;
    spec.coalesce = load.naps;
    spec.nap_divisor = load.nap_divisor;
    spec.rate = load.rate;
    spec.tick = load.rate.and(load.tick);
    if let Some(u) = &shape.users {
        let addr = spec.targets.first().map(|t| t.addr);
        if let Some(addr) = addr {
            let (targets, scripts) = u.at(addr);
            spec.targets = targets;
            spec.users = Some(throng_engine::users::Users {
                scripts,
                arrival: u.arrival,
                conns_per_user: u.conns_per_user,
                think: u.think,
            });
        }
        // The level counts users, each with its connections.
        spec.connections = connections.saturating_mul(u.conns_per_user.max(1));
    }
    if spec.rate.is_none() && spec.users.is_none() {
        spec.spin = load.spin;
    }
    spec
}

/// Seconds as a study writes them: "1 s", "0.25 s", "30 s".
pub(crate) fn secs(s: f64) -> String {
    format!("{s} s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_servers::loopback::addr;

    #[test]
    fn rounds_lengthen_with_the_time_a_response_takes() {
        // The 21 MB file at 220.2 MB/s: 0.1 s per response alone, 10 s when
        // 100 connections share the bandwidth.
        let pace = Pace {
            bytes_per_s: 220_200_960.0,
            bytes_per_response: 22_020_096.0,
        };
        assert_eq!(pace.response_s(1), 0.1);
        assert_eq!(pace.response_s(100), 10.0);
        assert_eq!(round_seconds(5.0, Some(pace), 1), 5.0);
        assert_eq!(round_seconds(5.0, Some(pace), 10), 5.0);
        assert_eq!(round_seconds(1.0, Some(pace), 10), 3.0);
        assert_eq!(round_seconds(1.0, Some(pace), 100), 30.0);
        assert_eq!(round_seconds(1.0, Some(pace), 1000), ROUND_CAP_S);
        // A study's own longer rounds stay as they are.
        assert_eq!(round_seconds(90.0, Some(pace), 1000), 90.0);
        assert_eq!(round_seconds(1.0, None, 1000), 1.0);
        // Sub-second slices of quick responses stay as asked: 7 bytes at
        // 50 MB/s and 200 connections is 28 µs each.
        let tiny = Pace {
            bytes_per_s: 50e6,
            bytes_per_response: 7.0,
        };
        assert_eq!(round_seconds(0.1, Some(tiny), 200), 0.1);
        // And when a response's need does pass a slice, whole seconds.
        assert_eq!(round_seconds(0.2, Some(pace), 1), 1.0);
        // A round that ended too soon: what its pace asks, at least double.
        assert_eq!(longer_round(1.0, Some(pace), 100), Some(30.0));
        assert_eq!(longer_round(1.0, Some(pace), 1), Some(2.0));
        assert_eq!(longer_round(1.0, None, 100), Some(2.0));
        assert_eq!(longer_round(40.0, None, 100), Some(ROUND_CAP_S));
        assert_eq!(longer_round(ROUND_CAP_S, Some(pace), 100), None);
    }

    #[test]
    fn a_pace_is_read_from_what_a_round_moved() {
        let s = Summary {
            mb_per_sec: 220.20096,
            completed: 20,
            body_bytes: 20 * 22_020_096,
            ..Summary::default()
        };
        let p = Pace::of(&s, None).unwrap();
        assert_eq!(p.bytes_per_response, 22_020_096.0);
        assert!((p.response_s(100) - 10.0).abs() < 1e-9);
        // Nothing completed: the workload's known size stands in.
        let cut = Summary {
            mb_per_sec: 220.20096,
            ..Summary::default()
        };
        assert_eq!(Pace::of(&cut, None), None);
        assert_eq!(
            Pace::of(&cut, Some(22_020_096.0))
                .unwrap()
                .bytes_per_response,
            22_020_096.0
        );
        assert_eq!(Pace::of(&Summary::default(), Some(7.0)), None);
    }

    #[test]
    fn a_round_becomes_a_checked_spec_on_the_servers_port() {
        let load = RoundLoad {
            concurrency: 50,
            seconds: 1.5,
            requests: None,
            warmup_s: 0.25,
            timeout: Duration::from_secs(5),
            random_order: true,
            naps: false,
            nap_divisor: throng_engine::DEFAULT_NAP_DIVISOR,
            spin: None,
            tick: None,
            rate: None,
            seed: 7,
            client_cpus: vec![1],
            shape: RequestShape::default(),
        };
        let spec = load_spec(targets(addr(8080), &["/a".into(), "/b".into()]), &load);
        assert_eq!(spec.validate(), Ok(()));
        // Unset, a round's requests are the engine's: keep-alive GETs, one
        // at a time, no limit per connection, nothing added.
        let engine = LoadSpec::new(Vec::new());
        assert_eq!(
            (spec.keep_alive, spec.pipeline, spec.requests_per_connection),
            (
                engine.keep_alive,
                engine.pipeline,
                engine.requests_per_connection
            )
        );
        assert_eq!(
            (&spec.method, &spec.headers, &spec.body),
            (&engine.method, &engine.headers, &engine.body)
        );
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
        assert_eq!(load_spec(targets(addr(1), &["/".into()]), &two).threads, 1);
    }

    #[test]
    fn a_rate_round_is_an_open_model_spec() {
        let load = RoundLoad {
            concurrency: 4,
            seconds: 0.5,
            requests: None,
            warmup_s: 0.0,
            timeout: Duration::from_secs(1),
            random_order: false,
            naps: true,
            nap_divisor: throng_engine::DEFAULT_NAP_DIVISOR,
            spin: None,
            tick: None,
            rate: Some(200.0),
            seed: 1,
            client_cpus: vec![1],
            shape: RequestShape::default(),
        };
        let spec = load_spec(targets(addr(8080), &["/".into()]), &load);
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!((spec.rate, spec.connections), (Some(200.0), 4));
        // Naps belong to the closed model only.
        assert!(!spec.naps());
        assert_eq!(load.timed(1.0).rate, Some(200.0));
    }

    #[test]
    fn a_counted_round_of_a_shaped_request_ends_at_its_count() {
        let load = RoundLoad {
            concurrency: 4,
            seconds: COUNTED_ROUND_WATCH_S,
            requests: Some(200),
            warmup_s: 0.0,
            timeout: Duration::from_millis(250),
            random_order: false,
            naps: true,
            nap_divisor: throng_engine::DEFAULT_NAP_DIVISOR,
            spin: None,
            tick: None,
            rate: None,
            seed: 1,
            client_cpus: vec![1],
            shape: RequestShape {
                keep_alive: true,
                pipeline: 4,
                streams: 1,
                requests_per_connection: Some(100),
                method: "POST".into(),
                headers: vec![("X-Run".into(), "7".into())],
                body: Some(b"a=1".to_vec()),
                users: None,
            },
        };
        let spec = load_spec(targets(addr(8080), &["/".into()]), &load);
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(spec.stop, Stop::Requests(200));
        assert_eq!(spec.timeout, Duration::from_millis(250));
        assert_eq!(
            (spec.keep_alive, spec.pipeline, spec.requests_per_connection),
            (true, 4, Some(100))
        );
        assert_eq!(spec.method, "POST");
        assert_eq!(spec.headers, [("X-Run".to_string(), "7".to_string())]);
        assert_eq!(spec.body.as_deref(), Some(&b"a=1"[..]));
        // The warmup of a started server and the max-users search are
        // timed, whatever the rounds are.
        let timed = load.timed(2.0);
        assert_eq!(timed.requests, None);
        assert_eq!(
            load_spec(targets(addr(8080), &["/".into()]), &timed).stop,
            Stop::Duration(Duration::from_secs(2))
        );
    }
}
