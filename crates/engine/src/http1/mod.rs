//! Sans-IO HTTP/1.x response parser: bytes in, [`Response`]s out.
//!
//! The parser owns no socket and never blocks, so the event loop, the
//! blocking probe and the tests all drive the same code. It runs once per
//! response on the load generator's hot path, which shapes it:
//!
//! * no allocation per response: the one header buffer is allocated when the
//!   parser is created and reused; it is only used when a header block is
//!   split across reads, otherwise httparse reads straight from the caller's
//!   buffer;
//! * body bytes are counted (and optionally hashed) in place, never copied;
//! * a head that is the last one this thread read, its `Date` value aside,
//!   is recognised by comparing bytes rather than read again
//!   (last_head.rs); what it says is exactly what httparse said of it;
//! * framing follows RFC 9112 §6 so that a server's keep-alive and pipelining
//!   behaviour is measured rather than guessed: chunked overrides
//!   Content-Length, 1xx interim responses are skipped, HEAD/204/304 have no
//!   body, anything else without a length is delimited by the close.
//!
//! Chunked bodies are decoded one state transition at a time so that a read
//! may end anywhere, including inside a chunk-size line or a trailer.
//!
//! Whatever the bytes are, the outcome depends on them alone, never on how
//! the stream was split into reads: the same responses, body bytes and
//! checksum, or the same [`ParseError`] (the split tests below and
//! the `fuzz` module holds it to that, at every split point).

mod head;
mod last_head;

pub(crate) use head::httparse_config;
use head::parse_head;

/// Header fields accepted per header block, in a fixed array (no
/// allocation); generous, since real responses can carry many (a cookie
/// each, a CDN's trace fields): the block's size bound usually comes first.
pub const MAX_HEADERS: usize = 2048;
/// Header fields parsed in the first, small array: nearly every response
/// fits, and only one that does not pays for the large array's frame.
const FEW_HEADERS: usize = 64;

/// Default for [`ParserConfig::max_header_bytes`].
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;

/// Capacity the split-header buffer starts with. Typical response heads are
/// a few hundred bytes; the buffer grows (once) only for unusually large ones.
const INITIAL_HEAD_CAPACITY: usize = 8 * 1024;

use crate::fnv::FNV_OFFSET;
pub use crate::fnv::{fnv1a64, fnv1a64_update};

#[derive(Debug, Clone, Copy)]
pub struct ParserConfig {
    /// Hash decoded body bytes (FNV-1a 64) into Response::checksum.
    pub checksum: bool,
    /// The requests being answered are HEAD: responses have no body.
    pub head: bool,
    /// Largest header block accepted (default 64 KiB); larger is ParseError.
    /// The same bound applies to one chunk-size line and to a trailer section.
    pub max_header_bytes: usize,
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            checksum: false,
            head: false,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Decoded body length (chunked: sum of chunk data).
    pub body_bytes: u64,
    /// Every byte of this response on the wire: interim 1xx responses, status
    /// line, headers, chunk framing, trailers, body.
    pub wire_bytes: u64,
    /// FNV-1a 64 of the decoded body ([`fnv1a64`]); 0 when
    /// ParserConfig::checksum is false.
    pub checksum: u64,
    /// false if the server said `Connection: close`, or HTTP/1.0 without
    /// `Connection: keep-alive`, or the body was close-delimited, or the
    /// framing was suspect (Transfer-Encoding together with Content-Length,
    /// or in an HTTP/1.0 response: RFC 9112 §6.1 requires closing after it).
    pub keep_alive: bool,
}

const EMPTY_RESPONSE: Response = Response {
    status: 0,
    body_bytes: 0,
    wire_bytes: 0,
    checksum: 0,
    keep_alive: false,
};

#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    #[error("invalid status line")]
    StatusLine,
    #[error("invalid header field")]
    Header,
    #[error("more than {0} header fields")]
    TooManyHeaders(usize),
    #[error("header block larger than {0} bytes")]
    HeaderTooLarge(usize),
    #[error("invalid Content-Length")]
    InvalidContentLength,
    #[error("conflicting Content-Length")]
    ConflictingContentLength,
    #[error("invalid chunk size")]
    InvalidChunkSize,
    #[error("invalid chunk extension")]
    ChunkExtension,
    #[error("chunk size too large")]
    ChunkSizeOverflow,
    #[error("chunk-size line longer than {0} bytes")]
    ChunkLineTooLong(usize),
    #[error("missing CRLF after chunk data")]
    ChunkTerminator,
    #[error("trailer section larger than {0} bytes")]
    TrailersTooLarge(usize),
    #[error("101 Switching Protocols is not supported")]
    SwitchingProtocols,
    #[error("connection closed mid-response")]
    ClosedMidResponse,
}

/// Receives decoded body bytes (the probe collects them; the load driver
/// ignores them).
pub trait BodySink {
    fn body(&mut self, data: &[u8]);
}

/// Discards the body.
pub struct NoBody;

impl BodySink for NoBody {
    #[inline]
    fn body(&mut self, _: &[u8]) {}
}

impl BodySink for Vec<u8> {
    fn body(&mut self, data: &[u8]) {
        self.extend_from_slice(data);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for (the rest of) a status line and header block.
    Head,
    /// Content-Length body with this many bytes still to come.
    Fixed {
        remaining: u64,
    },
    /// Body runs until the peer closes.
    UntilClose,
    /// Hex digits of a chunk size; `digits` = at least one seen.
    ChunkSize {
        digits: bool,
    },
    /// After the size: chunk extensions up to the end of the line.
    ChunkExt(Ext),
    /// Saw the CR that ends a chunk-size line; LF must follow.
    ChunkSizeLf,
    ChunkData {
        remaining: u64,
    },
    /// Chunk data done; CRLF must follow.
    ChunkDataCr,
    ChunkDataLf,
    /// Trailer section after the last chunk, up to an empty line.
    /// `content` = bytes other than CR on the current line.
    Trailer {
        content: bool,
    },
}

/// Where a chunk-size line is after its size. RFC 9112 §7.1.1 allows
/// `*( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )` there, a name being a
/// token and a value a token or a quoted string, and nothing else: bytes a
/// lenient reader would skip are where request-smuggling parsers disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ext {
    /// Whitespace after the size or after a value: only more of it, or
    /// ";", may follow.
    Bws,
    /// After ";": whitespace, then a name.
    NameStart,
    Name,
    /// Whitespace after a name: "=", ";" or more whitespace.
    NameBws,
    /// After "=": whitespace, then a token or a quoted string.
    ValueStart,
    Token,
    Quoted,
    /// After a backslash inside a quoted string.
    Escape,
    /// After the closing quote.
    QuotedEnd,
}

/// How the body of a final response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// What one header block says, copied out of httparse's borrowed view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    len: usize,
    status: u16,
    framing: Framing,
    keep_alive: bool,
}

enum HeadStep {
    /// Every input byte went into the header buffer.
    NeedMore,
    /// A 1xx response of this many bytes (of the input) was skipped.
    Interim(usize),
    /// The final header block ended after this many bytes of the input.
    Final(usize),
}

/// In the order a response reads and writes its fields, those only
/// chunked bodies and checksums use last: a connection's parser is part
/// of its slot's hot lines (`driver::Conn`).
#[repr(C)]
pub struct ResponseParser {
    state: State,
    /// The response being assembled; `wire_bytes` counts from its first byte.
    resp: Response,
    cfg: ParserConfig,
    /// Set once input was rejected: the stream has no recoverable framing.
    failed: Option<ParseError>,
    /// The last feed skipped an interim (1xx) response.
    interim: bool,
    /// Header bytes held while a header block is split across feeds.
    head: Vec<u8>,
    hash: u64,
    /// Bytes of the current chunk-size line, or of the trailer section.
    line_len: usize,
    chunk_size: u64,
}

impl ResponseParser {
    /// Where the fields a response reads end: those after it serve
    /// chunked bodies and checksums alone.
    /// (The layout test of `driver::Conn` reads it.)
    #[cfg(test)]
    pub(crate) const HOT_END: usize =
        std::mem::offset_of!(ResponseParser, head) + std::mem::size_of::<Vec<u8>>();

    pub fn new(cfg: ParserConfig) -> Self {
        ResponseParser {
            cfg,
            state: State::Head,
            // Allocated on the first split header block only: most
            // connections never see one, and 10k idle buffers add up.
            head: Vec::new(),
            resp: EMPTY_RESPONSE,
            hash: FNV_OFFSET,
            line_len: 0,
            chunk_size: 0,
            failed: None,
            interim: false,
        }
    }

    /// Forget any partial response (new connection).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.head.clear();
        self.resp = EMPTY_RESPONSE;
        self.hash = FNV_OFFSET;
        self.line_len = 0;
        self.chunk_size = 0;
        self.failed = None;
        self.interim = false;
    }

    /// The next byte starts a status line: of a response, or of the final
    /// one after an interim (1xx) response.
    pub fn at_status_line(&self) -> bool {
        self.failed.is_none() && self.state == State::Head && self.head.is_empty()
    }

    /// The last feed skipped an interim response.
    pub fn skipped_interim(&self) -> bool {
        self.interim
    }

    /// No byte of an unfinished response is held.
    pub fn is_idle(&self) -> bool {
        self.failed.is_none()
            && self.state == State::Head
            && self.head.is_empty()
            && self.resp.wire_bytes == 0
    }

    /// Consume bytes up to the end of at most ONE complete response.
    /// Returns (consumed, Some(resp)) when a response completed (consumed may
    /// be < buf.len(): the caller calls again with the rest — pipelining), or
    /// (buf.len(), None) when all bytes were consumed and more are needed.
    /// After an error the parser keeps returning it until [`reset`](Self::reset).
    pub fn feed(&mut self, buf: &[u8]) -> Result<(usize, Option<Response>), ParseError> {
        self.feed_with(buf, &mut NoBody)
    }

    pub fn feed_with<S: BodySink>(
        &mut self,
        buf: &[u8],
        sink: &mut S,
    ) -> Result<(usize, Option<Response>), ParseError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.interim = false;
        let r = self.step(buf, sink);
        if let Err(e) = r {
            self.failed = Some(e);
        }
        r
    }

    /// The peer closed the connection. Completes a close-delimited body
    /// (Ok(Some)), Ok(None) when no byte of a response was seen since the
    /// last complete one, Err(...) when a response was incomplete. The parser
    /// is reset afterwards.
    pub fn eof(&mut self) -> Result<Option<Response>, ParseError> {
        let r = if let Some(e) = self.failed {
            Err(e)
        } else {
            match self.state {
                State::UntilClose => Ok(Some(self.finish())),
                // Stray blank lines between responses are not a response
                // (httparse skips them too).
                State::Head
                    if self.resp.wire_bytes == 0
                        && self.head.iter().all(|&b| b == b'\r' || b == b'\n') =>
                {
                    Ok(None)
                }
                _ => Err(ParseError::ClosedMidResponse),
            }
        };
        self.reset();
        r
    }

    fn step<S: BodySink>(
        &mut self,
        buf: &[u8],
        sink: &mut S,
    ) -> Result<(usize, Option<Response>), ParseError> {
        let mut pos = 0;
        while pos < buf.len() {
            let rest = &buf[pos..];
            match self.state {
                State::Head => match self.head(rest)? {
                    HeadStep::NeedMore => return Ok((buf.len(), None)),
                    HeadStep::Interim(n) => {
                        pos += n;
                        self.interim = true;
                    }
                    HeadStep::Final(n) => {
                        pos += n;
                        if self.state == State::Head {
                            return Ok((pos, Some(self.finish())));
                        }
                    }
                },
                State::Fixed { remaining } => {
                    let take = take_len(remaining, rest.len());
                    self.body(&rest[..take], sink);
                    pos += take;
                    let remaining = remaining - take as u64;
                    if remaining == 0 {
                        return Ok((pos, Some(self.finish())));
                    }
                    self.state = State::Fixed { remaining };
                }
                State::UntilClose => {
                    self.body(rest, sink);
                    pos = buf.len();
                }
                State::ChunkData { remaining } => {
                    let take = take_len(remaining, rest.len());
                    self.body(&rest[..take], sink);
                    pos += take;
                    let remaining = remaining - take as u64;
                    self.state = if remaining == 0 {
                        State::ChunkDataCr
                    } else {
                        State::ChunkData { remaining }
                    };
                }
                State::ChunkSize { .. }
                | State::ChunkExt(_)
                | State::ChunkSizeLf
                | State::ChunkDataCr
                | State::ChunkDataLf
                | State::Trailer { .. } => {
                    // Chunk framing is a handful of bytes per chunk: going
                    // byte by byte keeps every split point trivially correct.
                    pos += 1;
                    self.resp.wire_bytes += 1;
                    if self.framing_byte(rest[0])? {
                        return Ok((pos, Some(self.finish())));
                    }
                }
            }
        }
        Ok((buf.len(), None))
    }

    #[inline]
    fn body<S: BodySink>(&mut self, data: &[u8], sink: &mut S) {
        if data.is_empty() {
            return;
        }
        if self.cfg.checksum {
            self.hash = fnv1a64_update(self.hash, data);
        }
        sink.body(data);
        self.resp.body_bytes += data.len() as u64;
        self.resp.wire_bytes += data.len() as u64;
    }

    /// Hand out the assembled response and get ready for the next one.
    fn finish(&mut self) -> Response {
        let mut r = self.resp;
        // A chunked body sets its line and size counts going as it starts
        // (`head`), and the hash is read only with the checksum on (the
        // response's checksum is otherwise the 0 it started with): left
        // alone otherwise, they are not written on every response.
        if self.cfg.checksum {
            r.checksum = self.hash;
            self.hash = FNV_OFFSET;
        }
        self.state = State::Head;
        self.resp = EMPTY_RESPONSE;
        r
    }

    fn head(&mut self, input: &[u8]) -> Result<HeadStep, ParseError> {
        let max = self.cfg.max_header_bytes;
        let (head, consumed) = if self.head.is_empty() {
            // Bytes past the limit are never looked at, whole or split, so
            // an error beyond it is HeaderTooLarge either way.
            let window = &input[..input.len().min(max)];
            match parse_head(window)? {
                Some(h) => (h, h.len),
                // A partial block already this long can only end beyond
                // the limit.
                None if window.len() >= max => return Err(ParseError::HeaderTooLarge(max)),
                None => {
                    if self.head.capacity() == 0 {
                        self.head.reserve(INITIAL_HEAD_CAPACITY.min(max));
                    }
                    self.head.extend_from_slice(input);
                    return Ok(HeadStep::NeedMore);
                }
            }
        } else {
            let old = self.head.len();
            let take = input.len().min(max.saturating_sub(old));
            self.head.extend_from_slice(&input[..take]);
            // Re-parsed on every feed, not only when a line ends: httparse
            // rejects a bad byte as soon as it sees it, and so must a split
            // block, or a server that sends a bad partial line and then
            // waits gets a timeout where one read would have got a parse
            // error. Each re-parse is bounded by `max_header_bytes` and
            // paid once per read of a split block.
            match parse_head(&self.head)? {
                Some(h) => {
                    self.head.clear();
                    // The block was partial with `old` bytes, so it ends
                    // past them.
                    (h, h.len.saturating_sub(old))
                }
                None if self.head.len() >= max => return Err(ParseError::HeaderTooLarge(max)),
                None => return Ok(HeadStep::NeedMore),
            }
        };
        // The whole block, including bytes buffered by earlier feeds.
        self.resp.wire_bytes += head.len as u64;
        if head.status == 101 {
            return Err(ParseError::SwitchingProtocols);
        }
        if head.status < 200 {
            return Ok(HeadStep::Interim(consumed));
        }
        self.resp.status = head.status;
        self.resp.keep_alive = head.keep_alive;
        let framing = if self.cfg.head || head.status == 204 || head.status == 304 {
            Framing::Length(0)
        } else {
            head.framing
        };
        self.state = match framing {
            Framing::Length(0) => State::Head,
            Framing::Length(remaining) => State::Fixed { remaining },
            Framing::Chunked => {
                self.line_len = 0;
                self.chunk_size = 0;
                State::ChunkSize { digits: false }
            }
            Framing::UntilClose => {
                self.resp.keep_alive = false;
                State::UntilClose
            }
        };
        Ok(HeadStep::Final(consumed))
    }

    /// One byte of chunk framing (size line, CRLF after data, trailers).
    /// Returns true when the chunked body (and so the response) is complete.
    fn framing_byte(&mut self, b: u8) -> Result<bool, ParseError> {
        let max = self.cfg.max_header_bytes;
        match self.state {
            State::ChunkSize { .. } | State::ChunkExt(_) | State::ChunkSizeLf => {
                self.line_len += 1;
                if self.line_len > max {
                    return Err(ParseError::ChunkLineTooLong(max));
                }
            }
            State::Trailer { .. } => {
                self.line_len += 1;
                if self.line_len > max {
                    return Err(ParseError::TrailersTooLarge(max));
                }
            }
            _ => {}
        }
        match self.state {
            State::ChunkSize { digits } => match hex_value(b) {
                Some(d) => {
                    self.chunk_size = self
                        .chunk_size
                        .checked_mul(16)
                        .and_then(|v| v.checked_add(u64::from(d)))
                        .ok_or(ParseError::ChunkSizeOverflow)?;
                    self.state = State::ChunkSize { digits: true };
                }
                None if !digits => return Err(ParseError::InvalidChunkSize),
                None => self.after_element(b, ParseError::InvalidChunkSize)?,
            },
            State::ChunkExt(ext) => self.chunk_ext(ext, b)?,
            State::ChunkSizeLf => match b {
                b'\n' => self.end_size_line(),
                _ => return Err(ParseError::InvalidChunkSize),
            },
            State::ChunkDataCr => match b {
                b'\r' => self.state = State::ChunkDataLf,
                b'\n' => self.start_size_line(),
                _ => return Err(ParseError::ChunkTerminator),
            },
            State::ChunkDataLf => match b {
                b'\n' => self.start_size_line(),
                _ => return Err(ParseError::ChunkTerminator),
            },
            State::Trailer { content } => match b {
                b'\n' if !content => return Ok(true),
                b'\n' => self.state = State::Trailer { content: false },
                b'\r' => {}
                _ => self.state = State::Trailer { content: true },
            },
            State::Head | State::Fixed { .. } | State::UntilClose | State::ChunkData { .. } => {
                unreachable!("framing_byte is only called in chunk framing states")
            }
        }
        Ok(false)
    }

    /// One byte of the chunk extensions (see [`Ext`]).
    fn chunk_ext(&mut self, ext: Ext, b: u8) -> Result<(), ParseError> {
        const BAD: ParseError = ParseError::ChunkExtension;
        let ws = b == b' ' || b == b'\t';
        let next = match ext {
            Ext::Bws if ws => Ext::Bws,
            Ext::Bws if b == b';' => Ext::NameStart,
            Ext::NameStart if ws => Ext::NameStart,
            Ext::NameStart | Ext::Name if is_tchar(b) => Ext::Name,
            Ext::Name | Ext::NameBws if ws => Ext::NameBws,
            Ext::Name | Ext::NameBws if b == b'=' => Ext::ValueStart,
            Ext::NameBws if b == b';' => Ext::NameStart,
            Ext::ValueStart if ws => Ext::ValueStart,
            Ext::ValueStart if b == b'"' => Ext::Quoted,
            Ext::ValueStart | Ext::Token if is_tchar(b) => Ext::Token,
            Ext::Quoted if b == b'"' => Ext::QuotedEnd,
            Ext::Quoted if b == b'\\' => Ext::Escape,
            // qdtext: HTAB, SP, VCHAR but DQUOTE and backslash, obs-text.
            Ext::Quoted if ws || (0x21..=0x7e).contains(&b) || b >= 0x80 => Ext::Quoted,
            // quoted-pair: HTAB, SP, VCHAR, obs-text.
            Ext::Escape if ws || (0x21..=0x7e).contains(&b) || b >= 0x80 => Ext::Quoted,
            Ext::Name | Ext::Token | Ext::QuotedEnd => return self.after_element(b, BAD),
            _ => return Err(BAD),
        };
        self.state = State::ChunkExt(next);
        Ok(())
    }

    /// After the size, a name, or a value: another extension, whitespace
    /// before one, or the end of the line.
    fn after_element(&mut self, b: u8, bad: ParseError) -> Result<(), ParseError> {
        self.state = match b {
            b';' => State::ChunkExt(Ext::NameStart),
            b' ' | b'\t' => State::ChunkExt(Ext::Bws),
            b'\r' => State::ChunkSizeLf,
            // A bare LF ends a line, as everywhere else in the framing
            // (RFC 9112 §2.2).
            b'\n' => {
                self.end_size_line();
                return Ok(());
            }
            _ => return Err(bad),
        };
        Ok(())
    }

    fn start_size_line(&mut self) {
        self.line_len = 0;
        self.chunk_size = 0;
        self.state = State::ChunkSize { digits: false };
    }

    fn end_size_line(&mut self) {
        self.line_len = 0;
        self.state = if self.chunk_size == 0 {
            State::Trailer { content: false }
        } else {
            State::ChunkData {
                remaining: self.chunk_size,
            }
        };
    }
}

#[inline]
fn take_len(remaining: u64, available: usize) -> usize {
    if remaining < available as u64 {
        remaining as usize
    } else {
        available
    }
}

/// tchar of RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CL: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;name=val;q=\"a b\"\r\nhello\r\n\
        6 ;x\r\n world\r\n\
        0\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n";

    fn checked() -> ParserConfig {
        ParserConfig {
            checksum: true,
            ..ParserConfig::default()
        }
    }

    /// Feed `input` cut at the offsets in `cuts` (ascending), draining each
    /// piece the way a driver does, then signal eof. Checks the feed()
    /// contract on every call.
    fn run_cuts(
        cfg: ParserConfig,
        input: &[u8],
        cuts: &[usize],
    ) -> Result<(Vec<Response>, Vec<u8>), ParseError> {
        let mut p = ResponseParser::new(cfg);
        let mut out = Vec::new();
        let mut body = Vec::new();
        let mut start = 0;
        for &end in cuts.iter().chain(std::iter::once(&input.len())) {
            let mut piece = &input[start..end];
            while !piece.is_empty() {
                let (n, r) = p.feed_with(piece, &mut body)?;
                assert!(n > 0 && n <= piece.len(), "consumed {n} of {}", piece.len());
                if r.is_none() {
                    assert_eq!(n, piece.len());
                }
                out.extend(r);
                piece = &piece[n..];
            }
            start = end;
        }
        out.extend(p.eof()?);
        assert!(p.is_idle());
        Ok((out, body))
    }

    fn whole(cfg: ParserConfig, input: &[u8]) -> Result<Vec<Response>, ParseError> {
        run_cuts(cfg, input, &[]).map(|(r, _)| r)
    }

    /// Parses `input` whole, one byte at a time and at every 2-way split;
    /// all must agree, errors included: an error must be the same error
    /// however the bytes were split (a feed's error, never the eof's
    /// ClosedMidResponse in its place).
    fn every_split(
        cfg: ParserConfig,
        input: &[u8],
    ) -> Result<(Vec<Response>, Vec<u8>), ParseError> {
        let expected = run_cuts(cfg, input, &[]);
        let bytewise: Vec<usize> = (1..input.len()).collect();
        assert_eq!(run_cuts(cfg, input, &bytewise), expected, "byte by byte");
        for cut in 1..input.len() {
            assert_eq!(run_cuts(cfg, input, &[cut]), expected, "split at {cut}");
        }
        expected
    }

    /// [`every_split`] of input that must parse. Returns the responses and
    /// the decoded body.
    fn all_splits(cfg: ParserConfig, input: &[u8]) -> (Vec<Response>, Vec<u8>) {
        every_split(cfg, input).unwrap()
    }

    fn all_splits_err(cfg: ParserConfig, input: &[u8], err: ParseError) {
        assert_eq!(
            every_split(cfg, input).map(|r| r.0),
            Err(err),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }

    fn one(cfg: ParserConfig, input: &[u8]) -> Response {
        let (r, _) = all_splits(cfg, input);
        assert_eq!(r.len(), 1, "{r:?}");
        r[0]
    }

    #[test]
    fn fnv1a64_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a64_update(fnv1a64(b"foo"), b"bar"), fnv1a64(b"foobar"));
    }

    #[test]
    fn content_length_body() {
        let (r, body) = all_splits(checked(), CL);
        assert_eq!(
            r,
            vec![Response {
                status: 200,
                body_bytes: 5,
                wire_bytes: 43,
                checksum: fnv1a64(b"hello"),
                keep_alive: true,
            }]
        );
        assert_eq!(body, b"hello");
    }

    #[test]
    fn checksum_is_zero_when_disabled() {
        let r = one(ParserConfig::default(), CL);
        assert_eq!((r.body_bytes, r.checksum), (5, 0));
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let (r, body) = all_splits(checked(), CHUNKED);
        assert_eq!(body, b"hello world");
        assert_eq!(
            r,
            vec![Response {
                status: 200,
                body_bytes: 11,
                wire_bytes: CHUNKED.len() as u64,
                checksum: fnv1a64(b"hello world"),
                keep_alive: true,
            }]
        );
        assert_eq!(CHUNKED.len(), 123);
    }

    #[test]
    fn chunked_bare_lf_and_uppercase_hex() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\nA\nabcdefghij\n0\n\n";
        let (r, body) = all_splits(checked(), input);
        assert_eq!(body, b"abcdefghij");
        assert_eq!((r[0].body_bytes, r[0].wire_bytes), (10, 63));
    }

    #[test]
    fn checksum_same_for_content_length_and_chunked() {
        let cl = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
        let a = one(checked(), cl);
        let b = one(checked(), CHUNKED);
        assert_eq!(a.checksum, b.checksum);
        assert_eq!(a.checksum, fnv1a64(b"hello world"));
        assert_eq!((a.body_bytes, b.body_bytes), (11, 11));
        assert_ne!(a.wire_bytes, b.wire_bytes);
    }

    #[test]
    fn chunked_overrides_content_length_and_closes() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let r = one(checked(), input);
        assert_eq!(r.body_bytes, 3);
        assert_eq!(r.wire_bytes, input.len() as u64);
        assert!(!r.keep_alive);
        // Chunked in HTTP/1.0 is decoded, but the connection is not reused.
        let input = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let r = one(checked(), input);
        assert_eq!((r.body_bytes, r.keep_alive), (3, false));
    }

    #[test]
    fn chunked_not_final_is_close_delimited() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nraw bytes";
        let r = one(checked(), input);
        assert_eq!((r.body_bytes, r.keep_alive), (9, false));
        // Repeated fields form one list: the last one decides.
        let input =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let r = one(checked(), input);
        assert_eq!((r.body_bytes, r.keep_alive), (0, true));
    }

    #[test]
    fn repeated_identical_content_length_is_accepted() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc";
        let r = one(checked(), input);
        assert_eq!((r.body_bytes, r.wire_bytes), (3, input.len() as u64));
    }

    #[test]
    fn close_delimited_body_ends_at_eof() {
        let input = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nabc";
        let mut p = ResponseParser::new(checked());
        assert_eq!(p.feed(input), Ok((input.len(), None)));
        assert!(!p.is_idle());
        assert_eq!(
            p.eof(),
            Ok(Some(Response {
                status: 200,
                body_bytes: 3,
                wire_bytes: 33,
                checksum: fnv1a64(b"abc"),
                keep_alive: false,
            }))
        );
        assert!(p.is_idle());
        assert_eq!(one(checked(), input).wire_bytes, 33);
        // Keep-alive asked for, but the body can only end with the close.
        let input = b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\nabc";
        assert!(!one(checked(), input).keep_alive);
    }

    #[test]
    fn no_body_statuses() {
        for status in [204u16, 304] {
            let input = format!("HTTP/1.1 {status} X\r\nContent-Length: 10\r\n\r\n");
            let mut pipelined = input.clone().into_bytes();
            pipelined.extend_from_slice(CL);
            let (r, _) = all_splits(checked(), &pipelined);
            assert_eq!(r.len(), 2);
            assert_eq!(
                r[0],
                Response {
                    status,
                    body_bytes: 0,
                    wire_bytes: input.len() as u64,
                    checksum: fnv1a64(b""),
                    keep_alive: true,
                }
            );
            assert_eq!((r[1].status, r[1].body_bytes), (200, 5));
        }
        // Without any length a 204 is still complete and keeps the connection.
        let r = one(checked(), b"HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!((r.status, r.wire_bytes, r.keep_alive), (204, 27, true));
    }

    #[test]
    fn head_response_has_no_body() {
        let cfg = ParserConfig {
            head: true,
            ..checked()
        };
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n";
        let r = one(cfg, head);
        assert_eq!(
            r,
            Response {
                status: 200,
                body_bytes: 0,
                wire_bytes: 38,
                checksum: fnv1a64(b""),
                keep_alive: true,
            }
        );
        // Chunked or unframed HEAD responses are complete at the blank line too.
        let mut two = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        two.extend_from_slice(b"HTTP/1.1 404 Not Found\r\n\r\n");
        let (r, _) = all_splits(cfg, &two);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].status, r[0].wire_bytes, r[0].keep_alive),
            (200, 47, true)
        );
        assert_eq!(
            (r[1].status, r[1].wire_bytes, r[1].keep_alive),
            (404, 26, true)
        );
    }

    #[test]
    fn interim_responses_are_skipped_and_counted() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n\
            HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let mut p = ResponseParser::new(checked());
        assert_eq!(p.feed(&input[..25]), Ok((25, None)));
        assert!(
            !p.is_idle(),
            "an interim response belongs to the pending one"
        );
        let r = one(checked(), input);
        assert_eq!(
            r,
            Response {
                status: 201,
                body_bytes: 2,
                wire_bytes: 127,
                checksum: fnv1a64(b"ok"),
                keep_alive: true,
            }
        );
        assert_eq!(input.len(), 127);
    }

    #[test]
    fn switching_protocols_is_an_error() {
        all_splits_err(
            checked(),
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
            ParseError::SwitchingProtocols,
        );
    }

    #[test]
    fn connection_header_and_version_decide_keep_alive() {
        let cases: [(&[u8], bool); 7] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
            (
                b"HTTP/1.1 200 OK\r\nconnection: Upgrade, CLOSE\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            (
                b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (
                b"HTTP/1.0 200 OK\r\nConnection: foo,keep-alive\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
        ];
        for (input, keep_alive) in cases {
            let r = one(checked(), input);
            assert_eq!(
                r.keep_alive,
                keep_alive,
                "{}",
                String::from_utf8_lossy(input)
            );
            assert_eq!((r.status, r.body_bytes), (200, 0));
            assert_eq!(r.wire_bytes, input.len() as u64);
        }
    }

    #[test]
    fn pipelined_responses_in_one_buffer() {
        let mut input = Vec::new();
        input.extend_from_slice(CL); // 43 bytes
        input.extend_from_slice(CHUNKED); // 123 bytes
        input.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"); // 45 bytes
        input.extend_from_slice(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
        );
        let mut p = ResponseParser::new(checked());
        let mut at = 0;
        let mut got = Vec::new();
        while at < input.len() {
            let (n, r) = p.feed(&input[at..]).unwrap();
            at += n;
            got.push((at, r.map(|r| (r.status, r.body_bytes, r.wire_bytes))));
        }
        assert_eq!(
            got,
            vec![
                (43, Some((200, 5, 43))),
                (166, Some((200, 11, 123))),
                (211, Some((404, 0, 45))),
                (275, Some((200, 1, 64))),
            ]
        );
        assert!(p.is_idle());
        assert_eq!(p.eof(), Ok(None));
        let (all, body) = all_splits(checked(), &input);
        assert_eq!(all.len(), 4);
        assert_eq!(body, b"hellohello worldx");
    }

    #[test]
    fn header_block_larger_than_initial_buffer() {
        let mut input = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..40 {
            input.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "v".repeat(500)).as_bytes());
        }
        input.extend_from_slice(b"Content-Length: 3\r\n\r\nabc");
        let head_len = input.len() - 3;
        assert!(head_len > INITIAL_HEAD_CAPACITY);
        let cuts: Vec<usize> = (1000..input.len()).step_by(1000).collect();
        let (r, body) = run_cuts(checked(), &input, &cuts).unwrap();
        assert_eq!(body, b"abc");
        assert_eq!((r[0].body_bytes, r[0].wire_bytes), (3, input.len() as u64));
    }

    #[test]
    fn header_block_limit() {
        let cfg = ParserConfig {
            max_header_bytes: 64,
            ..checked()
        };
        // Exactly at the limit is accepted, one byte more is not.
        let at_limit = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: 12345678901234567\r\n\r\n";
        assert_eq!(at_limit.len(), 64);
        assert_eq!(one(cfg, at_limit).wire_bytes, 64);
        let over = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: 123456789012345678\r\n\r\n";
        all_splits_err(cfg, over, ParseError::HeaderTooLarge(64));
        // A block that never ends is rejected once it passes the limit.
        let mut p = ResponseParser::new(cfg);
        assert_eq!(p.feed(&[b'H'; 63]), Err(ParseError::StatusLine));
        let mut p = ResponseParser::new(cfg);
        assert_eq!(p.feed(b"HTTP/1.1 200 OK\r\nX: "), Ok((20, None)));
        assert_eq!(p.feed(&[b'a'; 43]), Ok((43, None)));
        assert_eq!(p.feed(b"a"), Err(ParseError::HeaderTooLarge(64)));
        assert_eq!(p.feed(b"\r\n\r\n"), Err(ParseError::HeaderTooLarge(64)));
        assert_eq!(
            ParseError::HeaderTooLarge(65536).to_string(),
            "header block larger than 65536 bytes"
        );
    }

    #[test]
    fn too_many_headers() {
        // 65 fields, past the small array: parsed in the large one, the
        // framing field last among them still read.
        let mut input = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..FEW_HEADERS {
            input.extend_from_slice(format!("Set-Cookie: c{i}=v\r\n").as_bytes());
        }
        input.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        let r = one(checked(), &input);
        assert_eq!((r.status, r.body_bytes), (200, 2));
        let mut input = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..MAX_HEADERS {
            input.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        // Whole only: every split of 20 KB of fields is a slow test.
        let mut ok = input.clone();
        ok.extend_from_slice(b"\r\n");
        assert_eq!(whole(checked(), &ok).unwrap()[0].status, 200);
        input.extend_from_slice(b"X-last: v\r\n\r\n");
        assert_eq!(
            whole(checked(), &input),
            Err(ParseError::TooManyHeaders(2048))
        );
    }

    #[test]
    fn malformed_inputs() {
        use ParseError::*;
        let cases: [(&[u8], ParseError); 17] = [
            (b"HTTX/1.1 200 OK\r\n\r\n", StatusLine),
            (b"HTTP/2 200 OK\r\n\r\n", StatusLine),
            (b"HTTP/1.1 2x0 OK\r\n\r\n", StatusLine),
            (b"HTTP/1.1 099 Low\r\n\r\n", StatusLine),
            (b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", Header),
            (b"HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n", Header),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
                InvalidContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                InvalidContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
                InvalidContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
                InvalidContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
                InvalidContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                ConflictingContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello",
                ConflictingContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                InvalidChunkSize,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
                InvalidChunkSize,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n",
                ChunkSizeOverflow,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n",
                ChunkTerminator,
            ),
        ];
        for (input, err) in cases {
            all_splits_err(checked(), input, err);
        }
        let more: [(&[u8], ParseError); 3] = [
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\rx",
                InvalidChunkSize,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;a\x00\r\n",
                ChunkExtension,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\rX",
                ChunkTerminator,
            ),
        ];
        for (input, err) in more {
            all_splits_err(checked(), input, err);
        }
    }

    /// A bad byte in a line that has not ended yet is an error on the read
    /// that brings it, whole or split: a server that sends it and then
    /// waits must not turn a parse error into a timeout (nor, when it then
    /// closes, into a `closed`).
    #[test]
    fn errors_in_an_unfinished_line_do_not_depend_on_the_split() {
        use ParseError::*;
        let cases: [(&[u8], ParseError); 7] = [
            (b"HTTP/1.1 2O", StatusLine),
            (b"HTTX", StatusLine),
            (b"HTTP/1.1 200 OK\r\nBad Name", Header),
            (b"HTTP/1.1 200 OK\r\nX: a\x01", Header),
            (b"HTTP/1.1 200 OK\r\nX: a\rb", Header),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2x", StatusLine),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 20!",
                StatusLine,
            ),
        ];
        for (input, err) in cases {
            all_splits_err(checked(), input, err);
            // The error comes from the feed, before any eof.
            let mut p = ResponseParser::new(checked());
            let mut at = 0;
            let mut got = Ok(());
            for piece in input.chunks(3) {
                match p.feed(piece) {
                    Ok(_) => at += piece.len(),
                    Err(e) => {
                        got = Err(e);
                        break;
                    }
                }
            }
            assert_eq!(got, Err(err), "after {at} bytes of {input:?}");
        }
        // A block at the limit is judged on its first `max` bytes only,
        // whole or split: what lies beyond is HeaderTooLarge, not Header.
        let cfg = ParserConfig {
            max_header_bytes: 32,
            ..checked()
        };
        let mut input = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        input.extend_from_slice(&[b'v'; 20]);
        input.extend_from_slice(b"\x01\r\n\r\n");
        all_splits_err(cfg, &input, ParseError::HeaderTooLarge(32));
    }

    fn chunked_with_line(line: &[u8]) -> Vec<u8> {
        let mut input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        input.extend_from_slice(line);
        input.extend_from_slice(b"hello\r\n0\r\n\r\n");
        input
    }

    #[test]
    fn chunk_extensions_follow_the_grammar() {
        let good: [&[u8]; 12] = [
            b"5\r\n",
            b"5;name\r\n",
            b"5;name=value\r\n",
            b"5 ; name = value\r\n",
            b"5\t;\tname\t=\t\"v\"\r\n",
            b"5;a;b;c=d;e\r\n",
            b"5;a=\"\"\r\n",
            b"5;a=\"x y;z=w\"\r\n",
            b"5;a=\"q\\\"d\\\\\"\r\n",
            b"5;a=\"\xe9t\xe9\" ;b\r\n",
            b"5;!#$%&'*+-.^_`|~09AZaz=!#$%&'*+-.^_`|~09AZaz\r\n",
            b"5;a=b\n",
        ];
        for line in good {
            let input = chunked_with_line(line);
            let (r, body) = all_splits(checked(), &input);
            assert_eq!(body, b"hello", "{:?}", String::from_utf8_lossy(line));
            assert_eq!((r[0].body_bytes, r[0].wire_bytes), (5, input.len() as u64));
        }
        let bad: [&[u8]; 17] = [
            b"5 \r\n",
            b"5\t\r\n",
            b"5 x\r\n",
            b"5;\r\n",
            b"5; \r\n",
            b"5;=v\r\n",
            b"5;a=\r\n",
            b"5;a= \r\n",
            b"5;a b\r\n",
            b"5;a=b c\r\n",
            b"5;a=b \r\n",
            b"5;a@b\r\n",
            b"5;a=b@\r\n",
            b"5;a=\"x\"y\r\n",
            b"5;a=\"\x01\"\r\n",
            b"5;a=\"\\\x7f\"\r\n",
            b"5;a=\"open\r\n",
        ];
        for line in bad {
            all_splits_err(
                checked(),
                &chunked_with_line(line),
                ParseError::ChunkExtension,
            );
        }
    }

    #[test]
    fn chunk_sizes_are_hex_digits_that_fit() {
        use ParseError::*;
        let bad: [(&[u8], ParseError); 9] = [
            (b"5x\r\n", InvalidChunkSize),
            (b"x\r\n", InvalidChunkSize),
            (b";a\r\n", InvalidChunkSize),
            (b" 5\r\n", InvalidChunkSize),
            (b"0x5\r\n", InvalidChunkSize),
            (b"+5\r\n", InvalidChunkSize),
            (b"5\rx", InvalidChunkSize),
            // 2^64: one more than a u64 holds.
            (b"10000000000000000\r\n", ChunkSizeOverflow),
            (b"fffffffffffffffff\r\n", ChunkSizeOverflow),
        ];
        for (line, err) in bad {
            all_splits_err(checked(), &chunked_with_line(line), err);
        }
        // The largest size that fits is a size: only the body can end it.
        let mut p = ResponseParser::new(checked());
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(p.feed(head), Ok((head.len(), None)));
        assert_eq!(p.feed(b"000ffffffffffffffff\r\nab"), Ok((23, None)));
        assert_eq!(p.eof(), Err(ParseError::ClosedMidResponse));
    }

    #[test]
    fn chunk_line_and_trailer_limits() {
        let cfg = ParserConfig {
            max_header_bytes: 128,
            ..checked()
        };
        let mut zeros = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        zeros.extend_from_slice(&[b'0'; 200]);
        assert_eq!(whole(cfg, &zeros), Err(ParseError::ChunkLineTooLong(128)));
        let mut trailers = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
        for _ in 0..20 {
            trailers.extend_from_slice(b"X-T: 0123456789\r\n");
        }
        trailers.extend_from_slice(b"\r\n");
        assert_eq!(
            whole(cfg, &trailers),
            Err(ParseError::TrailersTooLarge(128))
        );
        // Leading zeros are fine while the line stays within bounds.
        let ok = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000000000000003\r\nabc\r\n0\r\n\r\n";
        assert_eq!(one(cfg, ok).body_bytes, 3);
    }

    #[test]
    fn eof_mid_response_is_an_error() {
        let prefixes: [&[u8]; 5] = [
            b"HTTP/1.1 200 OK\r\nContent-Le",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
        ];
        for input in prefixes {
            let mut p = ResponseParser::new(checked());
            assert_eq!(p.feed(input), Ok((input.len(), None)));
            assert_eq!(p.eof(), Err(ParseError::ClosedMidResponse));
            assert!(p.is_idle(), "eof resets the parser");
        }
        let mut p = ResponseParser::new(checked());
        assert_eq!(p.eof(), Ok(None));
        assert_eq!(p.feed(b"\r\n"), Ok((2, None)));
        assert_eq!(p.eof(), Ok(None));
    }

    #[test]
    fn errors_stick_until_reset() {
        let mut p = ResponseParser::new(checked());
        assert_eq!(p.feed(b"garbage\r\n"), Err(ParseError::StatusLine));
        assert!(!p.is_idle());
        assert_eq!(p.feed(CL), Err(ParseError::StatusLine));
        p.reset();
        assert!(p.is_idle());
        assert_eq!(p.feed(CL).unwrap().1.map(|r| r.body_bytes), Some(5));
    }

    #[test]
    fn reset_forgets_partial_response() {
        let mut p = ResponseParser::new(checked());
        assert_eq!(p.feed(&CL[..20]), Ok((20, None)));
        p.reset();
        assert!(p.is_idle());
        let (n, r) = p.feed(CL).unwrap();
        assert_eq!((n, r.map(|r| r.wire_bytes)), (43, Some(43)));
    }

    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Drive a parser over `input` in random pieces; returns the responses
    /// or the first error. Panics if feed() breaks its contract.
    fn drive(
        cfg: ParserConfig,
        input: &[u8],
        rng: &mut XorShift,
    ) -> Result<Vec<Response>, ParseError> {
        let mut p = ResponseParser::new(cfg);
        let mut out = Vec::new();
        let mut at = 0;
        let mut calls = 0;
        while at < input.len() {
            let end = (at + 1 + rng.below(24)).min(input.len());
            let mut piece = &input[at..end];
            while !piece.is_empty() {
                calls += 1;
                assert!(calls <= input.len(), "feed loop made no progress");
                let (n, r) = p.feed(piece)?;
                assert!(n > 0 && n <= piece.len());
                if r.is_none() {
                    assert_eq!(n, piece.len());
                }
                out.extend(r);
                piece = &piece[n..];
            }
            at = end;
        }
        out.extend(p.eof()?);
        Ok(out)
    }

    #[test]
    fn fuzz_mutated_responses_never_panic_or_stall() {
        let corpus: [&[u8]; 6] = [
            CL,
            CHUNKED,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
            b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\nHTTP/1.1 200 OK\r\n\r\nrest",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;e=1\r\na\r\n0\r\nT: v\r\n\r\n",
        ];
        let alphabet = b"\r\n\r\n:;, 0123456789abcdefABCDEF\tHTTP/1.chunked";
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut outcomes = [0u32; 2];
        for _ in 0..20_000 {
            let mut input = corpus[rng.below(corpus.len())].to_vec();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(input.len() + 1);
                match rng.below(5) {
                    0 if i < input.len() => input[i] = rng.next() as u8,
                    1 => input.insert(i, alphabet[rng.below(alphabet.len())]),
                    2 if i < input.len() => {
                        input.remove(i);
                    }
                    3 => {
                        let j = rng.below(input.len() + 1);
                        let a = i.min(j);
                        let b = i.max(j).min(a + 32);
                        let dup = input[a..b].to_vec();
                        input.splice(i..i, dup);
                    }
                    _ => input.truncate(i),
                }
            }
            let cfg = ParserConfig {
                checksum: rng.below(2) == 0,
                head: rng.below(4) == 0,
                max_header_bytes: if rng.below(8) == 0 {
                    48
                } else {
                    DEFAULT_MAX_HEADER_BYTES
                },
            };
            let whole = whole(cfg, &input);
            let pieces = drive(cfg, &input, &mut rng);
            // Errors included: the same bytes are the same error however
            // they were split.
            assert_eq!(whole, pieces, "{input:?}");
            outcomes[usize::from(whole.is_ok())] += 1;
        }
        // Both outcomes are exercised (the exact split depends only on the seed).
        assert!(outcomes[0] > 1000 && outcomes[1] > 1000, "{outcomes:?}");
    }
}
