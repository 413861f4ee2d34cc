//! What happens when a response is complete or a connection fails:
//! latency recorded, the response checked against what its URL answered
//! first, counters and timeline moved, and the connection closed and
//! reopened when it must be.

use super::*;

impl Worker<'_> {
    /// Response `resp` to the oldest request of connection `i` is complete;
    /// its last byte reached the socket at `arrived`.
    pub(super) fn complete(&mut self, i: usize, resp: Response, arrived: u64) {
        if !self.conns[i].awaiting() {
            // The exchange only completes responses that began while a
            // request was waiting; this keeps the ring sound regardless.
            self.unsolicited(i);
            return;
        }
        // Answered before it was all written: the rest of it cannot follow
        // on this connection. On the ring, a request is counted written
        // when its send is submitted; the oldest request being the last
        // one of a send still in flight is the same case (a 413 to an
        // upload the server stopped reading), since a request the kernel
        // had taken whole would have seen its send complete first.
        let cut_short =
            self.conns[i].written == 0 || (self.conns[i].written == 1 && self.uring_sending(i));
        let c = &mut self.conns[i];
        let f = c.pop();
        if c.written > 0 {
            c.written -= 1;
        }
        let first_rx_ns = c.proto.first_rx_ns();
        let measured = self.phase_of(&f);
        // The response ended when its last byte reached the socket, however
        // long this thread took to read it (rx.rs); and not before its first
        // byte did, nor before the request went out, whatever the stamps say.
        let now = arrived.max(first_rx_ns).max(f.issued_ns);
        let took = now - f.issued_ns;
        self.pace.answered(took);
        if measured {
            let first = (first_rx_ns > 0)
                .then(|| ((first_rx_ns.clamp(f.issued_ns, now) - f.issued_ns) / 1000).max(1));
            let actual = (took / 1000).max(1);
            let st = &mut self.stats;
            // The latency, and the first byte's time when it is recorded
            // apart from it.
            let (latency, first) = if self.plan.interval_ns.is_some() {
                let corrected = (now.saturating_sub(f.intended_ns) / 1000).max(1);
                st.latency.saturating_record(corrected);
                st.uncorrected.saturating_record(actual);
                (corrected, first)
            } else if first == Some(actual) {
                st.whole.saturating_record(actual);
                (actual, None)
            } else {
                st.latency.saturating_record(actual);
                (actual, first)
            };
            if let Some(first) = first {
                st.first_byte.saturating_record(first);
            }
            self.tap_latency(latency);
        }
        if measured && self.plan.interval_ns.is_none() && self.users.is_none() {
            let c = &mut self.conns[i];
            c.freed += 1;
            c.freed_at_sum += now;
        }
        let error = self.books.check(self.plan.spec, f.target as usize, &resp);
        let c = self.counters(measured);
        c.completed += 1;
        c.body_bytes += resp.body_bytes;
        // HTTP/2 frames carry no byte count of a response (0).
        if resp.wire_bytes > 0 {
            c.head_replies += 1;
            c.head_bytes += resp.wire_bytes.saturating_sub(resp.body_bytes);
        }
        c.status[(resp.status as usize).min(STATUS_SLOTS - 1)] += 1;
        if let Some(kind) = error {
            c.errors[kind.index()] += 1;
        }
        if measured {
            self.tick_timeline(1, error.is_some() as u64, 0);
            if self.job.quota.is_some() {
                self.books.done_measured += 1;
            }
        }

        if self.conns[i].proto.h2_on() {
            if let Some(us) = self.users.as_mut() {
                us.release(i);
                let c = &self.conns[i];
                if c.written == 0 && c.proto.h2().is_some_and(|h| h.finished()) {
                    self.close_and_continue(i, None);
                }
                self.user_answered(i, error.is_none());
                return;
            }
            self.after_stream(i);
            return;
        }
        // The connection's last request (every request, without keep-alive)
        // asked for `Connection: close` itself: the connection ends after
        // this response even if the server did not say so (RFC 9112 §9.6).
        let close = !resp.keep_alive || f.last || cut_short;
        if let Some(us) = self.users.as_mut() {
            us.release(i);
            if close {
                self.close_and_continue(i, None);
            }
            self.user_answered(i, error.is_none());
            return;
        }
        if close {
            self.close_and_continue(i, None);
            return;
        }
        self.go_on(i);
    }

    /// Closed model: `issued` requests took places on connection `i` that
    /// answers had freed; the time each place stood empty is the client's
    /// hold (from the freed places' mean arrival, when fewer were issued
    /// than were freed: a pipeline's refill waits for half its depth).
    pub(super) fn hold_ends(&mut self, i: usize, issued: usize) {
        let now = self.now;
        let c = &mut self.conns[i];
        let (k, held) = super::take_freed(&mut c.freed, &mut c.freed_at_sum, issued as u64, now);
        self.stats.hold_ns += held;
        self.stats.holds += k;
    }

    pub(super) fn tick_timeline(&mut self, completed: u64, errors: u64, bytes: u64) {
        if !self.plan.spec.timeline {
            return;
        }
        let sec = (self.now.saturating_sub(self.window.warmup_end_ns) / 1_000_000_000) as usize;
        let watched = self.window.running.as_deref().map(|r| (r, self.job.index));
        self.stats
            .tick_timeline(sec, watched, [completed, errors, bytes]);
    }

    /// A response began on connection `i` while no request was waiting for
    /// one. It is counted on its own (it fails no request: none is on the
    /// wire), and the connection is closed, since which request any later
    /// byte answers can no longer be told; queued requests go out on a
    /// fresh connection.
    pub(super) fn unsolicited(&mut self, i: usize) {
        let measuring = self.measuring;
        self.counters(measuring).errors[ErrorKind::Unsolicited.index()] += 1;
        if measuring {
            self.tick_timeline(0, 1, 0);
        }
        self.close_and_continue(i, None);
    }

    /// Count every request on the connection as failed with `kind`, close
    /// it, and carry on with fresh connections.
    pub(super) fn fail(&mut self, i: usize, kind: ErrorKind) {
        // A response that cannot be read fails its own request. Those
        // behind it on a pipeline were never answered, by a server that
        // may well have done nothing wrong with them: they go out again on
        // a fresh connection, as after a response that closes, rather than
        // count one malformed answer as a pipeline's worth of them.
        let c = &mut self.conns[i];
        if kind == ErrorKind::Parse && !c.proto.h2_on() && c.written > 1 {
            let f = c.pop();
            c.written -= 1;
            let measured = self.phase_of(&f);
            self.count_failed(measured, kind);
            self.close_and_continue(i, None);
            return;
        }
        self.close_and_continue(i, Some(kind));
    }

    /// A request that reached the wire ended without a response.
    pub(super) fn count_failed(&mut self, measured: bool, kind: ErrorKind) {
        self.counters(measured).errors[kind.index()] += 1;
        if measured {
            self.tick_timeline(0, 1, 0);
            if self.job.quota.is_some() {
                self.books.done_measured += 1;
            }
        }
    }

    /// Close connection `i`. Requests on the wire count as errors of `kind`
    /// (when given); requests never written, or written after the server
    /// announced `Connection: close`, are taken back unissued.
    pub(super) fn close_and_continue(&mut self, i: usize, kind: Option<ErrorKind>) {
        // A server may close an idle keep-alive connection at any moment,
        // including just as a window's first request went out on it: that
        // request was never seen, and goes out again on a fresh connection
        // as if the close had been noticed first.
        let kind = match kind {
            Some(ErrorKind::Closed | ErrorKind::Reset) if self.conns[i].stale => None,
            // A server that drops the connection mid-handshake failed TLS,
            // whether its close came as a FIN or, with our hello unread,
            // as a reset.
            Some(ErrorKind::Closed | ErrorKind::Reset | ErrorKind::Read | ErrorKind::Write)
                if self.conns[i].state == State::Handshaking =>
            {
                Some(ErrorKind::Tls)
            }
            // A reset reported with the connect's own result came after the
            // server accepted (a refusal is its own kind): over TLS, the
            // server accepted and dropped the connection before its
            // handshake could finish, which is the same failure as above,
            // merely noticed before the client's hello went out.
            Some(ErrorKind::Reset)
                if self.conns[i].state == State::Connecting && self.tls.is_some() =>
            {
                Some(ErrorKind::Tls)
            }
            k => k,
        };
        let was_connecting = matches!(self.conns[i].state, State::Connecting | State::Handshaking);
        // HTTP/2 counts its own (`retried`, above a GOAWAY's last stream).
        let h1 = !self.conns[i].proto.h2_on();
        let mut failed_here = 0;
        let connect_error = kind.is_some_and(|k| {
            matches!(
                k,
                ErrorKind::ConnectRefused
                    | ErrorKind::ConnectTimeout
                    | ErrorKind::AddrUnavailable
                    | ErrorKind::ConnectOther
            )
        });
        while self.conns[i].len > 0 {
            // A request the server stopped reading part-way (an upload to
            // a server that never reads) reached the wire as much as a
            // whole one: failing it must count, or such a server would
            // time out every request and show none as an error.
            let c = &mut self.conns[i];
            let written = c.written > 0 || std::mem::take(&mut c.write_off) > 0;
            let f = c.pop();
            if c.written > 0 {
                c.written -= 1;
            }
            let measured = self.phase_of(&f);
            // A connect failure fails every queued request; any other failure
            // fails only what reached the wire.
            let failed = match kind {
                Some(_) if connect_error || was_connecting => true,
                Some(_) => written,
                None => false,
            };
            if failed {
                failed_here += 1;
                self.count_failed(measured, kind.expect("failed implies a kind"));
            } else if !self.between_windows {
                // Taken back from the phase that issued it. A session's drain
                // takes nothing back: the window that issued it has been
                // handed over, with this request in flight at its end.
                let c = self.counters(f.measured);
                c.sent -= 1;
                // It reached the server, which may have served it: said,
                // so that a server's own count above `sent` is explained.
                if written && h1 {
                    c.resent += 1;
                }
                if measured && self.job.quota.is_some() {
                    self.books.issued_measured -= 1;
                }
                // It goes out again as it was: a user's request is kept
                // by its session, any other by the order's next issue.
                if self.users.is_none() {
                    self.targets.take_back(f.target);
                }
            }
        }
        self.shut(i);
        if self.users.is_some() {
            // A request taken back unfailed goes out again on a fresh
            // connection; a failed one fails its session.
            if failed_here > 0 {
                self.user_answered(i, false);
            } else {
                self.fill(i);
            }
            return;
        }
        if self.plan.interval_ns.is_some() {
            self.schedule(i);
        } else {
            self.fill(i);
        }
    }

    /// Close connection `i` and forget what was on it.
    pub(super) fn shut(&mut self, i: usize) {
        self.io_close(i);
        let connected = matches!(self.conns[i].state, State::Open | State::Handshaking);
        if connected && self.conns[i].connect_measured && self.measuring && !self.between_windows {
            let life = self.now.saturating_sub(self.conns[i].connect_start_ns) / 1000;
            self.stats.conn_life.saturating_record(life.max(1));
        }
        let c = &mut self.conns[i];
        c.proto.shut();
        c.state = State::Down;
        c.head = 0;
        c.len = 0;
        c.written = 0;
        c.write_off = 0;
        c.epoch = c.epoch.wrapping_add(1);
        c.peer_closed = false;
        c.unwritable = None;
        c.carried = 0;
        c.stale = false;
    }
}
