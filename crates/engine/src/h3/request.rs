//! Each target's request as the bytes of its whole request stream, built
//! once before the load and shared read-only by the threads.

use crate::spec::LoadSpec;

use super::{put_varint, qpack, DATA, HEADERS};

/// Fields HTTP/3 forbids (RFC 9114 §4.2): they describe one HTTP/1.1
/// connection; `host` is `:authority`'s.
fn connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// Per target, the HEADERS frame and the body's DATA frame.
pub struct H3Requests {
    pub targets: Vec<Vec<u8>>,
}

impl H3Requests {
    pub fn new(spec: &LoadSpec) -> H3Requests {
        let mut fields: Vec<(String, String)> = Vec::new();
        if !spec
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
        {
            fields.push((
                "user-agent".into(),
                concat!("throng/", env!("CARGO_PKG_VERSION")).into(),
            ));
        }
        fields.extend(
            spec.headers
                .iter()
                .filter(|(n, _)| !connection_specific(n))
                .cloned(),
        );
        let targets = spec
            .targets
            .iter()
            .map(|t| {
                let authority = spec
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("host"))
                    .map_or(t.host_header.as_str(), |(_, v)| v.as_str());
                let method = t.method.as_deref().unwrap_or(&spec.method);
                let body = t.body.as_ref().or(spec.body.as_ref());
                let body_len = body.map_or(0, Vec::len);
                let block = qpack::encode_request(method, authority, &t.path, body_len, &fields);
                let mut out = Vec::with_capacity(block.len() + body_len + 16);
                put_varint(&mut out, HEADERS);
                put_varint(&mut out, block.len() as u64);
                out.extend_from_slice(&block);
                if let Some(b) = body.filter(|b| !b.is_empty()) {
                    put_varint(&mut out, DATA);
                    put_varint(&mut out, b.len() as u64);
                    out.extend_from_slice(b);
                }
                out
            })
            .collect();
        H3Requests { targets }
    }
}
