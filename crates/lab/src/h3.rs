//! HTTP/3 as the lab checks it before measuring: one real GET through the
//! engine's QUIC loop, the loop every h3 round runs. A server serves its
//! TLS over TCP whether or not its QUIC listener came up (Caddy logs a
//! failed UDP bind and goes on), so the readiness and body checks over
//! TCP cannot say it; this does, for a started server and for the feature
//! probe alike.

use std::net::SocketAddr;
use std::time::Duration;

use throng_engine::tls::TlsSpec;
use throng_engine::{HttpVersion, LoadSpec, Stop};
use throng_model::{Feature, FeatureResult, FeatureStatus};

/// What one HTTP/3 GET was answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub status: u16,
    /// As negotiated, e.g. `TLSv1_3`.
    pub tls_version: String,
    /// The client's congestion controller, as the engine names it.
    pub congestion: String,
}

/// The spec of one GET of `path` over HTTP/3 from one connection,
/// trusting what `tls` trusts; its ALPN is h3 alone and it resumes no
/// session, since a QUIC handshake does not say whether it resumed.
pub fn get_spec(addr: SocketAddr, path: &str, tls: &TlsSpec, timeout: Duration) -> LoadSpec {
    let mut targets = crate::spec::targets(addr, &[path.to_string()]);
    for t in &mut targets {
        t.url = t.url.replacen("http://", "https://", 1);
    }
    let mut spec = LoadSpec::new(targets);
    spec.tls = Some(TlsSpec {
        alpn: vec!["h3".to_string()],
        resume: false,
        ..tls.clone()
    });
    spec.http.version = HttpVersion::Http3;
    spec.http.streams = 1;
    spec.connections = 1;
    spec.threads = 1;
    spec.stop = Stop::Requests(1);
    spec.warmup = Duration::ZERO;
    spec.timeout = timeout;
    spec
}

/// One GET of `path` over HTTP/3 at `addr`; `Err` says what it met
/// instead of one response without error.
pub fn get(
    addr: SocketAddr,
    path: &str,
    tls: &TlsSpec,
    timeout: Duration,
) -> Result<Answered, String> {
    let spec = get_spec(addr, path, tls, timeout);
    let r = throng_engine::run(&spec, &throng_engine::Control::new())
        .map_err(|e| format!("GET {path} over HTTP/3: {e}"))?;
    answered(path, &throng_load::record::summarize(&r))
}

/// The feature table's TLS row of a server over h3, whose TLS is its
/// QUIC side's: one GET of `/index.html` at `addr`, trusting `ca_pem`.
pub fn probe(addr: SocketAddr, ca_pem: Option<Vec<u8>>, wait: Duration) -> FeatureResult {
    let tls = TlsSpec {
        ca_pem,
        ..TlsSpec::default()
    };
    match get(addr, "/index.html", &tls, wait) {
        Ok(a) => FeatureResult::new(
            Feature::Tls,
            FeatureStatus::Yes,
            format!(
                "GET /index.html answered {} over HTTP/3: QUIC v1 on UDP {}, {}, ALPN h3, the \
                 client's congestion control {}",
                a.status,
                addr.port(),
                a.tls_version,
                a.congestion
            ),
        ),
        Err(e) => FeatureResult::new(Feature::Tls, FeatureStatus::No, e),
    }
}

/// One response and no error in `s`, or what there was instead.
pub fn answered(path: &str, s: &throng_model::Summary) -> Result<Answered, String> {
    let status = s.status.keys().next().copied();
    match status {
        Some(status) if s.completed == 1 && s.errors_total == 0 => Ok(Answered {
            status,
            tls_version: s
                .tls
                .as_ref()
                .and_then(|t| t.version.clone())
                .unwrap_or_else(|| "unknown".to_string()),
            congestion: s
                .http3
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |h| h.congestion.clone()),
        }),
        _ => {
            let errors: Vec<String> = s.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
            Err(format!(
                "GET {path} over HTTP/3 had {} responses and errors: {}",
                s.completed,
                if errors.is_empty() {
                    "none".to_string()
                } else {
                    errors.join(", ")
                }
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_get_is_one_request_over_h3_alone_without_resumption() {
        let tls = TlsSpec {
            alpn: vec!["h2".into()],
            resume: true,
            ..TlsSpec::default()
        };
        let addr: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let spec = get_spec(addr, "/index.html", &tls, Duration::from_secs(2));
        assert_eq!(spec.validate(), Ok(()));
        let t = spec.tls.as_ref().unwrap();
        assert_eq!(
            (t.alpn.as_slice(), t.resume),
            (&["h3".to_string()][..], false)
        );
        assert_eq!(spec.targets[0].url, "https://127.0.0.1:8443/index.html");
        assert_eq!(
            (spec.connections, spec.stop, spec.http.streams),
            (1, Stop::Requests(1), 1)
        );
    }

    #[test]
    fn anything_but_one_clean_response_is_what_it_met() {
        let mut s = throng_model::Summary {
            completed: 1,
            ..throng_model::Summary::default()
        };
        s.status.insert(200, 1);
        let ok = answered("/", &s).unwrap();
        assert_eq!((ok.status, ok.tls_version.as_str()), (200, "unknown"));
        s.completed = 0;
        s.status.clear();
        s.errors.insert("timeout".into(), 1);
        s.errors_total = 1;
        assert_eq!(
            answered("/", &s).unwrap_err(),
            "GET / over HTTP/3 had 0 responses and errors: timeout 1"
        );
    }
}
