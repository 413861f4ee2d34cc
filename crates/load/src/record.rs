//! The engine's result becomes the stored and printed summary here, at one
//! place: `throng load --json`, a lab round and `throng load --save` all
//! hold the same document (docs/json-schema.md).

use std::collections::BTreeMap;

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use throng_engine::{IoBackend, LoadResult};
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

/// The summary document of a run.
pub fn summarize(r: &LoadResult) -> Summary {
    let c = &r.counts;
    Summary {
        schema: SCHEMA_VERSION,
        model: r.model,
        urls: r.urls,
        threads: r.threads,
        pipeline: r.pipeline,
        keep_alive: r.keep_alive,
        coalesce: r.coalesce,
        // The QUIC loop waits in ppoll whatever backend the spec named.
        io: Some(match r.io {
            _ if r.http3.is_some() => throng_model::IoBackend::Ppoll,
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
        reply_heads: (c.head_replies > 0).then_some(throng_model::ReplyHeads {
            replies: c.head_replies,
            bytes: c.head_bytes,
        }),
        mb_per_sec: r.per_sec(c.bytes_read) / 1e6,
        latency_us: latency(&r.latency),
        latency_uncorrected_us: r.latency_uncorrected.as_ref().map(latency),
        first_byte_us: r.first_byte.as_ref().map(latency),
        status: c.status.iter().copied().collect(),
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
            connection_time_us: r.connection_time.as_ref().map(latency),
        },
        in_flight_at_end: r.in_flight_at_end,
        client_cpu_s: CpuTime {
            user: r.cpu_user_s,
            sys: r.cpu_sys_s,
            runqueue: r.runqueue_s,
            spun: r.spun_ns as f64 / 1e9,
        },
        client_naps: r.naps,
        client_spins: (r.spins > 0).then_some(throng_model::Spins {
            waits: r.spins,
            answered: r.spins_answered,
        }),
        client_sleep: (r.sleep_cost_ns > 0).then(|| throng_model::SleepCost {
            cpu_us: r.sleep_cost_ns as f64 / 1e3,
            late_us: r.sleep_late_ns as f64 / 1e3,
        }),
        client_hold_us: (r.holds > 0).then(|| r.hold_ns as f64 / r.holds as f64 / 1e3),
        client_held_connections: (r.holds > 0 && r.duration_s > 0.0)
            .then(|| r.hold_ns as f64 / (r.duration_s * 1e9)),
        rate: r.rate.as_ref().map(|rate| RateReport {
            target: rate.target,
            late_sends: rate.late_sends,
            unsent: rate.unsent,
            lateness_us: latency(&rate.lateness),
            tick_us: rate.tick_us,
            saturated_second: None,
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
                ..TimelineRow::default()
            })
            .collect(),
        warnings: r.warnings.clone(),
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
        http3: r.http3.clone(),
        sessions: r.sessions.as_ref().map(|x| throng_model::Sessions {
            users: x.users,
            arrival_per_sec: x.arrival_per_sec,
            counts: x.counts,
            sessions_per_sec: r.per_sec(x.counts.completed),
            duration_us: latency(&x.duration),
            think_us: latency(&x.think),
            active: x.active.clone(),
            active_max: x.active_max,
            lengths: x.lengths.clone(),
        }),
        // Only this machine's processes can be seen, by the caller.
        local_server: None,
        thresholds: Vec::new(),
        coordination_ms: None,
        coordination_parts: None,
        start_wait_ms: None,
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
                bytes_read: one.bytes_read,
                bytes_written: one.bytes_written,
                tcp: None,
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
}
