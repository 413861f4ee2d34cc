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
