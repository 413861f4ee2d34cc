//! `throng load` over HTTP/3: the options that choose it and its
//! congestion controller, and the lines the summary gains.

use anyhow::{bail, Result};
use throng_engine::spec::MAX_STREAMS;
use throng_engine::{Congestion, HttpVersion, LoadSpec};
use throng_model::Summary;

use crate::fmt::human_count;

/// What the command line asked of HTTP/3.
pub struct Ask<'a> {
    pub http3: bool,
    pub alpn: &'a [String],
    pub congestion: Option<&'a str>,
    pub no_gso: bool,
    pub streams: Option<usize>,
    /// `--window` or `--connection-window` given.
    pub windows: bool,
}

/// Sets `spec` up for HTTP/3 when asked; false when not asked, and the
/// other versions' options apply.
pub fn apply(a: &Ask, spec: &mut LoadSpec) -> Result<bool> {
    let in_alpn = a.alpn.iter().any(|p| p == "h3");
    if in_alpn && a.alpn.len() > 1 {
        bail!(
            "--alpn: h3 runs over QUIC and cannot be offered beside h2 or http/1.1 over TCP: \
             give --alpn h3 alone, or --http3"
        );
    }
    if !(a.http3 || in_alpn) {
        if a.congestion.is_some() {
            bail!("--congestion is HTTP/3's: give --http3 with an https:// URL");
        }
        if a.no_gso {
            bail!("--no-gso is HTTP/3's: give --http3 with an https:// URL");
        }
        return Ok(false);
    }
    let Some(tls) = spec.tls.as_mut() else {
        bail!("--http3 needs https:// URLs: QUIC carries its own TLS");
    };
    if a.windows {
        bail!("--window and --connection-window are HTTP/2's; HTTP/3's windows are QUIC's own");
    }
    tls.alpn = vec!["h3".into()];
    spec.http.version = HttpVersion::Http3;
    spec.http.streams = a.streams.unwrap_or(1);
    spec.http.udp_offload = !a.no_gso;
    spec.http.congestion = match a.congestion {
        None | Some("cubic") => Congestion::Cubic,
        Some("newreno") => Congestion::NewReno,
        Some("bbr") => Congestion::Bbr,
        Some(other) => bail!("--congestion {other}: give cubic, newreno or bbr"),
    };
    if spec.http.streams == 0 || spec.http.streams > MAX_STREAMS {
        bail!("--streams {}: give 1 to {MAX_STREAMS}", spec.http.streams);
    }
    Ok(true)
}

/// HTTP/3's loop hands over no seconds as they end: what watches them
/// live is refused rather than left empty.
pub fn refuse_live(spec: &LoadSpec, live: bool) -> Result<()> {
    if live && spec.http.version == HttpVersion::Http3 {
        bail!("--http3 cannot be combined with --hdr-log, --metrics-addr or --remote-write yet");
    }
    Ok(())
}

/// A spec the engine refused: what HTTP/3 cannot be combined with.
pub fn unsupported(what: &str) -> String {
    format!("--http3 cannot be combined with {what}")
}

/// The summary's HTTP/3 lines.
pub fn line(s: &Summary) -> String {
    let Some(h) = &s.http3 else {
        return String::new();
    };
    let mut o = format!(
        "  http3        {} connection{}, {} stream{} each",
        human_count(h.connections),
        if h.connections == 1 { "" } else { "s" },
        h.streams,
        if h.streams == 1 { "" } else { "s" },
    );
    if let Some(m) = h.server_max_streams {
        o.push_str(&format!(" (capped at {m} by the server's MAX_STREAMS)"));
    }
    o.push_str(&format!(", {}", h.congestion));
    if let Some(rtt) = h.rtt_us {
        o.push_str(&format!(
            ", RTT {:.0} µs (least {} µs)",
            rtt,
            h.min_rtt_us.unwrap_or(0)
        ));
    }
    o.push('\n');
    o.push_str(&format!(
        "  quic         {} datagrams sent, {} received; {} packets sent, {} lost\n",
        human_count(h.datagrams_sent),
        human_count(h.datagrams_received),
        human_count(h.packets_sent),
        human_count(h.packets_lost),
    ));
    if h.send_calls > 0 && h.receive_calls > 0 {
        let each = |d: u64, calls: u64| d as f64 / calls as f64;
        let offload = |on: bool, name: &str| {
            if on {
                format!(" ({name})")
            } else {
                String::new()
            }
        };
        o.push_str(&format!(
            "  udp          {:.1} datagrams a send call{}, {:.1} a receive call{}\n",
            each(h.datagrams_sent, h.send_calls),
            offload(h.gso, "GSO"),
            each(h.datagrams_received, h.receive_calls),
            // Receives are always batched; GRO may coalesce within one.
            if h.gro {
                " (recvmmsg, GRO)"
            } else {
                " (recvmmsg)"
            },
        ));
    }
    let list = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut trouble = Vec::new();
    if h.handshake_failures > 0 {
        trouble.push(format!("{} handshakes failed", h.handshake_failures));
    }
    if h.version_mismatches > 0 {
        trouble.push(format!(
            "{} without a common QUIC version",
            h.version_mismatches
        ));
    }
    if h.idle_timeouts > 0 {
        trouble.push(format!("{} idle timeouts", h.idle_timeouts));
    }
    if !h.transport_errors.is_empty() {
        trouble.push(format!("transport errors: {}", list(&h.transport_errors)));
    }
    if !h.h3_errors.is_empty() {
        trouble.push(format!("HTTP/3 errors: {}", list(&h.h3_errors)));
    }
    if !h.stream_resets.is_empty() {
        trouble.push(format!("streams reset: {}", list(&h.stream_resets)));
    }
    if h.goaways > 0 {
        trouble.push(format!(
            "{} GOAWAY, {} requests sent again",
            h.goaways, h.retried
        ));
    }
    if !trouble.is_empty() {
        o.push_str(&format!("  quic errors  {}\n", trouble.join("; ")));
    }
    o
}
