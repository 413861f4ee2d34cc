//! What a load run measured, as typed counts and histograms.
//!
//! Nothing here is worded for a person or shaped as a document: the lab
//! turns a [`LoadResult`] into the stored and printed summary at one place,
//! and the CLI words the [`Warning`]s and [`crate::EngineError`]s.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use throng_model::SessionCounts;

use crate::spec::IoBackend;
use std::collections::BTreeMap;
pub use throng_model::ErrorKind;

/// Requests answered and failed, per cause and per status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Responses received (including those counted as status, size or
    /// checksum errors).
    pub completed: u64,
    pub sent: u64,
    /// Bytes read from sockets (headers and bodies).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Body bytes of complete responses.
    pub body_bytes: u64,
    /// HTTP/1.x responses complete, and their bytes that were not body
    /// (status line, headers, chunk framing, interim responses): httperf's
    /// reply header size. 0 from agents that did not count them.
    #[serde(default)]
    pub head_replies: u64,
    #[serde(default)]
    pub head_bytes: u64,
    /// Successful connects.
    pub connects: u64,
    /// Requests on the wire of a connection that closed before answering
    /// them, through no fault counted (a response that said close or had
    /// to close it, an unreadable response ahead of them on a pipeline),
    /// sent again on a fresh connection: counted once in `sent`.
    #[serde(default)]
    pub resent: u64,
    /// Indexed by [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::COUNT],
    /// Status code and count, ascending, codes seen only.
    pub status: Vec<(u16, u64)>,
}

impl Counts {
    pub fn error(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()]
    }
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }
}

/// Open-model (`rate`) scheduling honesty.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RateOutcome {
    /// Requests per second asked for.
    pub target: f64,
    /// Sends issued more than 1 ms after their intended time.
    pub late_sends: u64,
    /// Requests whose intended time fell in the measured phase but that
    /// were never sent: their connection was still busy with earlier ones
    /// when the phase ended. Their latency (at least the time from their
    /// intended send to the end) is in no histogram.
    #[serde(default)]
    pub unsent: u64,
    /// How late every send was, in microseconds.
    #[serde(with = "crate::wire::histogram")]
    pub lateness: Histogram<u64>,
    /// The schedule's tick, in microseconds, when it was kept in ticks:
    /// a send's intended time is then its tick's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_us: Option<u64>,
}

/// The warmup, counted apart and never mixed into the results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WarmupCounts {
    pub duration_s: f64,
    pub completed: u64,
    pub errors: u64,
}

/// One second of the measured phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Start of the second, Unix time in seconds.
    pub t_unix: f64,
    pub completed: u64,
    pub errors: u64,
    pub bytes_read: u64,
}

/// Users who think: what their sessions did, beside the per-request
/// figures (which count every request of every session).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionOutcome {
    /// Most users active at once the connections allow.
    pub users: u64,
    /// Open model: users arriving per second asked for.
    pub arrival_per_sec: Option<f64>,
    /// Flattened, so a remote host's JSON keeps its keys where they were.
    #[serde(flatten)]
    pub counts: SessionCounts,
    /// Completed sessions, microseconds from first send to last answer.
    #[serde(with = "crate::wire::histogram")]
    pub duration: Histogram<u64>,
    /// Think time observed, microseconds from a page's last answer to the
    /// next page's send.
    #[serde(with = "crate::wire::histogram")]
    pub think: Histogram<u64>,
    /// Users active at each whole second of the measured phase.
    pub active: Vec<u64>,
    /// Most users active at once (summed over threads and hosts, each at
    /// its own peak: an upper bound).
    pub active_max: u64,
    /// Sessions ended in the measured phase, completed or failed, by how
    /// many of their requests were answered as expected (httperf's session
    /// length histogram); the last slot also counts longer ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lengths: Vec<u64>,
}

impl SessionOutcome {
    fn add(&mut self, o: &SessionOutcome) {
        self.users += o.users;
        self.arrival_per_sec = match (self.arrival_per_sec, o.arrival_per_sec) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.counts.add(&o.counts);
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.duration.add(&o.duration);
        let _ = self.think.add(&o.think);
        if self.active.len() < o.active.len() {
            self.active.resize(o.active.len(), 0);
        }
        for (a, b) in self.active.iter_mut().zip(&o.active) {
            *a += b;
        }
        self.active_max += o.active_max;
        if self.lengths.len() < o.lengths.len() {
            self.lengths.resize(o.lengths.len(), 0);
        }
        for (a, b) in self.lengths.iter_mut().zip(&o.lengths) {
            *a += b;
        }
    }

    /// The parts of one load (threads, or hosts) as one.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a SessionOutcome>) -> Option<SessionOutcome> {
        let mut it = parts.into_iter();
        let mut out = it.next()?.clone();
        for p in it {
            out.add(p);
        }
        Some(out)
    }
}

/// What the TLS handshakes of an `https://` load were.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TlsOutcome {
    /// As negotiated, e.g. `TLSv1_3`; `None` when no handshake finished.
    pub version: Option<String>,
    pub cipher: Option<String>,
    /// The protocol ALPN settled on, e.g. `http/1.1`.
    pub alpn: Option<String>,
    /// Handshakes finished in the measured phase.
    pub handshakes: u64,
    /// Of those, resumed from an earlier session.
    pub resumed: u64,
    /// Microseconds from the TCP connect to the end of the handshake.
    #[serde(with = "crate::wire::histogram")]
    pub handshake_time: Histogram<u64>,
}

/// Something the reader must know before believing the numbers, and
/// whether sends follow responses or a schedule: the model's own types,
/// so the figures a run names are the ones every summary stores. The
/// engine only names a condition; callers word it.
pub use throng_model::{LoadModel, Warning};

/// Everything one run measured. Serialisable, histograms included, so an
/// agent on a client host can return it whole and the coordinator merges
/// counts and histograms exactly (never percentiles).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadResult {
    pub model: LoadModel,
    pub urls: u64,
    pub threads: u64,
    pub pipeline: u64,
    pub keep_alive: bool,
    /// Client threads napped before waiting (closed model only).
    pub coalesce: bool,
    /// The I/O backend the threads ran on: `Uring` or `Epoll` (also when
    /// the kernel refused a ring; a warning then says so).
    #[serde(default)]
    pub io: IoBackend,
    /// Unix time the measured phase started.
    pub started_unix_s: f64,
    /// Length of the measured phase.
    pub duration_s: f64,
    pub counts: Counts,
    /// Connections asked for.
    pub connections_requested: u64,
    /// Connection slots connected at least once.
    pub connections_established: u64,
    /// Connects after a slot's first one.
    pub reconnects: u64,
    /// Microseconds from connect() to writable, measured phase.
    #[serde(with = "crate::wire::histogram")]
    pub connect_time: Histogram<u64>,
    /// Microseconds from a connect's start to the connection's close, for
    /// connections opened and closed in the measured phase (httperf's
    /// connection time). `None` from agents that did not measure it.
    #[serde(default, with = "crate::wire::histogram_opt")]
    pub connection_time: Option<Histogram<u64>>,
    /// Requests sent but not answered when the run ended.
    pub in_flight_at_end: u64,
    /// CPU seconds of the load threads.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Seconds the load threads were runnable but waiting for a CPU.
    pub runqueue_s: f64,
    pub naps: u64,
    /// Waits spun rather than slept (for an answer, `LoadSpec::spin`, or
    /// on the ring for a schedule's next instant closer than a sleep
    /// costs), those an answer ended while they spun, and the nanoseconds
    /// spun, in the measured phase: part of the load threads' CPU time.
    #[serde(default)]
    pub spins: u64,
    #[serde(default)]
    pub spins_answered: u64,
    #[serde(default)]
    pub spun_ns: u64,
    /// What a timed sleep cost a load thread's CPU, measured as each
    /// settled, and how late one ended, learnt from its sleeps since, the
    /// largest of the threads' (the ring, with a schedule): their paced
    /// waits shorter than the two together were spun, and longer ones
    /// slept to the lateness before their instant and spun the rest. 0
    /// where not measured.
    #[serde(default)]
    pub sleep_cost_ns: u64,
    #[serde(default)]
    pub sleep_late_ns: u64,
    /// Closed model: nanoseconds that places answered in the measured
    /// phase stood empty on the client before new requests took them, in
    /// total, and how many places did (`Summary::client_hold_us`).
    #[serde(default)]
    pub hold_ns: u64,
    #[serde(default)]
    pub holds: u64,
    pub rate: Option<RateOutcome>,
    pub warmup: Option<WarmupCounts>,
    /// Filled when the spec asks for a timeline.
    pub timeline: Vec<Second>,
    pub warnings: Vec<Warning>,
    /// Microseconds; from the intended send time in the open model.
    #[serde(with = "crate::wire::histogram")]
    pub latency: Histogram<u64>,
    /// Open model only: from the actual send time.
    #[serde(with = "crate::wire::histogram_opt")]
    pub latency_uncorrected: Option<Histogram<u64>>,
    /// Microseconds from a request's send to the arrival of its response's
    /// first byte (over HTTP/2, of the read that brought its final
    /// headers): the server's time to answer, without the body's transfer.
    #[serde(default, with = "crate::wire::histogram_opt")]
    pub first_byte: Option<Histogram<u64>>,
    /// The run's [`crate::Control`] was stopped before the run's own end
    /// (its duration, or its requests): the figures cover only the part
    /// that ran.
    pub interrupted: bool,
    /// Users who think: their sessions.
    #[serde(default)]
    pub sessions: Option<SessionOutcome>,
    /// `https://` loads: their handshakes.
    #[serde(default)]
    pub tls: Option<TlsOutcome>,
    /// Loads whose connections may speak HTTP/2: what they did.
    #[serde(default)]
    pub http2: Option<H2Outcome>,
    /// HTTP/3 loads: what their QUIC connections did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<throng_model::Http3Report>,
}

/// What a load's HTTP/2 connections did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Outcome {
    /// Connections that spoke HTTP/2, opened in the measured phase.
    pub connections: u64,
    /// Concurrent streams per connection asked for.
    pub streams: u64,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server sent: when
    /// below `streams`, the server capped them.
    pub server_max_streams: Option<u32>,
    /// RST_STREAM and GOAWAY frames received, by error code name.
    pub resets: BTreeMap<String, u64>,
    pub goaways: BTreeMap<String, u64>,
    /// Requests above a GOAWAY's last stream, which the server never
    /// processed, sent again on a fresh connection.
    pub retried: u64,
}

impl H2Outcome {
    /// Another host's figures added in.
    pub fn add(&mut self, o: &H2Outcome) {
        self.connections += o.connections;
        self.retried += o.retried;
        self.server_max_streams = match (self.server_max_streams, o.server_max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (mine, theirs) in [
            (&mut self.resets, &o.resets),
            (&mut self.goaways, &o.goaways),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
    }
}

impl LoadResult {
    pub fn per_sec(&self, x: u64) -> f64 {
        if self.duration_s > 0.0 {
            x as f64 / self.duration_s
        } else {
            0.0
        }
    }
    pub fn requests_per_sec(&self) -> f64 {
        self.per_sec(self.counts.completed)
    }
}

/// What the drain after a session's window found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drain {
    /// Responses read after the window's end: counted in no window.
    pub responses: u64,
    /// Requests on the wire still unanswered at the drain's bound, whose
    /// connections were closed.
    pub abandoned: u64,
}

impl LoadResult {
    /// One result from the results of several hosts that ran parts of one
    /// load at the same time (their clocks already brought to one):
    /// counts and histograms are added, so the percentiles are those of
    /// every request together, never averages of percentiles. The span is
    /// from the first start to the last end.
    pub fn combine(parts: &[LoadResult]) -> Option<LoadResult> {
        let first = parts.first()?;
        let mut out = first.clone();
        let start = parts
            .iter()
            .map(|p| p.started_unix_s)
            .fold(f64::INFINITY, f64::min);
        let end = parts
            .iter()
            .map(|p| p.started_unix_s + p.duration_s)
            .fold(f64::NEG_INFINITY, f64::max);
        out.started_unix_s = start;
        out.duration_s = (end - start).max(0.0);
        let mut status = std::collections::BTreeMap::new();
        for (code, n) in &first.counts.status {
            *status.entry(*code).or_insert(0) += n;
        }
        let mut warnings: Vec<Warning> = first
            .warnings
            .iter()
            .filter(|w| {
                !matches!(
                    w,
                    Warning::FewerConnections { .. }
                        | Warning::LateSends { .. }
                        | Warning::Unsent { .. }
                )
            })
            .cloned()
            .collect();
        for p in &parts[1..] {
            let (c, o) = (&p.counts, &mut out.counts);
            o.completed += c.completed;
            o.sent += c.sent;
            o.bytes_read += c.bytes_read;
            o.bytes_written += c.bytes_written;
            o.body_bytes += c.body_bytes;
            o.head_replies += c.head_replies;
            o.head_bytes += c.head_bytes;
            o.connects += c.connects;
            o.resent += c.resent;
            for (a, b) in o.errors.iter_mut().zip(c.errors) {
                *a += b;
            }
            for (code, n) in &c.status {
                *status.entry(*code).or_insert(0) += n;
            }
            out.urls = out.urls.max(p.urls);
            out.threads += p.threads;
            out.connections_requested += p.connections_requested;
            out.connections_established += p.connections_established;
            out.reconnects += p.reconnects;
            out.in_flight_at_end += p.in_flight_at_end;
            out.cpu_user_s += p.cpu_user_s;
            out.cpu_sys_s += p.cpu_sys_s;
            out.runqueue_s += p.runqueue_s;
            out.naps += p.naps;
            out.spins += p.spins;
            out.spins_answered += p.spins_answered;
            out.spun_ns += p.spun_ns;
            out.sleep_cost_ns = out.sleep_cost_ns.max(p.sleep_cost_ns);
            out.sleep_late_ns = out.sleep_late_ns.max(p.sleep_late_ns);
            out.hold_ns += p.hold_ns;
            out.holds += p.holds;
            // A host that fell back to epoll makes the whole run's figure
            // partly epoll's: said as epoll, the host's warning says why.
            if p.io != out.io {
                out.io = IoBackend::Epoll;
            }
            out.interrupted |= p.interrupted;
            // Histograms of the engine share bounds, so adding cannot fail;
            // one from elsewhere that does not fit is a protocol error the
            // caller has already refused.
            let _ = out.latency.add(&p.latency);
            let _ = out.connect_time.add(&p.connect_time);
            out.connection_time = match (out.connection_time.take(), &p.connection_time) {
                (Some(mut a), Some(b)) => {
                    let _ = a.add(b);
                    Some(a)
                }
                // A part that did not measure it leaves the whole unknown.
                _ => None,
            };
            if let (Some(a), Some(b)) = (&mut out.first_byte, &p.first_byte) {
                let _ = a.add(b);
            }
            if let (Some(a), Some(b)) = (&mut out.latency_uncorrected, &p.latency_uncorrected) {
                let _ = a.add(b);
            }
            if let (Some(a), Some(b)) = (&mut out.rate, &p.rate) {
                a.target += b.target;
                a.late_sends += b.late_sends;
                a.unsent += b.unsent;
                let _ = a.lateness.add(&b.lateness);
            }
            if let (Some(a), Some(b)) = (&mut out.sessions, &p.sessions) {
                a.add(b);
            }
            if let (Some(a), Some(b)) = (&mut out.tls, &p.tls) {
                a.handshakes += b.handshakes;
                a.resumed += b.resumed;
                let _ = a.handshake_time.add(&b.handshake_time);
                a.version = a.version.take().or_else(|| b.version.clone());
                a.cipher = a.cipher.take().or_else(|| b.cipher.clone());
                a.alpn = a.alpn.take().or_else(|| b.alpn.clone());
            }
            if let (Some(a), Some(b)) = (&mut out.http2, &p.http2) {
                a.add(b);
            }
            if let (Some(a), Some(b)) = (&mut out.http3, &p.http3) {
                a.add(b);
            }
            if let (Some(a), Some(b)) = (&mut out.warmup, &p.warmup) {
                a.completed += b.completed;
                a.errors += b.errors;
                a.duration_s = a.duration_s.max(b.duration_s);
            }
            for w in &p.warnings {
                if !matches!(
                    w,
                    Warning::FewerConnections { .. }
                        | Warning::LateSends { .. }
                        | Warning::Unsent { .. }
                ) && !warnings.contains(w)
                {
                    warnings.push(w.clone());
                }
            }
        }
        out.counts.status = status.into_iter().collect();
        // Seconds are aligned by their own start, within the hosts' start
        // skew (a millisecond at most once clocks are checked).
        let mut timeline: Vec<Second> = Vec::new();
        for p in parts {
            for s in &p.timeline {
                let i = ((s.t_unix - start).max(0.0)).round() as usize;
                if timeline.len() <= i {
                    timeline.resize(i + 1, Second::default());
                }
                let t = &mut timeline[i];
                t.t_unix = start + i as f64;
                t.completed += s.completed;
                t.errors += s.errors;
                t.bytes_read += s.bytes_read;
            }
        }
        out.timeline = timeline;
        if out.connections_established < out.connections_requested {
            warnings.push(Warning::FewerConnections {
                established: out.connections_established,
                requested: out.connections_requested,
            });
        }
        if let Some(r) = &out.rate {
            if r.late_sends > 0 {
                warnings.push(Warning::LateSends {
                    late: r.late_sends,
                    sent: out.counts.sent,
                });
            }
            if r.unsent > 0 {
                warnings.push(Warning::Unsent {
                    unsent: r.unsent,
                    sent: out.counts.sent,
                });
            }
        }
        out.warnings = warnings;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    fn part(start: f64, latencies: &[u64], status: Vec<(u16, u64)>) -> LoadResult {
        let n = latencies.len() as u64;
        let mut errors = [0; ErrorKind::COUNT];
        errors[ErrorKind::Timeout.index()] = 1;
        LoadResult {
            model: LoadModel::Closed,
            urls: 1,
            threads: 2,
            pipeline: 1,
            keep_alive: true,
            coalesce: true,
            io: IoBackend::Epoll,
            started_unix_s: start,
            duration_s: 2.0,
            counts: Counts {
                completed: n,
                sent: n + 1,
                bytes_read: 100 * n,
                bytes_written: 50 * n,
                body_bytes: 60 * n,
                head_replies: n,
                head_bytes: 30 * n,
                connects: 4,
                resent: n + 2,
                errors,
                status,
            },
            connections_requested: 4,
            connections_established: 4,
            reconnects: 1,
            connect_time: hist(&[30, 40]),
            connection_time: Some(hist(&[50, 60])),
            in_flight_at_end: 0,
            cpu_user_s: 0.5,
            cpu_sys_s: 0.25,
            runqueue_s: 0.0,
            naps: 3,
            spins: 0,
            spins_answered: 0,
            spun_ns: 0,
            sleep_cost_ns: 0,
            sleep_late_ns: 0,
            hold_ns: 25_000,
            holds: 10,
            rate: None,
            warmup: None,
            timeline: vec![
                Second {
                    t_unix: start,
                    completed: n / 2,
                    errors: 0,
                    bytes_read: 0,
                },
                Second {
                    t_unix: start + 1.0,
                    completed: n - n / 2,
                    errors: 1,
                    bytes_read: 0,
                },
            ],
            warnings: vec![],
            latency: hist(latencies),
            latency_uncorrected: None,
            first_byte: None,
            interrupted: false,
            sessions: None,
            tls: None,
            http2: None,
            http3: None,
        }
    }

    #[test]
    fn combined_hosts_add_up_exactly_and_their_histogram_is_the_union() {
        let a = [100, 200, 300, 4_000, 5_000];
        let b = [150, 250, 90_000];
        let r = LoadResult::combine(&[
            part(1000.0, &a, vec![(200, 4), (404, 1)]),
            part(1000.0004, &b, vec![(200, 3)]),
        ])
        .unwrap();
        assert_eq!(r.counts.completed, 8);
        assert_eq!(r.counts.sent, 10);
        assert_eq!(r.counts.resent, 12);
        assert_eq!(r.counts.bytes_read, 800);
        assert_eq!(r.counts.error(ErrorKind::Timeout), 2);
        assert_eq!(r.counts.status, vec![(200, 7), (404, 1)]);
        assert_eq!(r.threads, 4);
        assert_eq!(r.connections_requested, 8);
        assert_eq!(r.reconnects, 2);
        assert_eq!((r.hold_ns, r.holds), (50_000, 20));
        assert_eq!(r.started_unix_s, 1000.0);
        assert!((r.duration_s - 2.0004).abs() < 1e-9);
        let union: Vec<u64> = a.iter().chain(&b).copied().collect();
        assert_eq!(r.latency, hist(&union));
        for q in [0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                r.latency.value_at_quantile(q),
                hist(&union).value_at_quantile(q)
            );
        }
        assert_eq!(r.timeline.len(), 2);
        assert_eq!(
            (
                r.timeline[0].completed,
                r.timeline[1].completed,
                r.timeline[1].errors
            ),
            (3, 5, 2)
        );
        assert!(r.warnings.is_empty());
        assert_eq!((r.counts.head_replies, r.counts.head_bytes), (8, 240));
        assert_eq!(r.connection_time, Some(hist(&[50, 60, 50, 60])));
        // A host that did not time its connections leaves the whole unknown.
        let mut old = part(1000.0, &b, vec![(200, 3)]);
        old.connection_time = None;
        let r = LoadResult::combine(&[part(1000.0, &a, vec![(200, 5)]), old]).unwrap();
        assert_eq!(r.connection_time, None);
    }

    #[test]
    fn a_result_crosses_the_wire_whole() {
        let r = part(5.0, &[1, 7, 1_000_000], vec![(200, 3)]);
        let text = serde_json::to_string(&r).unwrap();
        let back: LoadResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back.latency, r.latency);
        assert_eq!(back.connect_time, r.connect_time);
        assert_eq!(back.counts, r.counts);
        assert_eq!((back.hold_ns, back.holds), (25_000, 10));
        assert_eq!(back.timeline, r.timeline);
        assert_eq!(back.latency.max(), r.latency.max());
        assert_eq!(back.latency.len(), 3);
    }

    fn sessions(started: u64, late_arrivals: u64) -> SessionOutcome {
        SessionOutcome {
            users: 4,
            arrival_per_sec: Some(10.0),
            counts: SessionCounts {
                started,
                completed: started - 2,
                failed: 1,
                unfinished: 1,
                turned_away: 3,
                late_arrivals,
            },
            duration: hist(&[1_000, 2_000]),
            think: hist(&[500]),
            active: vec![2, 4],
            active_max: 4,
            lengths: Vec::new(),
        }
    }

    #[test]
    fn sessions_cross_the_wire_with_their_counts_among_their_keys() {
        let mut r = part(5.0, &[1, 7], vec![(200, 2)]);
        r.sessions = Some(sessions(20, 1));
        let text = serde_json::to_string(&r).unwrap();
        let keys: Vec<String> = serde_json::from_str::<serde_json::Value>(&text).unwrap()
            ["sessions"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        // No key added or lost; the text below checks their order.
        assert_eq!(keys.len(), 12);
        assert!(text.contains(
            r#""arrival_per_sec":10.0,"started":20,"completed":18,"failed":1,"unfinished":1,"turned_away":3,"late_arrivals":1,"duration":"#
        ));
        let back: LoadResult = serde_json::from_str(&text).unwrap();
        let x = back.sessions.unwrap();
        assert_eq!(x.counts, sessions(20, 1).counts);
        assert_eq!((x.duration, x.think), (hist(&[1_000, 2_000]), hist(&[500])));
        // A host older than late arrivals sends none.
        let old = text.replace(r#","late_arrivals":1"#, "");
        let back: LoadResult = serde_json::from_str(&old).unwrap();
        assert_eq!(back.sessions.unwrap().counts.late_arrivals, 0);
    }

    #[test]
    fn the_sessions_of_several_parts_add_their_counts() {
        let x = SessionOutcome::sum(&[sessions(20, 1), sessions(10, 0)]).unwrap();
        assert_eq!(
            x.counts,
            SessionCounts {
                started: 30,
                completed: 26,
                failed: 2,
                unfinished: 2,
                turned_away: 6,
                late_arrivals: 1,
            }
        );
        assert_eq!((x.users, x.arrival_per_sec), (8, Some(20.0)));
        assert_eq!((x.active, x.active_max), (vec![4, 8], 8));
        // Session lengths add slot by slot, the shorter list padded.
        let (mut one, mut two) = (sessions(3, 0), sessions(4, 0));
        one.lengths = vec![0, 3];
        two.lengths = vec![1, 1, 2];
        let x = SessionOutcome::sum(&[one, two]).unwrap();
        assert_eq!(x.lengths, [1, 4, 2]);
    }
}
