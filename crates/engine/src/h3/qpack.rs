//! QPACK (RFC 9204) with the static table and literals only: what a
//! client that advertised a dynamic table of 0 bytes must understand.
//! Requests are encoded once per target, before the load; a response's
//! block is read for its `:status` and nothing else is kept.

/// A header block the client cannot read: it refers to a dynamic table
/// the client never allowed, or is cut short or malformed
/// (QPACK_DECOMPRESSION_FAILED).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("QPACK block cannot be decoded")]
pub struct QpackError;

/// Static table indices the encoder uses (RFC 9204 Appendix A).
const AUTHORITY: u64 = 0;
const PATH: u64 = 1;
const CONTENT_LENGTH: u64 = 4;
const METHOD_CONNECT: u64 = 15;
const SCHEME_HTTPS: u64 = 23;
const USER_AGENT: u64 = 95;
/// Entries of the static table.
const STATIC_LEN: u64 = 99;

/// The static entries whose name is `:status`, with their values.
const STATUS: [(u64, u16); 14] = [
    (24, 103),
    (25, 200),
    (26, 304),
    (27, 404),
    (28, 503),
    (63, 100),
    (64, 204),
    (65, 206),
    (66, 302),
    (67, 400),
    (68, 403),
    (69, 421),
    (70, 425),
    (71, 500),
];

/// The methods the static table holds, from index 15 on.
const METHODS: [&str; 7] = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];

fn put_int(out: &mut Vec<u8>, first: u8, bits: u8, mut v: u64) {
    let max = (1u64 << bits) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_int(b: &[u8], pos: &mut usize, bits: u8) -> Result<u64, QpackError> {
    let max = (1u64 << bits) - 1;
    let mut v = u64::from(*b.get(*pos).ok_or(QpackError)?) & max;
    *pos += 1;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos).ok_or(QpackError)?;
        *pos += 1;
        v = v
            .checked_add(u64::from(byte & 0x7f) << shift)
            .ok_or(QpackError)?;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 56 {
            return Err(QpackError);
        }
    }
}

/// A string literal, never Huffman-coded: requests are encoded once, and
/// plain bytes cost a server nothing to read.
fn put_string(out: &mut Vec<u8>, first: u8, bits: u8, s: &[u8]) {
    put_int(out, first, bits, s.len() as u64);
    out.extend_from_slice(s);
}

/// The string at `pos`, its Huffman flag the bit above its `bits`-bit
/// length prefix; decoded into `scratch` when Huffman-coded.
fn get_string<'a>(
    b: &'a [u8],
    pos: &mut usize,
    bits: u8,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], QpackError> {
    let huffman = *b.get(*pos).ok_or(QpackError)? & (1 << bits) != 0;
    let len = get_int(b, pos, bits)? as usize;
    let end = pos
        .checked_add(len)
        .filter(|&e| e <= b.len())
        .ok_or(QpackError)?;
    let raw = &b[*pos..end];
    *pos = end;
    if !huffman {
        return Ok(raw);
    }
    scratch.clear();
    httlib_huffman::decode(raw, scratch, httlib_huffman::DecoderSpeed::FiveBits)
        .map_err(|_| QpackError)?;
    Ok(scratch)
}

/// Steps over the string at `pos` without decoding it: a field the
/// client never reads costs no Huffman pass (a server's date, etag and
/// the like are most of a response's block).
fn skip_string(b: &[u8], pos: &mut usize, bits: u8) -> Result<(), QpackError> {
    let len = get_int(b, pos, bits)? as usize;
    *pos = pos
        .checked_add(len)
        .filter(|&e| e <= b.len())
        .ok_or(QpackError)?;
    Ok(())
}

/// A request's field section: its prefix (no dynamic table), the pseudo
/// fields, then `fields` as literals, lowercase.
pub fn encode_request(
    method: &str,
    authority: &str,
    path: &str,
    body_len: usize,
    fields: &[(String, String)],
) -> Vec<u8> {
    let mut out = vec![0x00, 0x00];
    match METHODS.iter().position(|m| *m == method) {
        // Indexed field line, static (1T = 11).
        Some(k) => put_int(&mut out, 0xc0, 6, METHOD_CONNECT + k as u64),
        // Literal with a static name reference (01NT, T = 1).
        None => {
            put_int(&mut out, 0x50, 4, METHOD_CONNECT);
            put_string(&mut out, 0x00, 7, method.as_bytes());
        }
    }
    put_int(&mut out, 0xc0, 6, SCHEME_HTTPS);
    put_int(&mut out, 0x50, 4, AUTHORITY);
    put_string(&mut out, 0x00, 7, authority.as_bytes());
    put_int(&mut out, 0x50, 4, PATH);
    put_string(&mut out, 0x00, 7, path.as_bytes());
    if body_len > 0 {
        put_int(&mut out, 0x50, 4, CONTENT_LENGTH);
        put_string(&mut out, 0x00, 7, body_len.to_string().as_bytes());
    }
    for (n, v) in fields {
        if n.eq_ignore_ascii_case("user-agent") {
            put_int(&mut out, 0x50, 4, USER_AGENT);
        } else {
            // Literal with a literal name (001N H, 3-bit length).
            put_string(&mut out, 0x20, 3, n.to_ascii_lowercase().as_bytes());
        }
        put_string(&mut out, 0x00, 7, v.as_bytes());
    }
    out
}

fn status_of(index: u64) -> Result<Option<u16>, QpackError> {
    if index >= STATIC_LEN {
        return Err(QpackError);
    }
    Ok(STATUS.iter().find(|(i, _)| *i == index).map(|&(_, s)| s))
}

fn parse_status(v: &[u8]) -> Result<u16, QpackError> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return Err(QpackError);
    }
    Ok(v.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0')))
}

/// The `:status` of a response's field section; `None` when it has none
/// (a malformed response, which the caller fails). `scratch` holds a
/// Huffman-coded string while it is read, and is reused.
pub fn decode_status(b: &[u8], scratch: &mut Vec<u8>) -> Result<Option<u16>, QpackError> {
    let mut pos = 0;
    // Required Insert Count: any but 0 needs the table that was refused.
    if get_int(b, &mut pos, 8)? != 0 {
        return Err(QpackError);
    }
    get_int(b, &mut pos, 7)?;
    let mut status = None;
    while pos < b.len() {
        let first = b[pos];
        if first & 0x80 != 0 {
            // Indexed field line: only the static table may be named.
            if first & 0x40 == 0 {
                return Err(QpackError);
            }
            let s = status_of(get_int(b, &mut pos, 6)?)?;
            status = status.or(s);
        } else if first & 0x40 != 0 {
            // Literal with a name reference.
            if first & 0x10 == 0 {
                return Err(QpackError);
            }
            let is_status = status_of(get_int(b, &mut pos, 4)?)?.is_some();
            if is_status && status.is_none() {
                status = Some(parse_status(get_string(b, &mut pos, 7, scratch)?)?);
            } else {
                skip_string(b, &mut pos, 7)?;
            }
        } else if first & 0x20 != 0 {
            // Literal with a literal name.
            let name = get_string(b, &mut pos, 3, scratch)?;
            if name == b":status" && status.is_none() {
                status = Some(parse_status(get_string(b, &mut pos, 7, scratch)?)?);
            } else {
                skip_string(b, &mut pos, 7)?;
            }
        } else {
            // Post-base references: the dynamic table again.
            return Err(QpackError);
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_block_is_static_references_and_literals() {
        let b = encode_request("GET", "example.com", "/index.html", 0, &[]);
        let mut want = vec![0x00, 0x00, 0xd1, 0xd7, 0x50, 11];
        want.extend_from_slice(b"example.com");
        want.extend_from_slice(&[0x51, 11]);
        want.extend_from_slice(b"/index.html");
        assert_eq!(b, want);
        let b = encode_request("PATCH", "a", "/", 3, &[("X-Long-Name".into(), "v".into())]);
        let mut want = vec![0x00, 0x00, 0x5f, 0x00, 5];
        want.extend_from_slice(b"PATCH");
        want.extend_from_slice(&[0xd7, 0x50, 1, b'a', 0x51, 1, b'/', 0x54, 1, b'3']);
        // An 11-byte name overflows the 3-bit prefix: 7, then 4.
        want.extend_from_slice(&[0x27, 4]);
        want.extend_from_slice(b"x-long-name");
        want.extend_from_slice(&[1, b'v']);
        assert_eq!(b, want);
    }

    #[test]
    fn statuses_decode_from_each_kind_of_line() {
        let mut s = Vec::new();
        // Indexed :status 200, then content-type (static 52).
        assert_eq!(decode_status(&[0, 0, 0xd9, 0xf4], &mut s), Ok(Some(200)));
        // Name reference to :status 103, with the value 418.
        assert_eq!(
            decode_status(&[0, 0, 0x5f, 0x09, 3, b'4', b'1', b'8'], &mut s),
            Ok(Some(418))
        );
        // Literal name, the value Huffman-coded: "302" is 0x64 0x02 (RFC 7541 C.6.1).
        let mut b = vec![0, 0, 0x27, 0];
        b.extend_from_slice(b":status");
        b.extend_from_slice(&[0x82, 0x64, 0x02]);
        assert_eq!(decode_status(&b, &mut s), Ok(Some(302)));
        // No status at all.
        assert_eq!(decode_status(&[0, 0, 0xf4], &mut s), Ok(None));
        // A Huffman-coded value of another field (server, static 92) is
        // stepped over undecoded, its length still checked: the status
        // after it is read.
        assert_eq!(
            decode_status(&[0, 0, 0x5f, 0x4d, 0x82, 0xff, 0xff, 0xd9], &mut s),
            Ok(Some(200))
        );
        assert_eq!(
            decode_status(&[0, 0, 0x5f, 0x4d, 0x83, 0xff, 0xff], &mut s),
            Err(QpackError)
        );
    }

    #[test]
    fn a_dynamic_table_or_a_cut_block_is_refused() {
        let mut s = Vec::new();
        // Required Insert Count 1.
        assert_eq!(decode_status(&[1, 0, 0xd9], &mut s), Err(QpackError));
        // Indexed, dynamic (T = 0).
        assert_eq!(decode_status(&[0, 0, 0x81], &mut s), Err(QpackError));
        // Post-base index.
        assert_eq!(decode_status(&[0, 0, 0x10], &mut s), Err(QpackError));
        // Beyond the static table.
        assert_eq!(decode_status(&[0, 0, 0xff, 0x24], &mut s), Err(QpackError));
        // A value longer than the block.
        assert_eq!(
            decode_status(&[0, 0, 0x51, 5, b'/'], &mut s),
            Err(QpackError)
        );
        assert_eq!(decode_status(&[], &mut s), Err(QpackError));
    }
}
