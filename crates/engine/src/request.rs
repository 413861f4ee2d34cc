//! Request bytes, serialised once per target before the load starts, so the
//! hot path only ever copies a ready slice into a socket.

use crate::h2::blocks::H2Requests;
use crate::spec::{LoadSpec, Target};

/// Every target's request in the two forms a connection sends: `ongoing`
/// keeps the connection open (unless the spec has no keep-alive), `last`
/// asks the server to close it after answering. Built once before the
/// load, so choosing between them costs the hot path an index, not a copy.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    ongoing: Vec<Vec<u8>>,
    last: Vec<Vec<u8>>,
    /// The same requests as HTTP/2 header blocks, when a connection may
    /// speak it.
    h2: Option<H2Requests>,
}

impl Prepared {
    pub(crate) fn new(spec: &LoadSpec) -> Prepared {
        let closing = spec.connection_limit().is_some();
        Prepared {
            ongoing: spec.targets.iter().map(|t| serialize(spec, t)).collect(),
            // Nothing is ever sent last without a limit: no copy to keep.
            last: if closing {
                spec.targets
                    .iter()
                    .map(|t| serialize_last(spec, t))
                    .collect()
            } else {
                Vec::new()
            },
            h2: spec
                .http
                .may_h2(spec.tls.is_some())
                .then(|| H2Requests::new(spec)),
        }
    }

    pub(crate) fn h2(&self) -> Option<&H2Requests> {
        self.h2.as_ref()
    }

    pub(crate) fn targets(&self) -> usize {
        self.ongoing.len()
    }

    pub(crate) fn get(&self, target: u32, last: bool) -> &[u8] {
        if last {
            &self.last[target as usize]
        } else {
            &self.ongoing[target as usize]
        }
    }
}

/// The full request for `target` as it goes on the wire.
pub fn serialize(spec: &LoadSpec, target: &Target) -> Vec<u8> {
    build(spec, target, !spec.keep_alive)
}

/// The request for `target` as the last one of its connection: with
/// `Connection: close`, so the server closes after answering it rather
/// than wait for a request that will not come (RFC 9112 §9.6). Without
/// keep-alive, the same bytes as [`serialize`].
pub fn serialize_last(spec: &LoadSpec, target: &Target) -> Vec<u8> {
    build(spec, target, true)
}

fn build(spec: &LoadSpec, target: &Target, close: bool) -> Vec<u8> {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    // A session's requests may each carry their own method and body.
    let method = target.method.as_deref().unwrap_or(&spec.method);
    let body = target.body.as_ref().or(spec.body.as_ref());
    let mut out = Vec::with_capacity(128 + body.map_or(0, Vec::len));
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !has("host") {
        header(&mut out, "Host", &target.host_header);
    }
    if !has("user-agent") {
        header(
            &mut out,
            "User-Agent",
            concat!("throng/", env!("CARGO_PKG_VERSION")),
        );
    }
    for (name, value) in &spec.headers {
        header(&mut out, name, value);
    }
    if let Some(body) = body {
        if !has("content-length") {
            header(&mut out, "Content-Length", &body.len().to_string());
        }
    }
    // Keep-alive is HTTP/1.1's default; only the opposite must be said.
    if close && !has("connection") {
        header(&mut out, "Connection", "close");
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    out
}

fn header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::http("127.0.0.1:8080".parse().unwrap(), "/a?b=1")
    }

    #[test]
    fn get_keep_alive() {
        let spec = LoadSpec::new(vec![target()]);
        let ua = concat!("throng/", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            String::from_utf8(serialize(&spec, &target())).unwrap(),
            format!("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: {ua}\r\n\r\n")
        );
    }

    #[test]
    fn post_close_with_user_host() {
        let mut spec = LoadSpec::new(vec![target()]);
        spec.method = "POST".into();
        spec.keep_alive = false;
        spec.headers = vec![
            ("host".into(), "example".into()),
            ("User-Agent".into(), "x".into()),
        ];
        spec.body = Some(b"hello".to_vec());
        assert_eq!(
            String::from_utf8(serialize(&spec, &target())).unwrap(),
            "POST /a?b=1 HTTP/1.1\r\nhost: example\r\nUser-Agent: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
    }

    #[test]
    fn a_connections_last_request_asks_for_close() {
        let mut spec = LoadSpec::new(vec![target()]);
        spec.requests_per_connection = Some(3);
        let ua = concat!("throng/", env!("CARGO_PKG_VERSION"));
        let p = Prepared::new(&spec);
        assert_eq!(
            String::from_utf8(p.get(0, false).to_vec()).unwrap(),
            format!("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: {ua}\r\n\r\n")
        );
        assert_eq!(
            String::from_utf8(p.get(0, true).to_vec()).unwrap(),
            format!(
                "GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: {ua}\r\n\
                 Connection: close\r\n\r\n"
            )
        );
        // One request per connection is close mode, to the byte.
        spec.requests_per_connection = Some(1);
        let mut close = LoadSpec::new(vec![target()]);
        close.keep_alive = false;
        assert_eq!(
            Prepared::new(&spec).get(0, true),
            serialize(&close, &target())
        );
        assert_eq!(
            Prepared::new(&close).get(0, true),
            serialize(&close, &target())
        );
        // A Connection header of the user's own is sent as written.
        spec.headers = vec![("Connection".into(), "keep-alive".into())];
        assert!(!String::from_utf8(serialize_last(&spec, &target()))
            .unwrap()
            .contains("close"));
    }
}
