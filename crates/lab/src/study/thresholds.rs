//! A study's `[thresholds]`: pass-or-fail limits each step is judged
//! against, read as `throng load --threshold` reads its expressions. A
//! key is a figure and its value the comparison and the limit, or a list
//! of them: `p99 = "<50ms"`, `rps = [">=1k", "<20k"]`. Not `precision`
//! (`threshold.rs`), which decides comparisons between servers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use throng_load::thresholds::Threshold;

/// One key's value: a comparison, or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ThresholdLimits {
    One(String),
    Many(Vec<String>),
}

/// The table's expressions read, in the order of its keys (then of each
/// key's list), or the first bad one named by its key.
pub fn read(table: &BTreeMap<String, ThresholdLimits>) -> anyhow::Result<Vec<Threshold>> {
    let mut out = Vec::new();
    for (figure, limits) in table {
        let limits = match limits {
            ThresholdLimits::One(l) => std::slice::from_ref(l),
            ThresholdLimits::Many(ls) => ls.as_slice(),
        };
        if limits.is_empty() {
            anyhow::bail!(
                "[thresholds] {figure}: give a comparison and a limit, such as \"<50ms\""
            );
        }
        for l in limits {
            // The key is the figure: a value that names one too would be
            // read as two comparisons, so it is said plainly.
            if !l.trim_start().starts_with(['<', '>']) {
                anyhow::bail!(
                    "[thresholds] {figure} = {l:?}: begin with <, <=, > or >=, such as \"<50ms\""
                );
            }
            let t = Threshold::parse(&format!("{figure}{l}"))
                .map_err(|e| anyhow::anyhow!("[thresholds] {figure} = {l:?}: {e}"))?;
            out.push(t);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(toml_text: &str) -> BTreeMap<String, ThresholdLimits> {
        #[derive(Deserialize)]
        struct F {
            thresholds: BTreeMap<String, ThresholdLimits>,
        }
        toml::from_str::<F>(toml_text).unwrap().thresholds
    }

    #[test]
    fn a_key_is_a_figure_and_its_value_one_limit_or_several() {
        let ts = read(&table(
            "[thresholds]\np99 = \"<50ms\"\nrps = [\">=1k\", \"< 20k\"]\n\"first_byte.p90\" = \"<10ms\"\n",
        ))
        .unwrap();
        let exprs: Vec<&str> = ts.iter().map(|t| t.expression.as_str()).collect();
        assert_eq!(
            exprs,
            ["first_byte.p90<10ms", "p99<50ms", "rps>=1k", "rps<20k"]
        );
    }

    #[test]
    fn a_bad_limit_is_named_by_its_key() {
        let err = |t: &str| read(&table(t)).unwrap_err().to_string();
        assert_eq!(
            err("[thresholds]\np99 = \"<50\"\n"),
            "[thresholds] p99 = \"<50\": p99 is a time: give its unit, us, ms or s (such as p99<50ms)"
        );
        assert_eq!(
            err("[thresholds]\np98 = \"<50ms\"\n"),
            "[thresholds] p98 = \"<50ms\": `p98` is not a figure: use p50, p75, p90, p99, p999, \
             p9999, min, mean or max (latency; first_byte.p99 for the first byte), errors, rps, \
             mb_per_sec, completed or sent"
        );
        assert_eq!(
            err("[thresholds]\np99 = \"50ms\"\n"),
            "[thresholds] p99 = \"50ms\": begin with <, <=, > or >=, such as \"<50ms\""
        );
        assert_eq!(
            err("[thresholds]\np99 = []\n"),
            "[thresholds] p99: give a comparison and a limit, such as \"<50ms\""
        );
    }
}
