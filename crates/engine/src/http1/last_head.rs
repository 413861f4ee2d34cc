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

use super::{Framing, Head};

/// The longest head kept: nginx's, lighttpd's, Apache's and h2o's for a
/// small file are 150 to 300 bytes.
pub(super) const ROOM: usize = 512;

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

/// Whether `v` holds a byte below 0x20 or DEL. Eight bytes are tested at
/// once, as words: the byte-by-byte test was most of what recognising a
/// head cost, some 150 instructions a response for a `Date` value's 29
/// bytes (docs/performance.md, "Instructions a response").
fn any_control(v: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte below `n` (at most 0x80) sets its high bit here, and a byte
    // at or above it can only be marked by the borrow of one below it: so
    // the word is not zero exactly when some byte is below `n`.
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS;
    let word = |w: u64| below(w, 0x20) | below(w ^ (ONES * 0x7f), 1) != 0;
    let load = |at: usize| u64::from_ne_bytes(v[at..at + 8].try_into().expect("8 bytes"));
    if v.len() < 8 {
        return v.iter().any(|&c| c < 0x20 || c == 0x7f);
    }
    // Whole words, then the last eight bytes, which may overlap the last
    // word: a byte tested twice changes nothing.
    (0..v.len() / 8).any(|k| word(load(k * 8))) || word(load(v.len() - 8))
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
        // A field value's bytes (RFC 9110 §5.5, as httparse reads them)
        // are HTAB, SP, VCHAR and obs-text; none ends a line. A value with
        // any control byte, HTAB among them, is left to httparse: the
        // same answer, by the longer way.
        (!any_control(&new[a..b])).then_some(self.head)
    }

    #[cfg(test)]
    pub(super) fn forget() {
        LAST.with(|last| last.borrow_mut().len = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::any_control;

    /// Every length up to five words, every place in it, every byte: the
    /// word test says what the byte test says.
    #[test]
    fn the_word_test_finds_a_control_byte_wherever_the_byte_test_does() {
        for len in 0..40 {
            let mut v = vec![b'a'; len];
            assert!(!any_control(&v), "len {len}");
            for at in 0..len {
                for c in 0..=255u8 {
                    v[at] = c;
                    assert_eq!(
                        any_control(&v),
                        c < 0x20 || c == 0x7f,
                        "{c:#x} at {at} of {len}"
                    );
                    // Beside the next byte at the edges of the tests'
                    // ranges, where a borrow from one byte could mark
                    // the next.
                    let o = (at + 1) % len;
                    if o == at {
                        continue;
                    }
                    for &other in &[0u8, 0x1f, 0x20, 0x7e, 0x80, 0xff] {
                        let keep = v[o];
                        v[o] = other;
                        let naive = v.iter().any(|&c| c < 0x20 || c == 0x7f);
                        assert_eq!(
                            any_control(&v),
                            naive,
                            "{c:#x} at {at}, {other:#x} at {o} of {len}"
                        );
                        v[o] = keep;
                    }
                }
                v[at] = b'a';
            }
        }
    }
}
