//! TLS for `https://` targets, with rustls on aws-lc-rs.
//!
//! rustls is itself sans-IO: the driver hands it the bytes each read
//! brought and takes from it the bytes to write, on the same loop and the
//! same turn budget as cleartext, so a TLS connection is one more layer
//! between the socket and the HTTP exchange, not another driver. Each
//! thread builds its own client config, and so its own session cache:
//! resumption never takes a lock another thread holds.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
pub use rustls::pki_types::ServerName;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use serde::{Deserialize, Serialize};

/// A TLS protocol version a run may be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }
}

/// How `https://` targets are reached. Validated at the edge: the CA file
/// is read there, the names here are only checked against the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsSpec {
    /// Accept any certificate (a self-signed one on a test server); the
    /// handshake's signatures are still checked.
    pub insecure: bool,
    /// PEM certificates to trust instead of the built-in roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Versions offered; empty: both.
    pub versions: Vec<TlsVersion>,
    /// Cipher suites offered, by their IANA names (`TLS13_AES_128_GCM_SHA256`);
    /// empty: the provider's defaults, in its order.
    pub ciphers: Vec<String>,
    /// Reuse sessions (tickets, PSK) across a thread's connections. Off by
    /// default, so that a connection per request measures full handshakes.
    pub resume: bool,
    /// ALPN protocols offered, most wanted first.
    pub alpn: Vec<String>,
}

impl Default for TlsSpec {
    fn default() -> Self {
        TlsSpec {
            insecure: false,
            ca_pem: None,
            versions: Vec::new(),
            ciphers: Vec::new(),
            resume: false,
            alpn: vec!["http/1.1".to_string()],
        }
    }
}

/// A TLS spec rustls cannot build a client from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TlsError {
    #[error("{0:?} is not a cipher suite of this build (it has: {1})")]
    UnknownCipher(String, String),
    #[error("no cipher suite offered works with the TLS versions offered")]
    NoCipherForVersion,
    #[error("the CA file has no PEM certificate")]
    NoCaCertificate,
    #[error("the CA file cannot be read as PEM: {0}")]
    BadCa(String),
    #[error("{0}")]
    Config(String),
}

/// Cipher suite names of the provider, in its order of preference.
pub fn cipher_names() -> Vec<String> {
    provider_all()
        .cipher_suites
        .iter()
        .map(|s| suite_name(s.suite()))
        .collect()
}

fn suite_name(s: rustls::CipherSuite) -> String {
    s.as_str().map_or_else(|| format!("{s:?}"), str::to_string)
}

fn provider_all() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

impl TlsSpec {
    /// A client config for one thread (its own session cache).
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let mut provider = provider_all();
        if !self.ciphers.is_empty() {
            let all = cipher_names();
            let mut chosen = Vec::new();
            for name in &self.ciphers {
                let Some(s) = provider
                    .cipher_suites
                    .iter()
                    .find(|s| suite_name(s.suite()).eq_ignore_ascii_case(name))
                else {
                    return Err(TlsError::UnknownCipher(name.clone(), all.join(", ")));
                };
                chosen.push(*s);
            }
            provider.cipher_suites = chosen;
        }
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = if self.versions.is_empty() {
            rustls::ALL_VERSIONS.to_vec()
        } else {
            self.versions
                .iter()
                .map(|v| match v {
                    TlsVersion::Tls12 => &rustls::version::TLS12,
                    TlsVersion::Tls13 => &rustls::version::TLS13,
                })
                .collect()
        };
        let usable = provider
            .cipher_suites
            .iter()
            .any(|s| versions.iter().any(|v| s.version().version == v.version));
        if !usable {
            return Err(TlsError::NoCipherForVersion);
        }
        let provider = Arc::new(provider);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let mut config = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(self.roots()?)
                .with_no_client_auth()
        };
        config.alpn_protocols = self.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
        config.resumption = if self.resume {
            Resumption::in_memory_sessions(256)
        } else {
            Resumption::disabled()
        };
        Ok(Arc::new(config))
    }

    fn roots(&self) -> Result<RootCertStore, TlsError> {
        use rustls::pki_types::pem::PemObject;
        let Some(pem) = &self.ca_pem else {
            return Ok(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            });
        };
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| TlsError::BadCa(e.to_string()))?;
            roots
                .add(cert)
                .map_err(|e| TlsError::BadCa(e.to_string()))?;
        }
        if roots.is_empty() {
            return Err(TlsError::NoCaCertificate);
        }
        Ok(roots)
    }
}

/// The name a target's certificate must carry, and the SNI sent: the host
/// of its `Host` header (an IP address is checked but sends no SNI, as
/// RFC 6066 says).
pub fn server_name(host_header: &str) -> Result<ServerName<'static>, String> {
    let host = match host_header.strip_prefix('[') {
        // [v6]:port
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => host_header.rsplit_once(':').map_or(host_header, |(h, p)| {
            if p.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host_header
            }
        }),
    };
    ServerName::try_from(host.to_string()).map_err(|e| format!("{host:?}: {e}"))
}

/// What one handshake settled on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub version: String,
    pub cipher: String,
    pub alpn: Option<String>,
    /// The handshake resumed an earlier session of the same config.
    pub resumed: bool,
}

/// One blocking handshake before the load, so a certificate that is not
/// trusted, or nothing in common with the server, is one clear error
/// rather than a run of failed connections. Sends nothing else: the
/// server sees no request.
pub fn handshake(
    spec: &TlsSpec,
    host_header: &str,
    stream: std::net::TcpStream,
    timeout: std::time::Duration,
) -> Result<Negotiated, String> {
    let config = spec.client_config().map_err(|e| e.to_string())?;
    handshake_with(config, host_header, stream, timeout, None)
}

/// [`handshake`] with a config of the caller's, whose session cache a
/// later handshake with the same config may resume from: with
/// `tickets`, the server's session tickets (which TLS 1.3 sends after the
/// handshake) are waited for that long.
pub fn handshake_with(
    config: Arc<ClientConfig>,
    host_header: &str,
    mut stream: std::net::TcpStream,
    timeout: std::time::Duration,
    tickets: Option<std::time::Duration>,
) -> Result<Negotiated, String> {
    let name = server_name(host_header)?;
    let mut conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        match conn.complete_io(&mut stream) {
            Ok(_) => {}
            Err(e) => {
                // rustls reports its own failure (a certificate, an alert)
                // as the error's inner value; a plain I/O one says the
                // server closed or went silent.
                return Err(match e.get_ref() {
                    Some(inner) => inner.to_string(),
                    // The socket's timeout: a read that timed out is
                    // EAGAIN, whose own words say nothing of the wait.
                    None if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                    {
                        format!("the server did not answer within {timeout:?}")
                    }
                    None => e.to_string(),
                });
            }
        }
    }
    let negotiated = Negotiated {
        version: conn
            .protocol_version()
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string(),
        cipher: conn
            .negotiated_cipher_suite()
            .map(|s| suite_name(s.suite()))
            .unwrap_or_default(),
        alpn: conn
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
    };
    if let Some(wait) = tickets {
        if stream.set_read_timeout(Some(wait)).is_ok() {
            let _ = conn.complete_io(&mut stream);
        }
    }
    conn.send_close_notify();
    let _ = conn.complete_io(&mut stream);
    Ok(negotiated)
}

/// `--insecure`: any certificate is taken, as curl -k and h2load do, but
/// the handshake's signatures are still verified with the provider's
/// algorithms, so the cost measured is a real handshake's.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_for_sni() {
        assert_eq!(
            server_name("example.org:8443").unwrap(),
            ServerName::try_from("example.org").unwrap()
        );
        assert!(matches!(
            server_name("127.0.0.1:443").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("[::1]:8443").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(server_name("bad name:1").is_err());
    }

    #[test]
    fn configs_follow_the_spec() {
        let spec = TlsSpec::default();
        let c = spec.client_config().unwrap();
        assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()]);
        let names = cipher_names();
        assert!(
            names.iter().any(|n| n == "TLS13_AES_128_GCM_SHA256"),
            "{names:?}"
        );
        let bad = TlsSpec {
            ciphers: vec!["TLS_NOPE".into()],
            ..TlsSpec::default()
        };
        assert!(matches!(
            bad.client_config(),
            Err(TlsError::UnknownCipher(..))
        ));
        // A TLS 1.2 suite cannot be offered over TLS 1.3 alone.
        let mismatch = TlsSpec {
            versions: vec![TlsVersion::Tls13],
            ciphers: vec!["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into()],
            ..TlsSpec::default()
        };
        assert_eq!(
            mismatch.client_config().unwrap_err(),
            TlsError::NoCipherForVersion
        );
        let no_ca = TlsSpec {
            ca_pem: Some(b"not pem".to_vec()),
            ..TlsSpec::default()
        };
        assert_eq!(
            no_ca.client_config().unwrap_err(),
            TlsError::NoCaCertificate
        );
    }
}
