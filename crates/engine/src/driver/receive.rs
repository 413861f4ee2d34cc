//! The receive path: a readable connection read within the turn's budget,
//! each read stamped with when its bytes reached the socket, the bytes fed
//! to the connection's exchange, and the peer's close.

use super::*;

impl Worker<'_> {
    pub(super) fn on_event(&mut self, i: usize, readable: bool, closed: bool) {
        if i >= self.conns.len() {
            return;
        }
        match self.conns[i].state {
            State::Down => {}
            State::Connecting => {
                let c = &mut self.conns[i];
                let Some(stream) = c.stream.as_mut() else {
                    return;
                };
                match stream.take_error() {
                    Ok(Some(e)) | Err(e) => self.fail(i, classify_connect(&e)),
                    Ok(None) => match stream.peer_addr() {
                        Ok(_) => {
                            self.on_connected(i);
                            if closed {
                                self.conns[i].peer_closed = true;
                            }
                            if readable && self.conns[i].state == State::Open {
                                self.read(i);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                        Err(e) => self.fail(i, classify_connect(&e)),
                    },
                }
            }
            State::Handshaking | State::Open => {
                if closed {
                    self.conns[i].peer_closed = true;
                }
                if self.conns[i].tls.is_some() {
                    // Records rustls could not write before, and requests.
                    if self.conns[i].state == State::Open {
                        self.tls_flush(i);
                    } else {
                        self.tls_write(i);
                    }
                } else if self.conns[i].h2_on {
                    // Frames that did not fit the socket, and requests.
                    self.h2_flush(i);
                } else if self.conns[i].written < self.conns[i].len {
                    self.flush(i);
                }
                if readable && self.conns[i].state != State::Down {
                    self.read(i);
                }
            }
        }
    }

    /// Read what connection `i` has, up to `READS_PER_VISIT` reads and the
    /// end of the turn; a connection that may have more is visited again
    /// next turn. Once the peer's FIN was reported (`peer_closed`), reading
    /// goes on to the end of the stream, over as many visits as it takes:
    /// no later edge would report it.
    pub(super) fn read(&mut self, i: usize) {
        let closed = self.conns[i].peer_closed;
        let mut buf = std::mem::take(&mut self.buf);
        let epoch = self.conns[i].epoch;
        let mut reads = 0;
        while let Some(stream) = self.conns[i].stream.as_ref() {
            if reads == READS_PER_VISIT || self.now >= self.turn_end_ns {
                self.mark_ready(i);
                break;
            }
            reads += 1;
            match rx::recv_stamped(stream.as_raw_fd(), &mut buf) {
                Ok((0, _)) => {
                    // A FIN carries no stamp: it arrived by now, which is
                    // the latest it can have and so never shortens anything.
                    self.now = now_ns();
                    let at = self.now;
                    self.on_eof(i, at);
                    break;
                }
                Ok((n, stamp)) => {
                    self.conns[i].stale = false;
                    let arrived = self.arrival(stamp);
                    let measuring = self.read_phase(i);
                    self.counters(measuring).bytes_read += n as u64;
                    if measuring {
                        self.tick_timeline(0, 0, n as u64);
                    }
                    let more = if self.conns[i].tls.is_some() {
                        self.tls_input(i, &buf[..n], epoch, arrived)
                    } else {
                        self.feed(i, &buf[..n], epoch, arrived)
                    };
                    if !more {
                        break;
                    }
                    // After a failed write, the socket is read to its
                    // end, whose error or EOF ends the connection.
                    if n < buf.len() && !closed && self.conns[i].unwritable.is_none() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Some(kind) = self.conns[i].unwritable {
                        self.fail(i, kind);
                    }
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(i, classify_io(&e, ErrorKind::Read));
                    break;
                }
            }
        }
        self.buf = buf;
    }

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
