//! A connection's TLS layer on the driver's loop: the handshake after the
//! TCP connect, ciphertext read from the socket handed to rustls and the
//! plaintext it yields fed to the HTTP exchange, requests handed to rustls
//! and its records left for the backend to write (`Layers::write_out`):
//! no layer touches a socket. The TCP connect and the handshake are
//! timed apart; a request's latency starts once its connection can carry
//! it, as without TLS.

use std::io;

use crate::driver::*;

/// The thread's own TLS client (and session cache), and the buffer the
/// plaintext out of its records goes through on its way to the parser.
pub(crate) struct TlsClient {
    config: Arc<rustls::ClientConfig>,
    plain: Vec<u8>,
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

impl Worker<'_> {
    /// The TCP connect of `i` is done: start its handshake.
    pub(crate) fn start_tls(&mut self, i: usize) -> bool {
        let (Some(config), Some(name)) = (
            self.tls.as_ref().map(|t| t.config.clone()),
            self.plan
                .server_names
                .get(self.conns[i].target_of_connect as usize),
        ) else {
            return false;
        };
        let now = self.now;
        match self.conns[i].proto.start_tls(config, name.clone(), now) {
            Ok(()) => {
                self.conns[i].state = State::Handshaking;
                self.io_send_out(i);
                true
            }
            Err(_) => {
                self.fail(i, ErrorKind::Tls);
                false
            }
        }
    }

    /// Hand requests to rustls, which seals them into records, then send
    /// the records: a request counts as written once rustls took it whole.
    pub(crate) fn tls_flush(&mut self, i: usize) {
        if self.between_windows {
            return;
        }
        // Until the handshake is done, the protocol (ALPN's choice) is not
        // known, and nothing may be written but the handshake.
        if self.conns[i].state != State::Open {
            self.io_send_out(i);
            return;
        }
        if self.conns[i].proto.h2_on {
            self.h2_flush(i);
            return;
        }
        loop {
            let c = &mut self.conns[i];
            if c.written >= c.len || c.peer_closed {
                break;
            }
            let f = c.ring[c.slot(c.written)];
            let req = self.plan.requests.get(f.target, f.last);
            let Some(sealed) = c.proto.seal(&req[c.write_off..]) else {
                return;
            };
            match sealed {
                Ok(0) => break,
                Ok(n) if c.write_off + n == req.len() => {
                    c.written += 1;
                    c.write_off = 0;
                }
                Ok(n) => {
                    // rustls's send buffer is full: the rest goes once
                    // records have left.
                    c.write_off += n;
                    break;
                }
                Err(_) => {
                    self.fail(i, ErrorKind::Tls);
                    return;
                }
            }
        }
        self.io_send_out(i);
    }

    /// Ciphertext read from connection `i`, which reached the socket at
    /// `arrived`: decrypted and fed to the exchange. False when the
    /// connection was closed (an error, a response's `Connection: close`)
    /// and reading must stop.
    pub(crate) fn tls_input(&mut self, i: usize, data: &[u8], epoch: u64, arrived: u64) -> bool {
        let mut rest = data;
        let Some(tls) = self.tls.as_mut() else {
            return false;
        };
        let mut plain = std::mem::take(&mut tls.plain);
        let ok = self.tls_input_with(i, &mut rest, epoch, arrived, &mut plain);
        if let Some(tls) = self.tls.as_mut() {
            tls.plain = plain;
        }
        ok
    }

    fn tls_input_with(
        &mut self,
        i: usize,
        rest: &mut &[u8],
        epoch: u64,
        arrived: u64,
        plain: &mut [u8],
    ) -> bool {
        loop {
            let handshaking = self.conns[i].state == State::Handshaking;
            match self.conns[i].proto.tls_step(rest, plain, handshaking) {
                TlsRead::Plain(n) => {
                    if !self.http_input(i, &plain[..n], epoch, arrived) {
                        return false;
                    }
                }
                TlsRead::Handshaken => {
                    self.on_handshaken(i);
                    if self.conns[i].epoch != epoch {
                        return false;
                    }
                }
                TlsRead::Closed => {
                    // close_notify: the server sends nothing more, so the
                    // exchange ends here as at a FIN, which may not follow
                    // (a server can keep TCP open, waiting for the
                    // client's own close_notify): waiting for it left a
                    // request unanswered until its timeout.
                    self.on_eof(i, arrived);
                    return false;
                }
                TlsRead::Failed { alert } => {
                    // The alert rustls queued tells the server why.
                    if alert {
                        self.io_send_out(i);
                    }
                    if self.conns[i].epoch == epoch {
                        self.fail(i, ErrorKind::Tls);
                    }
                    return false;
                }
                TlsRead::Drained => break,
            }
        }
        // Key updates, session tickets' acknowledgements, requests queued
        // while records were being read.
        if self.conns[i].written < self.conns[i].len {
            self.tls_flush(i);
        } else {
            self.io_send_out(i);
        }
        self.conns[i].epoch == epoch
    }

    fn on_handshaken(&mut self, i: usize) {
        let now = self.now;
        let measuring = self.measuring;
        let c = &mut self.conns[i];
        let took = now.saturating_sub(c.proto.handshake_start_ns);
        let Some(tls) = c.proto.tls.as_ref() else {
            return;
        };
        let resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        let t = &mut self.stats.tls;
        if t.version.is_none() {
            t.version = tls.protocol_version().and_then(|v| v.as_str());
            t.cipher = tls
                .negotiated_cipher_suite()
                .and_then(|s| s.suite().as_str());
            // Once per thread: not a per-request allocation.
            t.alpn = tls
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned());
        }
        if measuring {
            t.handshakes += 1;
            t.resumed += u64::from(resumed);
            self.stats.handshake.saturating_record((took / 1000).max(1));
        }
        self.open(i);
    }
}
