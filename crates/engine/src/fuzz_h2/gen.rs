//! The generator of [`super::generate`]: streams' plans, and the server's
//! bytes built from them with the outcome they must have.

use super::*;

/// What a frame of a stream's plan must make the client do.
#[derive(Debug, Clone, Copy)]
pub(super) enum Then {
    Nothing,
    Respond(Response),
    Reset(u32),
    /// The client resets the stream as malformed.
    Malformed,
}

impl Then {
    fn ends(self) -> bool {
        !matches!(self, Then::Nothing)
    }
}

pub(super) type Fields = Vec<(Vec<u8>, Vec<u8>)>;

pub(super) enum Item {
    Block { fields: Fields, end_stream: bool },
    Data { bytes: Vec<u8>, end_stream: bool },
    Rst(u32),
}

/// One stream's frames, in order, each with what it makes the client do.
pub(super) struct Plan {
    pub(super) id: u32,
    items: VecDeque<(Item, Then)>,
    /// The client no longer holds the stream: it ended either way.
    pub(super) ended: bool,
    /// The client reset it (malformed): what follows on it is no answer.
    dropped: bool,
}

/// A server's bytes, built with the outcome they must have.
pub(super) struct Gen<'a> {
    rng: &'a mut Rng,
    cfg: Config,
    max_body: usize,
    pub(super) input: Vec<u8>,
    /// Where each frame starts, for mutations that know frames.
    pub(super) frames: Vec<usize>,
    hpack: Encoder,
    pub(super) plans: Vec<Plan>,
    pub(super) events: Vec<Event>,
    pub(super) sent: Vec<u8>,
    pub(super) fault: Option<Fault>,
    /// The last stream of the GOAWAYs sent so far.
    pub(super) goaway: Option<u32>,
    /// DATA the client has taken, which counts against its windows.
    conn_used: u64,
    /// Ids past the last stream opened.
    next_id: u32,
}

pub(super) const STATUSES: [u16; 11] = [200, 200, 200, 201, 204, 206, 304, 404, 500, 503, 299];
pub(super) const NAMES: [&str; 8] = [
    "server",
    "date",
    "etag",
    "cache-control",
    "vary",
    "content-type",
    "x-pad",
    "link",
];
pub(super) const VALUES: [&str; 6] = [
    "x",
    "",
    "a, b",
    "\"tagged\"",
    "Tue, 01 Jul 2025 10:00:00 GMT",
    "text/html; charset=utf-8",
];

pub(super) fn field(n: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (n.as_bytes().to_vec(), v.as_bytes().to_vec())
}

impl<'a> Gen<'a> {
    pub(super) fn new(rng: &'a mut Rng, cfg: Config, heads: &[bool], max_body: usize) -> Gen<'a> {
        let mut g = Gen {
            rng,
            cfg,
            max_body,
            input: Vec::new(),
            frames: Vec::new(),
            hpack: Encoder::new(),
            plans: Vec::new(),
            events: Vec::new(),
            sent: Vec::new(),
            fault: None,
            goaway: None,
            conn_used: 0,
            next_id: 2 * heads.len() as u32 + 1,
        };
        for (k, &head) in heads.iter().enumerate() {
            let id = 2 * k as u32 + 1;
            let items = g.plan(head);
            g.plans.push(Plan {
                id,
                items,
                ended: false,
                dropped: false,
            });
        }
        g
    }

    fn frame(&mut self, typ: u8, flags: u8, id: u32, payload: &[u8]) {
        self.frames.push(self.input.len());
        frame_head(&mut self.input, payload.len() as u32, typ, flags, id);
        self.input.extend_from_slice(payload);
    }

    /// The server's SETTINGS first, then the streams' frames interleaved
    /// with frames that change nothing, and now and then a fault.
    pub(super) fn run(&mut self) {
        self.settings();
        while self.plans.iter().any(|p| !p.items.is_empty()) {
            if self.rng.one_in(7) {
                self.noise();
                continue;
            }
            let waiting: Vec<usize> = (0..self.plans.len())
                .filter(|&k| !self.plans[k].items.is_empty())
                .collect();
            let k = pick(self.rng, &waiting);
            self.step(k);
        }
        for _ in 0..self.rng.below(3) {
            self.noise();
        }
        if self.rng.one_in(4) {
            self.goaway_frame();
        }
        if self.rng.one_in(5) {
            self.broken();
        }
    }

    fn settings(&mut self) {
        let mut p = Vec::new();
        for _ in 0..self.rng.below(5) {
            let (key, v) = match self.rng.below(7) {
                0 => (HEADER_TABLE_SIZE, pick(self.rng, &[0, 100, 4096, 65_536])),
                1 => (ENABLE_PUSH, 0),
                2 => (
                    MAX_CONCURRENT_STREAMS,
                    pick(self.rng, &[0, 1, 100, u32::MAX]),
                ),
                3 => (
                    INITIAL_WINDOW_SIZE,
                    pick(self.rng, &[0, 1000, 65_535, 1 << 20, 1 << 30]),
                ),
                4 => (
                    MAX_FRAME_SIZE,
                    pick(
                        self.rng,
                        &[MAX_FRAME, MAX_FRAME + 1, 1 << 20, (1 << 24) - 1],
                    ),
                ),
                // Settings a client does not know are ignored.
                _ => (
                    pick(self.rng, &[0x7, 0x8, 0x10, 0xffff]),
                    self.rng.next_u64() as u32,
                ),
            };
            p.extend_from_slice(&key.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        self.frame(SETTINGS, 0, 0, &p);
        self.events.push(Event::Settings);
        frame_head(&mut self.sent, 0, SETTINGS, ACK, 0);
    }

    /// A stream's frames: a response, a malformed one, a reset, or a
    /// response cut short that leaves the stream open.
    fn plan(&mut self, head: bool) -> VecDeque<(Item, Then)> {
        let mut items = VecDeque::new();
        let status = pick(self.rng, &STATUSES);
        let no_body = head || status == 204 || status == 304;
        let len = match self.rng.below(10) {
            0 => 0,
            1 => self.rng.below(self.max_body + 1),
            _ => self.rng.below(48).min(self.max_body),
        };
        let body: Vec<u8> = if no_body {
            Vec::new()
        } else {
            (0..len).map(|_| b'a' + self.rng.below(26) as u8).collect()
        };
        // Interim responses first, now and then.
        for _ in 0..self.rng.below(3).saturating_sub(1) {
            let code = pick(self.rng, &["100", "103"]);
            let mut fields = vec![field(":status", code)];
            if self.rng.one_in(2) {
                fields.push(field("link", "</a.css>; rel=preload"));
            }
            items.push_back((
                Item::Block {
                    fields,
                    end_stream: false,
                },
                Then::Nothing,
            ));
        }
        let mut fields = vec![field(":status", &status.to_string())];
        for _ in 0..self.rng.below(3) {
            let n = pick(self.rng, &NAMES);
            fields.push(field(n, pick(self.rng, &VALUES)));
        }
        let with_length = !self.rng.one_in(3);
        let length = if head && self.rng.one_in(2) {
            // What a GET would have had.
            1 + self.rng.below(5000)
        } else {
            body.len()
        };
        let fate = self.rng.below(12);
        // Malformed in one of six ways (fates 0 to 5).
        let mut malformed = fate < 6;
        let mut length_field = with_length.then(|| length.to_string());
        let mut trailer_status = false;
        let mut final_end = false;
        match fate {
            0 if !no_body => length_field = Some((body.len() + 1 + self.rng.below(3)).to_string()),
            0 if head => {
                // A body for a HEAD request.
                items.push_back((
                    Item::Block {
                        fields: vec![field(":status", "200")],
                        end_stream: false,
                    },
                    Then::Nothing,
                ));
                items.push_back((
                    Item::Data {
                        bytes: b"body".to_vec(),
                        end_stream: true,
                    },
                    Then::Malformed,
                ));
                return items;
            }
            1 => {
                fields.remove(0);
                final_end = true;
            }
            2 => {
                fields[0].1 = pick(self.rng, &["20", "2000", "abc", "099", ""]).into();
                final_end = true;
            }
            3 => {
                length_field = Some(pick(self.rng, &["", "-1", "1 2", "0x10"]).into());
                // Condemned by its block, whatever follows.
                final_end = true;
            }
            4 => {
                // An interim response that ends the stream.
                items.clear();
                items.push_back((
                    Item::Block {
                        fields: vec![field(":status", "103")],
                        end_stream: true,
                    },
                    Then::Malformed,
                ));
                return items;
            }
            5 => trailer_status = true,
            _ => malformed = false,
        }
        if let Some(v) = &length_field {
            let first = usize::from(!fields.is_empty());
            let at = first + self.rng.below(fields.len() + 1 - first);
            fields.insert(at, field("content-length", v));
        }
        // Now and then :status comes after a regular field: malformed
        // (RFC 9113 §8.3), condemned by its block.
        if self.rng.one_in(8) && fields.len() > 1 && !malformed {
            let k = 1 + self.rng.below(fields.len() - 1);
            fields.swap(0, k);
            malformed = true;
            final_end = true;
        }
        let reset = !malformed && fate == 6;
        let unfinished = !malformed && fate == 7;
        let resp = Response {
            status,
            body_bytes: body.len() as u64,
            wire_bytes: 0,
            checksum: if self.cfg.checksum { fnv1a64(&body) } else { 0 },
            keep_alive: true,
        };
        let done = if malformed {
            Then::Malformed
        } else {
            Then::Respond(resp)
        };
        if final_end || (body.is_empty() && self.rng.one_in(2) && !trailer_status) {
            items.push_back((
                Item::Block {
                    fields,
                    end_stream: true,
                },
                done,
            ));
        } else {
            items.push_back((
                Item::Block {
                    fields,
                    end_stream: false,
                },
                Then::Nothing,
            ));
            let trailers = trailer_status || self.rng.one_in(6);
            let mut rest = &body[..];
            let pieces = 1 + self.rng.below(4);
            for k in 0..pieces {
                let last = k + 1 == pieces;
                let n = if last {
                    rest.len()
                } else {
                    self.rng.below(rest.len() + 1)
                };
                let end_stream = last && !trailers;
                items.push_back((
                    Item::Data {
                        bytes: rest[..n].to_vec(),
                        end_stream,
                    },
                    if end_stream { done } else { Then::Nothing },
                ));
                rest = &rest[n..];
            }
            if trailers {
                let mut fields = vec![field("x-trailer", "t")];
                if trailer_status {
                    fields.push(field(":status", "200"));
                }
                items.push_back((
                    Item::Block {
                        fields,
                        end_stream: true,
                    },
                    done,
                ));
            }
        }
        if reset || unfinished {
            // Cut the response short: a reset in its place, or nothing.
            let keep = self.rng.below(items.len());
            items.truncate(keep);
            if reset {
                let code = if self.rng.one_in(4) {
                    self.rng.next_u64() as u32
                } else {
                    self.rng.below(14) as u32
                };
                items.push_back((Item::Rst(code), Then::Reset(code)));
            }
        }
        items
    }

    fn forgotten(&self, id: u32) -> bool {
        self.goaway.is_some_and(|l| id > l)
    }

    /// The next frame of stream `k`'s plan.
    fn step(&mut self, k: usize) {
        let (item, then) = self.plans[k].items.pop_front().expect("an item");
        let id = self.plans[k].id;
        match item {
            Item::Block { fields, end_stream } => self.block(id, &fields, end_stream),
            Item::Data { bytes, end_stream } => self.data(id, &bytes, end_stream),
            Item::Rst(code) => self.frame(RST_STREAM, 0, id, &code.to_be_bytes()),
        }
        let forgotten = self.forgotten(id);
        let plan = &mut self.plans[k];
        if plan.ended || forgotten {
            // Every RST_STREAM received is reported, of a stream that
            // ended or not: it fails nothing then, but is counted.
            if let Then::Reset(code) = then {
                self.events.push(Event::Reset { stream: id, code });
            }
            return;
        }
        plan.ended = then.ends();
        plan.dropped = matches!(then, Then::Malformed);
        match then {
            Then::Nothing => {}
            Then::Respond(resp) => self.events.push(Event::Response { stream: id, resp }),
            Then::Reset(code) => self.events.push(Event::Reset { stream: id, code }),
            Then::Malformed => {
                self.events.push(Event::Malformed { stream: id });
                frame_head(&mut self.sent, 4, RST_STREAM, 0, id);
                self.sent.extend_from_slice(&1u32.to_be_bytes());
            }
        }
    }

    /// A header block: HEADERS, padded and prioritised now and then, and
    /// CONTINUATION frames for the rest.
    fn block(&mut self, id: u32, fields: &Fields, end_stream: bool) {
        let block = self.hpack.block(self.rng, fields);
        let pieces = pick(self.rng, &[1, 1, 1, 2, 3]);
        let mut cuts: Vec<usize> = (1..pieces)
            .map(|_| self.rng.below(block.len() + 1))
            .collect();
        cuts.sort_unstable();
        cuts.push(block.len());
        let mut flags = if end_stream { END_STREAM } else { 0 };
        if pieces == 1 {
            flags |= END_HEADERS;
        }
        let mut p = Vec::new();
        let pad = self.rng.one_in(4).then(|| self.rng.below(16));
        if let Some(pad) = pad {
            flags |= PADDED;
            p.push(pad as u8);
        }
        if self.rng.one_in(4) {
            flags |= PRIORITY_FLAG;
            p.extend_from_slice(&(self.rng.below(8) as u32).to_be_bytes());
            p.push(self.rng.below(256) as u8);
        }
        p.extend_from_slice(&block[..cuts[0]]);
        p.resize(p.len() + pad.unwrap_or(0), 0);
        self.frame(HEADERS, flags, id, &p);
        for k in 1..pieces {
            let end = if k + 1 == pieces { END_HEADERS } else { 0 };
            let piece = block[cuts[k - 1]..cuts[k]].to_vec();
            self.frame(CONTINUATION, end, id, &piece);
        }
    }

    fn data(&mut self, id: u32, bytes: &[u8], end_stream: bool) {
        let mut flags = if end_stream { END_STREAM } else { 0 };
        let mut p = Vec::new();
        if self.rng.one_in(4) {
            let pad = self.rng.below(20);
            flags |= PADDED;
            p.push(pad as u8);
            p.extend_from_slice(bytes);
            p.resize(p.len() + pad, 0);
        } else {
            p.extend_from_slice(bytes);
        }
        self.conn_used += p.len() as u64;
        // Far below the smallest window: the generator never overruns one
        // but on purpose (`broken`).
        debug_assert!(self.conn_used < 65_535);
        self.frame(DATA, flags, id, &p);
    }

    /// A frame the client must take without it changing any stream.
    fn noise(&mut self) {
        let ended: Vec<u32> = self
            .plans
            .iter()
            .filter(|p| p.ended || self.forgotten(p.id))
            .map(|p| p.id)
            .collect();
        match self.rng.below(11) {
            0 => {
                let p = self.rng.next_u64().to_be_bytes();
                self.frame(PING, 0, 0, &p);
                frame_head(&mut self.sent, 8, PING, ACK, 0);
                self.sent.extend_from_slice(&p);
            }
            1 => {
                let p = self.rng.next_u64().to_be_bytes();
                self.frame(PING, ACK, 0, &p);
            }
            2 => self.frame(SETTINGS, ACK, 0, &[]),
            3 => self.settings(),
            4 => {
                let id = pick(self.rng, &[0, 0, 1, 2, 3, 5, 7, 9]);
                let inc = 1 + self.rng.below(10_000) as u32;
                self.frame(WINDOW_UPDATE, 0, id, &inc.to_be_bytes());
            }
            5 => {
                let id = pick(self.rng, &[1, 3, 5, 7, 9, 2]);
                let p = [0, 0, 0, self.rng.below(8) as u8, self.rng.below(256) as u8];
                self.frame(PRIORITY, 0, id, &p);
            }
            6 => {
                let typ = 0xa + self.rng.below(0xf6) as u8;
                let flags = self.rng.below(256) as u8;
                let id = self.rng.below(10) as u32;
                let p: Vec<u8> = (0..self.rng.below(24))
                    .map(|_| self.rng.below(256) as u8)
                    .collect();
                self.frame(typ, flags, id, &p);
            }
            7 if self.rng.one_in(3) => self.goaway_frame(),
            // Frames for a stream the client no longer holds: DATA counted
            // against the connection only, a block decoded for the table's
            // sake, a reset that fails nothing.
            8 if !ended.is_empty() => {
                let id = pick(self.rng, &ended);
                let n = self.rng.below(16);
                let bytes = vec![b'z'; n];
                let end_stream = self.rng.one_in(2);
                self.data(id, &bytes, end_stream);
            }
            9 if !ended.is_empty() => {
                let id = pick(self.rng, &ended);
                let fields = vec![field(":status", "200"), field("x-late", "1")];
                let end_stream = self.rng.one_in(2);
                self.block(id, &fields, end_stream);
                // On a stream that ended on its own, a second answer.
                let dropped = self.plans.iter().any(|p| p.id == id && p.dropped);
                if !dropped && !self.forgotten(id) {
                    self.events.push(Event::Unsolicited { stream: id });
                }
            }
            10 if !ended.is_empty() => {
                let id = pick(self.rng, &ended);
                self.frame(RST_STREAM, 0, id, &8u32.to_be_bytes());
                // It fails nothing, but is counted with the resets.
                self.events.push(Event::Reset {
                    stream: id,
                    code: 8,
                });
            }
            _ => {}
        }
    }

    /// GOAWAY: streams above its last are forgotten; a later one may only
    /// lower it.
    fn goaway_frame(&mut self) {
        let last: u32 = pick(self.rng, &[0, 1, 3, 5, 7, 0x7fff_ffff]);
        let code: u32 = pick(self.rng, &[0, 0, 1, 2, 11, 0xdead]);
        let mut p = last.to_be_bytes().to_vec();
        p.extend_from_slice(&code.to_be_bytes());
        if self.rng.one_in(3) {
            p.extend_from_slice(b"debug data");
        }
        self.frame(GOAWAY, 0, 0, &p);
        let last = self.goaway.map_or(last, |l| l.min(last));
        self.goaway = Some(last);
        self.events.push(Event::GoAway {
            last_stream: last,
            code,
        });
    }

    /// A frame that breaks the protocol in a known way; the connection
    /// ends there.
    fn broken(&mut self) {
        let open = pick(self.rng, &[1, 3, 5, 7]).min(self.next_id - 2);
        let fault = match self.rng.below(16) {
            0 => {
                // Only its header: the length alone condemns it.
                let len = MAX_FRAME + 1 + self.rng.below(1 << 20) as u32;
                self.frames.push(self.input.len());
                frame_head(&mut self.input, len, self.rng.below(10) as u8, 0, open);
                Fault::FrameSize
            }
            1 => {
                let id = pick(self.rng, &[0, 2, self.next_id]);
                self.frame(HEADERS, END_HEADERS, id, &[0x88]);
                Fault::Protocol
            }
            2 => {
                self.frame(PUSH_PROMISE, END_HEADERS, open, &[0, 0, 0, 2, 0x82]);
                Fault::Protocol
            }
            3 => {
                let block: &[u8] = pick(
                    self.rng,
                    &[
                        &[0x80][..],
                        &[0xff, 0xff, 0xff, 0xff, 0x0f],
                        &[0x3f, 0xe2, 0x1f],
                        &[0x40, 0x85, b'a'],
                        &[0x88, 0x20],
                    ],
                );
                self.frame(HEADERS, END_HEADERS | END_STREAM, open, block);
                Fault::Compression
            }
            4 => {
                self.frame(PING, 0, 0, &[0; 7]);
                Fault::FrameSize
            }
            5 => {
                self.frame(WINDOW_UPDATE, 0, open, &0u32.to_be_bytes());
                Fault::Protocol
            }
            6 => {
                self.frame(CONTINUATION, END_HEADERS, open, &[0x88]);
                Fault::Protocol
            }
            7 => {
                self.frame(DATA, 0, 0, b"x");
                Fault::Protocol
            }
            8 => {
                let (flags, id, p, fault): (u8, u32, &[u8], Fault) = pick(
                    self.rng,
                    &[
                        (0, 0, &[0, 3, 0, 0][..], Fault::FrameSize),
                        (0, 1, &[][..], Fault::Protocol),
                        (ACK, 0, &[0; 6][..], Fault::FrameSize),
                        (0, 0, &[0, 5, 0, 0, 0x10, 0][..], Fault::Protocol),
                        (0, 0, &[0, 4, 0x80, 0, 0, 0][..], Fault::FlowControl),
                        (0, 0, &[0, 2, 0, 0, 0, 2][..], Fault::Protocol),
                    ],
                );
                self.frame(SETTINGS, flags, id, p);
                fault
            }
            9 => {
                let (id, p, fault): (u32, &[u8], Fault) = pick(
                    self.rng,
                    &[
                        (0, &[0, 0, 0, 8][..], Fault::Protocol),
                        (self.next_id, &[0, 0, 0, 8][..], Fault::Protocol),
                        (open, &[0, 0, 8][..], Fault::FrameSize),
                    ],
                );
                self.frame(RST_STREAM, 0, id, p);
                fault
            }
            10 => {
                let (id, p, fault): (u32, &[u8], Fault) = pick(
                    self.rng,
                    &[
                        (1, &[0; 8][..], Fault::Protocol),
                        (0, &[0; 7][..], Fault::FrameSize),
                    ],
                );
                self.frame(GOAWAY, 0, id, p);
                fault
            }
            11 => {
                let (id, p, fault): (u32, &[u8], Fault) = pick(
                    self.rng,
                    &[
                        (0, &[0; 5][..], Fault::Protocol),
                        (open, &[0; 4][..], Fault::FrameSize),
                    ],
                );
                self.frame(PRIORITY, 0, id, p);
                fault
            }
            12 => {
                // Padding as long as the frame, or a padded frame too
                // short to say how much.
                if self.rng.one_in(2) {
                    self.frame(DATA, PADDED, open, &[3, 0, 0]);
                    Fault::Protocol
                } else {
                    self.frame(DATA, PADDED, open, &[]);
                    Fault::FrameSize
                }
            }
            13 => {
                let (flags, p, fault): (u8, &[u8], Fault) = pick(
                    self.rng,
                    &[
                        (END_HEADERS | PADDED, &[5, 0x88][..], Fault::Protocol),
                        (
                            END_HEADERS | PRIORITY_FLAG,
                            &[0, 0, 0][..],
                            Fault::FrameSize,
                        ),
                        (END_HEADERS | PADDED, &[][..], Fault::FrameSize),
                    ],
                );
                self.frame(HEADERS, flags, open, p);
                fault
            }
            14 => {
                // A frame of another type in the middle of a header block.
                self.frame(HEADERS, 0, open, &[0x88]);
                self.frame(PING, 0, 0, &[0; 8]);
                Fault::Protocol
            }
            _ => {
                // More DATA than the connection's window: full frames on
                // a stream the client no longer holds, then the header of
                // the one that overruns it.
                let Some(id) = self
                    .plans
                    .iter()
                    .find(|p| p.ended || self.forgotten(p.id))
                    .map(|p| p.id)
                else {
                    return;
                };
                let window = u64::from(self.cfg.conn_window);
                if window > 65_535 {
                    return;
                }
                let full = vec![0u8; MAX_FRAME as usize];
                while self.conn_used + u64::from(MAX_FRAME) <= window {
                    self.frame(DATA, 0, id, &full);
                    self.conn_used += u64::from(MAX_FRAME);
                }
                self.frames.push(self.input.len());
                frame_head(&mut self.input, MAX_FRAME, DATA, 0, id);
                Fault::FlowControl
            }
        };
        self.fault = Some(fault);
        let code: u32 = match fault {
            Fault::Protocol => 0x1,
            Fault::FlowControl => 0x3,
            Fault::FrameSize => 0x6,
            Fault::Compression => 0x9,
        };
        frame_head(&mut self.sent, 8, GOAWAY, 0, 0);
        self.sent.extend_from_slice(&0u32.to_be_bytes());
        self.sent.extend_from_slice(&code.to_be_bytes());
    }
}
