//! A thread's books beside its counters: what a requests-mode window has
//! issued and finished against its quota, the slots ever connected, the
//! CPU clock at the measured phase's start, and what each URL answered
//! first, which later answers are held to.

use crate::http1::Response;
use crate::result::ErrorKind;
use crate::spec::LoadSpec;

use super::Expect;

pub(crate) struct Books {
    /// Requests mode: requests issued and finished in the measured phase.
    pub(crate) issued_measured: u64,
    pub(crate) done_measured: u64,
    /// Slots connected at least once: counted over the thread's life, as a
    /// session's connections outlive its windows.
    pub(crate) established: u64,
    /// CPU time and run-queue wait when the measured phase began.
    pub(crate) cpu_mark: ((f64, f64), f64),
    pub(crate) expect: Vec<Expect>,
}

impl Books {
    pub(crate) fn new(spec: &LoadSpec) -> Self {
        Books {
            issued_measured: 0,
            done_measured: 0,
            established: 0,
            cpu_mark: ((0.0, 0.0), 0.0),
            expect: spec
                .targets
                .iter()
                .map(|t| match t.expect_body {
                    Some((size, sum)) => Expect {
                        size: Some(size),
                        checksum: spec.checksum.then_some(sum),
                    },
                    None => Expect {
                        size: spec.expect_size,
                        checksum: None,
                    },
                })
                .collect(),
        }
    }

    /// Whether `resp` to a request for `target` is what was asked for: its
    /// status accepted, its size and checksum those the target's first
    /// answer set (unless the spec fixed them).
    pub(crate) fn check(
        &mut self,
        spec: &LoadSpec,
        target: usize,
        resp: &Response,
    ) -> Option<ErrorKind> {
        if !spec.expect_status.accepts(resp.status) {
            return Some(ErrorKind::Status);
        }
        let e = &mut self.expect[target];
        match e.size {
            Some(size) if resp.body_bytes != size => return Some(ErrorKind::SizeMismatch),
            Some(_) => {}
            None => e.size = Some(resp.body_bytes),
        }
        if spec.checksum {
            match e.checksum {
                Some(sum) if resp.checksum != sum => return Some(ErrorKind::ChecksumMismatch),
                Some(_) => {}
                None => e.checksum = Some(resp.checksum),
            }
        }
        None
    }
}
