//! `throng load https://…`: the options that shape TLS, and the line the
//! summary gains.

use std::path::PathBuf;

use anyhow::Result;
use throng_engine::tls::{TlsSpec, TlsVersion};
use throng_engine::LoadSpec;
use throng_model::Summary;

use crate::fmt::{human_count, human_us};

#[derive(clap::Args, Debug, Default)]
pub struct TlsArgs {
    /// https: accept any certificate (a test server's self-signed one), as
    /// curl -k does; the handshake itself is still checked.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// https: trust the PEM certificates of FILE instead of the built-in
    /// roots.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// https: offer only this TLS version (1.2 or 1.3) [default: both].
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub tls_version: Option<TlsVersion>,
    /// https: offer only these cipher suites, by IANA name, comma-separated
    /// (e.g. TLS13_AES_128_GCM_SHA256) [default: rustls's, in its order].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub ciphers: Vec<String>,
    /// https: resume TLS sessions across a thread's connections (tickets,
    /// PSK), so that with --close each new connection makes a resumed
    /// handshake rather than a full one.
    #[arg(long)]
    pub tls_resume: bool,
}

fn parse_version(s: &str) -> Result<TlsVersion, String> {
    match s {
        "1.2" | "tls1.2" | "TLSv1.2" => Ok(TlsVersion::Tls12),
        "1.3" | "tls1.3" | "TLSv1.3" => Ok(TlsVersion::Tls13),
        _ => Err(format!("`{s}`: give 1.2 or 1.3")),
    }
}

/// Whether any TLS option was given.
fn given(a: &TlsArgs) -> bool {
    a.insecure
        || a.cacert.is_some()
        || a.tls_version.is_some()
        || !a.ciphers.is_empty()
        || a.tls_resume
}

/// Gives `spec` its TLS when its targets are `https://`. A TLS option
/// for `http://` targets is refused rather than ignored.
pub fn apply(a: &TlsArgs, spec: &mut LoadSpec) -> Result<()> {
    if !spec.targets.iter().any(|t| t.is_tls()) {
        if given(a) {
            anyhow::bail!("--insecure, --cacert, --tls-version, --ciphers and --tls-resume apply to https:// URLs only");
        }
        return Ok(());
    }
    let ca_pem = match &a.cacert {
        Some(f) => Some(crate::args::read_file("--cacert", f)?),
        None => None,
    };
    spec.tls = Some(TlsSpec {
        insecure: a.insecure,
        ca_pem,
        versions: a.tls_version.into_iter().collect(),
        ciphers: a.ciphers.clone(),
        resume: a.tls_resume,
        ..TlsSpec::default()
    });
    Ok(())
}

/// A TLS spec the engine refused, in the words of the options.
pub fn tls_error(e: &throng_engine::tls::TlsError) -> String {
    use throng_engine::tls::TlsError;
    match e {
        TlsError::UnknownCipher(name, all) => {
            format!("--ciphers: `{name}` is not a cipher suite throng has (it has: {all})")
        }
        TlsError::NoCipherForVersion => {
            "--ciphers: none of them works with the --tls-version given".into()
        }
        TlsError::NoCaCertificate => "--cacert: the file has no PEM certificate".into(),
        TlsError::BadCa(why) => format!("--cacert: {why}"),
        TlsError::Config(why) => format!("TLS: {why}"),
    }
}

/// The summary's TLS line.
pub fn line(s: &Summary) -> String {
    let Some(t) = &s.tls else {
        return String::new();
    };
    let what = match (&t.version, &t.cipher) {
        // QUIC's stack keeps the suite it agreed to itself.
        (Some(v), None) if t.alpn.as_deref() == Some("h3") => {
            format!("{} over QUIC, ALPN h3", v.replace("TLSv1_", "TLSv1."))
        }
        (Some(v), Some(c)) => format!(
            "{} {c}{}",
            v.replace("TLSv1_", "TLSv1."),
            t.alpn
                .as_ref()
                .map(|a| format!(", ALPN {a}"))
                .unwrap_or_default()
        ),
        _ => "no handshake finished".to_string(),
    };
    let times = if t.handshake_us.count > 0 {
        format!(
            "; handshake p50 {} p99 {}",
            human_us(t.handshake_us.p50 as f64),
            human_us(t.handshake_us.p99 as f64)
        )
    } else {
        String::new()
    };
    format!(
        "  tls          {what}; {} handshakes ({:.1}/s, {} resumed){times}\n",
        human_count(t.handshakes),
        t.handshakes_per_sec,
        human_count(t.resumed),
    )
}
