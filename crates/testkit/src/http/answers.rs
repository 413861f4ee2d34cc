//! Responses a play sends, and the plainest play of all.

use super::conn::Conn;

/// A 200 with a two-byte body.
pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A 200 response with a Content-Length.
pub fn ok(body: &[u8]) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    r.extend_from_slice(body);
    r
}

/// A 200 response with a chunked body made of `chunks`, then `trailers`.
pub fn chunked(chunks: &[&[u8]], trailers: &[(&str, &str)]) -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for c in chunks {
        r.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        r.extend_from_slice(c);
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(b"0\r\n");
    for (name, value) in trailers {
        r.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    r
}

/// [`OK`] to the request already read and to every one after it, each
/// answer counted, until the client closes.
pub fn answer(c: &mut Conn) {
    loop {
        if !c.send(OK) {
            return;
        }
        c.tally.bump(&c.tally.answered);
        if !c.request() {
            return;
        }
    }
}
