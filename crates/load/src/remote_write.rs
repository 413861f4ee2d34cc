//! The run's figures pushed to a Prometheus remote-write receiver
//! (protocol 1.0: a protobuf `WriteRequest`, snappy-compressed, POSTed
//! over HTTP). Both encodings are small enough to write here: the
//! request's four message types, and snappy's block format made of
//! literals alone, which every decoder reads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::metrics::Sample;

/// Where to push: an `http://` URL, resolved once at the edge.
#[derive(Debug, Clone)]
pub struct Receiver {
    addr: SocketAddr,
    host: String,
    path: String,
}

/// Why a URL cannot take remote writes.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    #[error("is not an http:// URL with a host")]
    NotHttp,
    #[error("cannot resolve its host: {0}")]
    Resolve(std::io::Error),
}

impl Receiver {
    pub fn parse(s: &str) -> Result<Receiver, ReceiverError> {
        let u = url::Url::parse(s).map_err(|_| ReceiverError::NotHttp)?;
        let host = match (u.scheme(), u.host_str()) {
            ("http", Some(h)) => h.to_string(),
            _ => return Err(ReceiverError::NotHttp),
        };
        let port = u.port_or_known_default().unwrap_or(80);
        let addr = (host.trim_matches(|c| c == '[' || c == ']'), port)
            .to_socket_addrs()
            .map_err(ReceiverError::Resolve)?
            .next()
            .ok_or_else(|| ReceiverError::Resolve(std::io::Error::other("no address")))?;
        let mut path = u.path().to_string();
        if let Some(q) = u.query() {
            path = format!("{path}?{q}");
        }
        Ok(Receiver {
            addr,
            host: format!("{host}:{port}"),
            path,
        })
    }

    /// One push of `samples` at `ms` (Unix milliseconds), labelled with
    /// `run`; bounded by its timeouts. Errs unless the receiver said 2xx.
    pub fn push(&self, run: &str, samples: &[Sample], ms: i64) -> std::io::Result<()> {
        let body = snappy_literals(&write_request(run, samples, ms));
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.set_write_timeout(Some(Duration::from_secs(5)))?;
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\n\
             Content-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\n\
             User-Agent: throng\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.host,
            body.len()
        );
        s.write_all(head.as_bytes())?;
        s.write_all(&body)?;
        let mut answer = [0u8; 512];
        let mut len = 0;
        while len < 12 {
            let n = s.read(&mut answer[len..])?;
            if n == 0 {
                break;
            }
            len += n;
        }
        let status = answer[..len].get(9..12).unwrap_or_default();
        if status.first() == Some(&b'2') {
            Ok(())
        } else {
            let line = String::from_utf8_lossy(&answer[..len]);
            Err(std::io::Error::other(format!(
                "the receiver answered {}",
                line.lines().next().unwrap_or("nothing")
            )))
        }
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field (wire type 2).
fn field_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `prometheus.WriteRequest`: one `TimeSeries` (labels sorted by name,
/// one `Sample`) per sample.
pub fn write_request(run: &str, samples: &[Sample], ms: i64) -> Vec<u8> {
    let mut req = Vec::new();
    for s in samples {
        let mut labels: Vec<(&str, &str)> = vec![("__name__", &s.name), ("run", run)];
        if let Some((k, v)) = &s.label {
            labels.push((k, v));
        }
        labels.sort_unstable();
        let mut series = Vec::new();
        for (name, value) in labels {
            let mut label = Vec::new();
            field_bytes(&mut label, 1, name.as_bytes());
            field_bytes(&mut label, 2, value.as_bytes());
            field_bytes(&mut series, 1, &label);
        }
        let mut sample = Vec::new();
        varint(&mut sample, 1 << 3 | 1);
        sample.extend_from_slice(&s.value.to_le_bytes());
        varint(&mut sample, 2 << 3);
        varint(&mut sample, ms as u64);
        field_bytes(&mut series, 2, &sample);
        field_bytes(&mut req, 1, &series);
    }
    req
}

/// Snappy's block format with every byte a literal: the length, then
/// literal runs of at most 65536 bytes (tag 61: a two-byte length).
pub fn snappy_literals(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65536 * 3 + 8);
    varint(&mut out, data.len() as u64);
    for chunk in data.chunks(65536) {
        let n = chunk.len() - 1;
        if n < 60 {
            out.push((n as u8) << 2);
        } else {
            out.push(61 << 2);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        out.extend_from_slice(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_encodes_as_prometheus_reads_it() {
        let s = Sample {
            family: 0,
            name: "m".into(),
            label: Some(("k", "v".into())),
            value: 1.0,
        };
        let got = write_request("r", &[s], 300);
        // Labels __name__="m", k="v", run="r" (sorted), value 1.0, timestamp 300.
        let want: Vec<u8> = [
            vec![0x0a, 47],
            vec![0x0a, 13, 0x0a, 8],
            b"__name__".to_vec(),
            vec![0x12, 1, b'm'],
            vec![0x0a, 6, 0x0a, 1, b'k', 0x12, 1, b'v'],
            vec![0x0a, 8, 0x0a, 3],
            b"run".to_vec(),
            vec![0x12, 1, b'r'],
            vec![0x12, 12, 0x09],
            1.0f64.to_le_bytes().to_vec(),
            vec![0x10, 0xac, 0x02],
        ]
        .concat();
        assert_eq!(got, want);
    }

    #[test]
    fn snappy_literals_frame_short_and_long_runs() {
        assert_eq!(snappy_literals(b"abc"), [3, 2 << 2, b'a', b'b', b'c']);
        let long = vec![7u8; 70_000];
        let framed = snappy_literals(&long);
        // 70000 as a varint, then a 65536-byte run and a 4464-byte one.
        assert_eq!(&framed[..3], &[0xf0, 0xa2, 0x04]);
        assert_eq!(&framed[3..6], &[61 << 2, 0xff, 0xff]);
        assert_eq!(&framed[6 + 65536..9 + 65536], &[61 << 2, 0x6f, 0x11]);
        assert_eq!(framed.len(), 3 + 3 + 65536 + 3 + 4464);
    }
}
