//! HTTP/1.x on a connection: the plaintext read (after TLS, if any) fed
//! to the connection's exchange (`crate::exchange`, around the sans-IO
//! parser), each response it completes handed back as a `Happened`, with
//! when its first byte came.

use crate::exchange::Fault;

use super::{Happened, Layers};

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
}
