//! `throng load` over HTTP/2: the options that choose the protocol and
//! shape its streams and windows, and the line the summary gains.

use anyhow::{bail, Result};
use throng_engine::spec::{DEFAULT_WINDOW, MAX_STREAMS};
use throng_engine::{EngineError, HttpVersion, LoadSpec, SpecError};
use throng_model::Summary;

use crate::fmt::human_count;

#[derive(clap::Args, Debug, Default)]
pub struct HttpArgs {
    /// https: speak HTTP/2 only (ALPN offers h2 alone) [default: offer h2
    /// and http/1.1 and speak what the server chooses].
    #[arg(long, conflicts_with_all = ["http1_1", "alpn", "h2c", "http3"])]
    pub http2: bool,
    /// https: speak HTTP/3 over QUIC (UDP, the URL's port), as `--alpn h3`.
    #[arg(long, conflicts_with_all = ["http1_1", "alpn", "h2c"])]
    pub http3: bool,
    /// HTTP/3: QUIC's congestion controller: cubic, newreno or bbr
    /// [default: cubic].
    #[arg(long, value_name = "NAME")]
    pub congestion: Option<String>,
    /// HTTP/3: one UDP datagram per system call, without the kernel's
    /// segmentation offloads [default: several datagrams a call on send
    /// (GSO) and receive (GRO) where the kernel has them].
    #[arg(long)]
    pub no_gso: bool,
    /// Speak HTTP/1.1 only (over https, ALPN offers http/1.1 alone).
    #[arg(long = "http1.1", id = "http1_1", conflicts_with_all = ["alpn", "h2c"])]
    pub http1_1: bool,
    /// https: the protocols ALPN offers, in order of preference
    /// (comma-separated, of h2 and http/1.1); the connection speaks the
    /// one the server chooses. `h3` alone speaks HTTP/3 over QUIC.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub alpn: Vec<String>,
    /// http: speak HTTP/2 over cleartext with prior knowledge (h2c).
    #[arg(long)]
    pub h2c: bool,
    /// HTTP/2: concurrent streams per connection, as h2load's -m; the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS caps it, and the summary
    /// says so [default: 1].
    #[arg(long, value_name = "N")]
    pub streams: Option<usize>,
    /// HTTP/2: the receive window of each stream, in bytes
    /// [default: 1073741823, as h2load's].
    #[arg(long, value_name = "BYTES")]
    pub window: Option<u32>,
    /// HTTP/2: the receive window of each connection, in bytes
    /// [default: 1073741823].
    #[arg(long, value_name = "BYTES")]
    pub connection_window: Option<u32>,
}

const PROTOCOLS: [&str; 2] = ["h2", "http/1.1"];

/// Sets `spec`'s HTTP version, streams and windows; its TLS (set before)
/// gets the ALPN list that goes with them.
pub fn apply(a: &HttpArgs, spec: &mut LoadSpec) -> Result<()> {
    let ask = crate::load_h3::Ask {
        http3: a.http3,
        alpn: &a.alpn,
        congestion: a.congestion.as_deref(),
        no_gso: a.no_gso,
        streams: a.streams,
        windows: a.window.is_some() || a.connection_window.is_some(),
    };
    if crate::load_h3::apply(&ask, spec)? {
        return Ok(());
    }
    let https = spec.tls.is_some();
    if let Some(p) = a.alpn.iter().find(|p| !PROTOCOLS.contains(&p.as_str())) {
        bail!("--alpn: `{p}` is not a protocol throng speaks (give h2, http/1.1 or both, or h3 alone)");
    }
    if !https && (a.http2 || !a.alpn.is_empty()) {
        bail!("--http2 and --alpn apply to https:// URLs; over http://, --h2c speaks HTTP/2");
    }
    if https && a.h2c {
        bail!("--h2c is HTTP/2 over cleartext, for http:// URLs; over https://, --http2");
    }
    spec.http.version = if a.http1_1 {
        HttpVersion::Http1
    } else if a.http2 || a.h2c {
        HttpVersion::Http2
    } else if !a.alpn.is_empty() && !a.alpn.iter().any(|p| p == "h2") {
        // An offer without h2 can only settle on HTTP/1.1, as --http1.1
        // does: negotiating would take --streams and the windows and then
        // ignore them, and print HTTP/2 figures that can only be zero.
        HttpVersion::Http1
    } else if https {
        HttpVersion::Negotiate
    } else {
        HttpVersion::Http1
    };
    if let Some(tls) = spec.tls.as_mut() {
        tls.alpn = match spec.http.version {
            HttpVersion::Http1 => vec!["http/1.1".into()],
            HttpVersion::Http2 => vec!["h2".into()],
            HttpVersion::Negotiate if !a.alpn.is_empty() => a.alpn.clone(),
            HttpVersion::Negotiate => PROTOCOLS.iter().map(|p| p.to_string()).collect(),
            HttpVersion::Http3 => vec!["h3".into()],
        };
    }
    // The engine takes windows whatever the version, and a load that
    // cannot speak HTTP/2 would ignore them without a word: refused, as
    // --streams is.
    if (a.window.is_some() || a.connection_window.is_some()) && !spec.http.may_h2(https) {
        bail!(
            "--window and --connection-window are HTTP/2's: give an https:// URL (without \
             --http1.1 or an --alpn without h2), or --h2c"
        );
    }
    spec.http.streams = a.streams.unwrap_or(1);
    spec.http.stream_window = a.window.unwrap_or(DEFAULT_WINDOW);
    spec.http.conn_window = a.connection_window.unwrap_or(DEFAULT_WINDOW);
    Ok(())
}

/// A spec the engine refused over its HTTP settings, in the words of the
/// options; `None` for the others.
pub fn spec_error(e: &SpecError) -> Option<String> {
    Some(match e {
        SpecError::Streams(n) => format!("--streams {n}: give 1 to {MAX_STREAMS}"),
        SpecError::StreamsWithoutH2 => {
            "--streams needs HTTP/2: an https:// URL (without --http1.1 or an --alpn without h2), or --h2c".into()
        }
        SpecError::PipelineWithH2 => {
            "--pipeline cannot be used with HTTP/2, whose streams take its place (--streams); \
             over https://, where ALPN may choose h2, --http1.1 keeps to pipelined HTTP/1.1"
                .into()
        }
        SpecError::Window(w) => {
            format!("--window/--connection-window {w}: give 65535 to 2147483647 bytes")
        }
        SpecError::Alpn(list) => format!(
            "--alpn {list} does not offer the protocol asked for (--http2 needs h2, --http1.1 http/1.1)"
        ),
        _ => return None,
    })
}

/// Why the run could not start over HTTP/2, in the words of the options.
pub fn engine_error(e: &EngineError) -> Option<String> {
    match e {
        EngineError::NoH2 { url, chose } => Some(format!(
            "{url}: the server does not speak HTTP/2 over TLS: ALPN {} (without --http2, \
             throng speaks what the server chooses)",
            match chose {
                Some(p) => format!("chose {p}"),
                None => "chose nothing".to_string(),
            }
        )),
        _ => None,
    }
}

/// The summary's HTTP/2 line.
pub fn line(s: &Summary) -> String {
    let Some(h) = &s.http2 else {
        return String::new();
    };
    let mut o = format!(
        "  http2        {} connection{}, {} stream{} each",
        human_count(h.connections),
        if h.connections == 1 { "" } else { "s" },
        h.streams,
        if h.streams == 1 { "" } else { "s" },
    );
    if let Some(m) = h.server_max_streams {
        if u64::from(m) < h.streams {
            o.push_str(&format!(" (capped at {m} by the server's SETTINGS)"));
        } else {
            o.push_str(&format!(" (the server allows {m})"));
        }
    }
    let list = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !h.resets.is_empty() {
        o.push_str(&format!("; RST_STREAM: {}", list(&h.resets)));
    }
    if !h.goaways.is_empty() {
        o.push_str(&format!("; GOAWAY: {}", list(&h.goaways)));
    }
    if h.retried > 0 {
        o.push_str(&format!(
            "; {} requests sent again after a GOAWAY",
            human_count(h.retried)
        ));
    }
    o.push('\n');
    o
}
