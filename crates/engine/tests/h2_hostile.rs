//! HTTP/2 servers that misbehave, one way each, against the whole engine
//! over h2c (prior knowledge): what a load counts must be exactly what the
//! server did, the run must end on its own within a bound, and nothing may
//! panic. The server is written here frame by frame, not taken from a
//! library, so that it can break the protocol wherever a test asks, and it
//! tallies what the client sent, which the tests hold against the load's
//! figures.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::{ErrorKind as IoErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use throng_engine::{
    run, Control, ErrorKind, HttpSpec, HttpVersion, LoadResult, LoadSpec, Stop, Target,
};
use throng_testkit::http;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;

const MAX_CONCURRENT_STREAMS: u16 = 0x3;

const NO_ERROR: u32 = 0x0;
const PROTOCOL_ERROR: u32 = 0x1;
const FRAME_SIZE_ERROR: u32 = 0x6;
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;
const COMPRESSION_ERROR: u32 = 0x9;

/// Bound on a run that the server answers: generous for a debug build on a
/// shared machine, and still far below what a hang would take.
const RUN_BOUND: Duration = Duration::from_secs(5);

/// What the server saw the client do, over all its connections.
#[derive(Debug, Default, Clone)]
struct Seen {
    /// Connections that sent the preface (the engine's reachability check
    /// connects and closes without one).
    connections: u64,
    /// HEADERS frames: one per request sent.
    headers: u64,
    /// Header blocks that did not decode to a `GET /` request.
    bad_blocks: u64,
    /// Most streams open at once on one connection.
    max_open: usize,
    /// Responses sent whole.
    answered: u64,
    /// Requests on streams above a GOAWAY's last stream: never processed.
    above_last: u64,
    pings: u64,
    ping_acks: u64,
    /// Error codes of the client's RST_STREAMs and GOAWAYs.
    resets: Vec<u32>,
    goaways: Vec<u32>,
}

struct Frame {
    typ: u8,
    id: u32,
}

/// One accepted connection, past the client's preface.
struct Conn {
    stream: TcpStream,
    seen: Arc<Mutex<Seen>>,
    /// Among connections that sent the preface, this one's rank (from 0).
    index: u64,
    input: Vec<u8>,
    out: Vec<u8>,
    enc: loona_hpack::Encoder<'static>,
    dec: loona_hpack::Decoder<'static>,
    /// Streams the client opened that are not yet ended either way.
    open: BTreeSet<u32>,
    /// The last stream of the GOAWAY sent, once sent.
    last: Option<u32>,
    /// Each stream's request: which of all the server saw (from 1).
    ordinal: HashMap<u32, u64>,
}

impl Conn {
    /// One read into the input; false at the end of the stream.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.input.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// Every whole frame in the input, tallied. Frames are taken a read at
    /// a time and tallied before the server answers any, so that streams a
    /// client opens together are seen open together.
    fn parse(&mut self) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut at = 0;
        while self.input.len() - at >= 9 {
            let h = &self.input[at..at + 9];
            let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
            if self.input.len() - at < 9 + len {
                break;
            }
            let (typ, flags) = (h[3], h[4]);
            let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            let p = self.input[at + 9..at + 9 + len].to_vec();
            at += 9 + len;
            self.tally(typ, flags, id, &p);
            frames.push(Frame { typ, id });
        }
        self.input.drain(..at);
        frames
    }

    fn tally(&mut self, typ: u8, flags: u8, id: u32, p: &[u8]) {
        let mut seen = self.seen.lock().unwrap();
        match typ {
            HEADERS => {
                seen.headers += 1;
                self.ordinal.insert(id, seen.headers);
                let get = self.dec.decode(p).is_ok_and(|fields| {
                    fields.iter().any(|(n, v)| n == b":method" && v == b"GET")
                        && fields.iter().any(|(n, v)| n == b":path" && v == b"/")
                });
                if !get || flags & END_HEADERS == 0 || flags & END_STREAM == 0 {
                    seen.bad_blocks += 1;
                }
                if self.last.is_some_and(|l| id > l) {
                    seen.above_last += 1;
                } else {
                    self.open.insert(id);
                    seen.max_open = seen.max_open.max(self.open.len());
                }
            }
            RST_STREAM => {
                self.open.remove(&id);
                seen.resets
                    .push(u32::from_be_bytes(p[..4].try_into().unwrap()));
            }
            GOAWAY => seen
                .goaways
                .push(u32::from_be_bytes(p[4..8].try_into().unwrap())),
            PING if flags & ACK != 0 => seen.ping_acks += 1,
            SETTINGS if flags & ACK == 0 => frame(&mut self.out, SETTINGS, ACK, 0, &[]),
            _ => {}
        }
    }

    /// The next frames the client sent (at least one), or None at the end.
    fn frames(&mut self) -> Option<Vec<Frame>> {
        loop {
            let frames = self.parse();
            if !frames.is_empty() {
                return Some(frames);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// The streams the client opened next (at least one), or None at the end.
    fn requests(&mut self) -> Option<Vec<u32>> {
        loop {
            let ids: Vec<u32> = self
                .frames()?
                .iter()
                .filter(|f| f.typ == HEADERS && self.open.contains(&f.id))
                .map(|f| f.id)
                .collect();
            if !ids.is_empty() {
                return Some(ids);
            }
        }
    }

    /// Read until `n` streams are open; false at the end.
    fn wait_open(&mut self, n: usize) -> bool {
        while self.open.len() < n {
            if self.frames().is_none() {
                return false;
            }
        }
        true
    }

    fn settings(&mut self, pairs: &[(u16, u32)]) {
        let mut p = Vec::new();
        for &(k, v) in pairs {
            p.extend_from_slice(&k.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        frame(&mut self.out, SETTINGS, 0, 0, &p);
    }

    fn head(&mut self, id: u32, flags: u8, fields: &[(&str, &str)]) {
        let block = self
            .enc
            .encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        frame(&mut self.out, HEADERS, END_HEADERS | flags, id, &block);
    }

    /// A 200 with `body`, in two DATA frames when it has two halves.
    fn respond(&mut self, id: u32, body: &[u8]) {
        self.head(
            id,
            0,
            &[
                (":status", "200"),
                ("content-length", &body.len().to_string()),
            ],
        );
        let (a, b) = body.split_at(body.len() / 2);
        if !a.is_empty() {
            frame(&mut self.out, DATA, 0, id, a);
        }
        frame(&mut self.out, DATA, END_STREAM, id, b);
        self.ended(id);
    }

    /// Stream `id` was answered whole.
    fn ended(&mut self, id: u32) {
        self.open.remove(&id);
        self.seen.lock().unwrap().answered += 1;
    }

    fn rst(&mut self, id: u32, code: u32) {
        frame(&mut self.out, RST_STREAM, 0, id, &code.to_be_bytes());
        self.open.remove(&id);
    }

    fn goaway(&mut self, last: u32, code: u32) {
        let mut p = last.to_be_bytes().to_vec();
        p.extend_from_slice(&code.to_be_bytes());
        frame(&mut self.out, GOAWAY, 0, 0, &p);
        self.last = Some(last);
        // Streams above it are the client's to send again elsewhere.
        let above = self.open.split_off(&(last + 1));
        self.seen.lock().unwrap().above_last += above.len() as u64;
    }

    /// Send what is queued, in one write. A client that has gone is no
    /// failure of the server's.
    fn flush(&mut self) {
        let _ = self.stream.write_all(&self.out);
        self.out.clear();
    }

    /// End the connection as a server does: what is queued, then our FIN,
    /// then whatever the client still sends until it closes. Closing with
    /// the client's bytes unread would reset the connection instead, which
    /// the client counts as another error.
    fn close(&mut self) {
        self.flush();
        let _ = self.stream.shutdown(Shutdown::Write);
        while self.frames().is_some() {}
    }
}

fn frame(out: &mut Vec<u8>, typ: u8, flags: u8, id: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.push(typ);
    out.push(flags);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(payload);
}

type Play = dyn Fn(&mut Conn) + Send + Sync;

/// A loopback h2c server playing `play` on every connection that sends the
/// client preface, a thread each.
struct Server {
    listener: http::Server,
    seen: Arc<Mutex<Seen>>,
}

impl Server {
    fn start(play: impl Fn(&mut Conn) + Send + Sync + 'static) -> Server {
        let play: Arc<Play> = Arc::new(play);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let tally = seen.clone();
        let listener = http::Server::start(move |c| serve(c.stream, tally.clone(), &*play));
        Server { listener, seen }
    }

    /// Stop accepting and wait for every connection's thread (the client
    /// closed them all when its run returned); what the server saw.
    fn finish(self) -> Seen {
        drop(self.listener);
        let seen = self.seen.lock().unwrap().clone();
        seen
    }

    /// `n` GET requests on `connections` connections of `streams` streams
    /// each, over h2c, on one thread; a second of timeout.
    fn spec(&self, n: u64, connections: usize, streams: usize) -> LoadSpec {
        let addr = self.listener.addr;
        let mut spec = LoadSpec::new(vec![Target::new(
            addr,
            addr.to_string(),
            "/".into(),
            format!("http://{addr}/"),
        )]);
        spec.connections = connections;
        spec.threads = 1;
        spec.stop = Stop::Requests(n);
        spec.timeout = Duration::from_secs(1);
        spec.checksum = true;
        spec.http = HttpSpec {
            version: HttpVersion::Http2,
            streams,
            ..HttpSpec::default()
        };
        spec
    }
}

fn serve(mut s: TcpStream, seen: Arc<Mutex<Seen>>, play: &Play) {
    // Only a guard against a test gone wrong: every connection ends when
    // the client closes it, at the latest when its run returns.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.set_nodelay(true);
    let mut input = Vec::new();
    let mut chunk = [0u8; 1024];
    while input.len() < PREFACE.len() {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
    assert!(input.starts_with(PREFACE), "not the client preface");
    input.drain(..PREFACE.len());
    let index = {
        let mut seen = seen.lock().unwrap();
        seen.connections += 1;
        seen.connections - 1
    };
    let mut c = Conn {
        stream: s,
        seen,
        index,
        input,
        out: Vec::new(),
        enc: loona_hpack::Encoder::new(),
        dec: loona_hpack::Decoder::new(),
        open: BTreeSet::new(),
        last: None,
        ordinal: Default::default(),
    };
    play(&mut c);
    c.close();
}

/// Runs `spec`; the run must end on its own, without error, within
/// `bound`. One that does not is stopped there, so that a hang fails the
/// test rather than holding it.
fn load(spec: &LoadSpec, bound: Duration) -> LoadResult {
    let control = Control::new();
    let stopper = control.clone();
    let (ended, wait) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if wait.recv_timeout(bound) == Err(RecvTimeoutError::Timeout) {
            stopper.stop();
        }
    });
    let started = Instant::now();
    let r = run(spec, &control).expect("the run failed");
    let took = started.elapsed();
    drop(ended);
    watchdog.join().unwrap();
    assert!(!r.interrupted, "still running after {bound:?}");
    assert!(took < bound, "took {took:?}, bound {bound:?}");
    r
}

/// Every request sent is answered, failed, or in flight at the end:
/// errors that come with a response (status, size, checksum) are among
/// the answered, and an unsolicited response answers nothing.
fn assert_balanced(r: &LoadResult) {
    let with_response: u64 = [
        ErrorKind::Status,
        ErrorKind::SizeMismatch,
        ErrorKind::ChecksumMismatch,
        ErrorKind::Unsolicited,
    ]
    .iter()
    .map(|&k| r.counts.error(k))
    .sum();
    let failed = r.counts.errors_total() - with_response;
    assert_eq!(
        r.counts.sent,
        r.counts.completed + failed + r.in_flight_at_end,
        "{:?}",
        r.counts
    );
}

/// The errors of `r`, by name, those that occurred only.
fn errors(r: &LoadResult) -> Vec<(&'static str, u64)> {
    ErrorKind::ALL
        .iter()
        .map(|&k| (k.name(), r.counts.error(k)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

fn codes(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

fn body() -> Vec<u8> {
    (0..1000u32).map(|k| b'a' + (k % 26) as u8).collect()
}

/// Our SETTINGS, then a 200 with `body` to every request, as it comes.
fn answer_all(c: &mut Conn, body: &[u8]) {
    c.settings(&[]);
    c.flush();
    while let Some(ids) = c.requests() {
        for id in ids {
            c.respond(id, body);
        }
        c.flush();
    }
}

#[test]
fn a_well_behaved_server_gets_exactly_its_requests() {
    let server = Server::start(|c| answer_all(c, &body()));
    let r = load(&server.spec(100, 2, 5), RUN_BOUND);
    let seen = server.finish();
    assert_eq!(r.counts.completed, 100);
    assert_eq!(r.counts.sent, 100);
    assert_eq!(r.counts.status, vec![(200, 100)]);
    assert_eq!(r.counts.body_bytes, 100 * 1000);
    assert_eq!(errors(&r), []);
    assert_eq!(r.in_flight_at_end, 0);
    assert_balanced(&r);
    let h2 = r.http2.expect("http2 figures");
    assert_eq!(
        (
            h2.connections,
            h2.streams,
            h2.server_max_streams,
            h2.retried
        ),
        (2, 5, None, 0)
    );
    assert!(h2.resets.is_empty() && h2.goaways.is_empty(), "{h2:?}");
    // Each request was one HEADERS frame, a valid GET /, and no connection
    // had more streams open than asked.
    assert_eq!(
        (seen.connections, seen.headers, seen.answered),
        (2, 100, 100)
    );
    assert_eq!(seen.bad_blocks, 0);
    assert!(
        (1..=5).contains(&seen.max_open),
        "{} streams open",
        seen.max_open
    );
    assert!(
        seen.resets.is_empty() && seen.goaways.is_empty(),
        "{seen:?}"
    );
}

#[test]
fn the_servers_stream_limit_holds_from_the_first_request() {
    let server = Server::start(|c| {
        c.settings(&[(MAX_CONCURRENT_STREAMS, 1)]);
        c.flush();
        while let Some(ids) = c.requests() {
            for id in ids {
                c.respond(id, b"one at a time");
            }
            c.flush();
        }
    });
    let r = load(&server.spec(40, 2, 10), RUN_BOUND);
    let seen = server.finish();
    // The client asked for 10 streams; the server allowed 1, and never saw
    // more, not even before its SETTINGS reached the client.
    assert_eq!(seen.max_open, 1);
    assert_eq!((seen.headers, seen.answered), (40, 40));
    assert!(seen.resets.is_empty(), "{seen:?}");
    assert_eq!(r.counts.completed, 40);
    assert_eq!(r.counts.status, vec![(200, 40)]);
    assert_eq!(errors(&r), []);
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    assert_eq!(h2.server_max_streams, Some(1));
    assert_eq!(h2.streams, 10);
    assert!(h2.resets.is_empty(), "{h2:?}");
}

/// GOAWAY after `ANSWERED` responses on each connection, naming the last
/// of them, when `STREAMS` are open (or every request left, if fewer):
/// the streams above it were never processed.
#[test]
fn streams_above_a_goaway_go_out_again_on_a_fresh_connection() {
    const N: u64 = 21;
    const STREAMS: usize = 4;
    const ANSWERED: usize = 2;
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        for k in 0..ANSWERED {
            let left = N - c.seen.lock().unwrap().answered;
            if left == 0 || !c.wait_open(STREAMS.min(left as usize)) {
                return;
            }
            let id = *c.open.first().unwrap();
            c.respond(id, b"before the goaway");
            if k + 1 == ANSWERED {
                c.goaway(id, NO_ERROR);
            }
            c.flush();
        }
    });
    let r = load(&server.spec(N, 1, STREAMS), RUN_BOUND);
    let seen = server.finish();
    // Connection c answers requests 2c+1 and 2c+2 and goes away with
    // min(4, requests left) open; the 11th answers the 21st alone.
    let (mut left, mut goaways, mut retried) = (N as usize, 0, 0);
    while left >= ANSWERED {
        left -= ANSWERED - 1;
        retried += STREAMS.min(left) - 1;
        left -= 1;
        goaways += 1;
    }
    assert_eq!((goaways, retried), (10, 28));
    assert_eq!(seen.connections, 11);
    assert_eq!(seen.above_last, retried as u64);
    assert_eq!(seen.headers, N + retried as u64);
    assert_eq!(seen.answered, N);
    assert_eq!(r.counts.completed, N);
    assert_eq!(r.counts.sent, N);
    assert_eq!(r.counts.status, vec![(200, N)]);
    assert_eq!(errors(&r), []);
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    assert_eq!(h2.goaways, codes(&[("no_error", goaways as u64)]));
    assert_eq!(h2.retried, retried as u64);
    assert_eq!(h2.connections, 11);
    assert!(h2.resets.is_empty(), "{h2:?}");
}

/// A server that sends GOAWAY naming no stream on every connection, right
/// after its SETTINGS: the requests fail, once each, rather than go out
/// again and again on fresh connections, which would never end.
#[test]
fn a_server_that_turns_every_connection_away_fails_the_requests() {
    let server = Server::start(|c| {
        c.settings(&[]);
        c.goaway(0, NO_ERROR);
    });
    let r = load(&server.spec(5, 1, 2), RUN_BOUND);
    let seen = server.finish();
    // Two streams a connection (one before the SETTINGS came, one after,
    // ahead of the GOAWAY read with them), the last connection one.
    assert_eq!(errors(&r), [("h2_protocol", 5)]);
    assert_eq!((r.counts.completed, r.counts.sent), (0, 5));
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    assert_eq!(h2.goaways, codes(&[("no_error", 3)]));
    assert_eq!((h2.connections, h2.retried), (3, 0));
    assert_eq!((seen.connections, seen.headers), (3, 5));
}

#[test]
fn a_refused_stream_fails_that_request_alone() {
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        while let Some(ids) = c.requests() {
            for id in ids {
                // Every third request the server sees, over all connections.
                let k = c.ordinal[&id];
                if k % 3 == 0 {
                    c.rst(id, REFUSED_STREAM);
                } else {
                    c.respond(id, b"not refused");
                }
            }
            c.flush();
        }
    });
    let r = load(&server.spec(30, 2, 4), RUN_BOUND);
    let seen = server.finish();
    assert_eq!((seen.headers, seen.answered), (30, 20));
    assert!(
        seen.resets.is_empty() && seen.goaways.is_empty(),
        "{seen:?}"
    );
    assert_eq!(errors(&r), [("stream_reset", 10)]);
    assert_eq!(r.counts.completed, 20);
    assert_eq!(r.counts.status, vec![(200, 20)]);
    assert_eq!(r.counts.sent, 30);
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    assert_eq!(h2.resets, codes(&[("refused_stream", 10)]));
    assert!(h2.goaways.is_empty() && h2.retried == 0, "{h2:?}");
    // Resets end streams, not the connection.
    assert_eq!(h2.connections, 2);
}

/// Every fifth request answered twice: whole, then a second response on
/// the stream that has ended. It answers nothing, so it is counted as
/// `unsolicited`, as a second HTTP/1.1 answer is; the requests all
/// complete and the connection carries on. It used to leave no trace.
#[test]
fn a_second_answer_on_an_ended_stream_is_unsolicited() {
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        while let Some(ids) = c.requests() {
            for id in ids {
                c.respond(id, b"once");
                if c.ordinal[&id] % 5 == 0 {
                    c.head(
                        id,
                        END_STREAM,
                        &[(":status", "200"), ("content-length", "0")],
                    );
                }
            }
            c.flush();
        }
    });
    let r = load(&server.spec(30, 2, 4), RUN_BOUND);
    let seen = server.finish();
    assert_eq!((seen.headers, seen.answered), (30, 30));
    assert_eq!(errors(&r), [("unsolicited", 6)]);
    assert_eq!(r.counts.completed, 30);
    assert_eq!(r.counts.status, vec![(200, 30)]);
    assert_eq!(r.counts.sent, 30);
    let h2 = r.http2.unwrap();
    assert_eq!(h2.connections, 2);
}

/// Requests of the loads whose first connection breaks, and the streams
/// each connection carries.
const BROKEN_N: u64 = 20;
const STREAMS: usize = 4;

/// On its first connection, `bad` once `STREAMS` streams are open; every
/// later connection is answered in full.
fn first_connection_breaks(bad: fn(&mut Conn, u32)) -> Server {
    Server::start(move |c| {
        if c.index > 0 {
            return answer_all(c, b"after the fault");
        }
        c.settings(&[]);
        c.flush();
        if c.wait_open(STREAMS) {
            let id = *c.open.first().unwrap();
            bad(c, id);
            c.flush();
        }
    })
}

/// A broken connection fails the streams it carried with its fault's
/// class, tells the server so with a GOAWAY, and the load goes on.
fn assert_one_connection_failed(r: &LoadResult, seen: &Seen, kind: &str, code: u32) {
    assert_eq!(errors(r), [(kind, STREAMS as u64)]);
    assert_eq!(r.counts.completed, BROKEN_N - STREAMS as u64);
    assert_eq!(r.counts.status, vec![(200, BROKEN_N - STREAMS as u64)]);
    assert_eq!(r.counts.sent, BROKEN_N);
    assert_balanced(r);
    let h2 = r.http2.as_ref().unwrap();
    assert_eq!(h2.connections, 2);
    assert!(h2.resets.is_empty() && h2.goaways.is_empty(), "{h2:?}");
    assert_eq!((seen.connections, seen.headers), (2, BROKEN_N));
    assert_eq!(seen.goaways, [code]);
}

#[test]
fn a_data_frame_above_our_frame_size_fails_its_connection() {
    let server = first_connection_breaks(|c, id| {
        c.head(id, 0, &[(":status", "200")]);
        frame(&mut c.out, DATA, END_STREAM, id, &[b'x'; 16_385]);
    });
    let r = load(&server.spec(BROKEN_N, 1, STREAMS), RUN_BOUND);
    let seen = server.finish();
    assert_one_connection_failed(&r, &seen, "h2_frame_size", FRAME_SIZE_ERROR);
}

#[test]
fn a_header_block_that_does_not_decode_fails_its_connection() {
    let server = first_connection_breaks(|c, id| {
        // An index far past both tables.
        frame(
            &mut c.out,
            HEADERS,
            END_HEADERS | END_STREAM,
            id,
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
        );
    });
    let r = load(&server.spec(BROKEN_N, 1, STREAMS), RUN_BOUND);
    let seen = server.finish();
    assert_one_connection_failed(&r, &seen, "h2_compression", COMPRESSION_ERROR);
}

#[test]
fn a_server_closing_mid_response_fails_its_streams_as_closed() {
    let server = first_connection_breaks(|c, id| {
        c.head(id, 0, &[(":status", "200"), ("content-length", "100")]);
        frame(&mut c.out, DATA, 0, id, &[b'x'; 50]);
        // Then the FIN, from `close`.
    });
    let r = load(&server.spec(BROKEN_N, 1, STREAMS), RUN_BOUND);
    let seen = server.finish();
    assert_eq!(errors(&r), [("closed", STREAMS as u64)]);
    assert_eq!(r.counts.completed, BROKEN_N - STREAMS as u64);
    assert_eq!(r.counts.sent, BROKEN_N);
    assert_balanced(&r);
    assert_eq!((seen.connections, seen.headers), (2, BROKEN_N));
    // A close is no protocol error: the client says nothing.
    assert!(
        seen.goaways.is_empty() && seen.resets.is_empty(),
        "{seen:?}"
    );
}

/// A server whose first frame is not SETTINGS fails the request on the
/// wire: one a connection, since until the server's SETTINGS come the
/// client opens a single stream.
#[test]
fn a_server_that_skips_its_settings_is_a_protocol_error() {
    let server = Server::start(|c| {
        if let Some(ids) = c.requests() {
            for id in ids {
                c.respond(id, b"no settings first");
            }
            c.flush();
        }
    });
    let r = load(&server.spec(5, 1, STREAMS), RUN_BOUND);
    let seen = server.finish();
    assert_eq!(errors(&r), [("h2_protocol", 5)]);
    assert_eq!((r.counts.completed, r.counts.sent), (0, 5));
    assert_balanced(&r);
    assert_eq!(r.http2.unwrap().connections, 5);
    assert_eq!((seen.connections, seen.headers), (5, 5));
    assert_eq!(seen.goaways, [PROTOCOL_ERROR; 5]);
}

/// An HTTP/1.1 server, as nginx's plain port is, answers the preface's
/// request line with a 400 and closes: not HTTP/2, a protocol error, not
/// an oversized frame (its first bytes, read as a frame header, give a
/// length of 4.7 MB).
#[test]
fn an_http1_answer_to_the_preface_is_a_protocol_error() {
    let server = Server::start(|c| {
        c.out.extend_from_slice(
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\n\
              Content-Length: 11\r\nConnection: close\r\n\r\nBad Request",
        );
    });
    let r = load(&server.spec(3, 1, STREAMS), RUN_BOUND);
    let seen = server.finish();
    assert_eq!(errors(&r), [("h2_protocol", 3)]);
    assert_eq!((r.counts.completed, r.counts.sent), (0, 3));
    assert_balanced(&r);
    assert_eq!(seen.connections, 3);
    assert_eq!(seen.goaways, [PROTOCOL_ERROR; 3]);
}

/// A server that reads the preface and never says a word: each request
/// times out, and the run with it, no later.
#[test]
fn a_silent_server_times_out_within_the_bound() {
    let server = Server::start(|c| while c.frames().is_some() {});
    let mut spec = server.spec(2, 1, 2);
    spec.timeout = Duration::from_millis(250);
    // Two timeouts one after the other (one stream each, no SETTINGS ever
    // came), each seen by a scan within 50 ms of its time.
    let r = load(&spec, Duration::from_millis(2 * 250 + 2 * 50 + 400));
    let seen = server.finish();
    assert_eq!(errors(&r), [("timeout", 2)]);
    assert_eq!((r.counts.completed, r.counts.sent), (0, 2));
    assert_balanced(&r);
    assert_eq!((seen.connections, seen.headers), (2, 2));
    assert!(seen.goaways.is_empty(), "{seen:?}");
}

#[test]
fn pings_window_updates_and_unknown_frames_change_nothing() {
    const PINGS: u64 = 20;
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        while let Some(ids) = c.requests() {
            for id in ids {
                c.head(id, 0, &[(":status", "200"), ("content-length", "10")]);
                for k in 0..PINGS {
                    frame(&mut c.out, PING, 0, 0, &k.to_be_bytes());
                    // An acknowledgement of a PING never sent, ignored.
                    frame(&mut c.out, PING, ACK, 0, &k.to_be_bytes());
                    frame(&mut c.out, WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
                    frame(&mut c.out, WINDOW_UPDATE, 0, id, &1u32.to_be_bytes());
                    frame(&mut c.out, 0xfa, 0xff, id, b"an extension");
                    frame(&mut c.out, PRIORITY, 0, id, &[0, 0, 0, 0, 16]);
                }
                frame(&mut c.out, DATA, PADDED, id, b"\x03hello\0\0\0");
                frame(&mut c.out, DATA, END_STREAM, id, b"world");
                c.ended(id);
                c.seen.lock().unwrap().pings += PINGS;
            }
            c.flush();
        }
    });
    let r = load(&server.spec(100, 2, 5), RUN_BOUND);
    let seen = server.finish();
    assert_eq!(r.counts.completed, 100);
    assert_eq!(r.counts.status, vec![(200, 100)]);
    assert_eq!(r.counts.body_bytes, 100 * 10);
    assert_eq!(errors(&r), []);
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    assert!(h2.resets.is_empty() && h2.goaways.is_empty(), "{h2:?}");
    assert_eq!(h2.connections, 2);
    // Every PING was answered, and only those.
    assert_eq!(seen.pings, 100 * PINGS);
    assert_eq!(seen.ping_acks, seen.pings);
    assert!(
        seen.resets.is_empty() && seen.goaways.is_empty(),
        "{seen:?}"
    );
}

#[test]
fn a_body_that_is_not_its_content_length_fails_that_stream_alone() {
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        while let Some(ids) = c.requests() {
            for id in ids {
                let k = c.ordinal[&id];
                // Every fourth request: a body one short of its length, or
                // one over, in turn.
                let length = match k % 8 {
                    0 => "6",
                    4 => "4",
                    _ => "5",
                };
                c.head(id, 0, &[(":status", "200"), ("content-length", length)]);
                frame(&mut c.out, DATA, END_STREAM, id, b"12345");
                c.ended(id);
            }
            c.flush();
        }
    });
    let r = load(&server.spec(40, 2, 4), RUN_BOUND);
    let seen = server.finish();
    assert_eq!(errors(&r), [("h2_protocol", 10)]);
    assert_eq!(r.counts.completed, 30);
    assert_eq!(r.counts.status, vec![(200, 30)]);
    assert_eq!(r.counts.sent, 40);
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    // The connections carried on: the client reset the stream, and only it.
    assert_eq!(h2.connections, 2);
    assert_eq!(seen.resets, [PROTOCOL_ERROR; 10]);
    assert!(seen.goaways.is_empty(), "{seen:?}");
}

/// A server that keeps the first request waiting (a slow URL among fast
/// ones) until the client gives up on it, and then answers it anyway, as
/// one whose answer crossed the client's reset on the wire; every other
/// request it answers 20 ms after it came, so that when the first times
/// out, three others are in flight beside it on its connection. The late
/// stream alone times out and is reset with CANCEL; the three are answered
/// on the same connection, and the answer after the reset is read and
/// dropped.
#[test]
fn a_stream_late_on_a_live_connection_times_out_alone() {
    const N: u64 = 60;
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        // A short read timeout makes the read loop a timer as well.
        c.stream
            .set_read_timeout(Some(Duration::from_millis(2)))
            .unwrap();
        let mut due: VecDeque<(Instant, u32)> = VecDeque::new();
        let mut held = None;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match c.stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => c.input.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), IoErrorKind::WouldBlock | IoErrorKind::TimedOut) => {}
                Err(_) => break,
            }
            for f in c.parse() {
                if f.typ == HEADERS && c.open.contains(&f.id) {
                    if c.ordinal[&f.id] == 1 {
                        held = Some(f.id);
                    } else {
                        due.push_back((Instant::now() + Duration::from_millis(20), f.id));
                    }
                }
                if f.typ == RST_STREAM && held == Some(f.id) {
                    held = None;
                    c.head(f.id, 0, &[(":status", "200"), ("content-length", "4")]);
                    frame(&mut c.out, DATA, END_STREAM, f.id, b"late");
                }
            }
            while let Some(&(t, id)) = due.front() {
                if t > Instant::now() {
                    break;
                }
                due.pop_front();
                c.respond(id, b"on time");
            }
            c.flush();
        }
    });
    let mut spec = server.spec(N, 1, 4);
    spec.timeout = Duration::from_millis(300);
    let r = load(&spec, RUN_BOUND);
    let seen = server.finish();
    assert_eq!(errors(&r), [("timeout", 1)]);
    assert_eq!(r.counts.completed, N - 1);
    assert_eq!(r.counts.status, vec![(200, N - 1)]);
    assert_eq!(r.counts.body_bytes, (N - 1) * 7);
    assert_eq!(r.counts.sent, N);
    assert_balanced(&r);
    let h2 = r.http2.unwrap();
    // The connection carried on: the client reset the late stream, and
    // only it.
    assert_eq!(h2.connections, 1);
    assert!(h2.resets.is_empty() && h2.goaways.is_empty(), "{h2:?}");
    assert_eq!(
        (seen.connections, seen.headers, seen.answered),
        (1, N, N - 1)
    );
    assert_eq!(seen.resets, [CANCEL]);
    assert!(seen.goaways.is_empty(), "{seen:?}");
}

/// A server that allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS = 0):
/// the request sent before its SETTINGS came is answered, and every other
/// waits on the client for a stream until its timeout, as a timeout.
/// Taken back unissued at each timeout, they used to make the run last as
/// long as the server cared to wait, with no error and a valid verdict.
#[test]
fn requests_a_server_allows_no_stream_for_time_out() {
    let server = Server::start(|c| {
        c.settings(&[(MAX_CONCURRENT_STREAMS, 0)]);
        c.flush();
        while let Some(ids) = c.requests() {
            for id in ids {
                c.respond(id, b"first");
            }
            c.flush();
        }
    });
    let mut spec = server.spec(3, 1, 1);
    spec.timeout = Duration::from_millis(300);
    let r = load(&spec, RUN_BOUND);
    let seen = server.finish();
    assert_eq!((seen.headers, seen.answered), (1, 1));
    assert_eq!(r.counts.completed, 1);
    assert_eq!(errors(&r), [("timeout", 2)]);
    assert_eq!(r.counts.sent, 3);
    assert_balanced(&r);
    assert_eq!(r.http2.unwrap().server_max_streams, Some(0));
}

/// The open model uses a connection's streams: a request falls due every
/// 5 ms and the server takes 40 ms to answer, so a connection of 8
/// streams holds several at once. It used to send one, wait for its
/// answer, then the next: 100 requests at 200 req/s took 4 s, the
/// schedule's lag was counted against the server, and it never saw a
/// second stream open.
#[test]
fn an_offered_rate_uses_every_stream_of_a_connection() {
    let server = Server::start(|c| {
        c.settings(&[]);
        c.flush();
        while let Some(ids) = c.requests() {
            std::thread::sleep(Duration::from_millis(40));
            for id in ids {
                c.respond(id, b"in time");
            }
            c.flush();
        }
    });
    let mut spec = server.spec(100, 1, 8);
    spec.rate = Some(200.0);
    let started = Instant::now();
    let r = load(&spec, RUN_BOUND);
    let took = started.elapsed();
    let seen = server.finish();
    assert_eq!((seen.headers, seen.answered), (100, 100));
    assert!(seen.max_open >= 4, "{seen:?}");
    assert_eq!(r.counts.completed, 100);
    assert_eq!(errors(&r), []);
    assert_balanced(&r);
    assert!(took < Duration::from_secs(2), "{took:?}");
}
