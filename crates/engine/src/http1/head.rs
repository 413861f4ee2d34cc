//! A response's head, read by httparse into what the parser needs of it:
//! its length, status, framing and whether the connection stays open.

use std::mem::MaybeUninit;

use super::last_head::LastHead;
use super::{Framing, Head, ParseError, FEW_HEADERS, MAX_HEADERS};

/// Tolerances that real servers need and that cannot confuse framing.
pub(crate) fn httparse_config() -> httparse::ParserConfig {
    let mut c = httparse::ParserConfig::default();
    c.allow_spaces_after_header_name_in_responses(true)
        .allow_multiple_spaces_in_response_status_delimiters(true)
        .allow_obsolete_multiline_headers_in_responses(true);
    c
}

fn map_httparse(e: httparse::Error) -> ParseError {
    match e {
        httparse::Error::Version | httparse::Error::Status | httparse::Error::Token => {
            ParseError::StatusLine
        }
        httparse::Error::TooManyHeaders => ParseError::TooManyHeaders(MAX_HEADERS),
        httparse::Error::HeaderName | httparse::Error::HeaderValue | httparse::Error::NewLine => {
            ParseError::Header
        }
    }
}

/// Parse one status line + header block from the start of `bytes`;
/// Ok(None) when it is not complete yet. A head that is the last one
/// this thread read, its `Date` aside, says what that one said
/// (last_head.rs).
pub(super) fn parse_head(bytes: &[u8]) -> Result<Option<Head>, ParseError> {
    if let Some(h) = LastHead::recognise(bytes) {
        return Ok(Some(h));
    }
    let mut date = None;
    let r = read_head(bytes, &mut date);
    if let Ok(Some(h)) = r {
        LastHead::keep(bytes, h, date);
    }
    r
}

/// httparse's reading of the head, and in `date` where the value of its
/// one `Date` field lies.
pub(super) fn read_head(
    bytes: &[u8],
    date: &mut Option<(usize, usize)>,
) -> Result<Option<Head>, ParseError> {
    // Uninitialised slots: this runs once per response, and filling 64
    // slots (2 KiB) with EMPTY_HEADER first is work thrown away.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; FEW_HEADERS];
    match parse_head_in(bytes, &mut slots, date) {
        Err(ParseError::TooManyHeaders(_)) => parse_head_many(bytes, date),
        r => r,
    }
}

/// [`read_head`] for a header block of more than [`FEW_HEADERS`] fields:
/// a frame of its own (64 KiB of slots), so the common case's stays small.
#[inline(never)]
fn parse_head_many(
    bytes: &[u8],
    date: &mut Option<(usize, usize)>,
) -> Result<Option<Head>, ParseError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    parse_head_in(bytes, &mut slots, date)
}

fn parse_head_in<'b>(
    bytes: &'b [u8],
    slots: &mut [MaybeUninit<httparse::Header<'b>>],
    date: &mut Option<(usize, usize)>,
) -> Result<Option<Head>, ParseError> {
    let mut r = httparse::Response::new(&mut []);
    let len = match httparse_config().parse_response_with_uninit_headers(&mut r, bytes, slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(map_httparse(e)),
    };
    let status = r.code.unwrap_or(0);
    if status < 100 {
        return Err(ParseError::StatusLine);
    }
    let http11 = r.version == Some(1);

    let mut transfer_encoding = false;
    let mut chunked = false;
    let mut content_length: Option<u64> = None;
    let mut close = false;
    let mut keep_alive = false;
    let mut dates = 0;
    for h in r.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_encoding = true;
            // Only a final "chunked" frames the body (RFC 9112 §6.3).
            for token in list_elements(h.value) {
                chunked = token.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            // "5, 5" or repeated fields are one length said twice; anything
            // else leaves the body length ambiguous.
            let mut any = false;
            for element in h.value.split(|&b| b == b',') {
                let n = parse_content_length(trim_ows(element))?;
                any = true;
                match content_length {
                    Some(prev) if prev != n => return Err(ParseError::ConflictingContentLength),
                    _ => content_length = Some(n),
                }
            }
            if !any {
                return Err(ParseError::InvalidContentLength);
            }
        } else if name.eq_ignore_ascii_case(b"date") {
            // httparse's values are slices of the head itself. A second
            // Date leaves no one value that may vary.
            let at = h.value.as_ptr() as usize - bytes.as_ptr() as usize;
            dates += 1;
            *date = (dates == 1).then_some((at, at + h.value.len()));
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in list_elements(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }

    let mut keep_alive = !close && (http11 || keep_alive);
    let framing = if transfer_encoding {
        // Both headers, or Transfer-Encoding in HTTP/1.0, means the sender's
        // framing cannot be trusted for the next message (RFC 9112 §6.1, §6.3).
        if content_length.is_some() || !http11 {
            keep_alive = false;
        }
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        match content_length {
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    Ok(Some(Head {
        len,
        status,
        framing,
        keep_alive,
    }))
}

fn parse_content_length(digits: &[u8]) -> Result<u64, ParseError> {
    if digits.is_empty() {
        return Err(ParseError::InvalidContentLength);
    }
    let mut n: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err(ParseError::InvalidContentLength);
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(ParseError::InvalidContentLength)?;
    }
    Ok(n)
}

/// Non-empty elements of a comma-separated header list, OWS trimmed.
fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|t| !t.is_empty())
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// The last head kept (last_head.rs), recognised or not, reads as
/// httparse reads it.
#[cfg(test)]
mod tests {
    use super::super::last_head::ROOM;
    use super::*;

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
