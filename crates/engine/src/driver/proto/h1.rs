//! HTTP/1.x on a connection: the plaintext read (after TLS, if any) fed
//! to the connection's exchange (`crate::exchange`, around the sans-IO
//! parser), each response it completes handed to the driver's books in
//! order, and whether requests a server closed on may go out again.

use crate::driver::*;
use crate::exchange::Fault;

impl Worker<'_> {
    /// Parse what was read, which reached the socket at `arrived`. Returns
    /// false when the connection was closed (by the server's `Connection:
    /// close`, or an error) and reading must stop.
    pub(crate) fn feed(&mut self, i: usize, mut data: &[u8], epoch: u64, arrived: u64) -> bool {
        if self.conns[i].proto.h2_on {
            return self.h2_input(i, data, epoch, arrived);
        }
        while !data.is_empty() {
            let c = &mut self.conns[i];
            // The first byte is the final answer's, as over HTTP/2: an
            // interim 100 or 103 is sent early precisely because it is
            // cheap, and would make any server look quick to answer.
            if c.proto.exchange.at_status_line() {
                c.first_rx_ns = arrived;
            }
            let fed = c.proto.exchange.feed(data, c.awaiting());
            if c.proto.exchange.skipped_interim() {
                c.first_rx_ns = arrived;
            }
            match fed {
                Ok((used, Some(resp))) => {
                    data = &data[used..];
                    self.complete(i, resp, arrived);
                    if self.conns[i].epoch != epoch {
                        return false;
                    }
                }
                Ok((used, None)) => data = &data[used..],
                Err(Fault::Unsolicited) => {
                    self.unsolicited(i);
                    return false;
                }
                Err(f) => {
                    self.fail(i, f.kind());
                    return false;
                }
            }
        }
        true
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
        !c.proto.h2_on
            && c.state == State::Open
            && c.carried > c.len as u64
            && c.proto.exchange.is_idle()
            && (0..c.written).all(|k| self.plan.spec.idempotent(c.ring[c.slot(k)].target as usize))
    }
}
