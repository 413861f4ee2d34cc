//! The engine's refusals in the words of `throng load`'s options: the
//! engine names fields, never flags, so each front end words its own.

use throng_engine::{EngineError, SpecError};

/// A spec the engine refused, in the words of this command's options.
pub fn spec_error(e: &SpecError) -> String {
    match e {
        SpecError::NoTargets => "give a URL to load, or --urls FILE".into(),
        SpecError::Ramp(why) => format!("--stages: {why}"),
        SpecError::NoConnections => "-c must be at least 1".into(),
        SpecError::NoThreads => "-t must be at least 1".into(),
        SpecError::Pipeline(_) => format!(
            "--pipeline must be between 1 and {}",
            throng_engine::spec::MAX_PIPELINE
        ),
        SpecError::Rate(r) => format!(
            "--rate {r:?}: give from {} to {} requests per second",
            throng_engine::spec::MIN_RATE,
            throng_engine::spec::MAX_RATE
        ),
        SpecError::TickWithoutRate => "--tick needs --rate or --stages: it is their schedule's".into(),
        SpecError::Tick(t) => format!(
            "--tick {t:?}: give from {:?} to {:?}",
            throng_engine::spec::MIN_TICK,
            throng_engine::spec::MAX_TICK
        ),
        SpecError::Spin(t) => format!(
            "--spin {t:?}: give from {:?} to {:?}",
            throng_engine::spec::MIN_SPIN,
            throng_engine::spec::MAX_SPIN
        ),
        SpecError::SpinWithoutClosedModel => "--spin waits for the responses of connections                                               sending back to back: --rate and --stages wait                                               for their schedule (and spin when it is nearer                                               than a sleep costs), users for their think times"
            .into(),
        SpecError::RateWithPipeline => {
            "--rate and --pipeline cannot be combined: the schedule is per request".into()
        }
        SpecError::CloseWithPipeline => {
            "--close and --pipeline cannot be combined: a closed connection carries one request"
                .into()
        }
        SpecError::RequestsPerConnection => "--requests-per-connection must be at least 1".into(),
        SpecError::PipelineOverConnectionLimit { pipeline, limit } => format!(
            "--pipeline {pipeline} is deeper than --requests-per-connection {limit}: \
             a connection closes after {limit} requests"
        ),
        SpecError::NoRequests => "-n must be at least 1".into(),
        SpecError::FewerRequestsThanConnections {
            requests,
            connections,
        } => format!(
            "-n {requests} is less than -c {connections}: some connections would never send a request"
        ),
        SpecError::ZeroDuration => "-d must be longer than 0".into(),
        SpecError::ZeroTimeout => "--timeout must be longer than 0".into(),
        SpecError::Method(m) => format!("{m:?} is not an HTTP method"),
        SpecError::HeaderName(h) => format!("header {h:?} has an invalid name"),
        SpecError::HeaderValue(h) => {
            format!("header {h:?} must be on one line, with no control character")
        }
        SpecError::RepeatedHeader(n) => format!("-H {n} is given more than once"),
        SpecError::EmptyHost => "-H Host: has no value; leave it out and throng sends the URL's \
                                 host, or give the name the server should see"
            .into(),
        SpecError::ContentLength { given, body } => format!(
            "-H 'Content-Length: {given}' is not the body's length ({body} bytes): \
             leave it out and throng sends the right one"
        ),
        SpecError::TransferEncoding => {
            "-H Transfer-Encoding cannot be given: throng sends a body with its Content-Length"
                .into()
        }
        SpecError::ConnectionField {
            field,
            per_connection,
        } => match per_connection {
            Some(n) => format!(
                "-H '{field}' cannot be given with --requests-per-connection {n}: \
                 throng tells the server to close on each connection's last request"
            ),
            None => format!("-H '{field}' contradicts --close: give no Connection header, or one that says close"),
        },
        SpecError::Status(s) => format!("--expect-status {s} is not an HTTP status"),
        SpecError::Users(e) => crate::load_sessions::users_error(e),
        SpecError::MixedSchemes => "https:// and http:// URLs cannot be mixed in one load".into(),
        SpecError::TlsWithoutHttps => {
            "TLS options apply to https:// URLs only".into()
        }
        SpecError::ServerName(h) => format!("{h}: not a host name a certificate can carry"),
        SpecError::Tls(e) => crate::load_tls::tls_error(e),
        e @ SpecError::SourceFamily { .. } => {
            crate::load_conn::spec_error(e).unwrap_or_else(|| e.to_string())
        }
        SpecError::UringUnsupported(gap) => {
            format!("--io uring does not drive {gap} yet: use --io epoll")
        }
        e @ (SpecError::Streams(_)
        | SpecError::StreamsWithoutH2
        | SpecError::PipelineWithH2
        | SpecError::Window(_)
        | SpecError::Alpn(_)) => crate::load_h2::spec_error(e).unwrap_or_else(|| e.to_string()),
        SpecError::H3Unsupported(what) => crate::load_h3::unsupported(what),
    }
}

/// Why a run could not start, in the words of this command's options.
pub fn engine_error(e: &EngineError) -> String {
    match e {
        EngineError::Invalid(s) => spec_error(s),
        EngineError::Unreachable { url, addr, source } => {
            format!("{url}: cannot connect to {addr}: {source}")
        }
        EngineError::FileLimit {
            connections,
            needed,
            soft,
            hard,
        } => format!(
            "-c {connections} needs {needed} open files but the limit is {soft} (hard limit {hard}): \
             raise it with `ulimit -n {needed}` (the hard limit is set in /etc/security/limits.conf \
             or with `prlimit --nofile={needed}:{needed} --pid $$` as root), or lower -c"
        ),
        EngineError::Handshake { url, reason } => format!(
            "{url}: TLS handshake failed: {reason}{}",
            if reason.contains("certificate") || reason.contains("Certificate") {
                " (--insecure accepts any certificate, --cacert FILE trusts yours)"
            } else {
                ""
            }
        ),
        e @ EngineError::NoH2 { .. } => {
            crate::load_h2::engine_error(e).unwrap_or_else(|| e.to_string())
        }
        e @ EngineError::Source { .. } => {
            crate::load_conn::engine_error(e).unwrap_or_else(|| e.to_string())
        }
        EngineError::Io(e) => format!("cannot run the load: {e}"),
    }
}
