//! FNV-1a 64, the body hash of `--checksum`: cheap per byte and with no
//! state beyond one word, so a body is hashed as it streams in.

pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `data`, the body hash reported in [`Response::checksum`].
pub fn fnv1a64(data: &[u8]) -> u64 {
    fnv1a64_update(FNV_OFFSET, data)
}

/// Continue an FNV-1a 64 hash with more bytes; start from `fnv1a64(&[])`.
#[inline]
pub fn fnv1a64_update(mut hash: u64, data: &[u8]) -> u64 {
    for &b in data {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}
