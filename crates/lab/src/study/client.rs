//! How a study's load generator waits for responses in the closed
//! model: naps of 1/D of the latency (`client_naps`,
//! `client_nap_divisor`), or a spin before each sleep (`client_spin`),
//! the same choices as `throng load`'s `--no-coalesce`, `--nap-divisor`
//! and `--spin`, checked as the study is read.

use std::time::Duration;

use anyhow::bail;

use super::tables::parse_duration;
use super::StudyFile;

/// A nap's divisor (the engine's default unless given) and the spin,
/// if any.
pub(super) fn waits(f: &StudyFile) -> anyhow::Result<(u64, Option<Duration>)> {
    let divisor = match f.client_nap_divisor {
        None => throng_engine::DEFAULT_NAP_DIVISOR,
        Some(_) if !f.client_naps => {
            bail!(
                "client_nap_divisor sets how long a nap is: it cannot go with client_naps = false"
            )
        }
        Some(d) if !throng_engine::NAP_DIVISORS.contains(&d) => bail!(
            "client_nap_divisor = {d}: give {} to {}",
            throng_engine::NAP_DIVISORS.start(),
            throng_engine::NAP_DIVISORS.end()
        ),
        Some(d) => d,
    };
    let spin = match &f.client_spin {
        None => None,
        // A spin is the other way of waiting, with no naps to size.
        Some(_) if f.client_nap_divisor.is_some() => {
            bail!("client_spin takes no naps: it cannot go with client_nap_divisor")
        }
        Some(text) => {
            let d = parse_duration(text).map_err(|e| anyhow::anyhow!("client_spin: {e}"))?;
            let (min, max) = (throng_engine::MIN_SPIN, throng_engine::MAX_SPIN);
            if !(min..=max).contains(&d) {
                bail!("client_spin = {text:?}: give from {min:?} to {max:?}");
            }
            Some(d)
        }
    };
    Ok((divisor, spin))
}
