//! A connection's way out: connecting it (from the next source address),
//! starting its TLS handshake once TCP is up, opening it once TLS is too,
//! and writing its requests (sealed by TLS first, when it has it), whole
//! or in part, with what a write that fails leaves to be read first.

use std::io;

use super::*;

/// How the thread's connections are opened, and how many requests each
/// carries.
pub(crate) struct Dial {
    /// Turns through `spec.sources`, one connect after another.
    source_seq: usize,
    /// Every connection carries one request, written at once, in
    /// cleartext: Nagle has nothing to hold back, so `TCP_NODELAY` is not
    /// set.
    pub(crate) one_write: bool,
    /// Most requests a connection carries (`u64::MAX`: no limit), so the
    /// hot path compares two integers and never looks at an `Option`.
    pub(crate) limit: u64,
}

impl Dial {
    /// `first_conn`: the thread's first connection's global index, where
    /// its turn through the sources starts.
    pub(crate) fn new(spec: &LoadSpec, first_conn: usize) -> Self {
        Dial {
            source_seq: first_conn,
            one_write: spec.connection_limit() == Some(1)
                && spec.tls.is_none()
                && spec.users.is_none(),
            limit: spec.connection_limit().unwrap_or(u64::MAX),
        }
    }

    /// Which of `n` source addresses the next connect comes from, in
    /// turn, when there are any.
    pub(crate) fn next_source(&mut self, n: usize) -> Option<usize> {
        (n > 0).then(|| {
            let k = self.source_seq;
            self.source_seq = k.wrapping_add(1);
            k % n
        })
    }
}

impl Worker<'_> {
    /// Push queued requests out, connecting first if needed.
    pub(super) fn send(&mut self, i: usize) {
        match self.conns[i].state {
            State::Down if self.conns[i].len > 0 => self.connect(i),
            State::Open => self.flush(i),
            _ => {}
        }
    }

    pub(super) fn connect(&mut self, i: usize) {
        let addr = self.plan.spec.targets[0].addr;
        // Every request of one connection goes to one address; with
        // several hosts in a URL list, the first queued request decides.
        let target = if self.conns[i].len > 0 {
            self.conns[i].front().target
        } else {
            0
        };
        self.conns[i].target_of_connect = target;
        let addr = if self.conns[i].len > 0 {
            self.plan.spec.targets[target as usize].addr
        } else {
            addr
        };
        self.conns[i].connect_start_ns = self.now;
        self.conns[i].connect_measured = self.measuring && !self.between_windows;
        self.io_connect(i, addr);
    }

    /// Which of the spec's source addresses the next connect comes from,
    /// in turn, when it has any.
    pub(super) fn next_source_index(&mut self) -> Option<usize> {
        self.dial.next_source(self.plan.spec.sources.len())
    }

    pub(super) fn on_connected(&mut self, i: usize) {
        let now = self.now;
        let measuring = self.measuring;
        let c = &mut self.conns[i];
        if c.ever_connected {
            self.stats.reconnects += 1;
        } else {
            c.ever_connected = true;
            self.books.established += 1;
        }
        let took = now.saturating_sub(c.connect_start_ns);
        if measuring {
            self.stats.connect.saturating_record((took / 1000).max(1));
        }
        self.counters(measuring).connects += 1;
        if self.tls.is_some() {
            self.start_tls(i);
        } else {
            self.open(i);
        }
    }

    /// Connection `i` can carry requests (TCP, and TLS when asked, done).
    pub(super) fn open(&mut self, i: usize) {
        let now = self.now;
        let c = &mut self.conns[i];
        c.state = State::Open;
        // Queued requests waited for the handshake; their latency starts now.
        for k in 0..c.len {
            let s = c.slot(k);
            c.ring[s].issued_ns = now;
        }
        if !self.choose_http(i) {
            return;
        }
        // The closed model tops the connection up to its depth, now that
        // its protocol, and so its depth, is known.
        if self.plan.interval_ns.is_none() && !self.between_windows {
            self.fill(i);
        } else {
            self.flush(i);
        }
    }

    pub(super) fn flush(&mut self, i: usize) {
        if self.between_windows {
            return;
        }
        // HTTP/2 and TLS queue what they send for the backend to write.
        if self.conns[i].proto.h2_on() {
            self.h2_flush(i);
        } else if self.conns[i].proto.has_tls() {
            self.tls_flush(i);
        } else {
            self.io_write_requests(i);
        }
    }

    /// The socket of connection `i` may take more: what its layers could
    /// not send before, and requests not yet written.
    pub(crate) fn writable(&mut self, i: usize) {
        if self.conns[i].proto.has_tls() {
            // Records rustls could not write before, and requests.
            if self.conns[i].state == State::Open {
                self.tls_flush(i);
            } else {
                self.io_send_out(i);
            }
        } else if self.conns[i].proto.h2_on() {
            // Frames that did not fit the socket, and requests.
            self.h2_flush(i);
        } else if self.conns[i].written < self.conns[i].len {
            self.flush(i);
        }
    }

    /// A write on connection `i` failed with `e`. A server may answer
    /// before it has read the whole request (a 413 to a large upload) and
    /// close: its answer waits in the socket ahead of the reset the write
    /// met. So the connection is read out first, at its next visit (a
    /// write may fail inside a read, when TLS or HTTP/2 answers what it
    /// read, and a read must not start inside another), and fails with
    /// the write's error only if it is still there once drained; nothing
    /// more is written on it meanwhile.
    pub(super) fn write_failed(&mut self, i: usize, e: &io::Error) {
        self.conns[i].unwritable = Some(classify_io(e, ErrorKind::Write));
        self.mark_ready(i);
    }

    /// `n` more bytes of connection `i`'s requests are on the wire.
    pub(super) fn wrote(&mut self, i: usize, mut n: usize) {
        let c = &mut self.conns[i];
        while n > 0 && c.written < c.len {
            let f = &c.ring[c.slot(c.written)];
            let len = self.plan.requests.get(f.target, f.last).len();
            let left = len - c.write_off;
            if n >= left {
                n -= left;
                c.written += 1;
                c.write_off = 0;
            } else {
                c.write_off += n;
                n = 0;
            }
        }
    }

    /// The TCP connect of `i` is done: start its handshake.
    pub(crate) fn start_tls(&mut self, i: usize) -> bool {
        let (Some(config), Some(name)) = (
            self.tls.as_ref().map(|t| t.config.clone()),
            self.plan
                .server_names
                .get(self.conns[i].target_of_connect as usize),
        ) else {
            return false;
        };
        let now = self.now;
        match self.conns[i].proto.start_tls(config, name.clone(), now) {
            Ok(()) => {
                self.conns[i].state = State::Handshaking;
                self.io_send_out(i);
                true
            }
            Err(_) => {
                self.fail(i, ErrorKind::Tls);
                false
            }
        }
    }

    /// Hand requests to rustls, which seals them into records, then send
    /// the records: a request counts as written once rustls took it whole.
    pub(crate) fn tls_flush(&mut self, i: usize) {
        if self.between_windows {
            return;
        }
        // Until the handshake is done, the protocol (ALPN's choice) is not
        // known, and nothing may be written but the handshake.
        if self.conns[i].state != State::Open {
            self.io_send_out(i);
            return;
        }
        if self.conns[i].proto.h2_on() {
            self.h2_flush(i);
            return;
        }
        loop {
            let c = &mut self.conns[i];
            if c.written >= c.len || c.peer_closed {
                break;
            }
            let f = c.ring[c.slot(c.written)];
            let req = self.plan.requests.get(f.target, f.last);
            let Some(sealed) = c.proto.seal(&req[c.write_off..]) else {
                return;
            };
            match sealed {
                Ok(0) => break,
                Ok(n) if c.write_off + n == req.len() => {
                    c.written += 1;
                    c.write_off = 0;
                }
                Ok(n) => {
                    // rustls's send buffer is full: the rest goes once
                    // records have left.
                    c.write_off += n;
                    break;
                }
                Err(_) => {
                    self.fail(i, ErrorKind::Tls);
                    return;
                }
            }
        }
        self.io_send_out(i);
    }
}
