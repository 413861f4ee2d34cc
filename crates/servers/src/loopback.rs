//! Requests to a server under test on this machine, outside any load run:
//! readiness, verification of every URL, the feature probes. One request
//! format and one fetch (the engine's probe, which frames responses with the
//! same parser as the load driver), instead of one per caller. They go to
//! the address the server listens on, which is loopback unless clients on
//! other hosts load it.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use throng_engine::probe::{self, FetchError, Fetched};

/// The loopback address of a port.
pub fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A port free on `ip` now (the kernel's choice). A server started on it a
/// moment later may find it taken by another program; it then fails to
/// start and says so.
pub fn free_port(ip: IpAddr) -> anyhow::Result<u16> {
    Ok(TcpListener::bind((ip, 0))
        .with_context(|| format!("binding a port on {ip}"))?
        .local_addr()?
        .port())
}

/// `GET path` with a Host header naming the server's address, and any
/// extra headers.
pub fn request(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.into_bytes()
}

/// One GET and its complete response.
pub fn get(
    addr: SocketAddr,
    path: &str,
    extra: &[(&str, &str)],
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    get_over(addr, None, path, extra, timeout)
}

/// [`get`], over TLS when `tls` is given.
pub fn get_over(
    addr: SocketAddr,
    tls: Option<&probe::TlsTarget>,
    path: &str,
    extra: &[(&str, &str)],
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    probe::fetch_over(addr, tls, &request(addr, path, extra), false, timeout)
}

/// A GET of `path` over cleartext HTTP/2 with prior knowledge (RFC 9113,
/// section 3.3), `Ok` once the response has ended, whatever its status.
/// How a server that speaks only HTTP/2 on its cleartext port shows it is
/// up: nginx 1.22's `listen ... http2` answers HTTP/1.1 with a GOAWAY frame.
pub(crate) fn h2c_get(addr: SocketAddr, path: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    // The largest stream window, and the connection's raised to match, so
    // no body of a readiness path waits for a WINDOW_UPDATE.
    h2_frame(&mut out, H2_SETTINGS, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]);
    h2_frame(
        &mut out,
        H2_WINDOW_UPDATE,
        0,
        0,
        &(0x7fff_ffff_u32 - 65_535).to_be_bytes(),
    );
    // :method GET and :scheme http from HPACK's static table, then :path
    // and :authority as literals with a static name, never Huffman-coded.
    let mut block = vec![0x82, 0x86];
    hpack_literal(&mut block, 4, path.as_bytes());
    hpack_literal(&mut block, 1, addr.to_string().as_bytes());
    h2_frame(&mut out, H2_HEADERS, END_STREAM | END_HEADERS, 1, &block);
    s.write_all(&out)?;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("no complete HTTP/2 response within {timeout:?}");
        }
        s.set_read_timeout(Some(left))?;
        let mut head = [0u8; 9];
        s.read_exact(&mut head)?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0; len];
        s.read_exact(&mut payload)?;
        match (kind, stream) {
            (H2_DATA | H2_HEADERS, 1) if flags & END_STREAM != 0 => return Ok(()),
            (H2_RST_STREAM, 1) => bail!("HTTP/2 stream reset ({})", h2_code(&payload)),
            (H2_GOAWAY, 0) => bail!("HTTP/2 GOAWAY ({})", h2_code(&payload[4.min(len)..])),
            (H2_SETTINGS, 0) if flags & ACK == 0 => {
                let mut ack = Vec::new();
                h2_frame(&mut ack, H2_SETTINGS, ACK, 0, &[]);
                s.write_all(&ack)?;
            }
            _ => {}
        }
    }
}

const H2_DATA: u8 = 0x0;
const H2_HEADERS: u8 = 0x1;
const H2_RST_STREAM: u8 = 0x3;
const H2_SETTINGS: u8 = 0x4;
const H2_GOAWAY: u8 = 0x7;
const H2_WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

fn h2_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// A header field "without indexing" whose name is entry `name` of
/// HPACK's static table (RFC 7541, section 6.2.2).
fn hpack_literal(out: &mut Vec<u8>, name: u8, value: &[u8]) {
    out.push(name);
    // The length: a 7-bit prefix, then 7 bits a byte (section 5.1).
    let mut n = value.len();
    if n < 127 {
        out.push(n as u8);
    } else {
        out.push(127);
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
    }
    out.extend_from_slice(value);
}

/// The error code an RST_STREAM or GOAWAY payload starts with.
fn h2_code(payload: &[u8]) -> String {
    match payload.get(..4) {
        Some(b) => format!(
            "error code {}",
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        ),
        None => "no error code".to_string(),
    }
}

/// A server's address, and how to reach it over TLS when it serves TLS.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub tls: Option<probe::TlsTarget>,
}

impl Endpoint {
    pub fn get(
        &self,
        path: &str,
        extra: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Fetched, FetchError> {
        get_over(self.addr, self.tls.as_ref(), path, extra, timeout)
    }
}

/// What a server must answer before any load: each static URL with the
/// exact bytes of its file, and each dynamic URL with a stable body.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    /// URL path and the file whose bytes it must return.
    pub files: Vec<(String, PathBuf)>,
    /// URL path and the Content-Type of a body only the server's software
    /// determines (phpinfo()).
    pub stable: Vec<(String, String)>,
    pub timeout: Duration,
}

/// Every URL's status, headers and exact body.
pub fn verify(addr: SocketAddr, e: &Expected) -> anyhow::Result<()> {
    verify_at(&Endpoint { addr, tls: None }, e)
}

/// [`verify`] against an endpoint, over TLS when it serves TLS.
pub fn verify_at(at: &Endpoint, e: &Expected) -> anyhow::Result<()> {
    for (path, file) in &e.files {
        let want = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let got = at
            .get(path, &[], e.timeout)
            .with_context(|| format!("GET {path}"))?;
        if got.status != 200 {
            bail!("GET {path}: status {} instead of 200", got.status);
        }
        uncompressed(path, &got)?;
        if let Some(len) = got.header("content-length") {
            if len.trim() != want.len().to_string() {
                bail!("GET {path}: Content-Length {len} instead of {}", want.len());
            }
        }
        if got.body != want {
            bail!(
                "GET {path}: body of {} bytes differs from the {}-byte file",
                got.body.len(),
                want.len()
            );
        }
    }
    for (path, content_type) in &e.stable {
        verify_stable(at, path, content_type, e.timeout)?;
    }
    Ok(())
}

fn uncompressed(path: &str, got: &Fetched) -> anyhow::Result<()> {
    if let Some(enc) = got.header("content-encoding") {
        bail!("GET {path}: compressed ({enc}) although the workload does not ask for it");
    }
    Ok(())
}

/// A URL whose body the server's software determines (phpinfo()): status
/// 200, the expected Content-Type, no compression, and the same body twice,
/// since the load engine takes the first response's size and checksum as
/// the reference for every later one.
fn verify_stable(
    at: &Endpoint,
    path: &str,
    content_type: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let fetch = || {
        at.get(path, &[], timeout)
            .with_context(|| format!("GET {path}"))
    };
    let first = fetch()?;
    if first.status != 200 {
        bail!("GET {path}: status {} instead of 200", first.status);
    }
    let ct = first.header("content-type").unwrap_or("");
    if !ct.starts_with(content_type) {
        bail!("GET {path}: Content-Type {ct:?} instead of {content_type}");
    }
    uncompressed(path, &first)?;
    if first.body.is_empty() {
        bail!("GET {path}: empty body");
    }
    let second = fetch()?;
    if second.body != first.body {
        bail!(
            "GET {path}: two requests gave different bodies ({} and {} bytes)",
            first.body.len(),
            second.body.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_name_the_host_and_port() {
        assert_eq!(
            request(addr(8080), "/a.html", &[]),
            b"GET /a.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        assert_eq!(
            request(addr(80), "/", &[("Range", "bytes=0-9")]),
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1:80\r\nRange: bytes=0-9\r\n\r\n"
        );
        assert_eq!(
            request("[::1]:8080".parse().unwrap(), "/", &[]),
            b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"
        );
    }

    #[test]
    fn hpack_lengths_past_the_prefix_continue_in_7_bit_groups() {
        let mut out = Vec::new();
        hpack_literal(&mut out, 4, b"/x");
        assert_eq!(out, b"\x04\x02/x");
        // RFC 7541, C.1.2's 1337 on a 5-bit prefix is 31, 154, 10; on a
        // 7-bit one, 127 then 1210 = 58 + 9 * 128: 127, 186, 9.
        for (len, want) in [(126, &[126][..]), (127, &[127, 0]), (1337, &[127, 186, 9])] {
            let mut out = Vec::new();
            hpack_literal(&mut out, 1, &vec![b'a'; len]);
            assert_eq!(&out[1..1 + want.len()], want, "{len}");
            assert_eq!(out.len(), 1 + want.len() + len);
        }
    }

    /// A server that reads the client's preface and first frames, then
    /// writes `reply`; returns what the client sent.
    fn h2_server(reply: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // Preface, SETTINGS (6 bytes), WINDOW_UPDATE (4), HEADERS.
            let mut got = vec![0; 24 + 9 + 6 + 9 + 4 + 9];
            c.read_exact(&mut got).unwrap();
            let len = u32::from_be_bytes([
                0,
                got[got.len() - 9],
                got[got.len() - 8],
                got[got.len() - 7],
            ]);
            let mut block = vec![0; len as usize];
            c.read_exact(&mut block).unwrap();
            got.extend(block);
            c.write_all(&reply).unwrap();
            // Whatever the client sends back (a SETTINGS ACK) until it closes.
            let _ = c.read_to_end(&mut got);
            got
        });
        (addr, t)
    }

    #[test]
    fn an_h2c_get_sends_the_preface_and_waits_for_the_end_of_stream_1() {
        let mut reply = Vec::new();
        h2_frame(&mut reply, H2_SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        h2_frame(&mut reply, H2_HEADERS, END_HEADERS, 1, &[0x88]);
        h2_frame(&mut reply, H2_DATA, 0, 1, b"hel");
        h2_frame(&mut reply, H2_DATA, END_STREAM, 1, b"lo");
        let (at, server) = h2_server(reply);
        h2c_get(at, "/index.html", Duration::from_secs(5)).unwrap();
        let got = server.join().unwrap();
        let mut want = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // SETTINGS: INITIAL_WINDOW_SIZE 2^31 - 1.
        want.extend(b"\0\0\x06\x04\0\0\0\0\0\0\x04\x7f\xff\xff\xff");
        // WINDOW_UPDATE of the connection by 2^31 - 1 - 65535.
        want.extend(b"\0\0\x04\x08\0\0\0\0\0\x7f\xff\0\0");
        let authority = at.to_string();
        let block_len = 2 + 2 + "/index.html".len() + 2 + authority.len();
        // HEADERS on stream 1, END_STREAM | END_HEADERS.
        want.extend([0, 0, block_len as u8, 1, 5, 0, 0, 0, 1]);
        want.extend([0x82, 0x86, 4, 11]);
        want.extend(b"/index.html");
        want.extend([1, authority.len() as u8]);
        want.extend(authority.as_bytes());
        // The server's SETTINGS acknowledged.
        want.extend(b"\0\0\0\x04\x01\0\0\0\0");
        assert_eq!(got, want);
    }

    #[test]
    fn an_h2c_get_fails_on_goaway_or_on_a_server_that_ends_nothing() {
        let mut goaway = Vec::new();
        h2_frame(&mut goaway, H2_GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 1]);
        let (at, server) = h2_server(goaway);
        let e = h2c_get(at, "/", Duration::from_secs(5)).unwrap_err();
        assert_eq!(format!("{e:#}"), "HTTP/2 GOAWAY (error code 1)");
        server.join().unwrap();
        let mut open = Vec::new();
        h2_frame(&mut open, H2_HEADERS, END_HEADERS, 1, &[0x88]);
        let (at, server) = h2_server(open);
        let started = Instant::now();
        assert!(h2c_get(at, "/", Duration::from_millis(300)).is_err());
        assert!(started.elapsed() < Duration::from_secs(3));
        server.join().unwrap();
    }

    #[test]
    fn free_ports_are_free_on_the_address_asked_for() {
        for ip in [IpAddr::from([127, 0, 0, 1]), IpAddr::from([127, 0, 0, 2])] {
            let port = free_port(ip).unwrap();
            TcpListener::bind((ip, port)).unwrap();
        }
    }
}
