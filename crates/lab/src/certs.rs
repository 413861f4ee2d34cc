//! The certificate a study's TLS servers serve: made once per run, for the
//! address the servers listen on, so every server presents the same kind
//! of key (ECDSA P-256, as most sites now do) and clients trust exactly
//! this one rather than no certificate at all.

use std::net::IpAddr;

use throng_servers::launch::TlsFiles;

/// The key a run's certificate has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CertKind {
    /// ECDSA on P-256: what most sites serve now, and the cheaper
    /// handshake.
    #[default]
    EcdsaP256,
    /// RSA with 2048 bits: the older default, whose signatures cost a
    /// server several times more per full handshake.
    Rsa2048,
}

impl CertKind {
    pub fn parse(s: &str) -> Option<CertKind> {
        match s {
            "ecdsa-p256" => Some(CertKind::EcdsaP256),
            "rsa2048" => Some(CertKind::Rsa2048),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CertKind::EcdsaP256 => "ecdsa-p256",
            CertKind::Rsa2048 => "rsa2048",
        }
    }
}

/// A self-signed leaf for `localhost` and `ip`.
pub fn for_address(ip: IpAddr, kind: CertKind) -> anyhow::Result<TlsFiles> {
    let key = match kind {
        CertKind::EcdsaP256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?,
        CertKind::Rsa2048 => {
            rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048)?
        }
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_key_is_what_it_says() {
        let ip: IpAddr = [127, 0, 0, 1].into();
        for (kind, alg) in [
            (CertKind::EcdsaP256, &rcgen::PKCS_ECDSA_P256_SHA256),
            (CertKind::Rsa2048, &rcgen::PKCS_RSA_SHA256),
        ] {
            let f = for_address(ip, kind).unwrap();
            let key = rcgen::KeyPair::from_pem(std::str::from_utf8(&f.key_pem).unwrap()).unwrap();
            assert!(key.is_compatible(alg), "{}", kind.name());
            assert!(String::from_utf8_lossy(&f.cert_pem).starts_with("-----BEGIN CERTIFICATE-----"));
            assert_eq!(CertKind::parse(kind.name()), Some(kind));
        }
    }
}
