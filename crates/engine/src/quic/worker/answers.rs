//! What ends a request over HTTP/3: its response booked, as the TCP loop
//! books one (latency, first byte, status, the URL's size and checksum),
//! or its failure counted by kind; a request taken back for a fresh
//! connection; and the timeout scan.

use super::*;

impl QuicWorker<'_> {
    /// A request that will go out again: unsent, unissued.
    pub(super) fn take_back(&mut self, r: &Req) {
        let c = self.counters(r.measured);
        c.sent -= 1;
        if r.measured && self.job.quota.is_some() {
            self.issued_measured -= 1;
        }
    }
    /// Request `r` answered by `resp`, whose last byte came at `at` (its
    /// datagram's arrival); not before its first byte did, nor before the
    /// request went out, whatever the clocks say. Returns that end when
    /// the answer freed a place the client's hold is measured on: in the
    /// closed model, in the measured phase.
    pub(super) fn complete(&mut self, r: &Req, resp: Response, at: u64) -> Option<u64> {
        let measured = self.phase_of(r);
        let end = at.max(r.first_rx_ns).max(r.issued_ns);
        let took = end - r.issued_ns;
        self.naps.answered(took);
        if measured && self.schedule.is_some() {
            let corrected = end.saturating_sub(r.intended_ns);
            self.stats
                .latency
                .saturating_record((corrected / 1000).max(1));
            self.stats
                .uncorrected
                .saturating_record((took / 1000).max(1));
        } else if measured {
            self.stats.latency.saturating_record((took / 1000).max(1));
        }
        if measured && r.first_rx_ns > 0 {
            let first = r.first_rx_ns.clamp(r.issued_ns, end) - r.issued_ns;
            self.stats
                .first_byte
                .saturating_record((first / 1000).max(1));
        }
        let error = self.books.check(self.plan.spec, r.target as usize, &resp);
        let c = self.counters(measured);
        c.completed += 1;
        c.body_bytes += resp.body_bytes;
        c.status[(resp.status as usize).min(STATUS_SLOTS - 1)] += 1;
        if let Some(kind) = error {
            c.errors[kind.index()] += 1;
        }
        if measured {
            self.tick(1, error.is_some() as u64, 0);
            if self.job.quota.is_some() {
                self.done_measured += 1;
            }
        }
        (measured && self.schedule.is_none()).then_some(end)
    }
    /// Closed model: `issued` requests took places on `c` that answers had
    /// freed; the time each place stood empty is the client's hold, as
    /// over TCP (from the freed places' mean arrival when fewer were
    /// issued than were freed).
    pub(super) fn hold_ends(&mut self, c: &mut H3Conn, issued: u64) {
        let (k, held) =
            crate::driver::take_freed(&mut c.freed, &mut c.freed_at_sum, issued, self.now);
        self.stats.hold_ns += held;
        self.stats.holds += k;
    }
    pub(super) fn failed(&mut self, r: &Req, kind: ErrorKind) {
        let measured = self.phase_of(r);
        self.counters(measured).errors[kind.index()] += 1;
        if measured {
            self.tick(0, 1, 0);
            if self.job.quota.is_some() {
                self.done_measured += 1;
            }
        }
    }
    pub(super) fn tick(&mut self, completed: u64, errors: u64, bytes: u64) {
        if !self.plan.spec.timeline {
            return;
        }
        let sec = (self.now.saturating_sub(self.window.warmup_end_ns) / 1_000_000_000) as usize;
        let watched = self.window.running.as_deref().map(|r| (r, self.job.index));
        self.stats
            .tick_timeline(sec, watched, [completed, errors, bytes]);
    }
    /// Connection `c` of slot `i` is gone: what it carried fails, by why.
    pub(super) fn lost(&mut self, mut c: H3Conn, reason: ConnectionError) {
        let kind = self.losses.lost(c.connected, &reason);
        for r in std::mem::take(&mut c.reqs) {
            self.failed(&r, kind);
        }
        self.park(c);
    }
    /// Fails what waited longer than the timeout: a handshake not done
    /// closes its connection, a response not come resets its stream.
    pub(super) fn scan_timeouts(&mut self) {
        let timeout = self.timeout_ns();
        for i in 0..self.conns.len() {
            let Some(mut c) = self.conns[i].take() else {
                continue;
            };
            if !c.connected && self.now.saturating_sub(c.start_ns) > timeout {
                self.losses.handshake_failures += 1;
                let kind = if c.answered {
                    ErrorKind::Tls
                } else {
                    ErrorKind::ConnectTimeout
                };
                for r in std::mem::take(&mut c.reqs) {
                    self.failed(&r, kind);
                }
                self.retire(c);
                continue;
            }
            let mut k = 0;
            while k < c.reqs.len() {
                if self.now.saturating_sub(c.reqs[k].issued_ns) <= timeout {
                    k += 1;
                    continue;
                }
                c.cancel(k);
                let r = c.reqs.swap_remove(k);
                self.failed(&r, ErrorKind::Timeout);
                c.recycle(r);
            }
            self.conns[i] = Some(c);
        }
    }
}
