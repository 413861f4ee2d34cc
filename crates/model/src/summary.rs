//! What a load run measured, in the shape of `throng load --json`
//! (documented in docs/json-schema.md; a test checks the two agree).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the JSON document. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Why a request failed. The engine indexes its counters by this enum on
/// the hot path (hence `index`); the names are the JSON keys and the stored
/// ones, so they never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// connect() answered with ECONNREFUSED.
    ConnectRefused,
    /// connect() did not complete within the timeout.
    ConnectTimeout,
    /// connect() found no free local address (EADDRNOTAVAIL): ephemeral
    /// ports exhausted, usually by TIME_WAIT in `--close` mode.
    AddrUnavailable,
    /// Any other connect() failure (unreachable network, ...).
    ConnectOther,
    /// ECONNRESET/EPIPE on a connection.
    Reset,
    /// Any other read() error.
    Read,
    /// Any other write() error.
    Write,
    /// No complete response within the timeout.
    Timeout,
    /// The response could not be parsed as HTTP/1.x.
    Parse,
    /// The server closed the connection before the response was complete.
    Closed,
    /// A complete response whose status was not expected.
    Status,
    /// A complete response whose body size differs from the expected one.
    SizeMismatch,
    /// A complete response whose body hash differs from the expected one.
    ChecksumMismatch,
    /// A response arrived while no request was waiting for one (a second
    /// response to one request, or bytes from an idle server). It answers
    /// no request, so it is counted apart from them; the connection is
    /// closed, since its byte stream can no longer be matched to requests.
    Unsolicited,
    /// The TLS handshake failed (an alert, a certificate refused, a bad
    /// record) or did not finish within the timeout.
    Tls,
    /// HTTP/2: the server reset the request's stream (RST_STREAM); the
    /// codes are counted in `http2.resets`.
    StreamReset,
    /// HTTP/2: the server broke the protocol (a frame out of order or on
    /// a stream it may not use, a malformed response), or turned a
    /// connection away with a GOAWAY before answering any of its
    /// requests (retrying those would loop as long as it does so).
    H2Protocol,
    /// HTTP/2: a frame longer than the client allows.
    H2FrameSize,
    /// HTTP/2: a header block that does not decode (HPACK).
    H2Compression,
    /// HTTP/2: the server sent more than the window the client gave it.
    H2FlowControl,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 20] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::AddrUnavailable,
        ErrorKind::ConnectOther,
        ErrorKind::Reset,
        ErrorKind::Read,
        ErrorKind::Write,
        ErrorKind::Timeout,
        ErrorKind::Parse,
        ErrorKind::Closed,
        ErrorKind::Status,
        ErrorKind::SizeMismatch,
        ErrorKind::ChecksumMismatch,
        ErrorKind::Unsolicited,
        ErrorKind::Tls,
        ErrorKind::StreamReset,
        ErrorKind::H2Protocol,
        ErrorKind::H2FrameSize,
        ErrorKind::H2Compression,
        ErrorKind::H2FlowControl,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::AddrUnavailable => "addr_unavailable",
            ErrorKind::ConnectOther => "connect_other",
            ErrorKind::Reset => "reset",
            ErrorKind::Read => "read",
            ErrorKind::Write => "write",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Parse => "parse",
            ErrorKind::Closed => "closed",
            ErrorKind::Status => "status",
            ErrorKind::SizeMismatch => "size_mismatch",
            ErrorKind::ChecksumMismatch => "checksum_mismatch",
            ErrorKind::Unsolicited => "unsolicited",
            ErrorKind::Tls => "tls",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::H2Protocol => "h2_protocol",
            ErrorKind::H2FrameSize => "h2_frame_size",
            ErrorKind::H2Compression => "h2_compression",
            ErrorKind::H2FlowControl => "h2_flow_control",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn parse(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Errors that come with a complete response: the request was answered,
    /// just not as expected. They count in `completed` and in `errors`.
    pub fn has_response(self) -> bool {
        matches!(
            self,
            ErrorKind::Status | ErrorKind::SizeMismatch | ErrorKind::ChecksumMismatch
        )
    }

    /// Errors that end a request with no response. With `completed` they
    /// account for every request: sent = completed + these + in flight.
    /// `Unsolicited` is not one: it counts a response that no request asked for.
    pub fn unanswered(self) -> bool {
        !self.has_response() && self != ErrorKind::Unsolicited
    }
}

/// How requests were paced. The serde names are the stored ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    /// Each connection sends when its last response is complete.
    #[default]
    Closed,
    /// `--rate`: sends on a schedule, whatever is in flight.
    Open,
}

/// The I/O backend the load threads ran on, as resolved for the run (an
/// `auto` asked for is one of these by then). The serde names are the
/// stored ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoBackend {
    Uring,
    Epoll,
    /// HTTP/3: the QUIC loop's own wait, `ppoll` on its UDP socket and
    /// timers, neither ring nor epoll.
    Ppoll,
}

/// Something the reader must know before believing a run's figures,
/// stored as a code with its figures (`{"code": "late_sends", "late": 5,
/// "sent": 200}`) and worded by whoever shows it, so the words can change
/// without touching what databases hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Warning {
    /// Threads saw different first responses for one URL, so each held the
    /// later responses to its own.
    ResponseChanged { url: String, sizes: Vec<u64> },
    /// Fewer connections than asked for could be opened.
    FewerConnections { established: u64, requested: u64 },
    /// Open model: sends that went out more than 1 ms late.
    LateSends { late: u64, sent: u64 },
    /// Open model: requests that fell due in the measured phase and were
    /// never sent.
    Unsent { unsent: u64, sent: u64 },
    /// io_uring would not be set up (the kernel's `reason`) and the load
    /// ran on epoll.
    UringUnavailable { reason: String },
    /// More load threads than CPUs to pin them to: they took turns.
    SharedCpus { threads: u64, cpus: u64 },
    /// A warning as a build stored it before warnings had codes: its words,
    /// kept as they were written.
    #[serde(untagged)]
    Worded(String),
}

/// Latency spectrum in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Connections {
    /// Connections asked for (-c).
    pub requested: u64,
    /// Connection slots that were connected at least once.
    pub established: u64,
    /// Connects after a slot's first one (server close, timeout, --close).
    pub reconnects: u64,
    /// Successful connects in the measured phase, per second.
    pub per_sec: f64,
    /// Time from connect() to writable, for connects in the measured phase.
    pub connect_time_us: Latency,
    /// A connection's life, from its connect's start to its close, for
    /// connections opened and closed in the measured phase (httperf's
    /// connection time). `None` in summaries stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_time_us: Option<Latency>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    pub user: f64,
    pub sys: f64,
    /// Seconds the load threads were runnable but waiting for a CPU
    /// (schedstat run delay): high when the client was starved.
    #[serde(default)]
    pub runqueue: f64,
    /// Seconds the load threads spun rather than slept, waiting for
    /// responses (`--spin`) or for a schedule's next instant closer than a
    /// sleep costs (`Summary::client_sleep`), by the clock: on a
    /// CPU of their own, part of `user` and `sys`, busy by choice rather
    /// than by the load's work (a spin the
    /// scheduler interrupted counts the interruption too, which
    /// `runqueue` says apart). Left out when 0, so a run without a spin
    /// reads and stores as it did before there was one.
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub spun: f64,
}

/// What a load thread's timed sleep cost it (`Summary::client_sleep`), the
/// largest of the threads'.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SleepCost {
    /// The thread's CPU time a sleep took, µs.
    pub cpu_us: f64,
    /// How long after its limit a sleep ended, µs: first the median of
    /// the measure's sleeps, then learnt from the schedule's own sleeps
    /// (the figure they had reached at the end).
    pub late_us: f64,
}

/// Waits spun rather than slept (`Summary::client_spins`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spins {
    pub waits: u64,
    /// Of `waits`, those a response ended before the spin's length or its
    /// instant.
    pub answered: u64,
}

/// Open-model (`--rate`) scheduling honesty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RateReport {
    /// Requests per second asked for.
    pub target: f64,
    /// Sends issued more than 1 ms after their intended time.
    pub late_sends: u64,
    /// Requests due in the measured phase that were never sent (every
    /// connection still busy); their latency is in no figure.
    #[serde(default)]
    pub unsent: u64,
    /// How late sends were, in microseconds (all sends, including on-time ones).
    pub lateness_us: Latency,
    /// The schedule's tick in microseconds, when it was kept in ticks (a
    /// send's intended time is then its tick's start); absent when each
    /// request was sent at its own instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_us: Option<u64>,
    /// `--stages`: the first second of the measured phase (from 0) that
    /// completed under 95% of the schedule's target for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturated_second: Option<u64>,
}

/// The warmup, reported apart and never mixed into the results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    pub duration_s: f64,
    pub completed: u64,
    pub errors: u64,
}

/// One second of the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// Start of the second, Unix time in seconds.
    pub t_unix: f64,
    pub completed: u64,
    pub errors: u64,
    pub bytes_read: u64,
    /// `--stages`: the requests the schedule made due in this second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// `--users-stages`: the users the stages held at the second's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_target: Option<u64>,
    /// `--users-stages`: the users active at the second's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_active: Option<u64>,
}

/// A server found listening on this machine, sampled as the lab samples
/// the servers it starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalServer {
    /// The command name of the first process holding the listener.
    pub name: String,
    /// The processes holding the listening socket and their descendants.
    pub pids: Vec<i32>,
    /// The CPUs those processes may run on, counted once; `None` when
    /// their affinity could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// Whether those CPUs include any the load's own threads ran on: the
    /// client and the server then took CPU from each other, and the
    /// figures measure both. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_cores: bool,
    /// Server CPU time per completed response, in µs; `None` when none
    /// completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_us_per_request: Option<f64>,
    /// What the processes used over the measured window.
    pub usage: crate::ServerUsage,
}

/// Everything `throng load --json` prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: u32,
    pub model: LoadModel,
    pub urls: u64,
    pub threads: u64,
    pub pipeline: u64,
    pub keep_alive: bool,
    /// Closed model: client threads napped briefly before waiting for
    /// responses (`--no-coalesce` turns it off). Latency is the kernel's
    /// receive time either way.
    #[serde(default)]
    pub coalesce: bool,
    /// The I/O backend the load threads ran on; `None` (and not written)
    /// for runs stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<IoBackend>,
    /// Unix time the measured phase started.
    pub started_unix_s: f64,
    /// Length of the measured phase.
    pub duration_s: f64,
    /// Responses received in the measured phase (including those counted as
    /// status, size or checksum errors).
    pub completed: u64,
    /// Requests sent in the measured phase.
    pub sent: u64,
    /// Of `sent`, requests that had reached the wire once on a connection
    /// that then closed unanswered without an error (see
    /// docs/json-schema.md): the server may have served both copies.
    #[serde(default)]
    pub resent: u64,
    pub requests_per_sec: f64,
    /// Bytes read from sockets in the measured phase (headers and bodies).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
    /// HTTP/1.x responses complete in the measured phase and their bytes
    /// that were not body (httperf's reply header size); `None` when none
    /// was, and in summaries stored before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_heads: Option<ReplyHeads>,
    pub mb_per_sec: f64,
    /// Service time from the intended send time in the open model (no
    /// coordinated omission), from the actual send time in the closed model.
    pub latency_us: Latency,
    /// Open model only: from the actual send time, for comparison.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub latency_uncorrected_us: Option<Latency>,
    /// From each request's actual send to its response's first byte.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_byte_us: Option<Latency>,
    /// Status code to count. JSON keys are strings ("200"), which a
    /// three-digit code orders the same way as its number.
    pub status: BTreeMap<u16, u64>,
    /// Every cause, zero or not, so the document's shape never changes.
    pub errors: BTreeMap<String, u64>,
    pub errors_total: u64,
    pub connections: Connections,
    /// Requests sent but not answered when the run ended.
    pub in_flight_at_end: u64,
    pub client_cpu_s: CpuTime,
    /// Naps the load threads took in the measured phase before waiting for
    /// responses (closed model with `coalesce`; see docs/methodology.md).
    #[serde(default)]
    pub client_naps: u64,
    /// The waits the load threads spun rather than slept, and those a
    /// response ended first: in the closed model with a spin (`--spin`),
    /// waits for a response, each spun before it sleeps; on io_uring with
    /// a schedule (`--rate`, `--stages`), waits for the schedule's next instant
    /// spun where a sleep costs more (`client_sleep`). None when no wait
    /// spun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_spins: Option<Spins>,
    /// What a timed sleep cost a load thread on this machine, measured as
    /// each settled (io_uring with a schedule only): a wait for the
    /// schedule's next instant shorter than its CPU and lateness together
    /// was spun, and a longer one slept to its lateness before the
    /// instant and spun the rest. None where it was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_sleep: Option<SleepCost>,
    /// Closed model: mean microseconds from a response to the next
    /// request that took its place on the connection (the client's own
    /// time: parsing, naps, batching), and the connections that were so
    /// held on the client on average over the measured phase, which the
    /// server therefore did not have (Little's law). None in the open
    /// model, for users, and in runs stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_hold_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_held_connections: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rate: Option<RateReport>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub warmup: Option<Warmup>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub timeline: Vec<TimelineRow>,
    /// Things the reader must know before believing the numbers, as
    /// codes with their figures; the front ends word them.
    pub warnings: Vec<Warning>,
    /// The run was stopped (a signal, the lab's supervisor) before its own
    /// end: the figures cover only the part that ran.
    #[serde(default)]
    pub interrupted: bool,
    /// When the load came from several hosts: each host's share, whose
    /// sums are the figures above. Empty for a load from one machine.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub per_host: Vec<HostShare>,
    /// A round from client hosts: how long the coordinator waited for it
    /// beyond its own warmup and counted time, milliseconds, from the
    /// slice's instant in its level's plan (without a plan, from when the
    /// round was asked, its start lead included) to every host's figures
    /// back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordination_ms: Option<f64>,
    /// A slice of a plan: where `coordination_ms` went, for the host
    /// whose figures came last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordination_parts: Option<CoordinationParts>,
    /// A round from client hosts run on its own, not from a plan: how
    /// long it waited for its start, milliseconds, from when it was asked
    /// to the latest host's start (the server host's sampling asked for,
    /// the start lead, that host's lateness), its warmup left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_wait_ms: Option<f64>,
    /// Users who think: their sessions, beside the per-request figures
    /// above (which count every request of every session).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sessions: Option<Sessions>,
    /// `https://` loads: the handshakes (docs/json-schema.md, `tls`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tls: Option<TlsReport>,
    /// Loads whose connections may speak HTTP/2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Report>,
    /// HTTP/3 loads: what their QUIC connections did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3Report>,
    /// `throng load` against an address of this machine: the processes
    /// holding the port's listening socket, and what they used over the
    /// measured window. Absent when none could be seen (a remote address,
    /// another user's processes, the load generator's own tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_server: Option<LocalServer>,
    /// The thresholds the run was judged against (`--threshold`, a
    /// study's `[thresholds]`), each with its figure. Empty when none
    /// were given, and in runs stored before they existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::ThresholdCheck>,
}

/// What a load's HTTP/2 connections did (docs/json-schema.md, `http2`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Http2Report {
    /// Connections that spoke HTTP/2, opened in the measured phase.
    pub connections: u64,
    /// Concurrent streams per connection asked for.
    pub streams: u64,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server sent.
    pub server_max_streams: Option<u32>,
    /// RST_STREAM and GOAWAY frames received, by error code name
    /// (`no_error`, `refused_stream`, ...).
    pub resets: BTreeMap<String, u64>,
    pub goaways: BTreeMap<String, u64>,
    /// Requests above a GOAWAY's last stream, sent again.
    pub retried: u64,
}

/// What a load's HTTP/3 connections did (docs/json-schema.md, `http3`).
/// Its packet and path figures are each connection's, taken when it
/// closed or when the run ended, warmup included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Http3Report {
    /// QUIC connections whose handshake finished.
    pub connections: u64,
    /// Concurrent streams per connection asked for.
    pub streams: u64,
    /// Most streams a connection could open at once, when the server's
    /// MAX_STREAMS held it below `streams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_streams: Option<u64>,
    /// The congestion controller, e.g. `cubic`.
    pub congestion: String,
    /// UDP datagrams sent and received, QUIC packets sent and declared lost.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    /// The path's smoothed RTT as QUIC estimated it, mean over the
    /// connections, and the least RTT any of them saw, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u64>,
    /// Connections closed by a QUIC transport error, by code name
    /// (`PROTOCOL_VIOLATION`, `crypto 0x128`, ...), from either end.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transport_errors: BTreeMap<String, u64>,
    /// HTTP/3 and QPACK errors by code name: a connection the server
    /// closed with one, or a response the client could not read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub h3_errors: BTreeMap<String, u64>,
    /// Request streams the server reset, by code name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stream_resets: BTreeMap<String, u64>,
    /// Connections lost to QUIC's idle timeout.
    #[serde(default)]
    pub idle_timeouts: u64,
    /// Handshakes that failed or did not finish within the timeout, and
    /// of those, servers that offered no QUIC version of ours.
    #[serde(default)]
    pub handshake_failures: u64,
    #[serde(default)]
    pub version_mismatches: u64,
    /// GOAWAY frames received, and requests above their stream id sent
    /// again on a fresh connection.
    #[serde(default)]
    pub goaways: u64,
    #[serde(default)]
    pub retried: u64,
    /// System calls that sent datagrams and that received them: with the
    /// kernel's offloads, one call carries several datagrams.
    #[serde(default)]
    pub send_calls: u64,
    #[serde(default)]
    pub receive_calls: u64,
    /// Whether the sockets used UDP segmentation on send (GSO) and
    /// coalescing on receive (GRO): the kernel had them and the load did
    /// not turn them off.
    #[serde(default)]
    pub gso: bool,
    #[serde(default)]
    pub gro: bool,
}

impl Http3Report {
    /// Another thread's or host's figures added in.
    pub fn add(&mut self, o: &Http3Report) {
        let rtt_n = |r: &Http3Report| r.rtt_us.map_or(0, |_| r.connections.max(1));
        self.rtt_us = match (self.rtt_us, o.rtt_us) {
            (Some(a), Some(b)) => {
                let (na, nb) = (rtt_n(self) as f64, rtt_n(o) as f64);
                Some((a * na + b * nb) / (na + nb))
            }
            (a, b) => a.or(b),
        };
        self.min_rtt_us = match (self.min_rtt_us, o.min_rtt_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.server_max_streams = match (self.server_max_streams, o.server_max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.congestion.is_empty() {
            self.congestion = o.congestion.clone();
        }
        self.connections += o.connections;
        self.datagrams_sent += o.datagrams_sent;
        self.datagrams_received += o.datagrams_received;
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.idle_timeouts += o.idle_timeouts;
        self.handshake_failures += o.handshake_failures;
        self.version_mismatches += o.version_mismatches;
        self.goaways += o.goaways;
        self.retried += o.retried;
        self.send_calls += o.send_calls;
        self.receive_calls += o.receive_calls;
        self.gso |= o.gso;
        self.gro |= o.gro;
        for (mine, theirs) in [
            (&mut self.transport_errors, &o.transport_errors),
            (&mut self.h3_errors, &o.h3_errors),
            (&mut self.stream_resets, &o.stream_resets),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
    }
}

/// What TLS was negotiated, and what its handshakes cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsReport {
    /// e.g. `TLSv1_3`; `None` when no handshake finished.
    pub version: Option<String>,
    pub cipher: Option<String>,
    pub alpn: Option<String>,
    /// Handshakes finished in the measured phase, and per second.
    pub handshakes: u64,
    pub handshakes_per_sec: f64,
    /// Of those, resumed from an earlier session.
    pub resumed: u64,
    /// From the TCP connect's end to the handshake's.
    pub handshake_us: Latency,
}

/// The heads of a load's HTTP/1.x replies: status line, headers, chunk
/// framing and interim responses, everything on the wire but the body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyHeads {
    pub replies: u64,
    pub bytes: u64,
}

/// What users walking sessions did (docs/json-schema.md, `sessions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sessions {
    /// Most users active at once the connections allow.
    pub users: u64,
    /// Open model: users arriving per second asked for.
    pub arrival_per_sec: Option<f64>,
    /// Flattened, so the counts keep their place among the JSON keys.
    #[serde(flatten)]
    pub counts: SessionCounts,
    pub sessions_per_sec: f64,
    /// Completed sessions, first send to last answer.
    pub duration_us: Latency,
    /// From a page's last answer to the next page's send.
    pub think_us: Latency,
    /// Users active at each whole second of the measured phase.
    pub active: Vec<u64>,
    pub active_max: u64,
    /// Sessions ended in the measured phase, completed or failed, by how
    /// many of their requests were answered as expected: `lengths[n]`
    /// sessions had n (httperf's session length histogram; the engine's
    /// last slot, 63, also counts longer ones). Empty in summaries stored
    /// before it was counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lengths: Vec<u64>,
}

/// What became of the sessions of the measured phase and of the users
/// arriving for them. The engine counts them, the summary stores them and
/// the report sums them over rounds, all in this one shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// Started in the measured phase.
    pub started: u64,
    /// Of those, ended with every request answered as expected.
    pub completed: u64,
    /// Ended early because a request failed, timed out or was answered
    /// wrongly: counted once, however many of its requests failed.
    pub failed: u64,
    /// Still under way when the run ended.
    pub unfinished: u64,
    /// Open model: arrivals that found every user slot taken.
    pub turned_away: u64,
    /// Open model: arrivals taken more than 1 ms after their time. 0 in
    /// summaries stored before it was counted.
    #[serde(default)]
    pub late_arrivals: u64,
}

impl SessionCounts {
    pub fn add(&mut self, o: &SessionCounts) {
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        self.unfinished += o.unfinished;
        self.turned_away += o.turned_away;
        self.late_arrivals += o.late_arrivals;
    }

    /// Every arriving user: those who started a session and those turned
    /// away.
    pub fn arrived(&self) -> u64 {
        self.started + self.turned_away
    }
}

impl<'a> std::iter::Sum<&'a SessionCounts> for SessionCounts {
    fn sum<I: Iterator<Item = &'a SessionCounts>>(it: I) -> Self {
        it.fold(SessionCounts::default(), |mut acc, x| {
            acc.add(x);
            acc
        })
    }
}

/// One client host's share of a load spread over hosts: enough to see
/// which host did what and whether one of them was the bottleneck, which
/// the merged CPU figures (an average over hosts) cannot show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostShare {
    /// `ssh://user@host:port` or `local`.
    pub host: String,
    pub threads: u64,
    pub duration_s: f64,
    pub completed: u64,
    pub errors_total: u64,
    pub requests_per_sec: f64,
    pub latency_us: Latency,
    pub client_cpu_s: CpuTime,
    /// The host's clock minus the coordinator's.
    pub clock_offset_ms: f64,
    /// Bytes the host read and wrote on its connections (headers and
    /// bodies), what its path to the server carried; 0 in shares stored
    /// before they were kept.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub bytes_read: u64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub bytes_written: u64,
    /// The TCP segments the host sent and sent again over its load (its
    /// network namespace's counters); `None` where not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<crate::TcpSegments>,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

impl Summary {
    pub fn error_count(&self, kind: ErrorKind) -> u64 {
        self.errors.get(kind.name()).copied().unwrap_or(0)
    }

    /// Every cause with its count, zero or not, in [`ErrorKind::ALL`] order.
    pub fn error_counts(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL.into_iter().map(|k| (k, self.error_count(k)))
    }

    /// Requests that ended, answered or not: `sent` less those in flight.
    pub fn requests_ended(&self) -> u64 {
        self.completed
            + self
                .error_counts()
                .filter(|(k, _)| k.unanswered())
                .map(|(_, n)| n)
                .sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_counts_keep_their_place_and_old_summaries_lack_late_arrivals() {
        let x = Sessions {
            users: 2,
            counts: SessionCounts {
                started: 5,
                completed: 3,
                failed: 1,
                unfinished: 1,
                turned_away: 0,
                late_arrivals: 0,
            },
            ..Default::default()
        };
        let text = serde_json::to_string(&x).unwrap();
        assert!(text.starts_with(
            r#"{"users":2,"arrival_per_sec":null,"started":5,"completed":3,"failed":1,"unfinished":1,"turned_away":0,"late_arrivals":0,"sessions_per_sec":0.0,"#
        ));
        let old = text.replace(r#""late_arrivals":0,"#, "");
        assert_eq!(serde_json::from_str::<Sessions>(&old).unwrap(), x);
    }

    #[test]
    fn session_counts_sum_field_by_field() {
        let one = SessionCounts {
            started: 4,
            completed: 2,
            failed: 1,
            unfinished: 1,
            turned_away: 6,
            late_arrivals: 1,
        };
        let sum: SessionCounts = [one, one, SessionCounts::default()].iter().sum();
        assert_eq!(
            sum,
            SessionCounts {
                started: 8,
                completed: 4,
                failed: 2,
                unfinished: 2,
                turned_away: 12,
                late_arrivals: 2,
            }
        );
        assert_eq!(sum.arrived(), 20);
    }

    #[test]
    fn http3_figures_add_exactly_and_the_rtt_is_weighted_by_connections() {
        let one = |connections: u64, rtt: Option<f64>, min: Option<u64>| Http3Report {
            connections,
            streams: 10,
            congestion: "cubic".into(),
            datagrams_sent: 100 * connections,
            packets_lost: connections,
            rtt_us: rtt,
            min_rtt_us: min,
            stream_resets: [("H3_REQUEST_REJECTED".to_string(), connections)].into(),
            retried: 2,
            ..Default::default()
        };
        let mut a = one(3, Some(100.0), Some(40));
        a.server_max_streams = Some(8);
        a.add(&one(1, Some(500.0), Some(30)));
        assert_eq!(a.connections, 4);
        assert_eq!(a.datagrams_sent, 400);
        assert_eq!(a.packets_lost, 4);
        // (3 × 100 + 1 × 500) / 4.
        assert_eq!(a.rtt_us, Some(200.0));
        assert_eq!(a.min_rtt_us, Some(30));
        assert_eq!(a.server_max_streams, Some(8));
        assert_eq!(a.stream_resets["H3_REQUEST_REJECTED"], 4);
        assert_eq!(a.retried, 4);
        // A part whose handshakes all failed brings no RTT.
        a.add(&one(0, None, None));
        assert_eq!((a.rtt_us, a.min_rtt_us), (Some(200.0), Some(30)));
        let text = serde_json::to_string(&Http3Report::default()).unwrap();
        assert!(
            !text.contains("rtt_us") && !text.contains("stream_resets"),
            "{text}"
        );
    }
}

/// Where a planned slice's coordination went, milliseconds, for the host
/// whose figures came last; the parts add up to `coordination_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CoordinationParts {
    /// The slice's start held past its instant for the slice before it to
    /// read what was still in flight (its drain, as at home): the last
    /// server's answers, carried into this slice's end. Absent in runs
    /// stored before it was split out, where `finish_ms` holds it.
    #[serde(default)]
    pub drain_ms: f64,
    /// The agent's slice ending after the plan's end, less `drain_ms`:
    /// its wake-up, the last responses, its threads' figures merged.
    pub finish_ms: f64,
    /// The agent handing the figures to the thread that sends them, with
    /// the ports it last read.
    pub ports_ms: f64,
    /// The figures' way here: encoded, written, through the transport's
    /// hops (ssh) into this side's reader.
    pub travel_ms: f64,
    /// This side's wait before reading them: its poll, and work of its own
    /// between slices.
    pub read_ms: f64,
}
