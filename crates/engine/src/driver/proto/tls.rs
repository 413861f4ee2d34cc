//! A connection's TLS layer: the handshake begun after the TCP connect,
//! ciphertext read handed to rustls and what it yields handed back one
//! thing at a time (`TlsRead`: plaintext for the HTTP layer, the
//! handshake's end, the server's close, a failure), plaintext sealed into
//! records, and the records left for the backend to write
//! (`Layers::write_out`). The TCP connect and the handshake are timed
//! apart (driver/input.rs); a request's latency starts once its
//! connection can carry it, as without TLS.

use std::io;
use std::sync::Arc;

use super::Layers;
use crate::driver::READ_BUF;

/// The thread's own TLS client (and session cache), and the buffer the
/// plaintext out of its records goes through on its way to the parser.
pub(crate) struct TlsClient {
    pub(crate) config: Arc<rustls::ClientConfig>,
    pub(crate) plain: Vec<u8>,
}

impl TlsClient {
    pub(crate) fn new(spec: &crate::tls::TlsSpec) -> io::Result<Self> {
        Ok(TlsClient {
            config: spec.client_config().map_err(io::Error::other)?,
            plain: vec![0; READ_BUF],
        })
    }
}

/// What a thread learnt of its handshakes, for one window.
#[derive(Default)]
pub(crate) struct TlsStats {
    pub handshakes: u64,
    pub resumed: u64,
    /// Set by the first handshake of the thread; later ones are alike,
    /// since every connection offers the same.
    pub version: Option<&'static str>,
    pub cipher: Option<&'static str>,
    pub alpn: Option<String>,
}

/// What a finished handshake agreed.
pub(crate) struct Agreed<'a> {
    /// A session resumed, rather than a full handshake.
    pub(crate) resumed: bool,
    pub(crate) version: Option<&'static str>,
    pub(crate) cipher: Option<&'static str>,
    /// ALPN's choice, if the server made one.
    pub(crate) alpn: Option<&'a [u8]>,
}

/// What the TLS layer made of the ciphertext it was handed, one thing at
/// a time, for the `Worker` to act on.
pub(crate) enum TlsRead {
    /// `n` bytes of plaintext, for the HTTP layer.
    Plain(usize),
    /// The handshake just ended: the connection can carry requests.
    Handshaken,
    /// The server's close_notify: it sends nothing more.
    Closed,
    /// The connection failed; with `alert`, rustls queued one saying why,
    /// to be sent first.
    Failed { alert: bool },
    /// Every byte handed in is taken and its plaintext drained.
    Drained,
}

impl Layers {
    /// Begin a handshake with `name` at `now`: the client's hello waits
    /// in the layer for the backend to send.
    pub(crate) fn start_tls(
        &mut self,
        config: Arc<rustls::ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
        now: u64,
    ) -> Result<(), rustls::Error> {
        self.tls = Some(Box::new(rustls::ClientConnection::new(config, name)?));
        self.handshake_start_ns = now;
        Ok(())
    }

    /// What the handshake agreed, once there is TLS.
    pub(crate) fn agreed(&self) -> Option<Agreed<'_>> {
        let tls = self.tls.as_ref()?;
        Some(Agreed {
            resumed: tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            version: tls.protocol_version().and_then(|v| v.as_str()),
            cipher: tls
                .negotiated_cipher_suite()
                .and_then(|s| s.suite().as_str()),
            alpn: tls.alpn_protocol(),
        })
    }

    /// Hand plaintext to TLS, which seals it into records for the backend
    /// to send; the bytes rustls took, as far as its buffer allows. None
    /// without TLS.
    pub(crate) fn seal(&mut self, plain: &[u8]) -> Option<io::Result<usize>> {
        let tls = self.tls.as_mut()?;
        Some(io::Write::write(&mut tls.writer(), plain))
    }

    /// The next thing the ciphertext in `rest` (taken from it as read)
    /// yields: plaintext into `plain`, the end of the handshake (while
    /// `handshaking`), the server's close, a failure, or nothing more.
    /// The plaintext is drained before more ciphertext is read, since
    /// rustls refuses records while its plaintext buffer is full.
    pub(crate) fn tls_step(
        &mut self,
        rest: &mut &[u8],
        plain: &mut [u8],
        handshaking: bool,
    ) -> TlsRead {
        let Some(tls) = self.tls.as_mut() else {
            return TlsRead::Drained;
        };
        loop {
            match io::Read::read(&mut tls.reader(), plain) {
                Ok(0) => return TlsRead::Closed,
                Ok(n) => return TlsRead::Plain(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The peer closed without close_notify mid-record.
                Err(_) => return TlsRead::Failed { alert: false },
            }
            if rest.is_empty() {
                return TlsRead::Drained;
            }
            if tls.read_tls(rest).is_err() {
                return TlsRead::Failed { alert: false };
            }
            if tls.process_new_packets().is_err() {
                return TlsRead::Failed { alert: true };
            }
            if handshaking && !tls.is_handshaking() {
                return TlsRead::Handshaken;
            }
        }
    }
}
