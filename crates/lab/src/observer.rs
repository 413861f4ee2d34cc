//! What the lab tells its caller as it goes. The lab itself never prints:
//! `throng lab` draws a progress bar from these events, tests collect them.

use throng_model::{Comparison, ServerUsage, StepRecord, Summary};

#[derive(Debug)]
pub enum Event<'a> {
    /// The run is stored under this id; `steps` will be reported.
    Planned {
        run_id: i64,
        steps: u64,
        estimated_s: f64,
    },
    /// Something the user must know (skipped core counts, ...).
    Note(String),
    /// A server is up for a group; `pid` leads its process group.
    ServerStarted {
        server: &'a str,
        cores: u32,
        workload: &'a str,
        pid: i32,
    },
    /// A server failed; its remaining steps in the group are recorded failed.
    ServerFailed {
        server: &'a str,
        cores: u32,
        workload: &'a str,
        message: &'a str,
    },
    /// One measured round.
    Round {
        server: &'a str,
        concurrency: u32,
        index: u32,
        summary: &'a Summary,
        usage: &'a ServerUsage,
    },
    /// A finished (or failed) step, as stored.
    Step(&'a StepRecord),
    /// A step's verdict changed once its whole sweep was seen (the
    /// sweep-level reasons, such as `bottleneck_elsewhere`), as stored: the
    /// `Step` event said less.
    Revised(&'a StepRecord),
    /// Paired comparisons of a level (or, with no concurrency, of a whole
    /// sweep), as stored.
    Compared(&'a [Comparison]),
}

pub trait Observer {
    fn event(&mut self, e: Event<'_>);
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {
    fn event(&mut self, _: Event<'_>) {}
}
