//! The engine's tests play the test kit's scripted server, a thread per
//! connection starting its part once the connection has sent its first
//! request; what is the engine's own is the spec aimed at it.

// Each test binary uses its own part of this module.
#![allow(dead_code, unused_imports)]

use std::net::SocketAddr;
use std::ops::Deref;

use throng_engine::{IoBackend, LoadSpec, Target};
use throng_testkit::http::{self, Options};

pub use throng_testkit::http::{answer, Conn as Peer, Tally, OK};

/// A loopback server that plays `play` on every connection that sends a
/// request, until dropped.
pub struct Server(http::Server);

impl Server {
    pub fn start(play: fn(&mut Peer)) -> Server {
        // A plain socket, as a real server's: writes coalesce under Nagle,
        // and a write waits as long as the client does not read, which is
        // what a flood or a large answer tests.
        let opts = Options {
            nodelay: false,
            write_timeout: None,
            ..Options::default()
        };
        Server(http::Server::on_request(opts, play))
    }

    /// A closed-model spec of one connection on one thread.
    pub fn spec(&self) -> LoadSpec {
        spec_to(self.addr)
    }
}

impl Deref for Server {
    type Target = http::Server;

    fn deref(&self) -> &http::Server {
        &self.0
    }
}

/// A closed-model spec of `GET /` from `addr`, on one connection and one
/// thread, on the backend `THRONG_TEST_IO` names.
pub fn spec_to(addr: SocketAddr) -> LoadSpec {
    let mut spec = LoadSpec::new(vec![Target::http(addr, "/")]);
    spec.connections = 1;
    spec.threads = 1;
    spec.io = io_from_env();
    spec
}

/// The I/O backend the tests run on: epoll, or io_uring with
/// `THRONG_TEST_IO=uring`, so one suite checks both.
pub fn io_from_env() -> IoBackend {
    match std::env::var("THRONG_TEST_IO").as_deref() {
        Ok("uring") => IoBackend::Uring,
        _ => IoBackend::Epoll,
    }
}

/// A rustls server's config for `localhost` over the test kit's
/// self-signed certificate, for a TLS server played in the test.
pub fn tls_server_config() -> std::sync::Arc<rustls::ServerConfig> {
    let pair = throng_testkit::cert::localhost();
    let cert = rustls::pki_types::CertificateDer::from(pair.cert_der);
    let pkey = rustls::pki_types::PrivateKeyDer::Pkcs8(pair.key_der.into());
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], pkey)
            .unwrap(),
    )
}

/// An `https://localhost` load of `addr` that trusts any certificate: one
/// connection on one thread, a 3 s timeout, ended by `stop`.
pub fn https_spec(addr: SocketAddr, stop: throng_engine::Stop) -> LoadSpec {
    let port = addr.port();
    let mut spec = LoadSpec::new(vec![Target::new(
        addr,
        format!("localhost:{port}"),
        "/".to_string(),
        format!("https://localhost:{port}/"),
    )]);
    spec.tls = Some(throng_engine::tls::TlsSpec {
        insecure: true,
        ..Default::default()
    });
    spec.connections = 1;
    spec.threads = 1;
    spec.timeout = std::time::Duration::from_secs(3);
    spec.stop = stop;
    spec
}
