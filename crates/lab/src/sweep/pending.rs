//! A step in progress, and where each of its rounds sits.

use std::time::Duration;

use throng_model::{StepRecord, Verdict};

use crate::group::Group;
use crate::round::ServerId;
use crate::study::Level;

/// Where a round sits: its load's seed, when it is paired with the other
/// servers' rounds its block, and its launch.
#[derive(Debug, Clone, Copy)]
pub struct Slice {
    pub seed: u64,
    pub block: Option<u32>,
    /// The start of the server it measures, when the study has several.
    pub launch: Option<u32>,
}

/// A step in progress for one server at one level.
pub struct Pending {
    pub server: ServerId,
    pub step: StepRecord,
    pub verdicts: Vec<Verdict>,
    pub rps: Vec<f64>,
    /// Time spent in this step's own rounds: other servers' rounds in
    /// between do not count against its cap.
    pub spent: Duration,
    /// Measured seconds of this step's rounds, chosen at its first round
    /// from the server's pace (longer when responses take long).
    pub round_s: Option<f64>,
    pub done: bool,
}

impl Pending {
    pub fn new(server: ServerId, step: StepRecord) -> Pending {
        Pending {
            server,
            step,
            verdicts: Vec::new(),
            rps: Vec::new(),
            spent: Duration::ZERO,
            round_s: None,
            done: false,
        }
    }

    /// The level this step measures.
    pub fn level(&self) -> Level {
        Level {
            concurrency: self.step.concurrency,
            rate: self.step.rate,
        }
    }
}

/// A step not measured yet of `server` at `level`.
pub fn level_step(group: &Group, server: &str, level: Level) -> StepRecord {
    StepRecord {
        rate: level.rate,
        ..group.step(server, level.concurrency)
    }
}
