//! The certificate a study's TLS servers serve: made once per run, for the
//! address the servers listen on, so every server presents the same kind
//! of key (ECDSA P-256, as most sites now do) and clients trust exactly
//! this one rather than no certificate at all.

use std::net::IpAddr;

use throng_servers::launch::TlsFiles;

/// A self-signed leaf for `localhost` and `ip`.
pub fn for_address(ip: IpAddr) -> anyhow::Result<TlsFiles> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()])?;
    params.subject_alt_names.push(rcgen::SanType::IpAddress(ip));
    // A leaf: WebPKI refuses a CA certificate presented as a server's.
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let cert = params.self_signed(&key)?;
    Ok(TlsFiles {
        cert_pem: cert.pem().into_bytes(),
        key_pem: key.serialize_pem().into_bytes(),
    })
}
