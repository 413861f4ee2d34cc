//! HTTP/2's streams on a connection's ring: which connections speak it
//! (ALPN's choice over TLS, prior knowledge over cleartext), requests
//! turned into streams as the server's limit allows, and what the HTTP/2
//! layer reports (responses, resets, GOAWAYs, SETTINGS) applied to the
//! requests in flight.
//!
//! The ring keeps its meaning: requests in issue order, the first
//! `written` of them on the wire (their HEADERS queued). Streams end in
//! any order, so an ended stream's entry is moved to the head before it is
//! popped; the others keep their order, and the head stays the oldest, the
//! one the timeout scan looks at.

use super::*;
use crate::spec::HttpVersion;

impl Worker<'_> {
    /// Connection `i` is open (TCP, and TLS if asked): whether it speaks
    /// HTTP/2, from ALPN's choice or prior knowledge, its layers set for
    /// it. False when HTTP/2 was required and the server did not agree
    /// (the connection failed).
    pub(crate) fn choose_http(&mut self, i: usize) -> bool {
        let http = self.plan.spec.http;
        let h2 = match self.conns[i].proto.agreed() {
            Some(agreed) => agreed.alpn == Some(b"h2"),
            None => http.version == HttpVersion::Http2,
        };
        if !h2 && http.version == HttpVersion::Http2 {
            self.fail(i, ErrorKind::Tls);
            return false;
        }
        let session = h2.then(|| {
            let table = self.plan.requests.h2().map_or(0, |r| r.table_bytes);
            let cfg = crate::h2::Config {
                stream_window: http.stream_window,
                conn_window: http.conn_window,
                checksum: self.plan.spec.checksum,
            };
            (cfg, table)
        });
        self.conns[i].proto.open(session);
        if h2 && self.measuring {
            self.stats.h2.connections += 1;
        }
        true
    }

    /// Requests connection `i` carries at once: HTTP/2 streams up to the
    /// server's limit, or the HTTP/1.1 pipeline. Before the connection is
    /// open and its protocol known, one, so that a connection that ends up
    /// speaking HTTP/1.1 is never handed a pipeline nobody asked for; and
    /// one over HTTP/2 until the server's SETTINGS come (`stream_limit`),
    /// so that the others are issued, and their latency starts, when they
    /// can go out rather than a round trip before.
    pub(crate) fn depth_of(&self, i: usize) -> usize {
        let c = &self.conns[i];
        let spec = self.plan.spec;
        if c.state != State::Open {
            return match spec.http.version {
                HttpVersion::Negotiate if spec.tls.is_some() => 1,
                HttpVersion::Http2 => 1,
                _ => spec.depth(false),
            };
        }
        match (c.proto.h2(), c.proto.h2_on()) {
            (Some(h), true) => {
                let cap = usize::try_from(h.stream_limit()).unwrap_or(usize::MAX);
                spec.depth(true).min(cap).max(1)
            }
            _ => spec.depth(false),
        }
    }

    /// Open streams for the requests not yet written, as the server's
    /// limit allows; queue their bodies; write.
    pub(crate) fn h2_flush(&mut self, i: usize) {
        let Some(reqs) = self.plan.requests.h2() else {
            return;
        };
        let c = &mut self.conns[i];
        let Conn {
            proto,
            ring,
            head,
            len,
            written,
            ..
        } = c;
        let Some(h) = proto.h2_mut() else {
            return;
        };
        while *written < *len && h.can_open() {
            let s = wrap(*head + *written, ring.len());
            let target = ring[s].target;
            ring[s].stream = h.open(target, &reqs.targets[target as usize]);
            *written += 1;
        }
        h.pump(|t| &reqs.targets[t as usize].body);
        self.h2_write(i);
    }

    /// Send what the HTTP/2 layer has queued: sealed into TLS's records
    /// first on a TLS connection; the backend writes them.
    pub(crate) fn h2_write(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.proto.has_tls() && c.unwritable.is_none() {
            if let Err(e) = c.proto.seal_h2() {
                self.write_failed(i, &e);
                return;
            }
        }
        self.io_send_out(i);
    }

    /// The server's SETTINGS came on connection `i`, with its limit on
    /// concurrent streams (`u32::MAX`: none said).
    pub(crate) fn h2_settings(&mut self, i: usize, max_streams: u32) {
        if max_streams != u32::MAX {
            let seen = &mut self.stats.h2.peer_max_streams;
            *seen = Some(seen.map_or(max_streams, |s| s.min(max_streams)));
        }
        if self.plan.interval_ns.is_some() {
            // Open now, with the server's stream limit known: it may take
            // more than the one request a connecting connection is given.
            self.schedule(i);
        } else if self.users.is_none() {
            self.fill(i);
        }
    }

    /// Move the ring entry of `stream` to the head, keeping the order of
    /// the others; false when no written request has that stream.
    pub(crate) fn move_to_head(&mut self, i: usize, stream: u32) -> bool {
        let c = &mut self.conns[i];
        let Some(k) = (0..c.written).find(|&k| c.ring[c.slot(k)].stream == stream) else {
            return false;
        };
        let f = c.ring[c.slot(k)];
        for j in (1..=k).rev() {
            let (to, from) = (c.slot(j), c.slot(j - 1));
            c.ring[to] = c.ring[from];
        }
        let h = c.head;
        c.ring[h] = f;
        true
    }

    /// The request at the head failed alone with `kind`; its connection
    /// carries on.
    pub(crate) fn fail_head(&mut self, i: usize, kind: ErrorKind) {
        let c = &mut self.conns[i];
        let f = c.pop();
        c.written -= 1;
        let measured = self.phase_of(&f);
        self.count_failed(measured, kind);
        if let Some(us) = self.users.as_mut() {
            us.release(i);
            self.user_answered(i, false);
            return;
        }
        self.after_stream(i);
    }

    /// The oldest stream of connection `i` is past the timeout. If the
    /// server has sent anything on the connection since that request went
    /// out, the connection is alive and only this stream is late (a slow
    /// URL among fast ones): it is reset with CANCEL and fails alone as a
    /// timeout, and the streams beside it, which would have been answered,
    /// are not failed with it. False when the connection has been silent
    /// since: then it fails whole, as a silent HTTP/1.1 connection does.
    pub(crate) fn h2_time_out_stream(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        if !c.proto.h2_on() || c.written == 0 {
            return false;
        }
        let f = c.front();
        let epoch = c.epoch;
        let Some(h) = c.proto.h2_mut() else {
            return false;
        };
        if h.last_arrival_ns() <= f.issued_ns {
            return false;
        }
        h.cancel(f.stream);
        self.fail_head(i, ErrorKind::Timeout);
        if self.conns[i].epoch == epoch && self.conns[i].state == State::Open {
            self.h2_write(i);
        }
        true
    }

    /// The oldest request of HTTP/2 connection `i` timed out before a
    /// stream could be opened for it: the server's limit on concurrent
    /// streams (0, say) held it back. The server kept it waiting as surely
    /// as if it had gone unanswered, so it fails as a timeout; taken back
    /// unissued, as a request that never reached the wire is, a server that
    /// allows no stream showed no error at all.
    pub(crate) fn h2_time_out_unopened(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        if !c.proto.h2_on() || c.written > 0 || c.len == 0 {
            return false;
        }
        let f = c.pop();
        // It never reached the server: it does not count toward the
        // connection's share of requests.
        c.carried = c.carried.saturating_sub(1);
        let measured = self.phase_of(&f);
        self.count_failed(measured, ErrorKind::Timeout);
        if let Some(us) = self.users.as_mut() {
            us.release(i);
            self.user_answered(i, false);
        } else {
            self.after_stream(i);
        }
        true
    }

    /// After a stream of connection `i` ended: the connection closes once
    /// it carried its last request or can open no stream, and nothing is
    /// left on it; otherwise its next requests go out.
    pub(crate) fn after_stream(&mut self, i: usize) {
        let c = &self.conns[i];
        let done = c.carried >= self.dial.limit || c.proto.h2().is_some_and(|h| h.finished());
        if done && c.written == 0 {
            self.close_and_continue(i, None);
            return;
        }
        self.go_on(i);
    }

    /// The server will process no stream above `last`: those requests
    /// become unwritten again, behind the ones it will answer, and go out
    /// on a fresh connection once this one, which opens no stream any
    /// more, has nothing left on the wire and closes.
    pub(crate) fn goaway(&mut self, i: usize, last: u32) {
        let measuring = self.measuring;
        let c = &mut self.conns[i];
        // Turned away before the server answered anything on it: nothing
        // ended on this connection and none of its streams is at or below
        // `last`. Sent again, the requests could meet the same on every
        // fresh connection for as long as the server keeps doing so, a
        // run of N requests then never ending and one of a duration
        // counting nothing; they fail instead, the server having refused
        // them. A connection that answered something first may retry.
        let answered_none = c.carried == c.len as u64;
        let kept = (0..c.written).any(|k| c.ring[c.slot(k)].stream <= last);
        if answered_none && c.written > 0 && !kept {
            self.fail(i, ErrorKind::H2Protocol);
            return;
        }
        let mut k = c.written;
        while k > 0 {
            k -= 1;
            let f = c.ring[c.slot(k)];
            if f.stream <= last {
                continue;
            }
            if let Some(h) = c.proto.h2_mut() {
                h.forget(f.stream);
            }
            // Moved to the end of the written part, which then shrinks.
            let end = c.written - 1;
            for j in k..end {
                let (to, from) = (c.slot(j), c.slot(j + 1));
                c.ring[to] = c.ring[from];
            }
            let s = c.slot(end);
            c.ring[s] = f;
            c.written -= 1;
            if measuring {
                self.stats.h2.retried += 1;
            }
        }
        if self.conns[i].written == 0 {
            self.close_and_continue(i, None);
        }
    }
}
