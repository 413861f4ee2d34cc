//! A sans-IO HTTP/3 client codec (RFC 9114): the frames a request stream
//! and the control stream carry, and QPACK (RFC 9204) with its static
//! table and literals only. The client advertises a dynamic table of 0
//! bytes, so a server may never refer to one: no encoder or decoder
//! stream is needed, and a header block decodes on its own, in order.
//!
//! Bytes in, events out; nothing here knows of QUIC or sockets. The QUIC
//! driver (`quic/`) hands each stream's bytes to a [`ResponseReader`].

pub mod qpack;
mod reader;
mod request;

pub use reader::{ReadError, ResponseReader, Step};
pub use request::H3Requests;

/// Frame types (RFC 9114 §7.2).
pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const SETTINGS: u64 = 0x04;
pub const GOAWAY: u64 = 0x07;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const CONTROL_STREAM: u64 = 0x00;

/// Settings (RFC 9204 §5): a dynamic table of 0 bytes and no blocked
/// streams, so the server's header blocks never wait on its encoder stream.
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x07;
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x06;

/// The largest header block the client reads; one larger fails its
/// request (and the client says so in its SETTINGS).
pub const MAX_FIELD_SECTION: u64 = 64 * 1024;

/// Error codes (RFC 9114 §8.1, RFC 9204 §6).
pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;

/// The name of an HTTP/3 or QPACK error code, as the summary counts it.
pub fn code_name(code: u64) -> String {
    let name = match code {
        0x100 => "H3_NO_ERROR",
        0x101 => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        0x103 => "H3_STREAM_CREATION_ERROR",
        0x104 => "H3_CLOSED_CRITICAL_STREAM",
        0x105 => "H3_FRAME_UNEXPECTED",
        0x106 => "H3_FRAME_ERROR",
        0x107 => "H3_EXCESSIVE_LOAD",
        0x108 => "H3_ID_ERROR",
        0x109 => "H3_SETTINGS_ERROR",
        0x10a => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        0x10c => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        0x10e => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        0x200 => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => return format!("0x{code:x}"),
    };
    name.to_string()
}

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// A variable-length integer at the start of `b`, and its length; `None`
/// while `b` holds only part of it.
pub fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    if b.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &x in &b[1..len] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

/// The client's control stream as it opens: its type, then SETTINGS.
pub fn control_stream_preface() -> Vec<u8> {
    let mut settings = Vec::new();
    for (id, v) in [
        (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 0),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
        (SETTINGS_MAX_FIELD_SECTION_SIZE, MAX_FIELD_SECTION),
    ] {
        put_varint(&mut settings, id);
        put_varint(&mut settings, v);
    }
    let mut out = Vec::new();
    put_varint(&mut out, CONTROL_STREAM);
    put_varint(&mut out, SETTINGS);
    put_varint(&mut out, settings.len() as u64);
    out.extend_from_slice(&settings);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_each_length() {
        // RFC 9000 §A.1's examples.
        for (v, bytes) in [
            (37u64, &[0x25][..]),
            (15_293, &[0x7b, 0xbd]),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d]),
            (
                151_288_809_941_952_652,
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
            ),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes);
            assert_eq!(get_varint(bytes), Some((v, bytes.len())));
            if bytes.len() > 1 {
                assert_eq!(get_varint(&bytes[..bytes.len() - 1]), None);
            }
        }
    }

    #[test]
    fn the_control_stream_says_no_dynamic_table() {
        assert_eq!(
            control_stream_preface(),
            [0x00, 0x04, 0x09, 0x01, 0x00, 0x07, 0x00, 0x06, 0x80, 0x01, 0x00, 0x00]
        );
    }
}
