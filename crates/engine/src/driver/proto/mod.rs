//! The protocol layers between a connection's bytes and its answers,
//! whatever the backend that moved them: TLS (tls.rs) between the socket
//! and HTTP, then HTTP/1.x (h1.rs, the exchange) or HTTP/2 (h2.rs, the
//! frames), which ALPN or the spec chose when the connection opened. Each
//! layer's per-connection state is its own (rustls's connection, the
//! `Exchange`, the `H2` session) and sits in the connection's `Conn`.
//!
//! A layer sees neither the `Worker`, nor the connection's ring, nor the
//! counters, nor a socket: it takes bytes and hands back what happened,
//! one thing at a time, as a small enum (`Happened` from HTTP: a response,
//! a reset, a GOAWAY, a failure; `TlsRead` from TLS: plaintext, the
//! handshake's end, a close), which the `Worker` maps onto its ring and
//! counters in one place (driver/input.rs); the bytes a layer queues
//! (TLS's records, HTTP/2's frames) wait in it for the backend to write
//! (`Layers::write_out`). So a backend that moves bytes otherwise (a
//! ring's sends, a datagram socket) plugs in with no layer changed.

use std::io::{self, Write};

use crate::exchange::Exchange;
use crate::h2::H2;
use crate::http1::{ParserConfig, Response};
use crate::result::ErrorKind;

pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod tls;

pub(crate) use h1::AtEof;
pub(crate) use h2::H2Stats;
pub(crate) use tls::{TlsClient, TlsRead, TlsStats};

/// What the HTTP layer made of the bytes it was handed. The `Worker`
/// maps each onto its connection's ring and its counters in one place
/// (`Worker::happened`, input.rs); no layer sees either.
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
/// In the order a keep-alive response reads them, after its connection's
/// own fields (`Conn`).
#[repr(C)]
pub(crate) struct Layers {
    /// When the read that brought the first byte of the response being
    /// read reached the socket: that response cannot have ended earlier.
    first_rx_ns: u64,
    h2_on: bool,
    /// HTTP/1.x: which request a response answers, and its parser.
    exchange: Exchange,
    /// TLS, on an `https://` connection. Among the fields a plain
    /// response does not read: the worker asks whether it has a TLS
    /// client at all before asking the connection (`Worker::input`).
    tls: Option<Box<rustls::ClientConnection>>,
    /// HTTP/2, kept from one connection to the next of the slot; `h2_on`
    /// when the current connection speaks it.
    h2: Option<Box<H2>>,
    /// When its handshake began, for its timeout and its time.
    handshake_start_ns: u64,
}

impl Layers {
    /// Where the fields a plain HTTP/1.x response reads end.
    /// (The layout test of `driver::Conn` reads it.)
    #[cfg(test)]
    pub(crate) const HOT_END: usize = std::mem::offset_of!(Layers, exchange) + Exchange::HOT_END;

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

    /// The connection has TLS (its handshake begun, or done).
    #[inline]
    pub(crate) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The connection speaks HTTP/2.
    #[inline]
    pub(crate) fn h2_on(&self) -> bool {
        self.h2_on
    }

    /// The slot's HTTP/2 session, kept from one connection to the next:
    /// whether the current one speaks it is `h2_on`.
    #[inline]
    pub(crate) fn h2(&self) -> Option<&H2> {
        self.h2.as_deref()
    }

    #[inline]
    pub(crate) fn h2_mut(&mut self) -> Option<&mut H2> {
        self.h2.as_deref_mut()
    }

    /// When the TLS handshake began.
    pub(crate) fn handshake_start_ns(&self) -> u64 {
        self.handshake_start_ns
    }

    /// When the read that brought the first byte of the response just
    /// completed reached the socket.
    #[inline]
    pub(crate) fn first_rx_ns(&self) -> u64 {
        self.first_rx_ns
    }

    /// HTTP/1.x is between responses, no byte of the next one read.
    pub(crate) fn h1_idle(&self) -> bool {
        self.exchange.is_idle()
    }

    /// The connection is open: HTTP/1.x's exchange starts afresh, and
    /// HTTP/2 is spoken when `h2` gives its session's config and header
    /// table size.
    pub(crate) fn open(&mut self, h2: Option<(crate::h2::Config, usize)>) {
        self.exchange.reset();
        self.h2_on = h2.is_some();
        if let Some((cfg, table)) = h2 {
            self.h2
                .get_or_insert_with(|| Box::new(H2::new(cfg, table)))
                .start();
        }
    }

    /// The connection closed: its TLS goes with it, and HTTP/1.x's exchange
    /// starts afresh; HTTP/2's session stays, for the slot's next one.
    pub(crate) fn shut(&mut self) {
        self.tls = None;
        self.h2_on = false;
        self.exchange.reset();
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
