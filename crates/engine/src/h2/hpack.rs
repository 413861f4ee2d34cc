//! The HPACK decoder (RFC 7541) for response header blocks.
//!
//! Not loona-hpack's or hpack's: both build a hash-map Huffman decoder for
//! every Huffman-coded string they meet, which on a response with a
//! Huffman-coded `date` cost about 200 µs of client CPU per response (29%
//! of a profile against nginx over h2c), so the client, not the server,
//! set the pace. This one decodes Huffman with httlib-huffman's
//! table-driven decoder and keeps the dynamic table in reused buffers, so
//! a response allocates nothing once a connection is warm. A differential
//! test holds it to loona-hpack's decoder on the same blocks.

use std::collections::VecDeque;

use httlib_huffman::DecoderSpeed;

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// RFC 7541 §4.1: an entry's size is its name, its value and 32 octets.
const OVERHEAD: usize = 32;

/// A block that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpackError;

/// One entry of the dynamic table: name and value in one buffer.
#[derive(Default)]
struct Entry {
    bytes: Vec<u8>,
    name_len: usize,
}

pub struct Decoder {
    /// Newest first; indices into `slots`.
    table: VecDeque<usize>,
    /// Entry buffers, reused once evicted (`free`).
    slots: Vec<Entry>,
    free: Vec<usize>,
    size: usize,
    max_size: usize,
    /// The most the peer may set `max_size` to: the table size we allow.
    allowed: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    pub fn new(allowed: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            slots: Vec::new(),
            free: Vec::new(),
            size: 0,
            max_size: allowed,
            allowed,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decode `block`, a whole header block, handing each field to `field`.
    pub fn decode(
        &mut self,
        mut block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut first = true;
        while let Some(&b) = block.first() {
            if b & 0x80 != 0 {
                let i = int(&mut block, 7)?;
                let (n, v) = self.get(i)?;
                field(n, v);
            } else if b & 0xe0 == 0x20 {
                // Size updates come first in a block (RFC 7541 §4.2).
                if !first {
                    return Err(HpackError);
                }
                let size = int(&mut block, 5)?;
                if size > self.allowed {
                    return Err(HpackError);
                }
                self.max_size = size;
                self.evict(0);
                continue;
            } else {
                let (prefix, index) = if b & 0x40 != 0 { (6, true) } else { (4, false) };
                let i = int(&mut block, prefix)?;
                let mut name = std::mem::take(&mut self.name);
                let mut value = std::mem::take(&mut self.value);
                name.clear();
                value.clear();
                let r = (|| {
                    if i == 0 {
                        string(&mut block, &mut name)?;
                    } else {
                        name.extend_from_slice(self.get(i)?.0);
                    }
                    string(&mut block, &mut value)
                })();
                if r.is_ok() {
                    field(&name, &value);
                    if index {
                        self.insert(&name, &value);
                    }
                }
                self.name = name;
                self.value = value;
                r?;
            }
            first = false;
        }
        Ok(())
    }

    fn get(&self, i: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match i {
            0 => Err(HpackError),
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => {
                let slot = *self.table.get(i - 62).ok_or(HpackError)?;
                let e = &self.slots[slot];
                Ok(e.bytes.split_at(e.name_len))
            }
        }
    }

    /// Make room for `need` bytes, oldest first.
    fn evict(&mut self, need: usize) {
        while self.size + need > self.max_size {
            let Some(slot) = self.table.pop_back() else {
                break;
            };
            let e = &self.slots[slot];
            self.size -= e.bytes.len() + OVERHEAD;
            self.free.push(slot);
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let need = name.len() + value.len() + OVERHEAD;
        self.evict(need);
        // An entry larger than the table empties it and is not added.
        if need > self.max_size {
            return;
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Entry::default());
            self.slots.len() - 1
        });
        let e = &mut self.slots[slot];
        e.bytes.clear();
        e.bytes.extend_from_slice(name);
        e.bytes.extend_from_slice(value);
        e.name_len = name.len();
        self.size += need;
        self.table.push_front(slot);
    }
}

/// An integer with an `n`-bit prefix (RFC 7541 §5.1); at most 2^28 or so,
/// more than any index or length can be.
fn int(block: &mut &[u8], n: u8) -> Result<usize, HpackError> {
    let (&first, mut rest) = block.split_first().ok_or(HpackError)?;
    let max = (1usize << n) - 1;
    let mut v = usize::from(first) & max;
    if v == max {
        let mut shift = 0;
        loop {
            let (&b, r) = rest.split_first().ok_or(HpackError)?;
            rest = r;
            if shift > 21 {
                return Err(HpackError);
            }
            v += usize::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    *block = rest;
    Ok(v)
}

/// A string literal (RFC 7541 §5.2) into `out`, Huffman-decoded if so coded.
fn string(block: &mut &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let huffman = block.first().ok_or(HpackError)? & 0x80 != 0;
    let len = int(block, 7)?;
    if len > block.len() {
        return Err(HpackError);
    }
    let (s, rest) = block.split_at(len);
    *block = rest;
    if huffman {
        httlib_huffman::decode(s, out, DecoderSpeed::FiveBits).map_err(|_| HpackError)
    } else {
        out.extend_from_slice(s);
        Ok(())
    }
}

/// An integer with an `n`-bit prefix after `bits`, as a block is written.
pub fn encode_int(out: &mut Vec<u8>, mut v: usize, n: u8, bits: u8) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(bits | v as u8);
        return;
    }
    out.push(bits | max as u8);
    v -= max;
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::Rng;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn ours(d: &mut Decoder, b: &[u8]) -> Result<Fields, HpackError> {
        let mut out = Vec::new();
        d.decode(b, |n, v| out.push((n.to_vec(), v.to_vec())))?;
        Ok(out)
    }

    #[test]
    fn rfc_7541_c4_requests_with_huffman() {
        // RFC 7541 C.4.1 to C.4.3: three requests sharing a table.
        let hex = [
            "828684418cf1e3c2e5f23a6ba0ab90f4ff",
            "828684be5886a8eb10649cbf",
            "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
        ];
        let mut d = Decoder::new(4096);
        let got: Vec<Fields> = hex
            .iter()
            .map(|h| {
                let b: Vec<u8> = (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                    .collect();
                ours(&mut d, &b).unwrap()
            })
            .collect();
        let f = |n: &str, v: &str| (n.as_bytes().to_vec(), v.as_bytes().to_vec());
        assert_eq!(got[0][3], f(":authority", "www.example.com"));
        assert_eq!(got[1][4], f("cache-control", "no-cache"));
        assert_eq!(got[2][4], f("custom-key", "custom-value"));
        // C.4.3's table: three entries, 164 octets.
        assert_eq!((d.table.len(), d.size), (3, 164));
    }

    #[test]
    fn the_same_fields_as_loona_hpack_on_random_blocks() {
        let mut rng = Rng::new(7);
        let names = ["date", "server", "x-a", ":status", "content-length", "etag"];
        for round in 0..300 {
            let mut enc = loona_hpack::Encoder::new();
            let mut theirs = loona_hpack::Decoder::new();
            let mut mine = Decoder::new(4096);
            for _ in 0..8 {
                let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..1 + rng.below(6))
                    .map(|_| {
                        let n = names[rng.below(names.len())].as_bytes().to_vec();
                        let v: Vec<u8> = (0..rng.below(300))
                            .map(|_| b"abcxyz019 -:"[rng.below(12)])
                            .collect();
                        (n, v)
                    })
                    .collect();
                let mut block =
                    enc.encode(fields.iter().map(|(n, v)| (n.as_slice(), v.as_slice())));
                let want = theirs.decode(&block).unwrap();
                assert_eq!(ours(&mut mine, &block).unwrap(), want, "round {round}");
                // A mutated block: ours errs, or decodes as theirs does.
                if !block.is_empty() {
                    let k = rng.below(block.len());
                    block[k] ^= 1 << rng.below(8);
                    let mut t2 = loona_hpack::Decoder::new();
                    let mut m2 = Decoder::new(4096);
                    if let Ok(a) = ours(&mut m2, &block) {
                        if let Ok(b) = t2.decode(&block) {
                            assert_eq!(a, b, "round {round} mutated");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn broken_blocks_are_errors() {
        let mut d = Decoder::new(4096);
        for bad in [
            &[0x80][..],                               // index 0
            &[0xbf, 0x20][..],                         // index 62+ with an empty table
            &[0x40, 0x85, b'a'][..],                   // a string longer than the block
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f][..], // an integer too large
            &[0x82, 0x20][..],                         // a size update after a field
            &[0x3f, 0xe2, 0x1f][..],                   // a size update to 4097, above what we allow
        ] {
            assert_eq!(ours(&mut d, bad), Err(HpackError), "{bad:?}");
        }
        // A size update to 0 empties the table.
        ours(&mut d, &[0x40, 0x01, b'a', 0x01, b'b']).unwrap();
        assert_eq!(d.table.len(), 1);
        ours(&mut d, &[0x20, 0x82]).unwrap();
        assert_eq!((d.table.len(), d.size), (0, 0));
    }

    #[test]
    fn integers_round_trip() {
        for v in [0, 1, 30, 31, 127, 128, 1337, 1 << 20] {
            for n in [4u8, 5, 6, 7] {
                let mut out = Vec::new();
                encode_int(&mut out, v, n, 0);
                let mut s = &out[..];
                assert_eq!(int(&mut s, n), Ok(v));
                assert!(s.is_empty());
            }
        }
        let mut out = Vec::new();
        encode_int(&mut out, 1337, 5, 0);
        assert_eq!(out, [31, 154, 10]);
    }
}
