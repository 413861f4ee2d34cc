//! One blocking request/response exchange, outside any load run.
//!
//! Used before a run to learn what each URL answers (status, body size,
//! body hash) and afterwards to check the server still answers the same.
//! It goes through the same [`http1::ResponseParser`] as the load driver,
//! so a response the probe accepts is framed exactly as the driver will see it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::http1::{self, ParserConfig, ResponseParser, MAX_HEADERS};

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub status: u16,
    /// Header fields of the final (non-1xx) response, in order; values that
    /// are not UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// Decoded body (chunk framing removed).
    pub body: Vec<u8>,
    /// What the load driver's parser reports for the same bytes; its
    /// checksum is always computed.
    pub response: http1::Response,
}

impl Fetched {
    /// First value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// connect() failed (refused, unreachable...); the io::Error keeps the kind.
    #[error("connect failed: {0}")]
    Connect(io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    /// No complete response within the timeout.
    #[error("timed out waiting for the response")]
    Timeout,
    #[error("i/o error: {0}")]
    Io(io::Error),
    #[error("invalid response: {0}")]
    Parse(http1::ParseError),
    #[error("connection closed before a complete response")]
    Closed,
    /// HTTP/2: the server broke the protocol, reset the stream or went
    /// away before answering; or TLS did not settle on h2.
    #[error("HTTP/2: {0}")]
    H2(String),
}

/// Connect (with `timeout`), write `request` (complete serialised request
/// bytes), read one complete response. `head` = the request is HEAD.
/// `timeout` bounds the connect, and separately the whole exchange after it.
pub fn fetch(
    addr: SocketAddr,
    request: &[u8],
    head: bool,
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    fetch_over(addr, None, request, head, timeout)
}

/// How a probe reaches an `https://` server: the client config (built
/// once by the caller) and the name the certificate must carry.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    pub config: std::sync::Arc<rustls::ClientConfig>,
    pub name: rustls::pki_types::ServerName<'static>,
}

/// [`fetch`], over TLS when `tls` is given: the handshake happens inside
/// the same deadline as the exchange.
pub fn fetch_over(
    addr: SocketAddr,
    tls: Option<&TlsTarget>,
    request: &[u8],
    head: bool,
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    let stream = match TcpStream::connect_timeout(&addr, timeout) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(FetchError::ConnectTimeout),
        Err(e) => return Err(FetchError::Connect(e)),
    };
    // Best effort: a failure only costs latency on a one-off request.
    let _ = stream.set_nodelay(true);
    match tls {
        None => exchange(stream, request, head, timeout),
        Some(t) => {
            let conn = rustls::ClientConnection::new(t.config.clone(), t.name.clone())
                .map_err(|e| FetchError::Io(io::Error::other(e)))?;
            exchange(
                rustls::StreamOwned::new(conn, stream),
                request,
                head,
                timeout,
            )
        }
    }
}

/// One GET of `path` over HTTP/2, with the engine's own HTTP/2 layer:
/// over TLS when `tls` is given (its config must offer `h2` over ALPN),
/// else over cleartext with prior knowledge. `authority` is the
/// `:authority`; `headers` go with the request. `timeout` bounds the
/// connect, and separately the whole exchange after it.
pub fn fetch_h2(
    addr: SocketAddr,
    tls: Option<&TlsTarget>,
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    let stream = match TcpStream::connect_timeout(&addr, timeout) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(FetchError::ConnectTimeout),
        Err(e) => return Err(FetchError::Connect(e)),
    };
    let _ = stream.set_nodelay(true);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut target = crate::spec::Target::new(
        addr,
        authority.to_string(),
        path.to_string(),
        format!("{scheme}://{authority}{path}"),
    );
    target.method = Some("GET".into());
    let mut spec = crate::spec::LoadSpec::new(vec![target]);
    spec.headers = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let blocks = crate::h2::blocks::H2Requests::new(&spec);
    let mut h2 = crate::h2::H2::new(
        crate::h2::Config {
            stream_window: crate::spec::DEFAULT_WINDOW,
            conn_window: crate::spec::DEFAULT_WINDOW,
            checksum: true,
        },
        blocks.table_bytes,
    );
    h2.start();
    h2.capture();
    h2.open(0, &blocks.targets[0]);
    match tls {
        None => exchange_h2(stream, &mut h2, timeout),
        Some(t) => {
            let conn = rustls::ClientConnection::new(t.config.clone(), t.name.clone())
                .map_err(|e| FetchError::Io(io::Error::other(e)))?;
            let mut s = rustls::StreamOwned::new(conn, stream);
            let deadline = Instant::now() + timeout;
            while s.conn.is_handshaking() {
                s.sock
                    .set_read_timeout(Some(remaining(deadline)?))
                    .map_err(FetchError::Io)?;
                s.conn.complete_io(&mut s.sock).map_err(FetchError::Io)?;
            }
            if s.conn.alpn_protocol() != Some(b"h2") {
                return Err(FetchError::H2(
                    "the server did not choose h2 over ALPN".into(),
                ));
            }
            exchange_h2(s, &mut h2, remaining(deadline)?)
        }
    }
}

fn exchange_h2<W: Wire>(
    mut stream: W,
    h2: &mut crate::h2::H2,
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    use crate::h2::Event;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let out = h2.pending().to_vec();
        write_all(&mut stream, &out, deadline)?;
        h2.written(out.len());
        let n = read(&mut stream, &mut buf, deadline)?;
        if n == 0 {
            return Err(FetchError::Closed);
        }
        let mut data = &buf[..n];
        while !data.is_empty() {
            let (used, ev) = h2
                .feed(data)
                .map_err(|f| FetchError::H2(format!("{:?}", f.kind())))?;
            data = &data[used..];
            match ev {
                Some(Event::Response { resp, .. }) => {
                    let c = h2.captured().unwrap_or_default();
                    return Ok(Fetched {
                        status: resp.status,
                        headers: c
                            .headers
                            .into_iter()
                            .filter(|(n, _)| !n.starts_with(':'))
                            .collect(),
                        body: c.body,
                        response: resp,
                    });
                }
                Some(Event::Reset { code, .. }) => {
                    return Err(FetchError::H2(format!(
                        "stream reset: {}",
                        crate::h2::code_name(code)
                    )))
                }
                Some(Event::Malformed { .. }) => {
                    return Err(FetchError::H2("malformed response".into()))
                }
                Some(Event::GoAway { code, .. }) => {
                    return Err(FetchError::H2(format!(
                        "GOAWAY: {}",
                        crate::h2::code_name(code)
                    )))
                }
                // The probe returns at its one response: no second can come.
                Some(Event::Settings | Event::Unsolicited { .. }) | None => {}
            }
        }
        h2.replenish();
    }
}

/// A probe's byte stream: a socket, or TLS over one; the socket's own
/// timeouts bound every read and write.
trait Wire: Read + Write {
    fn socket(&self) -> &TcpStream;
}

impl Wire for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

impl Wire for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn socket(&self) -> &TcpStream {
        &self.sock
    }
}

fn exchange<W: Wire>(
    mut stream: W,
    request: &[u8],
    head: bool,
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    let deadline = Instant::now() + timeout;
    write_all(&mut stream, request, deadline)?;

    let mut parser = ResponseParser::new(ParserConfig {
        checksum: true,
        head,
        ..ParserConfig::default()
    });
    let mut body = Vec::new();
    let mut headers = FinalHeaders::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = read(&mut stream, &mut buf, deadline)?;
        if n == 0 {
            return match parser.eof() {
                Ok(Some(response)) => Ok(headers.done(response, body)),
                Ok(None) | Err(http1::ParseError::ClosedMidResponse) => Err(FetchError::Closed),
                Err(e) => Err(FetchError::Parse(e)),
            };
        }
        let data = &buf[..n];
        headers.collect(data);
        let (_, done) = parser
            .feed_with(data, &mut body)
            .map_err(FetchError::Parse)?;
        if let Some(response) = done {
            return Ok(headers.done(response, body));
        }
    }
}

fn write_all<W: Wire>(
    stream: &mut W,
    mut data: &[u8],
    deadline: Instant,
) -> Result<(), FetchError> {
    while !data.is_empty() {
        stream
            .socket()
            .set_write_timeout(Some(remaining(deadline)?))
            .map_err(FetchError::Io)?;
        match stream.write(data) {
            Ok(0) => return Err(FetchError::Closed),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(FetchError::Timeout),
            Err(e) => return Err(FetchError::Io(e)),
        }
    }
    Ok(())
}

fn read<W: Wire>(stream: &mut W, buf: &mut [u8], deadline: Instant) -> Result<usize, FetchError> {
    loop {
        stream
            .socket()
            .set_read_timeout(Some(remaining(deadline)?))
            .map_err(FetchError::Io)?;
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(FetchError::Timeout),
            Err(e) => return Err(FetchError::Io(e)),
        }
    }
}

/// Time left before `deadline`; never zero, because a zero socket timeout
/// is rejected by the standard library.
fn remaining(deadline: Instant) -> Result<Duration, FetchError> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(FetchError::Timeout),
    }
}

fn is_timeout(e: &io::Error) -> bool {
    // SO_RCVTIMEO expiry surfaces as EAGAIN (WouldBlock) on Unix.
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Keeps the bytes read until the final response's header block is
/// complete, then extracts its fields. The parser already validated the
/// framing; this pass only turns the block into strings.
#[derive(Default)]
struct FinalHeaders {
    raw: Vec<u8>,
    found: Option<Vec<(String, String)>>,
}

impl FinalHeaders {
    fn collect(&mut self, data: &[u8]) {
        if self.found.is_some() {
            return;
        }
        self.raw.extend_from_slice(data);
        let mut at = 0;
        while at < self.raw.len() {
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut r = httparse::Response::new(&mut slots);
            match http1::httparse_config().parse_response(&mut r, &self.raw[at..]) {
                Ok(httparse::Status::Complete(n)) => {
                    if r.code.is_some_and(|c| (100..200).contains(&c)) {
                        at += n;
                        continue;
                    }
                    self.found = Some(
                        r.headers
                            .iter()
                            .map(|h| {
                                (
                                    h.name.to_string(),
                                    String::from_utf8_lossy(h.value).into_owned(),
                                )
                            })
                            .collect(),
                    );
                    self.raw = Vec::new();
                    return;
                }
                // Incomplete, or invalid: the parser reports the latter.
                _ => return,
            }
        }
    }

    fn done(self, response: http1::Response, body: Vec<u8>) -> Fetched {
        Fetched {
            status: response.status,
            headers: self.found.unwrap_or_default(),
            body,
            response,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    const REQUEST: &[u8] = b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n";
    const BOUND: Duration = Duration::from_secs(5);

    /// Accepts one connection, reads the request head, writes `response`,
    /// closes. Returns the request bytes it read.
    fn serve_once(response: &'static [u8]) -> (SocketAddr, thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let server = thread::spawn(move || {
            let deadline = Instant::now() + BOUND;
            let mut conn = loop {
                match listener.accept() {
                    Ok((c, _)) => break c,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        assert!(Instant::now() < deadline, "no client connected");
                        thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            };
            conn.set_nonblocking(false).unwrap();
            conn.set_read_timeout(Some(BOUND)).unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = conn.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
            }
            conn.write_all(response).unwrap();
            request
        });
        (addr, server)
    }

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn content_length_response() {
        let (addr, server) =
            serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Test:  yes \r\n\r\nhello");
        let f = fetch(addr, REQUEST, false, BOUND).unwrap();
        assert_eq!(server.join().unwrap(), REQUEST);
        assert_eq!(f.status, 200);
        assert_eq!(
            f.headers,
            headers(&[("Content-Length", "5"), ("X-Test", "yes")])
        );
        assert_eq!(f.header("x-test"), Some("yes"));
        assert_eq!(f.body, b"hello");
        assert_eq!(
            f.response,
            http1::Response {
                status: 200,
                body_bytes: 5,
                wire_bytes: 58,
                checksum: http1::fnv1a64(b"hello"),
                keep_alive: true,
            }
        );
    }

    #[test]
    fn chunked_response_after_interim() {
        let (addr, server) = serve_once(
            b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n\
              HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n\
              4\r\nnot \r\n5\r\nfound\r\n0\r\n\r\n",
        );
        let f = fetch(addr, REQUEST, false, BOUND).unwrap();
        server.join().unwrap();
        assert_eq!(f.status, 404);
        assert_eq!(f.headers, headers(&[("Transfer-Encoding", "chunked")]));
        assert_eq!(f.body, b"not found");
        assert_eq!(f.response.body_bytes, 9);
        assert_eq!(f.response.wire_bytes, 117);
        assert_eq!(f.response.checksum, http1::fnv1a64(b"not found"));
    }

    #[test]
    fn close_delimited_response() {
        let (addr, server) = serve_once(b"HTTP/1.0 200 OK\r\nServer: t\r\n\r\nuntil the end");
        let f = fetch(addr, REQUEST, false, BOUND).unwrap();
        server.join().unwrap();
        assert_eq!(f.status, 200);
        assert_eq!(f.body, b"until the end");
        assert_eq!(f.response.wire_bytes, 43);
        assert!(!f.response.keep_alive);
    }

    #[test]
    fn head_response_has_no_body() {
        let (addr, server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n");
        let f = fetch(addr, b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", true, BOUND).unwrap();
        server.join().unwrap();
        assert_eq!((f.status, f.body.len()), (200, 0));
        assert_eq!(f.header("content-length"), Some("7"));
        assert_eq!((f.response.body_bytes, f.response.wire_bytes), (0, 38));
    }

    #[test]
    fn truncated_response_is_closed() {
        let (addr, server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        let r = fetch(addr, REQUEST, false, BOUND);
        server.join().unwrap();
        assert!(matches!(r, Err(FetchError::Closed)), "{r:?}");
    }

    #[test]
    fn garbage_is_a_parse_error() {
        let (addr, server) = serve_once(b"SSH-2.0-OpenSSH_9.2\r\n");
        let r = fetch(addr, REQUEST, false, BOUND);
        server.join().unwrap();
        assert!(
            matches!(r, Err(FetchError::Parse(http1::ParseError::StatusLine))),
            "{r:?}"
        );
    }

    #[test]
    fn refused_connection_keeps_its_kind() {
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        match fetch(addr, REQUEST, false, BOUND) {
            Err(FetchError::Connect(e)) => assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused),
            other => panic!("expected a refused connect, got {other:?}"),
        }
    }

    #[test]
    fn silent_server_times_out_within_bound() {
        // The kernel completes the handshake from the backlog; nobody ever
        // reads or answers.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let timeout = Duration::from_millis(300);
        let started = Instant::now();
        let r = fetch(addr, REQUEST, false, timeout);
        let elapsed = started.elapsed();
        assert!(matches!(r, Err(FetchError::Timeout)), "{r:?}");
        assert!(elapsed >= timeout, "{elapsed:?}");
        assert!(elapsed < timeout + Duration::from_secs(2), "{elapsed:?}");
        drop(listener);
    }
}
