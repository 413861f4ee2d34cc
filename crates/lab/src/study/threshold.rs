//! `[rounds] precision`: a study's decision threshold, pinned by a number
//! or left to the machine's calibration (docs/study-format.md,
//! "Precision").

use std::fmt;

use anyhow::bail;
use serde::de::{self, Deserializer, Visitor};
use serde::{Serialize, Serializer};

use super::RoundsFile;

/// `precision` as written.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PrecisionKey {
    /// Absent, or the word "calibrated".
    #[default]
    Calibrated,
    /// A number: this study's own threshold, whatever calibration says.
    Pinned(f64),
}

/// How a validated study's decision threshold is chosen when it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PrecisionRule {
    Pinned(f64),
    /// The latest calibration run of this machine's figure, or `fallback`
    /// when there is none.
    Calibrated {
        fallback: f64,
    },
}

impl PrecisionRule {
    /// The threshold before any calibration is known: the pinned one, or
    /// the fallback.
    pub fn before_calibration(self) -> f64 {
        match self {
            PrecisionRule::Pinned(p) => p,
            PrecisionRule::Calibrated { fallback } => fallback,
        }
    }
}

/// The rule a study's `[rounds]` table sets, each figure checked.
pub(super) fn rule(r: &RoundsFile) -> anyhow::Result<PrecisionRule> {
    let good = |p: f64| p.is_finite() && p > 0.0 && p < 1.0;
    match (r.precision, r.fallback_precision) {
        (PrecisionKey::Pinned(_), Some(_)) => bail!(
            "rounds: fallback_precision is the threshold when no calibration run exists; \
             precision = a number pins the threshold, so give one or the other"
        ),
        (PrecisionKey::Pinned(p), None) if !good(p) => {
            bail!("rounds: precision = {p}: give a share above 0 and below 1, such as 0.05")
        }
        (PrecisionKey::Pinned(p), None) => Ok(PrecisionRule::Pinned(p)),
        (PrecisionKey::Calibrated, Some(f)) if !good(f) => bail!(
            "rounds: fallback_precision = {f}: give a share above 0 and below 1, such as 0.05"
        ),
        (PrecisionKey::Calibrated, f) => Ok(PrecisionRule::Calibrated {
            fallback: f.unwrap_or(throng_model::DEFAULT_PRECISION),
        }),
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = PrecisionKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a share such as 0.05, or \"calibrated\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<PrecisionKey, E> {
        Ok(PrecisionKey::Pinned(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<PrecisionKey, E> {
        Ok(PrecisionKey::Pinned(v as f64))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<PrecisionKey, E> {
        Ok(PrecisionKey::Pinned(v as f64))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<PrecisionKey, E> {
        match v {
            "calibrated" => Ok(PrecisionKey::Calibrated),
            _ => Err(E::custom(format_args!(
                "precision = {v:?}: give a share such as 0.05, or \"calibrated\""
            ))),
        }
    }
}

impl<'de> serde::Deserialize<'de> for PrecisionKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PrecisionKey, D::Error> {
        d.deserialize_any(KeyVisitor)
    }
}

impl Serialize for PrecisionKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PrecisionKey::Calibrated => s.serialize_str("calibrated"),
            PrecisionKey::Pinned(p) => s.serialize_f64(*p),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::study::Study;
    use crate::Recipes;

    use super::*;

    fn rounds(table: &str) -> anyhow::Result<PrecisionRule> {
        let text = format!(
            "name = 's'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
             concurrency = [10]\n[rounds]\n{table}\n"
        );
        Study::parse(&text, &Recipes::builtin()).map(|s| s.precision_rule)
    }

    #[test]
    fn a_number_pins_the_threshold_and_its_absence_leaves_it_to_calibration() {
        assert_eq!(
            rounds("precision = 0.05").unwrap(),
            PrecisionRule::Pinned(0.05)
        );
        assert_eq!(
            rounds("").unwrap(),
            PrecisionRule::Calibrated { fallback: 0.02 }
        );
        assert_eq!(
            rounds("precision = 'calibrated'\nfallback_precision = 0.05").unwrap(),
            PrecisionRule::Calibrated { fallback: 0.05 }
        );
        assert_eq!(
            rounds("fallback_precision = 0.05")
                .unwrap()
                .before_calibration(),
            0.05
        );
        let err = |t: &str| format!("{:#}", rounds(t).unwrap_err());
        assert_eq!(
            err("precision = 0.05\nfallback_precision = 0.1"),
            "rounds: fallback_precision is the threshold when no calibration run exists; \
             precision = a number pins the threshold, so give one or the other"
        );
        assert_eq!(
            err("precision = 0"),
            "rounds: precision = 0: give a share above 0 and below 1, such as 0.05"
        );
        assert_eq!(
            err("fallback_precision = 1.5"),
            "rounds: fallback_precision = 1.5: give a share above 0 and below 1, such as 0.05"
        );
        assert!(
            err("precision = 'auto'")
                .contains("precision = \"auto\": give a share such as 0.05, or \"calibrated\""),
            "{}",
            err("precision = 'auto'")
        );
    }
}
