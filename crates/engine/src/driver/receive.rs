//! The receive path, whatever the backend: when a read's bytes reached
//! the socket, the bytes fed to the connection's exchange, and the peer's
//! close.

use super::*;

impl Worker<'_> {
    /// When the data of the read just made reached the socket, on the
    /// monotonic clock; refreshes `now`.
    ///
    /// The stamp's age is taken on its own clock at this very moment and
    /// carried over to the monotonic one, so no clock reading from before
    /// the read (the loop's wake-up, an offset computed then) can bound or
    /// shift it: a read made late, while more of the response kept
    /// arriving, is stamped with its last segment. A stamp ahead of the
    /// wall clock (a step back) counts as arriving now.
    pub(super) fn arrival(&mut self, stamp: Option<u64>) -> u64 {
        let mono = now_ns();
        self.now = mono;
        match stamp {
            Some(s) => mono.saturating_sub(realtime_ns().saturating_sub(s)),
            None => mono,
        }
    }

    /// Parse what was read, which reached the socket at `arrived`. Returns
    /// false when the connection was closed (by the server's `Connection:
    /// close`, or an error) and reading must stop.
    pub(super) fn feed(&mut self, i: usize, mut data: &[u8], epoch: u64, arrived: u64) -> bool {
        if self.conns[i].h2_on {
            return self.h2_input(i, data, epoch, arrived);
        }
        while !data.is_empty() {
            let c = &mut self.conns[i];
            // The first byte is the final answer's, as over HTTP/2: an
            // interim 100 or 103 is sent early precisely because it is
            // cheap, and would make any server look quick to answer.
            if c.exchange.at_status_line() {
                c.first_rx_ns = arrived;
            }
            let fed = c.exchange.feed(data, c.awaiting());
            if c.exchange.skipped_interim() {
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

    pub(super) fn on_eof(&mut self, i: usize, at: u64) {
        if self.conns[i].state == State::Handshaking {
            // Closed before the handshake was done: TLS failed, whatever
            // the server meant by it.
            self.close_and_continue(i, Some(ErrorKind::Tls));
            return;
        }
        if self.conns[i].h2_on {
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
            .tls
            .as_mut()
            .is_some_and(|t| !t.process_new_packets().is_ok_and(|s| s.peer_has_closed()));
        match self.conns[i].exchange.eof() {
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
