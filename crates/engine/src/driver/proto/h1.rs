//! HTTP/1.x on a connection: the plaintext read (after TLS, if any) fed
//! to the connection's exchange (`crate::exchange`, around the sans-IO
//! parser), each response it completes handed back as a `Happened` for
//! the driver's books, and whether requests a server closed on may go out
//! again.

use crate::driver::*;
use crate::exchange::Fault;

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

impl Worker<'_> {
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
        !c.proto.h2_on
            && c.state == State::Open
            && c.carried > c.len as u64
            && c.proto.exchange.is_idle()
            && (0..c.written).all(|k| self.plan.spec.idempotent(c.ring[c.slot(k)].target as usize))
    }
}
