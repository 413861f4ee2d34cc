//! What an HTTP/3 load may ask: its loop is QUIC's own, and takes fewer
//! of a load's shapes than the TCP loop does.

use crate::spec::{Congestion, LoadSpec, SpecError};

impl Congestion {
    pub fn name(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::NewReno => "newreno",
            Congestion::Bbr => "bbr",
        }
    }
}

impl LoadSpec {
    /// HTTP/3 runs over QUIC, whose TLS is 1.3 alone and whose loop has
    /// no pipelines, schedules or users yet.
    pub(crate) fn validate_h3(&self, tls: bool) -> Result<(), SpecError> {
        let gap = if !tls {
            Some("http:// URLs (QUIC is TLS's)")
        } else if self.pipeline > 1 {
            Some("pipelining (streams take its place)")
        } else if self.rate.is_some() {
            Some("a request rate")
        } else if self.users.is_some() {
            Some("users who think")
        } else if !self.sources.is_empty() {
            Some("source addresses")
        } else if self.requests_per_connection.is_some() || !self.keep_alive {
            Some("a request limit per connection")
        } else {
            None
        };
        if let Some(gap) = gap {
            return Err(SpecError::H3Unsupported(gap));
        }
        if let Some(t) = &self.tls {
            if !t.alpn.iter().any(|a| a == "h3") {
                return Err(SpecError::Alpn(t.alpn.join(",")));
            }
            if !t.versions.is_empty() && !t.versions.contains(&crate::tls::TlsVersion::Tls13) {
                return Err(SpecError::H3Unsupported("TLS 1.2 (QUIC needs TLS 1.3)"));
            }
        }
        Ok(())
    }
}
