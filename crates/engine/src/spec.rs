//! Typed, validated description of one load run.
//!
//! The CLI (or the lab) builds a [`LoadSpec`] once; the engine never parses
//! options itself, so every check on user input happens at the edge.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tls::TlsSpec;
use crate::users::{Users, UsersError};

/// One URL the load is spread over. Request bytes are serialised once per
/// target (see `request.rs`) and shared read-only by all threads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// Resolved address connected to.
    pub addr: SocketAddr,
    /// Value of the `Host` header (`host[:port]` as the user wrote it).
    pub host_header: String,
    /// Origin-form request target: path and query, e.g. `/index.html?x=1`.
    pub path: String,
    /// The URL as the user gave it, for messages and per-URL reports.
    pub url: String,
    /// This request's own method (a session's POST, say); `None`: the spec's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// This request's own body; `None`: the spec's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Vec<u8>>,
    /// The body every response must have, where it is known beforehand
    /// (the lab's files): its size and FNV-1a hash. `None`: the first
    /// response sets them, as for a foreign server. A server that answers
    /// the lab's check right and the load otherwise is caught only so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_body: Option<(u64, u64)>,
}

impl Target {
    /// Reached over TLS.
    pub fn is_tls(&self) -> bool {
        self.url.starts_with("https://")
    }

    /// `http://ADDR{path}`, named by its address (the `Host` header too):
    /// a server reached by address, as the lab's and the tests' are.
    pub fn http(addr: SocketAddr, path: &str) -> Target {
        Target::new(
            addr,
            addr.to_string(),
            path.to_string(),
            format!("http://{addr}{path}"),
        )
    }

    /// A target sent with the spec's method and body.
    pub fn new(addr: SocketAddr, host_header: String, path: String, url: String) -> Target {
        Target {
            addr,
            host_header,
            path,
            url,
            method: None,
            body: None,
            expect_body: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stop {
    /// Measure for this long after the warmup.
    Duration(Duration),
    /// Complete exactly this many requests (each ends as a response or an error).
    Requests(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Order {
    #[default]
    Sequential,
    Random,
}

/// Which statuses count as success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExpectStatus {
    /// 2xx and 3xx, as ab and wrk treat them.
    SuccessOrRedirect,
    /// Exactly these codes.
    Codes(Vec<u16>),
}

impl ExpectStatus {
    pub fn accepts(&self, status: u16) -> bool {
        match self {
            ExpectStatus::SuccessOrRedirect => (200..400).contains(&status),
            ExpectStatus::Codes(codes) => codes.contains(&status),
        }
    }
}

/// Serialisable so a coordinating throng can hand the same spec to the
/// agents on its client hosts, which run it unchanged.
/// The nap's default fraction of the latency: about 2 of 100 connections
/// held on the client against a saturated server, 1 without naps
/// (docs/performance.md).
pub const DEFAULT_NAP_DIVISOR: u64 = 128;

/// `throng load --http3`'s default: a QUIC turn (a recvmmsg, quinn's
/// handling of each datagram, its sends) costs several times a TCP
/// completion's, so a nap of 1/128 of the latency is shorter than a turn
/// and gathers nothing; 1/16 takes two to three responses a wake against
/// Caddy (docs/performance.md, HTTP/3). Its responses end at their
/// datagrams' receive stamps, so the nap is not in their latency.
pub const DEFAULT_NAP_DIVISOR_H3: u64 = 16;

/// The nap divisors a load may ask for: 2 naps up to half the latency,
/// which holds about half the connections; past 65,536 a nap is under a
/// microsecond against any server a network lies between, no nap at all.
pub const NAP_DIVISORS: std::ops::RangeInclusive<u64> = 2..=65_536;

fn default_nap_divisor() -> u64 {
    DEFAULT_NAP_DIVISOR
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSpec {
    pub targets: Vec<Target>,
    pub order: Order,
    /// Total connections, spread evenly over the threads.
    pub connections: usize,
    pub threads: usize,
    /// CPUs the worker threads are pinned to, round-robin. Empty: no pinning.
    pub cpus: Vec<usize>,
    pub stop: Stop,
    /// Open model: requests per second over all connections. `None`: closed model.
    pub rate: Option<f64>,
    /// Open model with a rate that changes, stage by stage; `rate` is
    /// then its mean. The run lasts the stages' length, with no warmup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<crate::ramp::Ramp>,
    /// Open model kept in ticks of this length: the requests whose even
    /// spacing falls within a tick are sent together as it starts, and
    /// timed from there (tick.rs). `None`: each at its own instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<Duration>,
    /// `false`: `Connection: close` and a new connection per request.
    pub keep_alive: bool,
    /// Most requests one keep-alive connection carries, as a server's
    /// `keepalive_requests` would allow: the last is sent with `Connection:
    /// close` and the connection is then opened anew. `None`: no limit.
    /// `Some(1)` is `keep_alive = false`; without keep-alive this is moot,
    /// each connection carrying one request. With pipelining, the depth
    /// must not exceed it.
    #[serde(default)]
    pub requests_per_connection: Option<u64>,
    /// HTTP/1.1 pipelining depth (1 = no pipelining).
    pub pipeline: usize,
    /// Closed model: nap briefly before waiting for responses, so a client
    /// thread is woken once per batch rather than by every response (see
    /// `Pace::nap_ns`). `false`: block on epoll at once, as wrk does.
    pub coalesce: bool,
    /// A nap is at most this fraction, 1/`nap_divisor`, of the recent
    /// latency. Smaller spends less of the client's CPU per response and
    /// holds more connections on the client (its hold, in the result).
    #[serde(default = "default_nap_divisor")]
    pub nap_divisor: u64,
    /// Closed model: before a thread sleeps for an answer, it looks for
    /// one for up to this long, busy meanwhile, and takes no naps
    /// (spin.rs). A thread that sleeps is woken by the CPU that delivers
    /// the answer, the server's when both are on one machine, and on a
    /// virtual machine that wake is an inter-processor interrupt the
    /// server's CPU pays for (docs/methodology.md, "Spinning for
    /// answers"). `None`: a thread sleeps as soon as nothing is ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin: Option<Duration>,
    pub method: String,
    /// Extra headers, already split into name and value.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub warmup: Duration,
    /// A request with no complete response after this long is a timeout, and
    /// its connection is closed and reopened. Also bounds connect().
    pub timeout: Duration,
    pub expect_status: ExpectStatus,
    /// Expected body size for every URL; `None`: the probe's response per URL sets it.
    pub expect_size: Option<u64>,
    /// Hash each body and compare with the probe's hash for that URL.
    pub checksum: bool,
    /// Keep per-second counts for a timeline.
    pub timeline: bool,
    /// Seed for `Order::Random`, so runs are repeatable.
    pub seed: u64,
    /// Users who think, walking sessions, instead of connections that
    /// each send their next request as soon as they can. `connections`
    /// then bounds the users active at once (times their connections
    /// each), and `Stop::Requests` counts sessions, as httperf's
    /// `--num-sess` does.
    #[serde(default)]
    pub users: Option<Users>,
    /// Sessions whose population changes, stage by stage: how many users
    /// are active at each instant (k6's ramping VUs). A user over the
    /// target leaves when its session ends; one under it starts the
    /// instant the target reaches it. The run lasts the stages' length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_ramp: Option<crate::ramp::Ramp>,
    /// How `https://` targets are reached; `None` for `http://` ones.
    /// A spec's targets are all one or all the other.
    #[serde(default)]
    pub tls: Option<TlsSpec>,
    /// Which HTTP the connections speak, and HTTP/2's streams and windows.
    #[serde(default)]
    pub http: HttpSpec,
    /// Local addresses connections come from, in turn; empty: the
    /// kernel's choice. Past one address's ephemeral ports, a load of new
    /// connections needs several.
    #[serde(default)]
    pub sources: Vec<std::net::IpAddr>,
    /// Close connections with a reset (`SO_LINGER` 0), which leaves no
    /// TIME_WAIT on either end; a server then sees its clients abort.
    #[serde(default)]
    pub linger_zero: bool,
    /// How the threads do their socket I/O.
    #[serde(default)]
    pub io: IoBackend,
}

/// How a load's threads do their socket I/O. Either way the requests,
/// responses, timeouts and counts go through the same state machine; only
/// the syscalls differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoBackend {
    /// io_uring where it drives the load (cleartext HTTP/1.1, without
    /// users who think), epoll for the rest: on the machines measured in
    /// docs/performance.md the ring costs the client less in every mode
    /// it drives.
    #[default]
    Auto,
    /// Edge-triggered epoll and a read() and write() per exchange.
    Epoll,
    /// An io_uring per thread: multishot receives into a ring of provided
    /// buffers, sends, connects and closes queued and submitted together
    /// once per loop turn. Where the kernel refuses a ring, the threads
    /// fall back to epoll and the result says so.
    Uring,
}

/// Which HTTP a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1, over TLS or not.
    #[default]
    Http1,
    /// HTTP/2: over TLS, ALPN must choose `h2`; over cleartext, with
    /// prior knowledge (h2c, RFC 9113 §3.3).
    Http2,
    /// Over TLS, whatever ALPN settles on of the protocols offered (see
    /// [`TlsSpec::alpn`]); over cleartext, HTTP/1.1.
    Negotiate,
    /// HTTP/3 over QUIC v1, `https://` only: ALPN `h3`, TLS 1.3.
    Http3,
}

/// HTTP/3's congestion controller: quinn-proto's three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    #[default]
    Cubic,
    NewReno,
    Bbr,
}

/// HTTP/2's settings for a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpSpec {
    pub version: HttpVersion,
    /// Concurrent streams per HTTP/2 connection (h2load's `-m`); the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS caps it.
    pub streams: usize,
    /// The receive window the client gives each stream, and the whole
    /// connection: large, so that the server never waits on the client.
    pub stream_window: u32,
    pub conn_window: u32,
    /// HTTP/3: the congestion controller its connections use.
    #[serde(default)]
    pub congestion: Congestion,
    /// HTTP/3: the kernel's UDP segmentation offloads (GSO on send, GRO on
    /// receive) where it has them.
    #[serde(default = "yes")]
    pub udp_offload: bool,
}

fn yes() -> bool {
    true
}

/// h2load's default windows: 2^30 - 1 for streams and the connection.
pub const DEFAULT_WINDOW: u32 = (1 << 30) - 1;
/// Most concurrent streams per connection the engine accepts.
pub const MAX_STREAMS: usize = 4096;

impl Default for HttpSpec {
    fn default() -> Self {
        HttpSpec {
            version: HttpVersion::Http1,
            streams: 1,
            stream_window: DEFAULT_WINDOW,
            conn_window: DEFAULT_WINDOW,
            congestion: Congestion::Cubic,
            udp_offload: true,
        }
    }
}

impl HttpSpec {
    /// Whether connections to targets of this scheme may speak HTTP/2.
    pub fn may_h2(&self, tls: bool) -> bool {
        match self.version {
            HttpVersion::Http1 => false,
            HttpVersion::Http2 => true,
            HttpVersion::Negotiate => tls,
            HttpVersion::Http3 => false,
        }
    }
}

impl LoadSpec {
    /// A closed-model, keep-alive GET spec with the defaults of `throng load`.
    pub fn new(targets: Vec<Target>) -> Self {
        LoadSpec {
            targets,
            order: Order::Sequential,
            connections: 10,
            threads: 1,
            cpus: Vec::new(),
            stop: Stop::Duration(Duration::from_secs(10)),
            rate: None,
            tick: None,
            keep_alive: true,
            requests_per_connection: None,
            pipeline: 1,
            coalesce: true,
            nap_divisor: DEFAULT_NAP_DIVISOR,
            spin: None,
            method: "GET".to_string(),
            headers: Vec::new(),
            body: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(3),
            expect_status: ExpectStatus::SuccessOrRedirect,
            expect_size: None,
            checksum: false,
            timeline: false,
            ramp: None,
            seed: 0x5eed,
            users: None,
            users_ramp: None,
            tls: None,
            http: HttpSpec::default(),
            sources: Vec::new(),
            linger_zero: false,
            io: IoBackend::Auto,
        }
    }

    /// Most requests a connection carries, whichever field says so: the
    /// driver treats `--close` as a limit of one, so both share one path.
    pub fn connection_limit(&self) -> Option<u64> {
        if self.keep_alive {
            self.requests_per_connection
        } else {
            Some(1)
        }
    }

    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// Whether a request to target `t` is idempotent (RFC 9110 §9.2.2):
    /// one a client may send again when its connection closed under it
    /// unanswered, since the server having served it once changes
    /// nothing. Methods are case-sensitive, so `get` is not `GET`.
    pub fn idempotent(&self, t: usize) -> bool {
        let m = self.targets.get(t).and_then(|t| t.method.as_deref());
        let m = m.unwrap_or(&self.method);
        matches!(m, "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE")
    }

    /// Whether client threads nap: only in the closed model, since the open
    /// model's sends follow a schedule that a nap would delay.
    pub fn naps(&self) -> bool {
        self.coalesce && self.rate.is_none() && self.users.is_none() && self.spin.is_none()
    }

    /// The longest a closed-model wait for an answer spins before it
    /// sleeps, in ns; 0 when it sleeps at once.
    pub(crate) fn spin_ns(&self) -> u64 {
        self.spin.map_or(0, |d| d.as_nanos() as u64)
    }
}

/// A spec the engine cannot run. Variants name the field, never an
/// option of any front end: the CLI and the lab word them for their users.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("no target to load")]
    NoTargets,
    #[error("{0}")]
    Ramp(&'static str),
    #[error("connections must be at least 1")]
    NoConnections,
    #[error("pipeline depth {0} is outside 1..={max}", max = MAX_PIPELINE)]
    Pipeline(usize),
    #[error("rate {0} is outside {min}..={max} requests per second", min = MIN_RATE, max = MAX_RATE)]
    Rate(f64),
    #[error("a rate schedule is per request and cannot be combined with pipelining")]
    RateWithPipeline,
    /// Ticks are a rate's schedule: without one there is nothing to tick.
    #[error("a schedule's tick needs a rate")]
    TickWithoutRate,
    #[error("a tick of {0:?} is outside {min:?}..={max:?}", min = MIN_TICK, max = MAX_TICK)]
    Tick(Duration),
    #[error("a spin of {0:?} is outside {min:?}..={max:?}", min = MIN_SPIN, max = MAX_SPIN)]
    Spin(Duration),
    /// A spin waits for the closed model's answers: the open model's
    /// waits end at its schedule's instants, and spin when those are
    /// nearer than a sleep costs (spin.rs), and users think.
    #[error("a spin for answers needs the closed model, with neither a rate nor users")]
    SpinWithoutClosedModel,
    #[error("a connection closed after each request cannot carry a pipeline")]
    CloseWithPipeline,
    #[error("requests per connection must be at least 1")]
    RequestsPerConnection,
    /// A connection would have to close with requests of the pipeline
    /// still unanswered on it.
    #[error("pipeline depth {pipeline} exceeds the {limit} requests a connection carries")]
    PipelineOverConnectionLimit { pipeline: usize, limit: u64 },
    #[error("the request count must be at least 1")]
    NoRequests,
    #[error("{requests} requests over {connections} connections leave some connections idle")]
    FewerRequestsThanConnections { requests: u64, connections: usize },
    #[error("the duration must be longer than 0")]
    ZeroDuration,
    #[error("threads must be at least 1")]
    NoThreads,
    #[error("the timeout must be longer than 0")]
    ZeroTimeout,
    #[error("{0:?} is not an HTTP method")]
    Method(String),
    #[error("header {0:?} has an invalid name")]
    HeaderName(String),
    #[error("header {0:?} has a control character (a line break, say) in its value")]
    HeaderValue(String),
    /// A field the request may carry once, given twice: a server answers
    /// 400, or takes either.
    #[error("header {0} is given more than once")]
    RepeatedHeader(String),
    /// A Host field with no value, where the URL names its authority
    /// (RFC 9112 §3.2: the field is then that authority, or another name
    /// of the server's); a server answers 400, and the load measures that.
    #[error("header Host has no value")]
    EmptyHost,
    /// A Content-Length that is not the body's: the server would wait for
    /// bytes that never come, or read the rest as the next request.
    #[error("header Content-Length: {given} is not the body's length, {body} bytes")]
    ContentLength { given: String, body: usize },
    /// The engine frames a body by its length; a body framed as chunked
    /// would have to be chunked, and the request sent as typed would not.
    #[error("header Transfer-Encoding cannot be given: the body is sent with its Content-Length")]
    TransferEncoding,
    /// A Connection field where the engine says when a connection
    /// closes: it would replace the `Connection: close` the server is
    /// told. Closing after each request it may be given if it says close;
    /// closing after `per_connection` requests, not at all.
    #[error("header {field:?} contradicts {}", match per_connection {
        Some(n) => format!("closing each connection after {n} requests"),
        None => "closing each connection after its request".into(),
    })]
    ConnectionField {
        field: String,
        per_connection: Option<u64>,
    },
    #[error("{0} is not an HTTP status")]
    Status(u16),
    #[error(transparent)]
    Users(#[from] UsersError),
    /// `https://` and `http://` targets in one spec: one connection
    /// carries any of them.
    #[error("https and http URLs cannot be mixed in one load")]
    MixedSchemes,
    /// `https://` targets without a TLS spec, or the other way round.
    #[error("https URLs need a TLS spec, and only they take one")]
    TlsWithoutHttps,
    #[error("{0}: not a name a TLS certificate can carry")]
    ServerName(String),
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error("{0} concurrent streams per connection is outside 1..={max}", max = MAX_STREAMS)]
    Streams(usize),
    /// More than one stream per connection where no connection can
    /// speak HTTP/2.
    #[error("concurrent streams need HTTP/2")]
    StreamsWithoutH2,
    /// HTTP/2 has no pipelining: streams take its place.
    #[error("HTTP/2 multiplexes streams and cannot be pipelined")]
    PipelineWithH2,
    #[error("an HTTP/2 window of {0} bytes is outside 65535..=2147483647")]
    Window(u32),
    /// HTTP/2 is asked over TLS, but ALPN is not offered `h2`, or
    /// HTTP/1.1 is asked and ALPN offers only `h2`.
    #[error("the protocols offered over ALPN ({0}) do not include the HTTP version asked for")]
    Alpn(String),
    /// A source address of another family than a target's.
    #[error("source address {from} cannot reach {target}")]
    SourceFamily {
        from: std::net::IpAddr,
        target: std::net::SocketAddr,
    },
    /// HTTP/3 was asked with something its loop does not do (yet).
    #[error("HTTP/3 cannot be combined with {0}")]
    H3Unsupported(&'static str),
    /// io_uring was asked for a load it does not drive yet.
    #[error("the io_uring backend does not drive {0} yet")]
    UringUnsupported(UringGap),
}

/// What the io_uring backend does not drive yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UringGap {
    Tls,
    Http2,
    Users,
    Http3,
}

impl std::fmt::Display for UringGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UringGap::Tls => "TLS",
            UringGap::Http2 => "HTTP/2",
            UringGap::Users => "users who think",
            UringGap::Http3 => "HTTP/3",
        })
    }
}

impl LoadSpec {
    /// What of this load the io_uring backend does not drive.
    pub(crate) fn uring_gap(&self) -> Option<UringGap> {
        if self.http.version == HttpVersion::Http3 {
            Some(UringGap::Http3)
        } else if self.tls.is_some() {
            Some(UringGap::Tls)
        } else if self.http.version == HttpVersion::Http2 {
            Some(UringGap::Http2)
        } else if self.users.is_some() {
            Some(UringGap::Users)
        } else {
            None
        }
    }

    /// The backend the threads start on, `Auto` resolved: the ring where
    /// it drives the load. (A kernel that refuses a ring still sends them
    /// to epoll; the result says which ran.)
    pub fn io_backend(&self) -> IoBackend {
        match self.io {
            IoBackend::Auto if self.uring_gap().is_none() => IoBackend::Uring,
            IoBackend::Auto => IoBackend::Epoll,
            b => b,
        }
    }

    pub(crate) fn validate_http(&self, tls: bool) -> Result<(), SpecError> {
        let h = &self.http;
        if h.streams == 0 || h.streams > MAX_STREAMS {
            return Err(SpecError::Streams(h.streams));
        }
        if h.version == HttpVersion::Http3 {
            return self.validate_h3(tls);
        }
        if h.streams > 1 && !h.may_h2(tls) {
            return Err(SpecError::StreamsWithoutH2);
        }
        // Where ALPN may choose HTTP/2, a pipeline would be dropped
        // without a word whenever it does.
        if h.may_h2(tls) && self.pipeline > 1 {
            return Err(SpecError::PipelineWithH2);
        }
        for w in [h.stream_window, h.conn_window] {
            if !(65_535..=(1 << 31) - 1).contains(&w) {
                return Err(SpecError::Window(w));
            }
        }
        if let Some(t) = &self.tls {
            let offers = |p: &str| t.alpn.iter().any(|a| a == p);
            let ok = match h.version {
                HttpVersion::Http1 => offers("http/1.1") || t.alpn.is_empty(),
                HttpVersion::Http2 => offers("h2"),
                HttpVersion::Negotiate => true,
                HttpVersion::Http3 => offers("h3"),
            };
            if !ok {
                return Err(SpecError::Alpn(t.alpn.join(",")));
            }
        }
        Ok(())
    }

    /// The fields that frame a request or its connection, where the
    /// user gave them: the engine sends them as given, so they must agree
    /// with what it does.
    pub(crate) fn validate_framing(&self) -> Result<(), SpecError> {
        let given = |name: &'static str| {
            self.headers
                .iter()
                .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim())
        };
        for once in ["Host", "Content-Length", "Connection", "Transfer-Encoding"] {
            if given(once).count() > 1 {
                return Err(SpecError::RepeatedHeader(once.into()));
            }
        }
        if given("Host").any(str::is_empty) {
            return Err(SpecError::EmptyHost);
        }
        if given("Transfer-Encoding").next().is_some() {
            return Err(SpecError::TransferEncoding);
        }
        if let Some(cl) = given("Content-Length").next() {
            // Each target may carry its own body (a session's requests).
            let bodies = self
                .targets
                .iter()
                .map(|t| t.body.as_ref().or(self.body.as_ref()).map_or(0, Vec::len));
            for body in bodies {
                if cl.parse::<usize>().ok() != Some(body) || !cl.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(SpecError::ContentLength {
                        given: cl.into(),
                        body,
                    });
                }
            }
        }
        if let Some(c) = given("Connection").next() {
            let close = c.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"));
            // Closing after each request, the field must say so; closing
            // after the last of several, it must not be given at all: it
            // would replace the close of the last, or close them all.
            let wrong = if self.keep_alive {
                self.requests_per_connection.is_some()
            } else {
                !close
            };
            if wrong {
                return Err(SpecError::ConnectionField {
                    field: format!("Connection: {c}"),
                    per_connection: self.requests_per_connection.filter(|_| self.keep_alive),
                });
            }
        }
        Ok(())
    }

    /// Requests a connection carries at once: its pipeline over HTTP/1.1,
    /// its streams over HTTP/2.
    pub fn depth(&self, h2: bool) -> usize {
        if h2 {
            self.http.streams
        } else {
            self.pipeline.max(1)
        }
    }
}

/// Deepest pipeline the engine accepts.
/// The open model's bounds, requests per second (see `validate`).
pub const MIN_RATE: f64 = 0.001;
pub const MAX_RATE: f64 = 1e9;
pub const MAX_PIPELINE: usize = 1024;
/// A tick shorter than a microsecond is the per-request schedule's own
/// precision; one longer than a second is no longer a rate, but a
/// second's requests at once.
pub const MIN_TICK: Duration = Duration::from_micros(1);
pub const MAX_TICK: Duration = Duration::from_secs(1);
/// A spin shorter than a microsecond is over before one look at the ring;
/// one longer than a millisecond keeps a thread busy between any two
/// answers a load brings.
pub const MIN_SPIN: Duration = Duration::from_micros(1);
pub const MAX_SPIN: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LoadSpec {
        LoadSpec::new(vec![Target::http("127.0.0.1:8080".parse().unwrap(), "/")])
    }

    #[test]
    fn auto_takes_the_ring_where_it_drives_the_load_and_epoll_elsewhere() {
        let mut s = spec();
        assert_eq!(s.io, IoBackend::Auto);
        assert_eq!(s.io_backend(), IoBackend::Uring);
        s.pipeline = 8;
        s.keep_alive = true;
        assert_eq!(s.io_backend(), IoBackend::Uring);
        s.http.version = HttpVersion::Http2;
        assert_eq!(s.io_backend(), IoBackend::Epoll);
        assert_eq!(s.validate(), Err(SpecError::PipelineWithH2));
        s.pipeline = 1;
        assert_eq!(s.validate(), Ok(()), "auto refuses nothing");
        s.io = IoBackend::Uring;
        assert_eq!(
            s.validate(),
            Err(SpecError::UringUnsupported(UringGap::Http2))
        );
        let mut s = spec();
        s.tls = Some(crate::tls::TlsSpec::default());
        assert_eq!(s.io_backend(), IoBackend::Epoll);
        s.io = IoBackend::Epoll;
        let mut s = spec();
        s.io = IoBackend::Epoll;
        assert_eq!(s.io_backend(), IoBackend::Epoll);
    }

    #[test]
    fn fields_that_frame_the_request_must_agree_with_it() {
        let with = |headers: &[(&str, &str)], f: &dyn Fn(&mut LoadSpec)| {
            let mut s = spec();
            s.headers = headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            f(&mut s);
            s.validate()
        };
        let keep = |_: &mut LoadSpec| {};
        let body = |s: &mut LoadSpec| s.body = Some(b"abc".to_vec());
        assert_eq!(with(&[("content-length", "3")], &body), Ok(()));
        assert_eq!(with(&[("Content-Length", "0")], &keep), Ok(()));
        for bad in ["4", "+3", " 3x", ""] {
            assert_eq!(
                with(&[("Content-Length", bad)], &body),
                Err(SpecError::ContentLength {
                    given: bad.trim().into(),
                    body: 3
                }),
                "{bad:?}"
            );
        }
        assert_eq!(
            with(&[("Transfer-Encoding", "chunked")], &body),
            Err(SpecError::TransferEncoding)
        );
        assert_eq!(
            with(&[("Host", "a"), ("HOST", "b")], &keep),
            Err(SpecError::RepeatedHeader("Host".into()))
        );
        for empty in ["", " ", "\t"] {
            assert_eq!(with(&[("host", empty)], &keep), Err(SpecError::EmptyHost));
        }
        assert_eq!(with(&[("Host", "www.example.com")], &keep), Ok(()));
        // wrk's close mode: keep-alive asked, the server told to close.
        assert_eq!(with(&[("Connection", "close")], &keep), Ok(()));
        let close = |s: &mut LoadSpec| s.keep_alive = false;
        assert_eq!(with(&[("Connection", "Upgrade, Close")], &close), Ok(()));
        assert_eq!(
            with(&[("Connection", "keep-alive")], &close),
            Err(SpecError::ConnectionField {
                field: "Connection: keep-alive".into(),
                per_connection: None
            })
        );
        let rpc = |s: &mut LoadSpec| s.requests_per_connection = Some(3);
        assert_eq!(
            with(&[("Connection", "close")], &rpc),
            Err(SpecError::ConnectionField {
                field: "Connection: close".into(),
                per_connection: Some(3)
            })
        );
    }

    #[test]
    fn requests_per_connection() {
        let mut s = spec();
        assert_eq!(s.requests_per_connection, None);
        assert_eq!(s.connection_limit(), None);
        s.requests_per_connection = Some(0);
        assert_eq!(s.validate(), Err(SpecError::RequestsPerConnection));
        s.requests_per_connection = Some(4);
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.connection_limit(), Some(4));
        // A pipeline as deep as the limit fills each connection exactly.
        s.pipeline = 4;
        assert_eq!(s.validate(), Ok(()));
        s.pipeline = 5;
        assert_eq!(
            s.validate(),
            Err(SpecError::PipelineOverConnectionLimit {
                pipeline: 5,
                limit: 4
            })
        );
        // Without keep-alive every connection carries one request.
        s.pipeline = 1;
        s.keep_alive = false;
        assert_eq!(s.connection_limit(), Some(1));
        assert_eq!(s.validate(), Ok(()));
    }
}
