//! One HTTP/3 connection over a quinn-proto `Connection`: the client's
//! control stream, the server's unidirectional streams (its control
//! stream read for GOAWAY, its QPACK streams read and dropped: with no
//! dynamic table they carry nothing the client needs), and the request
//! streams, each with its slot and reader.

use quinn_proto::{Connection, ConnectionHandle, Dir, ReadError, StreamId, VarInt};

use crate::h3::{self, ResponseReader, Step};
use crate::http1::Response;

/// A request on a connection: queued before the handshake, then on its
/// stream.
pub(crate) struct Req {
    pub stream: Option<StreamId>,
    pub target: u32,
    pub issued_ns: u64,
    /// The open model's intended send time (the issue's, else).
    pub intended_ns: u64,
    pub measured: bool,
    /// Bytes of the request stream written so far.
    pub written: usize,
    pub first_rx_ns: u64,
    pub reader: ResponseReader,
}

/// What a request stream's bytes came to.
pub(super) enum Outcome {
    Done(Response),
    /// The server reset the stream, with this code.
    Reset(u64),
    /// The response could not be read: this HTTP/3 error.
    Broken(h3::ReadError),
}

/// A server's unidirectional stream, as far as read.
struct Uni {
    id: StreamId,
    kind: Option<u64>,
    /// The control stream's bytes not yet parsed into frames.
    held: Vec<u8>,
}

pub(crate) struct H3Conn {
    /// Boxed: quinn's state is kilobytes, and the loop moves a connection
    /// out of its slot and back on every visit.
    pub q: Box<Connection>,
    pub handle: ConnectionHandle,
    pub reqs: Vec<Req>,
    /// Readers of finished requests, kept for the next ones.
    spare: Vec<ResponseReader>,
    uni: Vec<Uni>,
    control: Option<StreamId>,
    /// The stream id above which the server's GOAWAY said it processes
    /// nothing; no stream is opened once one came.
    pub goaway: Option<u64>,
    pub connected: bool,
    /// The first datagram from the server arrived (the path is up).
    pub answered: bool,
    pub start_ns: u64,
    /// Most request streams this connection had open at once, and
    /// whether opening one more was refused for want of stream credit.
    pub peak: usize,
    pub capped: bool,
    /// Something reached the connection since its last visit (a datagram,
    /// a cancel, a send cut short): a connection neither touched nor due
    /// by its timers has nothing to do, and is skipped.
    pub touched: bool,
    /// Closed model: places answers freed in the measured phase and not
    /// yet taken by a new request, and the sum of their answers' arrivals,
    /// for the client's hold (`fill`).
    pub freed: u64,
    pub freed_at_sum: u64,
}

impl H3Conn {
    pub(super) fn new(q: Connection, start_ns: u64, handle: ConnectionHandle) -> Self {
        H3Conn {
            q: Box::new(q),
            handle,
            reqs: Vec::new(),
            spare: Vec::new(),
            uni: Vec::new(),
            control: None,
            goaway: None,
            connected: false,
            answered: false,
            start_ns,
            peak: 0,
            capped: false,
            touched: true,
            freed: 0,
            freed_at_sum: 0,
        }
    }

    pub(super) fn reader(&mut self, checksum: bool) -> ResponseReader {
        match self.spare.pop() {
            Some(mut r) => {
                r.reset();
                r
            }
            None => ResponseReader::new(checksum),
        }
    }

    pub(super) fn recycle(&mut self, r: Req) {
        self.spare.push(r.reader);
    }

    /// Opens the control stream with its SETTINGS, once connected.
    pub(super) fn open_control(&mut self, preface: &[u8]) {
        if self.control.is_some() {
            return;
        }
        if let Some(id) = self.q.streams().open(Dir::Uni) {
            // Fits the first flight: a stream's initial credit is far larger.
            let _ = self.q.send_stream(id).write(preface);
            self.control = Some(id);
        }
    }

    /// Opens the stream of request `k` and writes what it can of `bytes`;
    /// false when the server's MAX_STREAMS allows no more now.
    pub(super) fn start(&mut self, k: usize, bytes: &[u8]) -> bool {
        let Some(id) = self.q.streams().open(Dir::Bi) else {
            self.capped = true;
            return false;
        };
        self.reqs[k].stream = Some(id);
        let open = self.reqs.iter().filter(|r| r.stream.is_some()).count();
        self.peak = self.peak.max(open);
        self.write(k, bytes);
        true
    }

    /// Writes what flow control lets through of request `k`, and finishes
    /// its stream once it is all written.
    pub(super) fn write(&mut self, k: usize, bytes: &[u8]) {
        let Some(id) = self.reqs[k].stream else {
            return;
        };
        let r = &mut self.reqs[k];
        if r.written < bytes.len() {
            if let Ok(n) = self.q.send_stream(id).write(&bytes[r.written..]) {
                r.written += n;
            }
            if r.written == bytes.len() {
                let _ = self.q.send_stream(id).finish();
            }
        }
    }

    pub(super) fn find(&self, id: StreamId) -> Option<usize> {
        self.reqs.iter().position(|r| r.stream == Some(id))
    }

    /// Reads request `k`'s stream: `Some` once it ended one way or another.
    /// `now` stamps the first byte of the final headers.
    pub(super) fn read(&mut self, k: usize, now: u64) -> (Option<Outcome>, u64) {
        let Some(id) = self.reqs[k].stream else {
            return (None, 0);
        };
        let mut got = 0u64;
        let mut recv = self.q.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return (None, 0);
        };
        let r = &mut self.reqs[k];
        let mut out = None;
        // Bounded: the stream's receive window caps what is buffered.
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(c)) => {
                    got += c.bytes.len() as u64;
                    match r.reader.feed(&c.bytes) {
                        Ok(Step::Headers) => r.first_rx_ns = now,
                        Ok(Step::More) => {}
                        Err(e) => {
                            out = Some(Outcome::Broken(e));
                            break;
                        }
                    }
                }
                Ok(None) => {
                    out = Some(match r.reader.finish() {
                        Ok(resp) => Outcome::Done(resp),
                        Err(e) => Outcome::Broken(e),
                    });
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    out = Some(Outcome::Reset(code.into_inner()));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        (out, got)
    }

    /// Gives up request `k`'s stream, both ways.
    pub(super) fn cancel(&mut self, k: usize) {
        self.touched = true;
        if let Some(id) = self.reqs[k].stream {
            let code = VarInt::from_u64(h3::H3_REQUEST_CANCELLED).unwrap_or(VarInt::from_u32(0));
            let _ = self.q.send_stream(id).reset(code);
            let _ = self.q.recv_stream(id).stop(code);
        }
    }

    /// The server opened unidirectional streams.
    pub(super) fn accept_uni(&mut self) {
        // Bounded by the uni streams the client allows the server.
        while let Some(id) = self.q.streams().accept(Dir::Uni) {
            self.uni.push(Uni {
                id,
                kind: None,
                held: Vec::new(),
            });
        }
    }

    /// Reads a server's unidirectional stream; returns a GOAWAY's stream
    /// id when one came.
    pub(super) fn read_uni(&mut self, id: StreamId) -> Option<u64> {
        let u = self.uni.iter_mut().find(|u| u.id == id)?;
        let mut recv = self.q.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return None;
        };
        let mut goaway = None;
        while let Ok(Some(c)) = chunks.next(usize::MAX) {
            let mut b: &[u8] = &c.bytes;
            if u.kind.is_none() {
                u.held.extend_from_slice(b);
                let Some((kind, n)) = h3::get_varint(&u.held) else {
                    continue;
                };
                u.kind = Some(kind);
                let rest = u.held.split_off(n);
                u.held = rest;
                b = &[];
            }
            // Only the control stream's frames matter; the rest is dropped.
            if u.kind == Some(h3::CONTROL_STREAM) {
                u.held.extend_from_slice(b);
                goaway = goaway.or(control_frames(&mut u.held));
            } else {
                u.held.clear();
            }
        }
        let _ = chunks.finalize();
        goaway
    }
}

/// Parses the whole frames held from the server's control stream, keeping
/// a partial one; returns the last GOAWAY's stream id.
fn control_frames(held: &mut Vec<u8>) -> Option<u64> {
    let mut pos = 0;
    let mut goaway = None;
    while let Some((t, a)) = h3::get_varint(&held[pos..]) {
        let Some((len, b)) = h3::get_varint(&held[pos + a..]) else {
            break;
        };
        let start = pos + a + b;
        let Some(end) = start.checked_add(len as usize).filter(|&e| e <= held.len()) else {
            break;
        };
        if t == h3::GOAWAY {
            goaway = h3::get_varint(&held[start..end]).map(|(id, _)| id);
        }
        pos = end;
    }
    held.drain(..pos);
    goaway
}

#[cfg(test)]
mod tests {
    use super::control_frames;

    #[test]
    fn goaway_is_read_from_whole_frames_only() {
        // SETTINGS (empty), then GOAWAY 8 in two pieces.
        let mut held = vec![0x04, 0x00, 0x07, 0x01];
        assert_eq!(control_frames(&mut held), None);
        assert_eq!(held, [0x07, 0x01]);
        held.push(0x08);
        assert_eq!(control_frames(&mut held), Some(8));
        assert!(held.is_empty());
    }
}
