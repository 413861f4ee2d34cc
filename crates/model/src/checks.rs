//! A run's pass-or-fail thresholds (`throng load --threshold`, a study's
//! `[thresholds]`) as judged: kept with the run's summary, so a stored
//! run says which it crossed and by what figure. Not the decision
//! threshold of a comparison (`threshold.rs`): these are the user's
//! limits on what was measured, not a rule of belief.

use serde::{Deserialize, Serialize};

/// One threshold judged against a run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdCheck {
    /// As the user wrote it, spaces removed: `p99<50ms`.
    pub expression: String,
    /// The run's figure, in the unit the expression was written in (ms
    /// for `p99<50ms`, percent for `errors<0.1%`, thousands for
    /// `rps>10k`); `None` when the run has none to judge (no response
    /// measured, nothing sent), which crosses the threshold.
    pub figure: Option<f64>,
    pub passed: bool,
}
