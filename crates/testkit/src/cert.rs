//! A self-signed certificate for loopback servers in tests.

/// A certificate and its private key (PKCS#8), as PEM for a server that
/// reads files and as DER for one built in the test.
pub struct SelfSigned {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    pub cert_der: Vec<u8>,
    pub key_der: Vec<u8>,
}

/// A self-signed ECDSA P-256 leaf for `localhost` and 127.0.0.1, valid
/// now. A leaf and not a CA (`CA:FALSE`), since WebPKI refuses a CA
/// certificate as a server's; trusting this one certificate is what a
/// client given it as its CA file does.
pub fn localhost() -> SelfSigned {
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("valid names");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
    let cert = params.self_signed(&key).expect("self-signed");
    SelfSigned {
        cert_pem: cert.pem().into_bytes(),
        key_pem: key.serialize_pem().into_bytes(),
        cert_der: cert.der().to_vec(),
        key_der: key.serialize_der(),
    }
}

/// [`localhost`], written as `cert.pem` and `key.pem` in `dir`, for a
/// server that reads its files: their paths, certificate first.
pub fn localhost_in(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let pair = localhost();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &pair.cert_pem).expect("write cert.pem");
    std::fs::write(&key, &pair.key_pem).expect("write key.pem");
    (cert, key)
}
