//! The decision threshold of a run (a study's `precision`) and where it
//! came from. A threshold below what the machine can resolve calls its
//! noise a difference, one above hides real differences, so a run keeps
//! the figure it decided with and why that figure: the study pinned it, a
//! calibration run of the same machine measured it, or neither did.

use serde::{Deserialize, Serialize};

/// The lab's threshold when a study pins none and the machine has no
/// calibration run, and the study names no fallback of its own.
pub const DEFAULT_PRECISION: f64 = 0.02;

/// The lowest threshold a calibration may set. A 0.1 s slice of a 7-byte
/// file is a few thousand responses, so its ratio moves by tenths of a
/// percent from one scheduler tick to the next: a narrower threshold asks
/// the precision loop for an interval it cannot reach in any budget, and
/// every step would run to its cap and be called noisy.
pub const CALIBRATED_FLOOR: f64 = 0.005;

/// The highest threshold a calibration may set. A machine whose A/A pairs
/// spread wider calls servers a quarter apart "equal"; the threshold is
/// held here, and the report says what the calibration measured, so the
/// reader sees the machine is unfit for fine comparisons rather than a
/// confident "equal".
pub const CALIBRATED_CEILING: f64 = 0.25;

/// A run's decision threshold: a comparison is higher or lower only when
/// its whole 95% interval lies beyond 1 ± `value`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub value: f64,
    pub source: ThresholdSource,
}

/// Where a run's threshold came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum ThresholdSource {
    /// The study set `precision` to a number.
    Study,
    /// The smallest difference a calibration run of this machine could
    /// decide, `measured` before it was held within
    /// [`CALIBRATED_FLOOR`]..=[`CALIBRATED_CEILING`].
    Calibration {
        run: i64,
        started_unix_s: f64,
        measured: f64,
    },
    /// No calibration run of this machine: the study's
    /// `fallback_precision`, else [`DEFAULT_PRECISION`].
    Default,
}

impl Threshold {
    /// The threshold a calibration's figure sets.
    pub fn calibrated(run: i64, started_unix_s: f64, measured: f64) -> Threshold {
        Threshold {
            value: measured.clamp(CALIBRATED_FLOOR, CALIBRATED_CEILING),
            source: ThresholdSource::Calibration {
                run,
                started_unix_s,
                measured,
            },
        }
    }

    /// Whether a calibration's figure was held at the floor or the
    /// ceiling, rather than taken as measured.
    pub fn held(&self) -> bool {
        match self.source {
            ThresholdSource::Calibration { measured, .. } => measured != self.value,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibrated_threshold_is_held_within_its_range_and_keeps_what_was_measured() {
        let t = Threshold::calibrated(12, 1.0, 0.031);
        assert_eq!((t.value, t.held()), (0.031, false));
        let low = Threshold::calibrated(12, 1.0, 0.001);
        assert_eq!((low.value, low.held()), (0.005, true));
        let high = Threshold::calibrated(12, 1.0, 0.4);
        assert_eq!((high.value, high.held()), (0.25, true));
        assert_eq!(
            serde_json::to_string(&high).unwrap(),
            r#"{"value":0.25,"source":{"from":"calibration","run":12,"started_unix_s":1.0,"measured":0.4}}"#
        );
        let study = Threshold {
            value: 0.05,
            source: ThresholdSource::Study,
        };
        assert_eq!(
            serde_json::to_string(&study).unwrap(),
            r#"{"value":0.05,"source":{"from":"study"}}"#
        );
        assert!(!study.held());
    }
}
