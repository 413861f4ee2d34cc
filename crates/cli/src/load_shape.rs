//! `--stages` and `--rate FROM..TO --ramp LENGTH`: an open model whose
//! rate changes, read into the engine's ramp; and the run's seconds
//! judged against it once it has ended.

use std::time::Duration;

use anyhow::{bail, Result};
use throng_engine::{LoadSpec, Stop};

/// `--rate`: one rate, or the two ends of a ramp.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RateArg {
    Fixed(f64),
    Ramp(f64, f64),
}

/// "1000" or "1000..20000".
pub fn parse_rate(s: &str) -> Result<RateArg, String> {
    let number = |t: &str| {
        t.trim()
            .parse::<f64>()
            .map_err(|_| format!("`{s}` is not a rate: give requests per second (1000) or a ramp's ends (1000..20000)"))
    };
    match s.split_once("..") {
        Some((a, b)) => Ok(RateArg::Ramp(number(a)?, number(b)?)),
        None => number(s).map(RateArg::Fixed),
    }
}

#[derive(clap::Args, Debug, Default)]
pub struct ShapeArgs {
    /// Open model whose rate changes, as k6's ramping arrival rate:
    /// stages LENGTH:RATE, comma-separated, each a linear ramp from the
    /// rate before it (0 at first) to RATE over LENGTH (0s: at once), such
    /// as 30s:1000,60s:5000,30s:0. The run lasts their length. Not with
    /// --hosts yet: a load is spread over hosts by shares of a fixed rate
    /// and count, not of a schedule.
    #[arg(long, value_name = "STAGES",
          conflicts_with_all = ["rate", "duration", "requests", "warmup", "hosts"])]
    pub stages: Option<String>,
    /// With --rate FROM..TO: ramp from FROM to TO over this long, then
    /// hold TO until -d ends [default: -d].
    #[arg(long, value_name = "LENGTH", value_parser = crate::args::parse_duration)]
    pub ramp: Option<Duration>,
}

/// The load's rate, fixed or changing, into `spec`.
pub fn apply(
    a: &ShapeArgs,
    rate: Option<RateArg>,
    duration: Option<Duration>,
    hosts: bool,
    spec: &mut LoadSpec,
) -> Result<()> {
    let ramp = match (&a.stages, rate, a.ramp) {
        (Some(text), _, _) => throng_load::shape::stages(text)
            .map_err(|e| anyhow::anyhow!("--stages {text:?}: {e}"))?,
        (None, Some(RateArg::Ramp(from, to)), length) => {
            if hosts {
                bail!("--rate FROM..TO: a ramp runs from this machine only, not with --hosts");
            }
            let Some(length) = length.or(duration) else {
                bail!("--rate {from}..{to}: give the ramp's length with --ramp (or -d)");
            };
            let total = duration.unwrap_or(length);
            if total < length {
                bail!("--ramp is longer than -d: the run would end before the ramp does");
            }
            throng_load::shape::linear(from, to, length, total)
        }
        (None, Some(RateArg::Fixed(r)), None) => {
            spec.rate = Some(r);
            return Ok(());
        }
        (None, Some(RateArg::Fixed(_)), Some(_)) | (None, None, Some(_)) => {
            bail!("--ramp ramps between the two ends of --rate FROM..TO")
        }
        (None, None, None) => return Ok(()),
    };
    spec.rate = Some(ramp.mean_rate());
    spec.stop = Stop::Duration(ramp.length());
    // Each second is judged against its target.
    spec.timeline = true;
    spec.ramp = Some(ramp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_one_number_or_a_ramp_s_ends() {
        assert_eq!(parse_rate("1000"), Ok(RateArg::Fixed(1000.0)));
        assert_eq!(parse_rate("500..2000"), Ok(RateArg::Ramp(500.0, 2000.0)));
        assert_eq!(
            parse_rate("fast"),
            Err("`fast` is not a rate: give requests per second (1000) or a ramp's ends (1000..20000)".into())
        );
    }
}
