//! HTTP/2 (RFC 9113) on one connection, sans-IO like [`crate::http1`]:
//! bytes from the server go in, responses and the server's signals come
//! out one at a time, and what the client must send (the preface, its
//! requests, acknowledgements, window updates) piles up in an output
//! buffer the driver writes out. The same code serves TLS (after ALPN
//! chose `h2`) and cleartext with prior knowledge (h2c), and the fuzz
//! harness feeds it as TCP would.
//!
//! Nothing here allocates per request: a connection's stream table, frame
//! buffer and output buffer are sized by its first requests and reused;
//! request header blocks are ready slices (`blocks`); bodies are counted
//! and hashed as DATA frames stream past, never copied; the HPACK decoder
//! (`hpack`) reuses its table's buffers.
//!
//! Frames are checked as the RFC asks of a client: a frame longer than
//! the size we allow is a FRAME_SIZE_ERROR, a header block that does not
//! decode a COMPRESSION_ERROR, DATA beyond the window we gave a
//! FLOW_CONTROL_ERROR, anything out of order a PROTOCOL_ERROR; each ends
//! the connection with a GOAWAY naming it ([`Fault`]). A response that is
//! malformed (no `:status`, a body that is not its `content-length`)
//! fails only its stream.

pub mod blocks;
mod frames;
pub mod hpack;

use crate::http1::{fnv1a64_update, Response};
use crate::result::ErrorKind;
use blocks::{Blocks, DEFAULT_TABLE};

/// What a client sends first (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const PRIORITY: u8 = 0x2;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

/// The error code of a stream we give up on (RFC 9113 §7).
const CANCEL: u32 = 0x8;
const NO_ERROR: u32 = 0x0;

const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
const SETTINGS_ENABLE_PUSH: u16 = 0x2;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// Error codes (RFC 9113 §7); the names the figures use for each.
pub const CODES: [&str; 14] = [
    "no_error",
    "protocol_error",
    "internal_error",
    "flow_control_error",
    "settings_timeout",
    "stream_closed",
    "frame_size_error",
    "refused_stream",
    "cancel",
    "compression_error",
    "connect_error",
    "enhance_your_calm",
    "inadequate_security",
    "http_1_1_required",
];

/// The name of error code `code`, `other` for codes RFC 9113 does not define.
pub fn code_name(code: u32) -> &'static str {
    CODES.get(code as usize).copied().unwrap_or("other")
}

/// The slot counting error code `code` in a per-code array of
/// `CODES.len() + 1` counters (the last one for codes not in the RFC).
pub fn code_slot(code: u32) -> usize {
    (code as usize).min(CODES.len())
}

/// The frame size every peer must accept, and ours: larger frames buy
/// little for a client, whose requests are small.
pub const MAX_FRAME: u32 = 16_384;
const MAX_WINDOW: u32 = (1 << 31) - 1;
/// Largest header block (over HEADERS and CONTINUATION) a response may
/// have: far above any real server's, it keeps a hostile one from growing
/// the buffer without end.
const MAX_BLOCK: usize = 256 * 1024;
/// The window HTTP/2 starts every stream and the connection with.
const INITIAL_WINDOW: u32 = 65_535;

/// Why a connection cannot go on: what the server sent breaks RFC 9113.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Protocol,
    FrameSize,
    Compression,
    FlowControl,
}

impl Fault {
    pub fn kind(self) -> ErrorKind {
        match self {
            Fault::Protocol => ErrorKind::H2Protocol,
            Fault::FrameSize => ErrorKind::H2FrameSize,
            Fault::Compression => ErrorKind::H2Compression,
            Fault::FlowControl => ErrorKind::H2FlowControl,
        }
    }

    fn code(self) -> u32 {
        match self {
            Fault::Protocol => 0x1,
            Fault::FlowControl => 0x3,
            Fault::FrameSize => 0x6,
            Fault::Compression => 0x9,
        }
    }
}

/// What the server said, one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Stream `stream`'s response is complete.
    Response { stream: u32, resp: Response },
    /// The server reset `stream` (RST_STREAM) with `code`.
    Reset { stream: u32, code: u32 },
    /// `stream`'s response was malformed; the client reset it.
    Malformed { stream: u32 },
    /// The server is closing: streams above `last_stream` were never
    /// processed and may be sent again elsewhere.
    GoAway { last_stream: u32, code: u32 },
    /// The server's SETTINGS arrived: its stream limit may have changed.
    Settings,
    /// A second response began on `stream`, after its first had ended.
    Unsolicited { stream: u32 },
}

/// Streams the client dropped (reset, forgotten) that a connection keeps:
/// what the server sent on one before it knew is no second answer.
const DROPPED: usize = 64;

/// A connection's local choices.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The receive window of each stream, and of the whole connection.
    pub stream_window: u32,
    pub conn_window: u32,
    /// Hash response bodies.
    pub checksum: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Stream {
    id: u32,
    status: u16,
    /// The final (non-1xx) header block has come.
    headers_done: bool,
    body_bytes: u64,
    hash: u64,
    content_length: Option<u64>,
    head: bool,
    /// When the read that brought the final headers arrived (see
    /// [`H2::stamp`]).
    first_ns: u64,
    /// Received DATA not yet given back with a WINDOW_UPDATE.
    unacked: u32,
    /// How much request body the server's window lets us send.
    send_window: i64,
    /// The request's body: which target, and how much is sent.
    target: u32,
    body_off: usize,
    body_len: usize,
}

/// Where the decoder is in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rx {
    /// Collecting a frame header's 9 bytes.
    Head,
    /// A DATA frame's payload, streamed: `pad` bytes of padding at its
    /// end; `padded` until its pad-length byte is read.
    Data { left: u32, pad: u32, padded: bool },
    /// Any other frame's payload, gathered in `frame` whole.
    Gather { left: u32 },
}

/// What a probe keeps of its response: the final header block's fields
/// and the body.
#[derive(Debug, Default)]
pub struct Capture {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A connection's HTTP/2 state.
pub struct H2 {
    cfg: Config,
    rx: Rx,
    hdr: [u8; 9],
    hdr_len: usize,
    /// The frame being read: length, type, flags, stream.
    f_len: u32,
    f_type: u8,
    f_flags: u8,
    f_stream: u32,
    frame: Vec<u8>,
    /// A header block being assembled over CONTINUATION frames: its
    /// stream, and whether its HEADERS ended the stream.
    block: Vec<u8>,
    continuing: Option<(u32, bool)>,
    decoder: hpack::Decoder,
    streams: Vec<Stream>,
    next_id: u32,
    got_settings: bool,
    /// The server's limits.
    peer_max_streams: u32,
    peer_initial_window: u32,
    peer_max_frame: u32,
    /// Request header blocks: the first one of the connection fills the
    /// server's table (`cold`); `plain` once its table is too small.
    primed: bool,
    plain: bool,
    table_bytes: usize,
    /// The next block starts with a size update to 0.
    size_update: bool,
    /// Send and receive windows of the whole connection.
    conn_send: i64,
    conn_unacked: u32,
    goaway: Option<u32>,
    /// When the bytes being fed arrived, and the first byte's time of the
    /// last stream that ended.
    now_ns: u64,
    ended_first_ns: u64,
    /// A probe's one exchange keeps the response's fields and body; a
    /// load keeps neither.
    capture: Option<Box<Capture>>,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    out_off: usize,
    /// PING and SETTINGS acknowledgements queued since `out` was last
    /// written whole.
    acks: u32,
    /// The last `DROPPED` streams the client dropped, round and round.
    dropped: [u32; DROPPED],
    dropped_next: usize,
}

/// Most acknowledgements a connection holds unwritten (about 280 KB of
/// PING acknowledgements): see `H2::acknowledge`.
const MAX_ACKS_UNWRITTEN: u32 = 16_384;

impl H2 {
    /// A connection whose request blocks need `table_bytes` of the
    /// server's table to be sent warm.
    pub fn new(cfg: Config, table_bytes: usize) -> H2 {
        // We never announce a larger table than the default.
        let decoder = hpack::Decoder::new(DEFAULT_TABLE);
        H2 {
            cfg,
            rx: Rx::Head,
            hdr: [0; 9],
            hdr_len: 0,
            f_len: 0,
            f_type: 0,
            f_flags: 0,
            f_stream: 0,
            frame: Vec::new(),
            block: Vec::new(),
            continuing: None,
            decoder,
            streams: Vec::new(),
            next_id: 1,
            got_settings: false,
            peer_max_streams: u32::MAX,
            peer_initial_window: INITIAL_WINDOW,
            peer_max_frame: MAX_FRAME,
            primed: false,
            plain: table_bytes > DEFAULT_TABLE,
            table_bytes,
            size_update: false,
            conn_send: i64::from(INITIAL_WINDOW),
            conn_unacked: 0,
            goaway: None,
            now_ns: 0,
            ended_first_ns: 0,
            capture: None,
            out: Vec::new(),
            out_off: 0,
            acks: 0,
            dropped: [0; DROPPED],
            dropped_next: 0,
        }
    }

    /// A fresh connection: the preface, our SETTINGS (no push, our stream
    /// window) and the connection window opened to its size, all queued.
    pub fn start(&mut self) {
        let table_bytes = self.table_bytes;
        let (cfg, mut out, frame, block) = (
            self.cfg,
            std::mem::take(&mut self.out),
            std::mem::take(&mut self.frame),
            std::mem::take(&mut self.block),
        );
        let mut streams = std::mem::take(&mut self.streams);
        *self = H2::new(cfg, table_bytes);
        out.clear();
        streams.clear();
        self.out = out;
        self.streams = streams;
        self.frame = frame;
        self.block = block;
        self.frame.clear();
        self.block.clear();
        self.out.extend_from_slice(PREFACE);
        frame_head(&mut self.out, 12, SETTINGS, 0, 0);
        setting(&mut self.out, SETTINGS_ENABLE_PUSH, 0);
        setting(
            &mut self.out,
            SETTINGS_INITIAL_WINDOW_SIZE,
            cfg.stream_window,
        );
        if cfg.conn_window > INITIAL_WINDOW {
            window_update(&mut self.out, 0, cfg.conn_window - INITIAL_WINDOW);
        }
    }

    /// The bytes fed next arrived at `now_ns` (the driver's clock).
    pub fn stamp(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    /// When the final headers of the stream whose response just came
    /// (the last [`Event::Response`]) arrived; 0 if never stamped.
    pub fn first_byte_ns(&self) -> u64 {
        self.ended_first_ns
    }

    /// Keep the fields and body of what comes (for one exchange).
    pub fn capture(&mut self) {
        self.capture = Some(Box::default());
    }

    /// What [`H2::capture`] kept.
    pub fn captured(&mut self) -> Option<Capture> {
        self.capture.take().map(|c| *c)
    }

    /// Streams the server allows at once (its SETTINGS; unlimited until
    /// they come).
    pub fn peer_max_streams(&self) -> u32 {
        self.peer_max_streams
    }

    /// Streams that may be open at once now: the server's limit, and one
    /// until its SETTINGS say what that is. Its limit may be below ours,
    /// and a stream opened above it is refused (REFUSED_STREAM): an error
    /// of the client's making that the load would count against the
    /// server. One stream is within any server's limit; the others wait
    /// a round trip, once per connection.
    pub fn stream_limit(&self) -> u32 {
        if self.got_settings {
            self.peer_max_streams
        } else {
            1
        }
    }

    pub fn active(&self) -> usize {
        self.streams.len()
    }

    /// Whether a new stream may be opened: below the stream limit, no
    /// GOAWAY received, and stream ids left.
    pub fn can_open(&self) -> bool {
        self.goaway.is_none()
            && (self.streams.len() as u64) < u64::from(self.stream_limit())
            && self.next_id <= MAX_WINDOW
    }

    /// No stream can ever be opened on this connection again.
    pub fn finished(&self) -> bool {
        self.goaway.is_some() || self.next_id > MAX_WINDOW
    }

    /// Open a stream for `target`'s request, `r` its blocks: HEADERS
    /// (and CONTINUATION, should the block exceed the server's frame
    /// size) queued, its body sent as the windows allow (see
    /// [`H2::pump`]). Returns the stream's id.
    pub fn open(&mut self, target: u32, r: &Blocks) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let block: &[u8] = if self.plain {
            &r.plain
        } else if self.primed {
            &r.warm
        } else {
            self.primed = true;
            &r.cold
        };
        let mut flags = if r.body.is_empty() { END_STREAM } else { 0 };
        // A size update goes before the block's first field.
        let prefix: &[u8] = if std::mem::take(&mut self.size_update) {
            &[blocks::SIZE_UPDATE_TO_ZERO]
        } else {
            &[]
        };
        let (plen, total) = (prefix.len(), prefix.len() + block.len());
        let max = self.peer_max_frame as usize;
        let mut sent = 0;
        let mut first = true;
        while first || sent < total {
            let n = (total - sent).min(max);
            let end = if sent + n == total { END_HEADERS } else { 0 };
            let typ = if first { HEADERS } else { CONTINUATION };
            frame_head(&mut self.out, n as u32, typ, flags | end, id);
            // Bytes sent..sent + n of the prefix followed by the block.
            let (lo, hi) = (sent, sent + n);
            if lo < plen {
                self.out.extend_from_slice(&prefix[lo..hi.min(plen)]);
            }
            if hi > plen {
                self.out
                    .extend_from_slice(&block[lo.max(plen) - plen..hi - plen]);
            }
            sent += n;
            first = false;
            flags = 0;
        }
        self.streams.push(Stream {
            id,
            hash: crate::http1::fnv1a64(&[]),
            head: r.head,
            send_window: i64::from(self.peer_initial_window),
            target,
            body_len: r.body.len(),
            ..Stream::default()
        });
        id
    }

    /// Queue what request bodies the windows allow, in DATA frames no
    /// larger than the server accepts. `body` gives a target's body.
    pub fn pump<'a>(&mut self, body: impl Fn(u32) -> &'a [u8]) {
        for s in &mut self.streams {
            while s.body_off < s.body_len && self.conn_send > 0 && s.send_window > 0 {
                let n = (s.body_len - s.body_off)
                    .min(self.peer_max_frame as usize)
                    .min(self.conn_send as usize)
                    .min(s.send_window as usize);
                let end = s.body_off + n == s.body_len;
                frame_head(
                    &mut self.out,
                    n as u32,
                    DATA,
                    if end { END_STREAM } else { 0 },
                    s.id,
                );
                self.out
                    .extend_from_slice(&body(s.target)[s.body_off..s.body_off + n]);
                s.body_off += n;
                self.conn_send -= n as i64;
                s.send_window -= n as i64;
            }
        }
    }

    /// Bytes waiting to be written.
    pub fn pending(&self) -> &[u8] {
        &self.out[self.out_off..]
    }

    /// `n` bytes of [`H2::pending`] were written.
    pub fn written(&mut self, n: usize) {
        self.out_off += n;
        if self.out_off >= self.out.len() {
            self.out.clear();
            self.out_off = 0;
            self.acks = 0;
        }
    }

    /// Forget stream `id` (it timed out, or its connection is ending).
    pub fn forget(&mut self, id: u32) {
        if let Some(k) = self.streams.iter().position(|s| s.id == id) {
            self.streams.swap_remove(k);
        }
        self.dropped(id);
    }

    fn dropped(&mut self, id: u32) {
        if !self.dropped.contains(&id) {
            self.dropped[self.dropped_next] = id;
            self.dropped_next = (self.dropped_next + 1) % DROPPED;
        }
    }

    /// Whether stream `id` ended on its own, not dropped by the client.
    fn ended(&self, id: u32) -> bool {
        id % 2 == 1 && id < self.next_id && !self.dropped.contains(&id)
    }

    /// Give up on stream `id`: the server is told with RST_STREAM(CANCEL),
    /// and what it still sends on the stream is read and dropped.
    pub fn cancel(&mut self, id: u32) {
        self.forget(id);
        self.rst(id, CANCEL);
    }

    /// When the server last sent anything (see [`H2::stamp`]); 0 before.
    pub fn last_arrival_ns(&self) -> u64 {
        self.now_ns
    }

    /// End the connection for `fault`: a GOAWAY naming it is queued.
    pub fn fail(&mut self, fault: Fault) {
        self.goaway(fault.code());
    }

    /// Queue a GOAWAY with `code`, naming the last stream we saw.
    pub fn goaway(&mut self, code: u32) {
        frame_head(&mut self.out, 8, GOAWAY, 0, 0);
        self.out.extend_from_slice(&0u32.to_be_bytes());
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    /// Take what the server sent, up to the next event: the bytes used,
    /// and the event if one came.
    pub fn feed(&mut self, buf: &[u8]) -> Result<(usize, Option<Event>), Fault> {
        let mut used = 0;
        while used < buf.len() {
            let rest = &buf[used..];
            match self.rx {
                Rx::Head => {
                    let n = (9 - self.hdr_len).min(rest.len());
                    self.hdr[self.hdr_len..self.hdr_len + n].copy_from_slice(&rest[..n]);
                    self.hdr_len += n;
                    used += n;
                    if self.hdr_len == 9 {
                        self.hdr_len = 0;
                        if let Some(ev) = self.on_head()? {
                            return Ok((used, Some(ev)));
                        }
                    }
                }
                Rx::Data { left, pad, padded } => {
                    if padded {
                        let p = u32::from(rest[0]);
                        used += 1;
                        if p >= left {
                            return Err(Fault::Protocol);
                        }
                        self.rx = Rx::Data {
                            left: left - 1,
                            pad: p,
                            padded: false,
                        };
                        // A frame that is its pad length alone ends with
                        // it: waiting for another byte would hold its
                        // END_STREAM until the server sent more, forever
                        // if this was its last frame.
                        if left == 1 {
                            self.rx = Rx::Head;
                            if let Some(ev) = self.data_end()? {
                                return Ok((used, Some(ev)));
                            }
                        }
                        continue;
                    }
                    let n = (left as usize).min(rest.len());
                    let data_left = left.saturating_sub(pad) as usize;
                    let body = n.min(data_left);
                    if body > 0 {
                        self.on_body(&rest[..body]);
                    }
                    used += n;
                    let left = left - n as u32;
                    self.rx = Rx::Data {
                        left,
                        pad: pad.min(left),
                        padded: false,
                    };
                    if left == 0 {
                        self.rx = Rx::Head;
                        if let Some(ev) = self.data_end()? {
                            return Ok((used, Some(ev)));
                        }
                    }
                }
                Rx::Gather { left } => {
                    let n = (left as usize).min(rest.len());
                    self.frame.extend_from_slice(&rest[..n]);
                    used += n;
                    let left = left - n as u32;
                    self.rx = Rx::Gather { left };
                    if left == 0 {
                        self.rx = Rx::Head;
                        let ev = self.on_frame();
                        self.frame.clear();
                        if let Some(ev) = ev? {
                            return Ok((used, Some(ev)));
                        }
                    }
                }
            }
        }
        Ok((used, None))
    }

    /// A frame header is in: check it, and set up reading its payload.
    fn on_head(&mut self) -> Result<Option<Event>, Fault> {
        let h = self.hdr;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]);
        self.f_len = len;
        self.f_type = h[3];
        self.f_flags = h[4];
        self.f_stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & MAX_WINDOW;
        // A server's preface is its SETTINGS (RFC 9113 §3.4). Checked
        // before the length: a server that does not speak HTTP/2 (an
        // HTTP/1.1 port's `HTTP/1.1 400`, read as a frame header, is 4.7 MB
        // long) broke the preface, which is a protocol error, not a frame
        // too large.
        if !self.got_settings && (self.f_type != SETTINGS || self.f_flags & ACK != 0) {
            return Err(Fault::Protocol);
        }
        if len > MAX_FRAME {
            return Err(Fault::FrameSize);
        }
        // Nothing may come between a header block's frames (§6.10).
        if self.continuing.is_some() && self.f_type != CONTINUATION {
            return Err(Fault::Protocol);
        }
        if self.f_type == DATA {
            if self.f_stream == 0 {
                return Err(Fault::Protocol);
            }
            self.take_window(len)?;
            self.rx = Rx::Data {
                left: len,
                pad: 0,
                padded: self.f_flags & PADDED != 0,
            };
            if len == 0 {
                if self.f_flags & PADDED != 0 {
                    return Err(Fault::FrameSize);
                }
                self.rx = Rx::Head;
                return self.data_end();
            }
            return Ok(None);
        }
        self.rx = Rx::Gather { left: len };
        if len == 0 {
            self.rx = Rx::Head;
            return self.on_frame();
        }
        Ok(None)
    }

    /// DATA's length counts against both windows we gave, padding too.
    fn take_window(&mut self, len: u32) -> Result<(), Fault> {
        let id = self.f_stream;
        self.conn_unacked += len;
        if self.conn_unacked > self.cfg.conn_window {
            return Err(Fault::FlowControl);
        }
        if let Some(s) = self.streams.iter_mut().find(|s| s.id == id) {
            s.unacked += len;
            if s.unacked > self.cfg.stream_window {
                return Err(Fault::FlowControl);
            }
        } else if id >= self.next_id || id.is_multiple_of(2) {
            return Err(Fault::Protocol);
        }
        Ok(())
    }

    /// Give back the windows the server has used half of, one frame each,
    /// so that it never waits on us. Called once per read, not per frame:
    /// fewer frames, and within one read the server is held to the
    /// window it last saw.
    pub fn replenish(&mut self) {
        if self.conn_unacked >= self.cfg.conn_window / 2 {
            window_update(&mut self.out, 0, self.conn_unacked);
            self.conn_unacked = 0;
        }
        let half = self.cfg.stream_window / 2;
        for s in &mut self.streams {
            if s.unacked >= half {
                window_update(&mut self.out, s.id, s.unacked);
                s.unacked = 0;
            }
        }
    }

    fn on_body(&mut self, data: &[u8]) {
        let id = self.f_stream;
        let sum = self.cfg.checksum;
        if let Some(c) = self.capture.as_mut() {
            c.body.extend_from_slice(data);
        }
        if let Some(s) = self.streams.iter_mut().find(|s| s.id == id) {
            s.body_bytes += data.len() as u64;
            if sum {
                s.hash = fnv1a64_update(s.hash, data);
            }
        }
    }

    /// A DATA frame has been read whole.
    fn data_end(&mut self) -> Result<Option<Event>, Fault> {
        let id = self.f_stream;
        let Some(k) = self.streams.iter().position(|s| s.id == id) else {
            // A stream we reset: its data is counted against the
            // connection's window only.
            return Ok(None);
        };
        if !self.streams[k].headers_done {
            return Err(Fault::Protocol);
        }
        if self.f_flags & END_STREAM != 0 {
            return Ok(Some(self.end_stream(k)));
        }
        Ok(None)
    }

    /// Stream `k` ended: its response, or a malformed one reset.
    fn end_stream(&mut self, k: usize) -> Event {
        let s = self.streams.swap_remove(k);
        self.ended_first_ns = s.first_ns;
        let no_body = s.head || s.status == 204 || s.status == 304;
        let length_ok = match s.content_length {
            Some(n) if !no_body => n == s.body_bytes,
            _ => true,
        };
        if s.status == 0 || !length_ok || (s.head && s.body_bytes > 0) {
            self.rst(s.id, 0x1);
            return Event::Malformed { stream: s.id };
        }
        // Answered before its body was all sent (RFC 9113 §8.1): the rest
        // is not sent, so our half is closed with a reset, or the stream
        // would count against the server's limit for good.
        if s.body_off < s.body_len {
            self.rst(s.id, NO_ERROR);
        }
        Event::Response {
            stream: s.id,
            resp: Response {
                status: s.status,
                body_bytes: s.body_bytes,
                wire_bytes: 0,
                checksum: if self.cfg.checksum { s.hash } else { 0 },
                keep_alive: true,
            },
        }
    }

    fn rst(&mut self, id: u32, code: u32) {
        self.dropped(id);
        frame_head(&mut self.out, 4, RST_STREAM, 0, id);
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    /// A frame other than DATA is in `frame` whole.
    fn on_frame(&mut self) -> Result<Option<Event>, Fault> {
        let (typ, flags, id) = (self.f_type, self.f_flags, self.f_stream);
        let p = std::mem::take(&mut self.frame);
        let r = self.frame_of(typ, flags, id, &p);
        self.frame = p;
        r
    }
}

pub(crate) fn frame_head(out: &mut Vec<u8>, len: u32, typ: u8, flags: u8, id: u32) {
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(typ);
    out.push(flags);
    out.extend_from_slice(&id.to_be_bytes());
}

fn setting(out: &mut Vec<u8>, key: u16, v: u32) {
    out.extend_from_slice(&key.to_be_bytes());
    out.extend_from_slice(&v.to_be_bytes());
}

fn window_update(out: &mut Vec<u8>, id: u32, inc: u32) {
    frame_head(out, 4, WINDOW_UPDATE, 0, id);
    out.extend_from_slice(&inc.to_be_bytes());
}

#[cfg(test)]
mod tests;
