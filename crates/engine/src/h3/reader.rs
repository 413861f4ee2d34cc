//! A response read off its request stream as the bytes come, in any
//! pieces: frames parsed, the header block decoded for its status, the
//! body counted and hashed, never kept.

use crate::fnv::{fnv1a64_update, FNV_OFFSET};
use crate::http1::Response;

use super::{get_varint, qpack, DATA, HEADERS, MAX_FIELD_SECTION};

/// Why a response stream cannot be read, with the HTTP/3 code it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// A frame a request stream may not carry, or DATA before HEADERS.
    #[error("frame not allowed on a request stream")]
    Unexpected,
    #[error("header block cannot be decoded")]
    Qpack,
    /// A header block above the size the client's SETTINGS allowed.
    #[error("header block larger than allowed")]
    Oversized,
    /// Headers without a `:status`.
    #[error("response without a status")]
    NoStatus,
    /// The stream ended inside a frame, or before the final headers.
    #[error("response stream ended early")]
    Incomplete,
}

impl ReadError {
    pub fn code(self) -> u64 {
        match self {
            ReadError::Unexpected => 0x105,
            ReadError::Qpack => 0x200,
            ReadError::Oversized => 0x107,
            ReadError::NoStatus => 0x10e,
            ReadError::Incomplete => 0x10d,
        }
    }
}

/// What feeding bytes came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing yet beyond what was held.
    More,
    /// The final headers arrived with these bytes: the response's first byte.
    Headers,
}

/// One response's reader, reset and reused for the next request of its
/// slot: its header-block buffer is kept, so a steady load allocates
/// nothing here.
#[derive(Debug, Default)]
pub struct ResponseReader {
    checksum: bool,
    /// A frame header held while it arrives in pieces.
    head: [u8; 16],
    head_len: usize,
    in_frame: bool,
    frame_type: u64,
    remaining: u64,
    block: Vec<u8>,
    scratch: Vec<u8>,
    status: Option<u16>,
    body_bytes: u64,
    hash: u64,
}

impl ResponseReader {
    pub fn new(checksum: bool) -> Self {
        ResponseReader {
            checksum,
            hash: FNV_OFFSET,
            ..Default::default()
        }
    }

    pub fn reset(&mut self) {
        self.head_len = 0;
        self.in_frame = false;
        self.block.clear();
        self.status = None;
        self.body_bytes = 0;
        self.hash = FNV_OFFSET;
    }

    /// Whether the final headers have come.
    pub fn has_status(&self) -> bool {
        self.status.is_some()
    }

    /// Reads `data`, all of it.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<Step, ReadError> {
        let mut step = Step::More;
        while !data.is_empty() {
            if !self.in_frame {
                // Byte by byte, and only at frame boundaries: a header is
                // two varints of at most 16 bytes.
                self.head[self.head_len] = data[0];
                self.head_len += 1;
                data = &data[1..];
                let held = &self.head[..self.head_len];
                let Some((t, a)) = get_varint(held) else {
                    continue;
                };
                let Some((len, _)) = get_varint(&held[a..]) else {
                    if self.head_len == self.head.len() {
                        return Err(ReadError::Unexpected);
                    }
                    continue;
                };
                self.head_len = 0;
                self.start(t, len)?;
                if self.remaining == 0 && self.end_frame()? {
                    step = Step::Headers;
                }
                continue;
            }
            let n = (self.remaining.min(data.len() as u64)) as usize;
            let (now, rest) = data.split_at(n);
            data = rest;
            match self.frame_type {
                HEADERS => self.block.extend_from_slice(now),
                DATA => {
                    self.body_bytes += n as u64;
                    if self.checksum {
                        self.hash = fnv1a64_update(self.hash, now);
                    }
                }
                _ => {}
            }
            self.remaining -= n as u64;
            if self.remaining == 0 && self.end_frame()? {
                step = Step::Headers;
            }
        }
        Ok(step)
    }

    fn start(&mut self, t: u64, len: u64) -> Result<(), ReadError> {
        match t {
            HEADERS if len > MAX_FIELD_SECTION => return Err(ReadError::Oversized),
            HEADERS => self.block.clear(),
            DATA if self.status.is_none() => return Err(ReadError::Unexpected),
            // CANCEL_PUSH, SETTINGS, PUSH_PROMISE (no push was allowed),
            // GOAWAY, MAX_PUSH_ID, and HTTP/2's types that HTTP/3 reserves.
            0x02..=0x09 | 0x0d => return Err(ReadError::Unexpected),
            _ => {}
        }
        self.in_frame = true;
        self.frame_type = t;
        self.remaining = len;
        Ok(())
    }

    /// A frame ended; true when it was the final headers.
    fn end_frame(&mut self) -> Result<bool, ReadError> {
        self.in_frame = false;
        if self.frame_type != HEADERS {
            return Ok(false);
        }
        if self.status.is_some() {
            // Trailers: nothing in them is measured.
            return Ok(false);
        }
        let status = qpack::decode_status(&self.block, &mut self.scratch)
            .map_err(|_| ReadError::Qpack)?
            .ok_or(ReadError::NoStatus)?;
        // An interim response: the final one follows on the same stream.
        if (100..200).contains(&status) {
            return Ok(false);
        }
        self.status = Some(status);
        Ok(true)
    }

    /// The stream's end: the response, whole.
    pub fn finish(&mut self) -> Result<Response, ReadError> {
        if self.in_frame || self.head_len > 0 {
            return Err(ReadError::Incomplete);
        }
        let status = self.status.ok_or(ReadError::Incomplete)?;
        Ok(Response {
            status,
            body_bytes: self.body_bytes,
            wire_bytes: 0,
            checksum: if self.checksum { self.hash } else { 0 },
            keep_alive: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http1::fnv1a64;

    /// HEADERS with :status 200 (static 25), DATA "hello", a reserved
    /// frame type in between, and trailers.
    fn stream() -> Vec<u8> {
        let mut s = vec![0x01, 0x03, 0x00, 0x00, 0xd9];
        s.extend_from_slice(&[0x21, 0x02, 0xaa, 0xbb]);
        s.extend_from_slice(&[0x00, 0x05]);
        s.extend_from_slice(b"hello");
        s.extend_from_slice(&[0x01, 0x03, 0x00, 0x00, 0xf4]);
        s
    }

    #[test]
    fn a_response_reads_the_same_in_any_pieces() {
        let whole = stream();
        for cut in 1..=whole.len() {
            let mut r = ResponseReader::new(true);
            let mut headers_at = None;
            for (k, piece) in whole.chunks(cut).enumerate() {
                if r.feed(piece) == Ok(Step::Headers) {
                    headers_at.get_or_insert(k);
                }
            }
            assert_eq!(headers_at, Some(4 / cut), "cut {cut}");
            let resp = r.finish().unwrap();
            assert_eq!((resp.status, resp.body_bytes), (200, 5));
            assert_eq!(resp.checksum, fnv1a64(b"hello"));
        }
    }

    #[test]
    fn interim_headers_wait_for_the_final_ones() {
        let mut r = ResponseReader::new(false);
        // 103 (static 24), then 404 (static 27), no body.
        assert_eq!(r.feed(&[0x01, 0x03, 0, 0, 0xd8]), Ok(Step::More));
        assert!(!r.has_status());
        assert_eq!(r.feed(&[0x01, 0x03, 0, 0, 0xdb]), Ok(Step::Headers));
        assert_eq!(r.finish().unwrap().status, 404);
        r.reset();
        assert_eq!(r.finish(), Err(ReadError::Incomplete));
    }

    #[test]
    fn broken_streams_name_their_code() {
        let cases: [(&[u8], ReadError); 5] = [
            (&[0x00, 0x01, b'x'], ReadError::Unexpected),
            (&[0x07, 0x01, 0x00], ReadError::Unexpected),
            (&[0x01, 0x03, 0x01, 0x00, 0xd9], ReadError::Qpack),
            (&[0x01, 0x03, 0x00, 0x00, 0xf4], ReadError::NoStatus),
            (&[0x01, 0x80, 0x01, 0x00, 0x01], ReadError::Oversized),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                ResponseReader::new(false).feed(bytes),
                Err(want),
                "{bytes:?}"
            );
        }
        let mut r = ResponseReader::new(false);
        assert_eq!(
            r.feed(&[0x01, 0x03, 0x00, 0x00, 0xd9, 0x00, 0x05, b'h']),
            Ok(Step::Headers)
        );
        assert_eq!(r.finish(), Err(ReadError::Incomplete));
        assert_eq!(ReadError::Qpack.code(), 0x200);
    }
}
