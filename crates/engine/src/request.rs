//! Request bytes, serialised once per target before the load starts, so the
//! hot path only ever copies a ready slice into a socket.

use crate::spec::{LoadSpec, Target};

/// The full request for `target` as it goes on the wire.
pub fn serialize(spec: &LoadSpec, target: &Target) -> Vec<u8> {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut out = Vec::with_capacity(128 + spec.body.as_ref().map_or(0, Vec::len));
    out.extend_from_slice(spec.method.as_bytes());
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
    if let Some(body) = &spec.body {
        if !has("content-length") {
            header(&mut out, "Content-Length", &body.len().to_string());
        }
    }
    // Keep-alive is HTTP/1.1's default; only the opposite must be said.
    if !spec.keep_alive && !has("connection") {
        header(&mut out, "Connection", "close");
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = &spec.body {
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
        Target {
            addr: "127.0.0.1:8080".parse().unwrap(),
            host_header: "127.0.0.1:8080".into(),
            path: "/a?b=1".into(),
            url: "http://127.0.0.1:8080/a?b=1".into(),
        }
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
}
