//! What a connection's bytes read come to, whatever the backend that read
//! them: through its protocol layers (TLS, then HTTP/1.x or HTTP/2) to
//! what happened, which is mapped here, in one place, onto the
//! connection's ring and the counters; and what a close by the peer
//! means, by the layer it came under. The layers (proto/) see neither
//! the ring nor the counters: they take bytes and hand back outcomes.

use super::proto::{AtEof, Happened, TlsRead};
use super::*;
use crate::h2::code_slot;

impl Worker<'_> {
    /// Bytes read from connection `i`, which reached the socket at
    /// `arrived`: to TLS when the connection has it, else to HTTP. False
    /// when the connection was closed and reading must stop.
    #[inline]
    pub(crate) fn input(&mut self, i: usize, data: &[u8], epoch: u32, arrived: u64) -> bool {
        // A plain run's worker has no TLS client: its connections' TLS
        // state, on a line a plain response otherwise leaves alone
        // (`Conn`), is not read.
        if self.tls.is_some() && self.conns[i].proto.has_tls() {
            self.tls_input(i, data, epoch, arrived)
        } else {
            self.http_input(i, data, epoch, arrived)
        }
    }

    /// Plaintext of connection `i` (after TLS, if any), which reached the
    /// socket at `arrived`, through its HTTP layer. False when the
    /// connection was closed (by the server's `Connection: close`, or an
    /// error) and reading must stop.
    pub(crate) fn http_input(
        &mut self,
        i: usize,
        mut data: &[u8],
        epoch: u32,
        arrived: u64,
    ) -> bool {
        while !data.is_empty() {
            let c = &mut self.conns[i];
            let awaiting = c.awaiting();
            let (used, ev) = c.proto.http_step(data, awaiting, arrived);
            data = &data[used..];
            if let Some(ev) = ev {
                self.happened(i, ev, arrived);
                if self.conns[i].epoch != epoch {
                    return false;
                }
            }
        }
        if self.conns[i].proto.h2_on() {
            // Acknowledgements, window updates, and the requests that the
            // streams just freed make room for.
            if let Some(h) = self.conns[i].proto.h2_mut() {
                h.replenish();
            }
            self.h2_flush(i);
        }
        self.conns[i].epoch == epoch
    }

    /// What the HTTP layer of connection `i` made of bytes that reached
    /// the socket at `arrived`, onto the connection's ring and the
    /// counters: the one place where the layers' outcomes meet the books.
    #[inline]
    fn happened(&mut self, i: usize, ev: Happened, arrived: u64) {
        match ev {
            Happened::Answer(resp) => self.complete(i, resp, arrived),
            Happened::StreamAnswer { stream, resp } => {
                if self.move_to_head(i, stream) {
                    self.complete(i, resp, arrived);
                }
            }
            Happened::Reset { stream, code } => {
                if self.measuring {
                    self.stats.h2.resets[code_slot(code)] += 1;
                }
                if self.move_to_head(i, stream) {
                    self.fail_head(i, ErrorKind::StreamReset);
                }
            }
            Happened::Malformed { stream } => {
                if self.move_to_head(i, stream) {
                    self.fail_head(i, ErrorKind::H2Protocol);
                }
            }
            Happened::GoAway { last_stream, code } => {
                if self.measuring {
                    self.stats.h2.goaways[code_slot(code)] += 1;
                }
                self.goaway(i, last_stream);
            }
            Happened::Settings { max_streams } => self.h2_settings(i, max_streams),
            Happened::Unsolicited { fatal: true } => self.unsolicited(i),
            // Counted on its own, as over HTTP/1.1; the connection goes on.
            Happened::Unsolicited { fatal: false } => {
                let measuring = self.measuring;
                self.counters(measuring).errors[ErrorKind::Unsolicited.index()] += 1;
            }
            Happened::Failed(kind) => {
                let epoch = self.conns[i].epoch;
                if self.conns[i].proto.h2_on() {
                    self.h2_write(i);
                }
                if self.conns[i].epoch == epoch {
                    self.fail(i, kind);
                }
            }
        }
    }

    /// The peer closed connection `i` (a FIN, or TLS's close_notify) at
    /// `at`: what it means depends on the layer it closed under.
    pub(crate) fn on_eof(&mut self, i: usize, at: u64) {
        if self.conns[i].state == State::Handshaking {
            // Closed before the handshake was done: TLS failed, whatever
            // the server meant by it.
            self.close_and_continue(i, Some(ErrorKind::Tls));
            return;
        }
        if self.conns[i].proto.h2_on() {
            // Streams under way end with the connection; an idle one
            // closed by the server is no error.
            let kind = (self.conns[i].written > 0).then_some(ErrorKind::Closed);
            self.close_and_continue(i, kind);
            return;
        }
        match self.conns[i].proto.h1_at_eof() {
            AtEof::Answer(resp) => {
                let epoch = self.conns[i].epoch;
                self.complete(i, resp, at);
                if self.conns[i].epoch == epoch {
                    self.close_and_continue(i, None);
                }
            }
            AtEof::Idle => {
                // An idle keep-alive connection closed by the server is no
                // error; requests already on the wire to it are, unless
                // they may go out again (`may_resend`).
                let kind = (!self.may_resend(i)).then_some(ErrorKind::Closed);
                self.close_and_continue(i, kind);
            }
            AtEof::Cut(kind) => self.close_and_continue(i, Some(kind)),
        }
    }

    /// Ciphertext read from connection `i`, which reached the socket at
    /// `arrived`: decrypted and fed to the exchange. False when the
    /// connection was closed (an error, a response's `Connection: close`)
    /// and reading must stop.
    pub(crate) fn tls_input(&mut self, i: usize, data: &[u8], epoch: u32, arrived: u64) -> bool {
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
        epoch: u32,
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

    pub(super) fn on_handshaken(&mut self, i: usize) {
        let now = self.now;
        let measuring = self.measuring;
        let c = &mut self.conns[i];
        let took = now.saturating_sub(c.proto.handshake_start_ns());
        let Some(agreed) = c.proto.agreed() else {
            return;
        };
        let t = &mut self.stats.tls;
        if t.version.is_none() {
            t.version = agreed.version;
            t.cipher = agreed.cipher;
            // Once per thread: not a per-request allocation.
            t.alpn = agreed.alpn.map(|p| String::from_utf8_lossy(p).into_owned());
        }
        if measuring {
            t.handshakes += 1;
            t.resumed += u64::from(agreed.resumed);
            self.stats.handshake.saturating_record((took / 1000).max(1));
        }
        self.open(i);
    }

    /// Connection `i` closed cleanly (a FIN, or TLS's close_notify) with
    /// requests on the wire and no byte of their answers read: whether
    /// they go out again rather than fail. A server may close a keep-alive
    /// connection at any moment, and RFC 9112 §9.3.1-2 has a client resend
    /// what it had pipelined, or idempotent requests, that got no answer.
    /// Only on a connection that answered something first: each fresh
    /// connection then moves the run on by an answer, where a server that
    /// closes every connection unanswered would be sent the same requests
    /// for ever, a run of N requests never ending. A reset is not a close:
    /// a server that aborts a connection it read a request from (a worker
    /// that crashed on it) failed that request, and load generators count
    /// it so; resent, the failure would show in no error.
    pub(crate) fn may_resend(&self, i: usize) -> bool {
        let c = &self.conns[i];
        !c.proto.h2_on()
            && c.state == State::Open
            && c.carried > c.len as u64
            && c.proto.h1_idle()
            && (0..c.written).all(|k| self.plan.spec.idempotent(c.ring[c.slot(k)].target as usize))
    }
}
