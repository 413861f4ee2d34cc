//! A run's seconds as each thread ends them, for what watches a run while
//! it goes (an interval log, a metrics endpoint). A thread hands over at
//! most one [`Tick`] per second of its measured phase, at the second's end,
//! over a channel the caller gave: the hot path only records into the
//! thread's own histogram of the current second.

use hdrhistogram::Histogram;

use crate::result::ErrorKind;

/// Where a run's threads send their seconds.
pub type Tap = std::sync::mpsc::Sender<Tick>;

/// Status classes counted in a tick: 1xx to 5xx at their hundreds, and
/// anything else (no status, 6xx and over) at 0.
pub const STATUS_CLASSES: usize = 6;

/// One thread's second of the measured phase, handed over when it ended.
/// Counts are the thread's totals since the measured phase began, so the
/// last tick of each thread sums to the run's counts; the histogram is the
/// second's alone, so the ticks' histograms merge to the run's latency.
pub struct Tick {
    pub thread: usize,
    /// The run's threads: a second is whole once each has passed it.
    pub threads: usize,
    /// Whole seconds from the end of warmup: the index of the run's
    /// timeline. A thread's ticks come in increasing seconds; seconds in
    /// which it recorded nothing may be skipped.
    pub second: u64,
    /// Unix time at the start of that second.
    pub start_unix_s: f64,
    /// The latencies (microseconds, as the run's `latency`) recorded in
    /// that second; none when it recorded none.
    pub latency: Option<Histogram<u64>>,
    pub completed: u64,
    pub errors: [u64; ErrorKind::COUNT],
    /// Responses by status class (see [`STATUS_CLASSES`]).
    pub status: [u64; STATUS_CLASSES],
    /// Requests on the wire and connections open at the tick.
    pub in_flight: u64,
    pub open: u64,
    /// The thread's last tick: its measured phase is over.
    pub last: bool,
}

/// A status code's class, as a tick counts it.
pub fn status_class(code: usize) -> usize {
    match code / 100 {
        c @ 1..=5 => c,
        _ => 0,
    }
}
