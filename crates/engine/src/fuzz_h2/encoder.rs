//! A random HPACK encoder with its own model of the dynamic table, so
//! that generated header blocks use every representation HPACK has.

use super::*;

/// An HPACK encoder (RFC 7541) that picks a representation at random for
/// every field, keeping its own copy of the dynamic table it fills.
pub struct Encoder {
    /// Newest first.
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
}

/// The static table's entries the encoder uses (RFC 7541 Appendix A).
pub(super) const STATIC: [(usize, &str, &str); 16] = [
    (8, ":status", "200"),
    (9, ":status", "204"),
    (10, ":status", "206"),
    (11, ":status", "304"),
    (12, ":status", "400"),
    (13, ":status", "404"),
    (14, ":status", "500"),
    (24, "cache-control", ""),
    (28, "content-length", ""),
    (31, "content-type", ""),
    (33, "date", ""),
    (34, "etag", ""),
    (45, "link", ""),
    (54, "server", ""),
    (59, "vary", ""),
    (58, "user-agent", ""),
];

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder {
            table: VecDeque::new(),
            size: 0,
            max: TABLE,
        }
    }

    /// `fields` as one header block.
    pub fn block(&mut self, rng: &mut Rng, fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        if rng.one_in(10) {
            for _ in 0..1 + rng.below(2) {
                let size = pick(rng, &[0, 64, 1024, TABLE]);
                encode_int(&mut out, size, 5, 0x20);
                self.max = size;
                self.evict(0);
            }
        }
        for (n, v) in fields {
            self.field(rng, &mut out, n, v);
        }
        out
    }

    fn field(&mut self, rng: &mut Rng, out: &mut Vec<u8>, n: &[u8], v: &[u8]) {
        if let Some(i) = self.find(n, Some(v)) {
            if !rng.one_in(3) {
                encode_int(out, i, 7, 0x80);
                return;
            }
        }
        // With incremental indexing, without, never indexed.
        let (prefix, bits, insert) =
            pick(rng, &[(6, 0x40, true), (4, 0x00, false), (4, 0x10, false)]);
        let name = if rng.one_in(4) {
            0
        } else {
            self.find(n, None).unwrap_or(0)
        };
        encode_int(out, name, prefix, bits);
        if name == 0 {
            string(rng, out, n);
        }
        string(rng, out, v);
        if insert {
            self.insert(n, v);
        }
    }

    /// The index of `n` with value `v`, or of the name alone.
    fn find(&self, n: &[u8], v: Option<&[u8]>) -> Option<usize> {
        let hit = |name: &[u8], value: &[u8]| name == n && v.is_none_or(|v| v == value);
        if let Some(k) = self.table.iter().position(|(a, b)| hit(a, b)) {
            return Some(62 + k);
        }
        STATIC
            .iter()
            .find(|(_, a, b)| hit(a.as_bytes(), b.as_bytes()))
            .map(|&(i, _, _)| i)
    }

    fn evict(&mut self, need: usize) {
        while self.size + need > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + 32;
        }
    }

    fn insert(&mut self, n: &[u8], v: &[u8]) {
        let need = n.len() + v.len() + 32;
        self.evict(need);
        if need <= self.max {
            self.table.push_front((n.to_vec(), v.to_vec()));
            self.size += need;
        }
    }
}

/// A string literal, Huffman-coded half the time.
pub(super) fn string(rng: &mut Rng, out: &mut Vec<u8>, s: &[u8]) {
    let mut coded = Vec::new();
    if rng.one_in(2) && httlib_huffman::encode(s, &mut coded).is_ok() {
        encode_int(out, coded.len(), 7, 0x80);
        out.extend_from_slice(&coded);
    } else {
        encode_int(out, s.len(), 7, 0x00);
        out.extend_from_slice(s);
    }
}
