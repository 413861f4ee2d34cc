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
        } else if self.users.is_some() {
            Some("users who think")
        } else if !self.sources.is_empty() {
            Some("source addresses")
        } else if self.spin.is_some() {
            // Its loop sleeps in ppoll(2) as soon as nothing is ready.
            Some("a spin for answers")
        } else if self.requests_per_connection.is_some() || !self.keep_alive {
            Some("a request limit per connection")
        } else if self.targets.iter().any(|t| {
            // A thread's connections all go to one server, by one name.
            let first = &self.targets[0];
            t.addr != first.addr || t.host_header != first.host_header
        }) {
            Some("URLs of more than one server")
        } else {
            None
        };
        if let Some(gap) = gap {
            return Err(SpecError::H3Unsupported(gap));
        }
        if let Some(t) = &self.tls {
            // Resumed or not, a QUIC handshake does not say which.
            if t.resume {
                return Err(SpecError::H3Unsupported("TLS session resumption"));
            }
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

#[cfg(test)]
mod tests {
    use crate::spec::{HttpVersion, LoadSpec, SpecError, Target};
    use crate::tls::{TlsSpec, TlsVersion};

    fn spec(urls: &[(&str, &str)]) -> LoadSpec {
        let targets = urls
            .iter()
            .map(|(addr, host)| {
                Target::new(
                    addr.parse().unwrap(),
                    host.to_string(),
                    "/".into(),
                    format!("https://{host}/"),
                )
            })
            .collect();
        let mut s = LoadSpec::new(targets);
        s.tls = Some(TlsSpec {
            alpn: vec!["h3".into()],
            insecure: true,
            ..TlsSpec::default()
        });
        s.http.version = HttpVersion::Http3;
        s.http.streams = 10;
        s
    }

    #[test]
    fn h3_takes_streams_and_refuses_what_its_loop_does_not_do() {
        let one = [("127.0.0.1:8443", "localhost:8443")];
        assert_eq!(spec(&one).validate(), Ok(()));
        let refused = |f: &dyn Fn(&mut LoadSpec)| {
            let mut s = spec(&one);
            f(&mut s);
            s.validate()
        };
        let gap = |what| Err(SpecError::H3Unsupported(what));
        assert_eq!(
            refused(&|s| s.pipeline = 2),
            gap("pipelining (streams take its place)")
        );
        assert_eq!(refused(&|s| s.rate = Some(10.0)), Ok(()));
        assert_eq!(
            refused(&|s| s.keep_alive = false),
            gap("a request limit per connection")
        );
        assert_eq!(
            refused(&|s| s.tls.as_mut().unwrap().versions = vec![TlsVersion::Tls12]),
            gap("TLS 1.2 (QUIC needs TLS 1.3)")
        );
        assert_eq!(
            refused(&|s| s.tls.as_mut().unwrap().alpn = vec!["h2".into()]),
            Err(SpecError::Alpn("h2".into()))
        );
        let two = spec(&[
            ("127.0.0.1:8443", "localhost:8443"),
            ("127.0.0.2:8443", "b:8443"),
        ]);
        assert_eq!(two.validate(), gap("URLs of more than one server"));
        // The QUIC loop naps as the TCP one does: its datagrams carry the
        // kernel's receive stamps.
        assert!(spec(&one).naps());
    }
}
