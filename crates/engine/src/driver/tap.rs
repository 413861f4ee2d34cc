//! A thread's side of the tap: the current second's histogram, swapped
//! for a fresh one at the second's end and handed over with the thread's
//! counts. At most one allocation and one send per second, never per
//! request.

use hdrhistogram::Histogram;

use crate::tap::{status_class, Tap, Tick, STATUS_CLASSES};

use super::*;

pub(crate) struct ThreadTap {
    tx: Tap,
    threads: usize,
    started_unix_s: f64,
    second: u64,
    /// Where the current second ends; 0 before the measured phase.
    next_ns: u64,
    latency: Histogram<u64>,
    /// The channel's receiver is gone: nothing more is sent.
    closed: bool,
}

impl ThreadTap {
    pub(crate) fn new(tx: Tap, threads: usize, started_unix_s: f64) -> Self {
        ThreadTap {
            tx,
            threads,
            started_unix_s,
            second: 0,
            next_ns: 0,
            latency: histogram(),
            closed: false,
        }
    }
}

impl Worker<'_> {
    pub(crate) fn set_tap(&mut self, tap: ThreadTap) {
        self.tap = Some(tap);
    }

    /// A measured latency, recorded into the current second's histogram
    /// after any second it ended was handed over.
    pub(super) fn tap_latency(&mut self, us: u64) {
        if self.tap.is_none() {
            return;
        }
        self.tap_turn();
        if let Some(t) = self.tap.as_mut() {
            t.latency.saturating_record(us);
        }
    }

    /// Hands over the current second if the clock has passed its end.
    pub(super) fn tap_turn(&mut self) {
        let Some(t) = self.tap.as_mut() else {
            return;
        };
        if !self.measuring {
            return;
        }
        let from = self.window.warmup_end_ns;
        if t.next_ns == 0 {
            t.next_ns = from + 1_000_000_000;
        }
        if self.now < t.next_ns {
            return;
        }
        let now_second = self.now.saturating_sub(from) / 1_000_000_000;
        self.tap_send(false);
        if let Some(t) = self.tap.as_mut() {
            t.second = now_second;
            t.next_ns = from + (now_second + 1) * 1_000_000_000;
        }
    }

    /// The measured phase is over: its last second goes with the totals.
    pub(super) fn tap_end(&mut self) {
        if self.tap.is_some() && self.measuring {
            self.tap_turn();
            self.tap_send(true);
        }
    }

    fn tap_send(&mut self, last: bool) {
        let in_flight = self.conns.iter().map(|c| c.len as u64).sum();
        let open = self
            .conns
            .iter()
            .filter(|c| matches!(c.state, State::Open | State::Handshaking))
            .count() as u64;
        let m = &self.stats.measured;
        let mut status = [0u64; STATUS_CLASSES];
        for (code, n) in m.status.iter().enumerate() {
            status[status_class(code)] += n;
        }
        let (completed, errors) = (m.completed, m.errors);
        let thread = self.job.index;
        let Some(t) = self.tap.as_mut() else {
            return;
        };
        if t.closed {
            return;
        }
        let latency = if t.latency.is_empty() {
            None
        } else {
            Some(std::mem::replace(&mut t.latency, histogram()))
        };
        let tick = Tick {
            thread,
            threads: t.threads,
            second: t.second,
            start_unix_s: t.started_unix_s + t.second as f64,
            latency,
            completed,
            errors,
            status,
            in_flight,
            open,
            last,
        };
        t.closed = t.tx.send(tick).is_err();
    }
}
