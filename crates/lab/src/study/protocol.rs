//! How clients speak to a study's servers: the `protocols` key, and what
//! each protocol means for a server's recipe and for the load.

use anyhow::bail;

use super::StudyFile;

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
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::Https1 => "https1",
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
        }
    }

    /// As the parity table says it.
    pub fn description(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1 cleartext",
            Protocol::Https1 => "HTTP/1.1 over TLS",
            Protocol::H2 => "HTTP/2 over TLS (ALPN h2)",
            Protocol::H2c => "HTTP/2 cleartext (h2c, prior knowledge)",
        }
    }

    /// Served over TLS, with the run's certificate.
    pub fn tls(self) -> bool {
        matches!(self, Protocol::Https1 | Protocol::H2)
    }

    /// Spoken as HTTP/2.
    pub fn h2(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c)
    }

    /// The engine's HTTP version for this protocol.
    pub fn http_version(self) -> throng_engine::HttpVersion {
        if self.h2() {
            throng_engine::HttpVersion::Http2
        } else {
            throng_engine::HttpVersion::Http1
        }
    }

    fn parse(s: &str) -> anyhow::Result<Protocol> {
        match s {
            "http1" => Ok(Protocol::Http1),
            "https1" => Ok(Protocol::Https1),
            "h2" => Ok(Protocol::H2),
            "h2c" => Ok(Protocol::H2c),
            _ => bail!("protocols: {s:?}: give \"http1\", \"https1\", \"h2\" or \"h2c\""),
        }
    }
}

/// The protocols a study asks for, in order (default: cleartext HTTP/1.1).
pub(super) fn protocols(f: &StudyFile) -> anyhow::Result<Vec<Protocol>> {
    let Some(list) = &f.protocols else {
        return Ok(vec![Protocol::Http1]);
    };
    if list.is_empty() {
        bail!("protocols: give at least one of \"http1\", \"https1\", \"h2\", \"h2c\"");
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
