//! The engine's result becomes the stored and printed summary here, at one
//! place: `throng load --json`, a lab round and `throng load --save` all
//! hold the same document (docs/json-schema.md).

use std::collections::BTreeMap;

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use throng_engine::{IoBackend, LoadModel, LoadResult, Warning};
use throng_model::summary::SCHEMA_VERSION;
use throng_model::{
    Connections, CpuTime, ErrorKind, Latency, RateReport, Summary, TimelineRow, Warmup,
};

/// Percentiles of a latency histogram (microseconds).
pub fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        count: h.len(),
        min: h.min(),
        mean: h.mean(),
        stdev: h.stdev(),
        p50: h.value_at_quantile(0.50),
        p75: h.value_at_quantile(0.75),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        p9999: h.value_at_quantile(0.9999),
        max: h.max(),
    }
}

/// HdrHistogram's V2-deflate form, as rounds store their histograms.
pub fn serialize_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    // The serializer only fails on I/O into the Vec, which cannot fail.
    let _ = V2DeflateSerializer::new().serialize(h, &mut out);
    out
}

/// A warning in words for the reader of a summary. No option of any front
/// end is named: the same words are stored with lab rounds.
pub fn warning_text(w: &Warning) -> String {
    match w {
        Warning::ResponseChanged { url, sizes } => format!(
            "threads saw different first responses for {url} (body sizes {sizes:?}): the \
             response changed during the run, so size checks hold each thread to its own"
        ),
        Warning::FewerConnections {
            established,
            requested,
        } => format!(
            "only {established} of {requested} connections could be established: \
             the load was lighter than asked"
        ),
        Warning::LateSends { late, sent } => {
            let sent = (*sent).max(1);
            format!(
                "{late} of {sent} sends ({:.1}%) went out more than 1 ms after their intended \
                 time: latency includes that wait (no coordinated omission), but the client or \
                 server could not keep up with the schedule",
                *late as f64 * 100.0 / sent as f64
            )
        }
        Warning::Unsent { unsent, sent } => format!(
            "{unsent} requests fell due in the measured time but were never sent, beside the \
             {sent} sent: every connection was still busy with an earlier request, so their \
             latency (at least from their intended time to the end) is in no figure; use more \
             connections or a lower rate"
        ),
        Warning::UringUnavailable { reason } => {
            format!("io_uring could not be set up ({reason}): the load ran on epoll")
        }
        Warning::SharedCpus { threads, cpus } => format!(
            "{threads} load threads shared {cpus} CPU{}: they took turns, so their latency \
             and the client's CPU include waits for one another; one thread per CPU is the most \
             that helps",
            if *cpus == 1 { "" } else { "s" }
        ),
    }
}

/// The summary document of a run.
pub fn summarize(r: &LoadResult) -> Summary {
    let c = &r.counts;
    let open = r.model == LoadModel::Open;
    Summary {
        schema: SCHEMA_VERSION,
        model: if open {
            throng_model::LoadModel::Open
        } else {
            throng_model::LoadModel::Closed
        },
        urls: r.urls,
        threads: r.threads,
        pipeline: r.pipeline,
        keep_alive: r.keep_alive,
        coalesce: r.coalesce,
        io: Some(match r.io {
            IoBackend::Uring => throng_model::IoBackend::Uring,
            _ => throng_model::IoBackend::Epoll,
        }),
        started_unix_s: r.started_unix_s,
        duration_s: r.duration_s,
        completed: c.completed,
        sent: c.sent,
        resent: c.resent,
        requests_per_sec: r.per_sec(c.completed),
        bytes_read: c.bytes_read,
        bytes_written: c.bytes_written,
        body_bytes: c.body_bytes,
        mb_per_sec: r.per_sec(c.bytes_read) / 1e6,
        latency_us: latency(&r.latency),
        latency_uncorrected_us: r.latency_uncorrected.as_ref().map(latency),
        first_byte_us: r.first_byte.as_ref().map(latency),
        status: c
            .status
            .iter()
            .map(|(code, n)| (code.to_string(), *n))
            .collect(),
        errors: ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), c.error(*k)))
            .collect::<BTreeMap<_, _>>(),
        errors_total: c.errors_total(),
        connections: Connections {
            requested: r.connections_requested,
            established: r.connections_established,
            reconnects: r.reconnects,
            per_sec: r.per_sec(c.connects),
            connect_time_us: latency(&r.connect_time),
        },
        in_flight_at_end: r.in_flight_at_end,
        client_cpu_s: CpuTime {
            user: r.cpu_user_s,
            sys: r.cpu_sys_s,
            runqueue: r.runqueue_s,
        },
        client_naps: r.naps,
        client_hold_us: (r.holds > 0).then(|| r.hold_ns as f64 / r.holds as f64 / 1e3),
        client_held_connections: (r.holds > 0 && r.duration_s > 0.0)
            .then(|| r.hold_ns as f64 / (r.duration_s * 1e9)),
        rate: r.rate.as_ref().map(|rate| RateReport {
            target: rate.target,
            late_sends: rate.late_sends,
            unsent: rate.unsent,
            lateness_us: latency(&rate.lateness),
        }),
        warmup: r.warmup.map(|w| Warmup {
            duration_s: w.duration_s,
            completed: w.completed,
            errors: w.errors,
        }),
        timeline: r
            .timeline
            .iter()
            .map(|s| TimelineRow {
                t_unix: s.t_unix,
                completed: s.completed,
                errors: s.errors,
                bytes_read: s.bytes_read,
            })
            .collect(),
        warnings: r.warnings.iter().map(warning_text).collect(),
        interrupted: r.interrupted,
        per_host: Vec::new(),
        tls: r.tls.as_ref().map(|t| throng_model::TlsReport {
            version: t.version.clone(),
            cipher: t.cipher.clone(),
            alpn: t.alpn.clone(),
            handshakes: t.handshakes,
            handshakes_per_sec: r.per_sec(t.handshakes),
            resumed: t.resumed,
            handshake_us: latency(&t.handshake_time),
        }),
        http2: r.http2.as_ref().map(|h| throng_model::Http2Report {
            connections: h.connections,
            streams: h.streams,
            server_max_streams: h.server_max_streams,
            resets: h.resets.clone(),
            goaways: h.goaways.clone(),
            retried: h.retried,
        }),
        sessions: r.sessions.as_ref().map(|x| throng_model::Sessions {
            users: x.users,
            arrival_per_sec: x.arrival_per_sec,
            started: x.started,
            completed: x.completed,
            failed: x.failed,
            unfinished: x.unfinished,
            turned_away: x.turned_away,
            late_arrivals: x.late_arrivals,
            sessions_per_sec: r.per_sec(x.completed),
            duration_us: latency(&x.duration),
            think_us: latency(&x.think),
            active: x.active.clone(),
            active_max: x.active_max,
        }),
    }
}

/// One client host's part of a load spread over hosts.
pub struct HostLoad<'a> {
    /// The host as its place is written (`ssh://user@host`, `local`).
    pub host: String,
    pub result: &'a LoadResult,
    /// Its clock against this machine's.
    pub clock_offset_ms: f64,
}

/// The summary of a load spread over hosts: the merged figures, with each
/// host's share beside them, so a verdict can judge each client host on
/// its own.
pub fn summarize_spread(merged: &LoadResult, hosts: &[HostLoad]) -> Summary {
    let mut s = summarize(merged);
    s.per_host = hosts
        .iter()
        .map(|h| {
            let one = summarize(h.result);
            throng_model::HostShare {
                host: h.host.clone(),
                threads: one.threads,
                duration_s: one.duration_s,
                completed: one.completed,
                errors_total: one.errors_total,
                requests_per_sec: one.requests_per_sec,
                latency_us: one.latency_us,
                client_cpu_s: one.client_cpu_s,
                clock_offset_ms: h.clock_offset_ms,
            }
        })
        .collect();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_histogram() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=100u64 {
            h.record(v * 10).unwrap();
        }
        let l = latency(&h);
        assert_eq!(
            (l.count, l.min, l.p50, l.p99, l.max),
            (100, 10, 500, 990, 1000)
        );
        assert_eq!(
            latency(&Histogram::<u64>::new(3).unwrap()),
            Latency::default()
        );
        let bytes = serialize_histogram(&h);
        let back: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut &bytes[..])
            .unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn warnings_are_worded_without_option_names() {
        let late = warning_text(&Warning::LateSends { late: 5, sent: 200 });
        assert!(
            late.starts_with("5 of 200 sends (2.5%) went out more than 1 ms"),
            "{late}"
        );
        let few = warning_text(&Warning::FewerConnections {
            established: 8,
            requested: 10,
        });
        assert_eq!(
            few,
            "only 8 of 10 connections could be established: the load was lighter than asked"
        );
        for w in [late, few] {
            assert!(!w.contains("--"), "{w}");
        }
    }
}
