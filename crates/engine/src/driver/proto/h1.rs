//! HTTP/1.x on a connection: the plaintext read (after TLS, if any) fed
//! to the connection's exchange (`crate::exchange`, around the sans-IO
//! parser), each response it completes handed back as a `Happened`, with
//! when its first byte came.

use crate::exchange::Fault;
use crate::http1::Response;
use crate::result::ErrorKind;

use super::{Happened, Layers};

/// What the server's close (a FIN, or TLS's close_notify) means to
/// HTTP/1.x.
pub(crate) enum AtEof {
    /// The response being read ended with the close (its body delimited
    /// by it).
    Answer(Response),
    /// No response was being read.
    Idle,
    /// The close cut what was being read short.
    Cut(ErrorKind),
}

impl Layers {
    /// HTTP/1.x's share of `http_step`: the exchange parses `data` up to
    /// the end of a response, stamping when its first byte came.
    #[inline]
    pub(crate) fn h1_step(
        &mut self,
        data: &[u8],
        awaiting: bool,
        arrived: u64,
    ) -> (usize, Option<Happened>) {
        // The first byte is the final answer's, as over HTTP/2: an
        // interim 100 or 103 is sent early precisely because it is
        // cheap, and would make any server look quick to answer.
        if self.exchange.at_status_line() {
            self.first_rx_ns = arrived;
        }
        let fed = self.exchange.feed(data, awaiting);
        if self.exchange.skipped_interim() {
            self.first_rx_ns = arrived;
        }
        match fed {
            Ok((used, resp)) => (used, resp.map(Happened::Answer)),
            Err(Fault::Unsolicited) => (data.len(), Some(Happened::Unsolicited { fatal: true })),
            Err(f) => (data.len(), Some(Happened::Failed(f.kind()))),
        }
    }

    /// The server closed the connection: what that makes of the response
    /// being read.
    pub(crate) fn h1_at_eof(&mut self) -> AtEof {
        // RFC 9112 §9.8: over TLS, a body that ends at the close is whole
        // only if the close was the server's close_notify; a bare FIN may
        // be anyone's, and cut the body short (a truncation attack).
        let unsigned = self
            .tls
            .as_mut()
            .is_some_and(|t| !t.process_new_packets().is_ok_and(|s| s.peer_has_closed()));
        match self.exchange.eof() {
            Ok(Some(_)) if unsigned => AtEof::Cut(ErrorKind::Closed),
            Ok(Some(resp)) => AtEof::Answer(resp),
            Ok(None) => AtEof::Idle,
            Err(f) => AtEof::Cut(f.kind()),
        }
    }
}
