//! How clients speak to a study's servers: the `protocols` key, and what
//! each protocol means for a server's recipe and for the load.

use anyhow::bail;

use super::{StudyFile, WorkloadLoad};

/// How clients speak to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Cleartext HTTP/1.1.
    Http1,
    /// HTTP/1.1 over TLS, with a certificate the lab makes for the run.
    Https1,
    /// HTTP/2 over TLS (ALPN `h2`), with the same certificate and TLS
    /// settings as `https1`.
    H2,
    /// HTTP/2 over cleartext, with prior knowledge.
    H2c,
    /// HTTP/3 over QUIC v1 (ALPN `h3`) on UDP, on the port the server
    /// serves TLS on over TCP, with the same certificate.
    H3,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::Https1 => "https1",
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
            Protocol::H3 => "h3",
        }
    }

    /// As the parity table says it.
    pub fn description(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1 cleartext",
            Protocol::Https1 => "HTTP/1.1 over TLS",
            Protocol::H2 => "HTTP/2 over TLS (ALPN h2)",
            Protocol::H2c => "HTTP/2 cleartext (h2c, prior knowledge)",
            Protocol::H3 => "HTTP/3 over QUIC v1 (ALPN h3)",
        }
    }

    /// Served over TLS, with the run's certificate (QUIC's TLS for h3).
    pub fn tls(self) -> bool {
        matches!(self, Protocol::Https1 | Protocol::H2 | Protocol::H3)
    }

    /// Spoken as HTTP/2.
    pub fn h2(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c)
    }

    /// Requests go out as streams of a connection, `streams` at once.
    pub fn multiplexed(self) -> bool {
        self.h2() || self == Protocol::H3
    }

    /// The one protocol the client's ALPN offers.
    pub fn alpn(self) -> &'static str {
        match self {
            Protocol::H2 | Protocol::H2c => "h2",
            Protocol::H3 => "h3",
            Protocol::Http1 | Protocol::Https1 => "http/1.1",
        }
    }

    /// The engine's HTTP version for this protocol.
    pub fn http_version(self) -> throng_engine::HttpVersion {
        match self {
            Protocol::H2 | Protocol::H2c => throng_engine::HttpVersion::Http2,
            Protocol::H3 => throng_engine::HttpVersion::Http3,
            Protocol::Http1 | Protocol::Https1 => throng_engine::HttpVersion::Http1,
        }
    }

    /// The parity table's cipher row: what TLS the server was given,
    /// with a certificate of `cert`'s kind (its name).
    pub fn cipher(self, cert: &str) -> String {
        match self {
            Protocol::Https1 | Protocol::H2 => format!(
                "the server's choice among rustls's TLS 1.3 and 1.2 suites, offered in \
                 rustls's order, a {cert} certificate"
            ),
            Protocol::H3 => format!(
                "the server's choice among rustls's TLS 1.3 suites (QUIC's TLS is 1.3 \
                 alone), offered in rustls's order, a {cert} certificate"
            ),
            Protocol::Http1 | Protocol::H2c => "none (cleartext)".to_string(),
        }
    }

    /// The parity table's congestion control row. Over TCP both ends'
    /// kernels choose it: `kernel` is the algorithm when the server's
    /// kernel is this machine's, known. Over QUIC each end runs its own:
    /// the engine's, named, and the server's QUIC stack's.
    pub fn congestion(self, kernel: Option<&str>) -> String {
        match (self, kernel) {
            (Protocol::H3, _) => format!(
                "QUIC's own at each end: the client's {} (quinn-proto); the server's is its \
                 QUIC stack's, named in its recipe's HTTP/3 notes",
                throng_engine::HttpSpec::default().congestion.name()
            ),
            (_, Some(k)) => {
                format!("the kernel's {k} (net.ipv4.tcp_congestion_control), at both ends")
            }
            (_, None) => throng_servers::parity::TCP_CONGESTION.to_string(),
        }
    }

    fn parse(s: &str) -> anyhow::Result<Protocol> {
        match s {
            "http1" => Ok(Protocol::Http1),
            "https1" => Ok(Protocol::Https1),
            "h2" => Ok(Protocol::H2),
            "h2c" => Ok(Protocol::H2c),
            "h3" => Ok(Protocol::H3),
            _ => bail!("protocols: {s:?}: give \"http1\", \"https1\", \"h2\", \"h2c\" or \"h3\""),
        }
    }
}

/// The protocols a study asks for, in order (default: cleartext HTTP/1.1).
pub(super) fn protocols(f: &StudyFile) -> anyhow::Result<Vec<Protocol>> {
    let Some(list) = &f.protocols else {
        return Ok(vec![Protocol::Http1]);
    };
    if list.is_empty() {
        bail!("protocols: give at least one of \"http1\", \"https1\", \"h2\", \"h2c\", \"h3\"");
    }
    let mut out = Vec::new();
    for p in list {
        let p = Protocol::parse(p)?;
        if out.contains(&p) {
            bail!("protocols: {:?} is listed twice", p.name());
        }
        out.push(p);
    }
    Ok(out)
}

/// HTTP/3's loop takes fewer of a load's shapes than TCP's: a study that
/// asks h3 of a workload loaded in a way QUIC's loop does not is refused
/// when it is read, not when its first round fails.
pub(super) fn check_h3(protocols: &[Protocol], loads: &[WorkloadLoad]) -> anyhow::Result<()> {
    if !protocols.contains(&Protocol::H3) {
        return Ok(());
    }
    for w in loads {
        let s = &w.shape;
        let gap = if !s.keep_alive {
            "keep_alive = false: HTTP/3 keeps its connections, its streams taking a request each"
        } else if s.pipeline > 1 {
            "pipeline: HTTP/3 multiplexes streams and is never pipelined"
        } else if s.requests_per_connection.is_some() {
            "requests_per_connection: throng's HTTP/3 connections carry no request limit"
        } else if s.users.is_some() {
            "users who think: throng's HTTP/3 loop sends back to back or at a rate"
        } else {
            continue;
        };
        bail!(
            "protocols: \"h3\" cannot load workload {} with {gap}; measure it without \"h3\" \
             or leave that key out",
            w.kind.name()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(list: &[&str]) -> anyhow::Result<Vec<Protocol>> {
        let f: StudyFile = toml::from_str(&format!(
            "name = 'p'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\nconcurrency = [1]\n\
             protocols = {list:?}\n"
        ))
        .unwrap();
        protocols(&f)
    }

    #[test]
    fn h3_is_read_and_named_as_written() {
        assert_eq!(
            listed(&["https1", "h2", "h3"]).unwrap(),
            [Protocol::Https1, Protocol::H2, Protocol::H3]
        );
        let h3 = Protocol::H3;
        assert_eq!((h3.name(), h3.alpn()), ("h3", "h3"));
        assert_eq!(h3.description(), "HTTP/3 over QUIC v1 (ALPN h3)");
        assert!(h3.tls() && h3.multiplexed() && !h3.h2());
        assert_eq!(h3.http_version(), throng_engine::HttpVersion::Http3);
        // The parity rows: TLS 1.3 alone over QUIC, each end's own pacing.
        assert_eq!(
            h3.cipher("ecdsa-p256"),
            "the server's choice among rustls's TLS 1.3 suites (QUIC's TLS is 1.3 alone), \
             offered in rustls's order, a ecdsa-p256 certificate"
        );
        assert_eq!(
            h3.congestion(Some("bbr")),
            "QUIC's own at each end: the client's cubic (quinn-proto); the server's is its QUIC \
             stack's, named in its recipe's HTTP/3 notes"
        );
        assert_eq!(
            Protocol::H2.congestion(Some("bbr")),
            "the kernel's bbr (net.ipv4.tcp_congestion_control), at both ends"
        );
        assert_eq!(
            Protocol::Https1.congestion(None),
            throng_servers::parity::TCP_CONGESTION
        );
        assert_eq!(Protocol::H2c.cipher("rsa2048"), "none (cleartext)");
        assert_eq!(
            listed(&["h3", "h3"]).unwrap_err().to_string(),
            "protocols: \"h3\" is listed twice"
        );
        assert_eq!(
            listed(&["H3"]).unwrap_err().to_string(),
            "protocols: \"H3\": give \"http1\", \"https1\", \"h2\", \"h2c\" or \"h3\""
        );
    }
}
