//! Requests to a server under test on this machine, outside any load run:
//! readiness, verification of every URL, the feature probes. One request
//! format and one fetch (the engine's probe, which frames responses with the
//! same parser as the load driver), instead of one per caller. They go to
//! the address the server listens on, which is loopback unless clients on
//! other hosts load it.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::Duration;

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
/// section 3.3), with the load engine's own HTTP/2 layer; `Ok` once the
/// response has ended, whatever its status. How a server that speaks only
/// HTTP/2 on its cleartext port shows it is up: nginx 1.22's `listen ...
/// http2` answers HTTP/1.1 with a GOAWAY frame.
pub(crate) fn h2c_get(addr: SocketAddr, path: &str, timeout: Duration) -> anyhow::Result<()> {
    probe::fetch_h2(addr, None, &addr.to_string(), path, &[], timeout)?;
    Ok(())
}

/// A server's address, and how to reach it over TLS when it serves TLS.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub tls: Option<probe::TlsTarget>,
    /// The cleartext port speaks HTTP/2 alone: requests go over h2c.
    pub h2c_only: bool,
}

impl Endpoint {
    pub fn get(
        &self,
        path: &str,
        extra: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Fetched, FetchError> {
        if self.h2c_only {
            let authority = self.addr.to_string();
            return probe::fetch_h2(self.addr, None, &authority, path, extra, timeout);
        }
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
    verify_at(
        &Endpoint {
            addr,
            tls: None,
            h2c_only: false,
        },
        e,
    )
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
    fn free_ports_are_free_on_the_address_asked_for() {
        for ip in [IpAddr::from([127, 0, 0, 1]), IpAddr::from([127, 0, 0, 2])] {
            let port = free_port(ip).unwrap();
            TcpListener::bind((ip, port)).unwrap();
        }
    }
}
