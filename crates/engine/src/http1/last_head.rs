//! The head this thread read last, kept to recognise the next one.
//!
//! Under load, one URL's responses carry the same head again and again:
//! the same status line and fields, byte for byte, but for the value of
//! `Date`, which the server writes anew each second. Reading each by
//! httparse was the largest part of throng's own work per keep-alive
//! response (docs/performance.md, "throng's own code beside the
//! floor's"); comparing it with the last one is a few memory compares.
//!
//! What is recognised is exact: the bytes before and after the last
//! head's `Date` value are the same bytes, and the value between them,
//! of the same length, holds only bytes a field value may hold (no CR or
//! LF, so no line ends or starts in it). Every line is then the line
//! httparse read last time, the head ends where that one did, and what
//! the parser takes from it (status, framing, whether the connection
//! stays open) is what it took then; `Date` is read by none of it. Any
//! other difference is read by httparse, and that head is kept in place
//! of the last. A head longer than `ROOM` is never kept.
//!
//! One per thread: a load thread reads all its connections' heads in
//! turn, so one copy serves them all, in fixed memory, where one per
//! connection would cost every idle connection its size.

use std::cell::RefCell;

use super::head::Head;
use super::Framing;

/// The longest head kept: nginx's, lighttpd's, Apache's and h2o's for a
/// small file are 150 to 300 bytes.
const ROOM: usize = 512;

pub(super) struct LastHead {
    bytes: [u8; ROOM],
    /// Bytes of the head kept; 0 when none is.
    len: usize,
    /// Where its one `Date` value lies (start, end); `(len, len)` when
    /// it has none, and then every byte must be the same.
    varies: (usize, usize),
    head: Head,
}

thread_local! {
    static LAST: RefCell<LastHead> = const {
        RefCell::new(LastHead {
            bytes: [0; ROOM],
            len: 0,
            varies: (0, 0),
            head: Head {
                len: 0,
                status: 0,
                framing: Framing::UntilClose,
                keep_alive: false,
            },
        })
    };
}

impl LastHead {
    /// What the head at the start of `bytes` says, when it is the last
    /// head kept but for its `Date` value.
    pub(super) fn recognise(bytes: &[u8]) -> Option<Head> {
        LAST.with(|last| last.borrow().matches(bytes))
    }

    /// Keep `head`, read from `bytes`, with its `Date` value's place.
    pub(super) fn keep(bytes: &[u8], head: Head, date: Option<(usize, usize)>) {
        let n = head.len;
        if n > ROOM || n > bytes.len() {
            return;
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            last.bytes[..n].copy_from_slice(&bytes[..n]);
            last.len = n;
            last.varies = date.filter(|&(a, b)| a <= b && b <= n).unwrap_or((n, n));
            last.head = head;
        });
    }

    fn matches(&self, bytes: &[u8]) -> Option<Head> {
        let n = self.len;
        if n == 0 || bytes.len() < n {
            return None;
        }
        let (a, b) = self.varies;
        let (new, old) = (&bytes[..n], &self.bytes[..n]);
        if new[..a] != old[..a] || new[b..] != old[b..] {
            return None;
        }
        // A field value's bytes (RFC 9110 §5.5, as httparse reads them):
        // HTAB, SP, VCHAR and obs-text; none ends a line.
        let value = |c: &u8| *c == b'\t' || (*c >= 0x20 && *c != 0x7f);
        new[a..b].iter().all(value).then_some(self.head)
    }

    #[cfg(test)]
    pub(super) fn forget() {
        LAST.with(|last| last.borrow_mut().len = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::head::{parse_head, read_head};
    use super::*;
    use crate::http1::ParseError;

    const NGINX: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n\
        Date: Mon, 30 Nov 2026 08:00:00 GMT\r\nContent-Type: text/html\r\n\
        Content-Length: 7\r\nLast-Modified: Mon, 30 Nov 2026 07:00:00 GMT\r\n\
        Connection: keep-alive\r\nETag: \"1-7\"\r\nAccept-Ranges: bytes\r\n\r\nhello!\n";

    fn fresh(bytes: &[u8]) -> Result<Option<Head>, ParseError> {
        read_head(bytes, &mut None)
    }

    #[test]
    fn the_same_head_at_another_second_is_recognised() {
        LastHead::forget();
        let first = parse_head(NGINX).unwrap().unwrap();
        assert_eq!(first.len, NGINX.len() - 7);
        let later = String::from_utf8(NGINX.to_vec()).unwrap().replace(
            "08:00:00 GMT\r\nContent-Type",
            "08:00:01 GMT\r\nContent-Type",
        );
        assert_eq!(LastHead::recognise(later.as_bytes()), Some(first));
        assert_eq!(parse_head(later.as_bytes()), fresh(later.as_bytes()));
    }

    /// Every byte of a kept head changed to each byte that matters to
    /// httparse or to the framing: what comes back is what httparse
    /// reads of it, recognised or not.
    #[test]
    fn every_change_to_a_kept_head_reads_as_httparse_reads_it() {
        let heads: [&[u8]; 3] = [
            NGINX,
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
            b"HTTP/1.0 404 Not Found\r\nDate: x\r\nTransfer-Encoding: chunked\r\n\
              Connection: close\r\n\r\n0\r\n\r\n",
        ];
        let bytes = [
            0u8, b'\t', b' ', b'\r', b'\n', b':', b',', b'0', b'9', b'a', b'Z', 0x7f, 0x80, 0xff,
        ];
        let mut recognised = 0;
        for head in heads {
            for at in 0..head.len() {
                for &b in &bytes {
                    let mut changed = head.to_vec();
                    changed[at] = b;
                    LastHead::forget();
                    parse_head(head).unwrap();
                    recognised += usize::from(LastHead::recognise(&changed).is_some());
                    assert_eq!(
                        parse_head(&changed),
                        fresh(&changed),
                        "{:?} at {at} of {:?}",
                        b as char,
                        String::from_utf8_lossy(head)
                    );
                }
            }
        }
        // Only a Date value's own bytes, changed to a value's bytes, and
        // any byte past the head: never none.
        assert!(recognised > 0);
    }

    #[test]
    fn a_head_with_two_dates_or_longer_than_the_room_is_read_whole() {
        LastHead::forget();
        let two = b"HTTP/1.1 200 OK\r\nDate: a\r\nDate: b\r\nContent-Length: 0\r\n\r\n";
        parse_head(two).unwrap();
        let other = b"HTTP/1.1 200 OK\r\nDate: a\r\nDate: c\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(LastHead::recognise(other), None);
        assert_eq!(LastHead::recognise(two).map(|h| h.len), Some(two.len()));
        let long = format!(
            "HTTP/1.1 200 OK\r\nX-Pad: {}\r\nContent-Length: 0\r\n\r\n",
            "p".repeat(ROOM)
        );
        parse_head(long.as_bytes()).unwrap();
        assert_eq!(LastHead::recognise(long.as_bytes()), None);
    }
}
