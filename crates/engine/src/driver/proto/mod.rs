//! The protocol layers between a connection's bytes and its answers,
//! whatever the backend that moved them: TLS (tls.rs) between the socket
//! and HTTP, then HTTP/1.x (h1.rs, the exchange) or HTTP/2 (h2.rs, the
//! frames), which ALPN or the spec chose when the connection opened. Each
//! layer's per-connection state is its own (rustls's connection, the
//! `Exchange`, the `H2` session) and sits in the connection's `Conn`.
//! The HTTP layers take bytes and hand back what happened (`Happened`:
//! a response, a reset, a GOAWAY, a failure), which the `Worker` maps onto
//! its ring and counters in one place (`happened`); the bytes a layer
//! queues (TLS's records, HTTP/2's frames) wait in it for the backend to
//! write (`Layers::write_out`), so no layer touches a socket.

use std::io::{self, Write};

use crate::driver::*;
use crate::exchange::Exchange;
use crate::h2::{code_slot, H2};
use crate::http1::{ParserConfig, Response};

pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod tls;

pub(crate) use h2::H2Stats;
pub(crate) use tls::{TlsClient, TlsStats};

/// What the HTTP layer made of the bytes it was handed. The `Worker`
/// maps each onto its connection's ring and its counters in one place
/// (`Worker::happened`); no layer sees either.
pub(crate) enum Happened {
    /// HTTP/1.x: the oldest request's response is whole.
    Answer(Response),
    /// HTTP/2: the response on `stream` is whole.
    StreamAnswer { stream: u32, resp: Response },
    /// HTTP/2: the server reset `stream` (RST_STREAM) with `code`.
    Reset { stream: u32, code: u32 },
    /// HTTP/2: `stream`'s response was malformed; the layer reset it.
    Malformed { stream: u32 },
    /// HTTP/2: the server processes no stream above `last_stream`.
    GoAway { last_stream: u32, code: u32 },
    /// HTTP/2: the server's SETTINGS came, with its limit on concurrent
    /// streams (`u32::MAX`: none said).
    Settings { max_streams: u32 },
    /// A response no request asked for. `fatal` over HTTP/1.x, where
    /// which request any later byte answers can no longer be told; over
    /// HTTP/2 streams are told apart by their ids.
    Unsolicited { fatal: bool },
    /// The connection cannot go on. What the layer queued to say why
    /// (HTTP/2's GOAWAY) goes out first.
    Failed(ErrorKind),
}

/// A connection's protocol layers, each one's state its own.
pub(crate) struct Layers {
    /// TLS, on an `https://` connection.
    pub(crate) tls: Option<Box<rustls::ClientConnection>>,
    /// When its handshake began, for its timeout and its time.
    pub(crate) handshake_start_ns: u64,
    /// When the read that brought the first byte of the response being
    /// read reached the socket: that response cannot have ended earlier.
    pub(crate) first_rx_ns: u64,
    /// HTTP/1.x: which request a response answers, and its parser.
    pub(crate) exchange: Exchange,
    /// HTTP/2, kept from one connection to the next of the slot; `h2_on`
    /// when the current connection speaks it.
    pub(crate) h2: Option<Box<H2>>,
    pub(crate) h2_on: bool,
}

impl Layers {
    pub(crate) fn new(cfg: ParserConfig) -> Self {
        Layers {
            tls: None,
            handshake_start_ns: 0,
            first_rx_ns: 0,
            exchange: Exchange::new(cfg),
            h2: None,
            h2_on: false,
        }
    }

    /// Take `data`, which reached the socket at `arrived`, up to the first
    /// thing that happened; `awaiting`: a request waits for its answer.
    /// Returns the bytes taken and what happened, if anything did.
    #[inline]
    pub(crate) fn http_step(
        &mut self,
        data: &[u8],
        awaiting: bool,
        arrived: u64,
    ) -> (usize, Option<Happened>) {
        if self.h2_on {
            self.h2_step(data, arrived)
        } else {
            self.h1_step(data, awaiting, arrived)
        }
    }

    /// Write what the layers queued for the wire into `to`, the socket the
    /// backend owns: TLS's records on a TLS connection, else HTTP/2's
    /// frames. None when nothing is queued. No layer holds a socket, so a
    /// backend that sends otherwise (a ring's send, a datagram) takes the
    /// same bytes.
    #[inline]
    pub(crate) fn write_out(&mut self, to: &mut impl Write) -> Option<io::Result<usize>> {
        if let Some(tls) = self.tls.as_mut() {
            return tls.wants_write().then(|| tls.write_tls(to));
        }
        let h = self.h2.as_mut().filter(|_| self.h2_on)?;
        let out = h.pending();
        if out.is_empty() {
            return None;
        }
        let res = to.write(out);
        if let Ok(n) = res {
            h.written(n);
        }
        Some(res)
    }

    /// Hand HTTP/2's queued frames to TLS, which seals them into records
    /// for the backend to send, as far as rustls's buffer takes them.
    pub(crate) fn seal_h2(&mut self) -> io::Result<()> {
        let (Some(tls), Some(h)) = (self.tls.as_mut(), self.h2.as_mut()) else {
            return Ok(());
        };
        loop {
            let out = h.pending();
            if out.is_empty() {
                return Ok(());
            }
            match tls.writer().write(out) {
                Ok(0) => return Ok(()),
                Ok(n) => h.written(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Worker<'_> {
    /// Bytes read from connection `i`, which reached the socket at
    /// `arrived`: to TLS when the connection has it, else to HTTP. False
    /// when the connection was closed and reading must stop.
    #[inline]
    pub(crate) fn input(&mut self, i: usize, data: &[u8], epoch: u64, arrived: u64) -> bool {
        if self.conns[i].proto.tls.is_some() {
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
        epoch: u64,
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
        if self.conns[i].proto.h2_on {
            // Acknowledgements, window updates, and the requests that the
            // streams just freed make room for.
            if let Some(h) = self.conns[i].proto.h2.as_mut() {
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
                if self.conns[i].proto.h2_on {
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
        if self.conns[i].proto.h2_on {
            // Streams under way end with the connection; an idle one
            // closed by the server is no error.
            let kind = (self.conns[i].written > 0).then_some(ErrorKind::Closed);
            self.close_and_continue(i, kind);
            return;
        }
        // RFC 9112 §9.8: over TLS, a body that ends at the close is whole
        // only if the close was the server's close_notify; a bare FIN may
        // be anyone's, and cut the body short (a truncation attack).
        let unsigned = self.conns[i]
            .proto
            .tls
            .as_mut()
            .is_some_and(|t| !t.process_new_packets().is_ok_and(|s| s.peer_has_closed()));
        match self.conns[i].proto.exchange.eof() {
            Ok(Some(_)) if unsigned => self.close_and_continue(i, Some(ErrorKind::Closed)),
            Ok(Some(resp)) => {
                let epoch = self.conns[i].epoch;
                self.complete(i, resp, at);
                if self.conns[i].epoch == epoch {
                    self.close_and_continue(i, None);
                }
            }
            Ok(None) => {
                // An idle keep-alive connection closed by the server is no
                // error; requests already on the wire to it are, unless
                // they may go out again (`may_resend`).
                let kind = (!self.may_resend(i)).then_some(ErrorKind::Closed);
                self.close_and_continue(i, kind);
            }
            Err(f) => self.close_and_continue(i, Some(f.kind())),
        }
    }
}
