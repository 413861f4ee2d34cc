//! Pass-or-fail limits on a run's figures (`throng load --threshold
//! 'p99<50ms'`, a study's `[thresholds]`): read once into a typed
//! [`Threshold`], so a bad one is refused before any request goes out,
//! and judged against the summary the run ends with. The engine never
//! sees them. The figures are the summary's documented ones
//! (docs/json-schema.md), in the units a user writes them in.

use throng_model::{Latency, Summary, ThresholdCheck};

/// A threshold as read: which figure, compared how, with what.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written, spaces removed: what the output and the JSON name it by.
    pub expression: String,
    pub figure: Figure,
    pub op: Op,
    /// In `unit`.
    pub limit: f64,
    pub unit: Unit,
}

/// A figure of the summary a threshold may judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// `latency_us`'s statistic.
    Latency(Stat),
    /// `first_byte_us`'s statistic.
    FirstByte(Stat),
    /// `errors_total`, a count or (with `%`) a share of `sent`.
    Errors,
    /// `requests_per_sec`.
    Rps,
    /// `mb_per_sec`.
    MbPerSec,
    Completed,
    Sent,
}

/// A statistic of a latency spectrum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    Min,
    Mean,
    P50,
    P75,
    P90,
    P99,
    P999,
    P9999,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

/// The unit a limit was written in; the figure is judged and shown in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Us,
    Ms,
    S,
    /// Of `sent` (errors only).
    Percent,
    /// Thousands.
    K,
    Plain,
}

/// Why an expression is not a threshold. Worded without the option or
/// key it came from, which the front end adds.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error("nothing to judge: write a figure, a comparison and a limit, such as p99<50ms")]
    Empty,
    #[error("no comparison: write <, <=, > or >= between a figure and a limit, such as p99<50ms")]
    NoComparison,
    #[error("more than one comparison: write one limit per threshold")]
    TwoComparisons,
    #[error(
        "`{0}` is not a figure: use p50, p75, p90, p99, p999, p9999, min, mean or max \
         (latency; first_byte.p99 for the first byte), errors, rps, mb_per_sec, completed or sent"
    )]
    UnknownFigure(String),
    #[error("no figure before the comparison, such as p99 in p99<50ms")]
    NoFigure,
    #[error("no limit to compare {0} with")]
    NoLimit(String),
    #[error("`{0}` is not a number")]
    NotANumber(String),
    #[error("unknown unit `{0}`: use us, ms, s, % or k")]
    UnknownUnit(String),
    #[error("{0} is a time: give its unit, us, ms or s (such as p99<50ms)")]
    NeedsTimeUnit(String),
    #[error("{figure} cannot be in `{unit}`: {allowed}")]
    WrongUnit {
        figure: String,
        unit: String,
        allowed: &'static str,
    },
}

const STATS: [(&str, Stat); 11] = [
    ("min", Stat::Min),
    ("mean", Stat::Mean),
    ("p50", Stat::P50),
    ("p75", Stat::P75),
    ("p90", Stat::P90),
    ("p99", Stat::P99),
    ("p999", Stat::P999),
    ("p99.9", Stat::P999),
    ("p9999", Stat::P9999),
    ("p99.99", Stat::P9999),
    ("max", Stat::Max),
];

impl Threshold {
    /// One expression: `FIGURE OP LIMIT[UNIT]`, spaces anywhere.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let expression: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if expression.is_empty() {
            return Err(ThresholdError::Empty);
        }
        let at = expression
            .find(['<', '>'])
            .ok_or(ThresholdError::NoComparison)?;
        let (name, rest) = expression.split_at(at);
        let (op, value) = match rest.as_bytes() {
            [b'<', b'=', ..] => (Op::Le, &rest[2..]),
            [b'>', b'=', ..] => (Op::Ge, &rest[2..]),
            [b'<', ..] => (Op::Lt, &rest[1..]),
            _ => (Op::Gt, &rest[1..]),
        };
        if value.contains(['<', '>', '=']) {
            return Err(ThresholdError::TwoComparisons);
        }
        let figure = figure(name)?;
        if value.is_empty() {
            return Err(ThresholdError::NoLimit(name.to_string()));
        }
        let digits = value
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(value.len());
        let (number, unit) = value.split_at(digits);
        let limit: f64 = number
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| ThresholdError::NotANumber(value.to_string()))?;
        let unit = match unit {
            "us" | "µs" => Unit::Us,
            "ms" => Unit::Ms,
            "s" => Unit::S,
            "%" => Unit::Percent,
            "k" => Unit::K,
            "" => Unit::Plain,
            other => return Err(ThresholdError::UnknownUnit(other.to_string())),
        };
        check_unit(name, figure, unit)?;
        Ok(Threshold {
            expression,
            figure,
            op,
            limit,
            unit,
        })
    }

    /// The figure's name as written in the expression (`p99`,
    /// `first_byte.p90`).
    pub fn name(&self) -> &str {
        let end = self.expression.find(['<', '>']).unwrap_or(0);
        &self.expression[..end]
    }

    /// The run's figure in the threshold's unit; `None` when the run has
    /// none (no response measured, nothing sent).
    pub fn figure_of(&self, s: &Summary) -> Option<f64> {
        let base = match self.figure {
            Figure::Latency(stat) => stat_of(Some(&s.latency_us), stat)?,
            Figure::FirstByte(stat) => stat_of(s.first_byte_us.as_ref(), stat)?,
            Figure::Errors if self.unit == Unit::Percent => {
                if s.sent == 0 {
                    return None;
                }
                // One division, so 1 error in 1,000 is exactly the 0.1 a
                // user writes.
                return Some(s.errors_total as f64 * 100.0 / s.sent as f64);
            }
            Figure::Errors => s.errors_total as f64,
            Figure::Rps => s.requests_per_sec,
            Figure::MbPerSec => s.mb_per_sec,
            Figure::Completed => s.completed as f64,
            Figure::Sent => s.sent as f64,
        };
        Some(match self.unit {
            Unit::Ms => base / 1e3,
            Unit::S => base / 1e6,
            Unit::K => base / 1e3,
            Unit::Us | Unit::Plain | Unit::Percent => base,
        })
    }

    /// Whether `figure` keeps within the limit.
    pub fn holds(&self, figure: f64) -> bool {
        match self.op {
            Op::Lt => figure < self.limit,
            Op::Le => figure <= self.limit,
            Op::Gt => figure > self.limit,
            Op::Ge => figure >= self.limit,
        }
    }

    /// Judged against one run's summary.
    pub fn judge(&self, s: &Summary) -> ThresholdCheck {
        let figure = self.figure_of(s);
        ThresholdCheck {
            expression: self.expression.clone(),
            figure,
            passed: figure.is_some_and(|f| self.holds(f)),
        }
    }

    /// Judged against several rounds of one step: the round that stands
    /// worst against the limit speaks for the step (the largest figure
    /// under `<`, the smallest over `>`; a round with no figure first), so
    /// a step passes only when each of its rounds did.
    pub fn judge_worst<'a>(&self, rounds: impl IntoIterator<Item = &'a Summary>) -> ThresholdCheck {
        let mut worst: Option<Option<f64>> = None;
        for s in rounds {
            let f = self.figure_of(s);
            worst = Some(match (worst, f) {
                (None, f) => f,
                (Some(None), _) | (_, None) => None,
                (Some(Some(w)), Some(f)) => Some(match self.op {
                    Op::Lt | Op::Le => w.max(f),
                    Op::Gt | Op::Ge => w.min(f),
                }),
            });
        }
        let figure = worst.flatten();
        ThresholdCheck {
            expression: self.expression.clone(),
            figure,
            passed: figure.is_some_and(|f| self.holds(f)),
        }
    }

    /// The unit as shown after a figure: `ms`, `%`, `k`, or nothing.
    pub fn unit_suffix(&self) -> &'static str {
        match self.unit {
            Unit::Us => "µs",
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::Percent => "%",
            Unit::K => "k",
            Unit::Plain => "",
        }
    }

    /// Whether the figure is a time of responses, so a run with none has
    /// no figure for it.
    pub fn of_responses(&self) -> bool {
        matches!(self.figure, Figure::Latency(_) | Figure::FirstByte(_))
    }
}

/// What a run has measured so far, from the per-second totals its
/// threads publish: what a threshold is judged against while it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SoFar {
    /// Whole seconds of the measured phase the totals cover.
    pub seconds: u64,
    pub completed: u64,
    pub errors: u64,
    pub bytes_read: u64,
}

impl Threshold {
    /// Whether it can be judged while the run goes on, from the totals a
    /// second at a time: a count under a limit (it only grows, so once
    /// over it stays over), the errors' share of what ended so far, and
    /// the rates over the seconds so far. Latency is not kept per second,
    /// and a count over a limit is reached only at the end.
    pub fn judged_running(&self) -> bool {
        match self.figure {
            Figure::Errors if self.unit == Unit::Percent => true,
            Figure::Completed | Figure::Errors => matches!(self.op, Op::Lt | Op::Le),
            Figure::Rps | Figure::MbPerSec => true,
            Figure::Latency(_) | Figure::FirstByte(_) | Figure::Sent => false,
        }
    }

    /// Judged against the run so far; `None` when it is not judged
    /// running, or nothing has been counted to judge yet.
    pub fn judge_so_far(&self, s: &SoFar) -> Option<ThresholdCheck> {
        if !self.judged_running() || s.seconds == 0 {
            return None;
        }
        let secs = s.seconds as f64;
        let base = match self.figure {
            Figure::Errors if self.unit == Unit::Percent => {
                // Responses with an unexpected status are in both counts,
                // so this share is at most the true one: a limit it
                // crosses was crossed.
                let ended = s.completed + s.errors;
                if ended == 0 {
                    return None;
                }
                s.errors as f64 * 100.0 / ended as f64
            }
            Figure::Errors => s.errors as f64,
            Figure::Completed => s.completed as f64,
            Figure::Rps => s.completed as f64 / secs,
            Figure::MbPerSec => s.bytes_read as f64 / secs / 1e6,
            _ => return None,
        };
        let figure = if self.unit == Unit::K {
            base / 1e3
        } else {
            base
        };
        Some(ThresholdCheck {
            expression: self.expression.clone(),
            figure: Some(figure),
            passed: self.holds(figure),
        })
    }
}

/// Every expression judged against one summary, in order.
pub fn judge_all(thresholds: &[Threshold], s: &Summary) -> Vec<ThresholdCheck> {
    thresholds.iter().map(|t| t.judge(s)).collect()
}

fn figure(name: &str) -> Result<Figure, ThresholdError> {
    let stat = |n: &str| STATS.iter().find(|(s, _)| *s == n).map(|(_, s)| *s);
    let unknown = || ThresholdError::UnknownFigure(name.to_string());
    if let Some(rest) = name.strip_prefix("first_byte.") {
        return stat(rest).map(Figure::FirstByte).ok_or_else(unknown);
    }
    if let Some(rest) = name.strip_prefix("latency.") {
        return stat(rest).map(Figure::Latency).ok_or_else(unknown);
    }
    if let Some(s) = stat(name) {
        return Ok(Figure::Latency(s));
    }
    Ok(match name {
        "errors" => Figure::Errors,
        "rps" | "requests_per_sec" => Figure::Rps,
        "mb_per_sec" => Figure::MbPerSec,
        "completed" => Figure::Completed,
        "sent" => Figure::Sent,
        "" => return Err(ThresholdError::NoFigure),
        _ => return Err(unknown()),
    })
}

fn check_unit(name: &str, figure: Figure, unit: Unit) -> Result<(), ThresholdError> {
    let time = matches!(unit, Unit::Us | Unit::Ms | Unit::S);
    let (ok, allowed) = match figure {
        Figure::Latency(_) | Figure::FirstByte(_) => {
            if unit == Unit::Plain {
                return Err(ThresholdError::NeedsTimeUnit(name.to_string()));
            }
            (time, "it is a time, in us, ms or s")
        }
        Figure::Errors => (
            matches!(unit, Unit::Plain | Unit::K | Unit::Percent),
            "it is a count (10, 2k) or a share of sent (0.1%)",
        ),
        Figure::Completed | Figure::Sent => (
            matches!(unit, Unit::Plain | Unit::K),
            "it is a count (200, 10k)",
        ),
        Figure::Rps => (
            matches!(unit, Unit::Plain | Unit::K),
            "it is per second (5000, 10k)",
        ),
        Figure::MbPerSec => (unit == Unit::Plain, "it is megabytes per second, a number"),
    };
    if ok {
        return Ok(());
    }
    let unit = match unit {
        Unit::Us => "us",
        Unit::Ms => "ms",
        Unit::S => "s",
        Unit::Percent => "%",
        Unit::K => "k",
        Unit::Plain => "",
    };
    Err(ThresholdError::WrongUnit {
        figure: name.to_string(),
        unit: unit.to_string(),
        allowed,
    })
}

/// A statistic in µs, `None` when the spectrum counted no response.
fn stat_of(l: Option<&Latency>, stat: Stat) -> Option<f64> {
    let l = l.filter(|l| l.count > 0)?;
    Some(match stat {
        Stat::Min => l.min as f64,
        Stat::Mean => l.mean,
        Stat::P50 => l.p50 as f64,
        Stat::P75 => l.p75 as f64,
        Stat::P90 => l.p90 as f64,
        Stat::P99 => l.p99 as f64,
        Stat::P999 => l.p999 as f64,
        Stat::P9999 => l.p9999 as f64,
        Stat::Max => l.max as f64,
    })
}

#[cfg(test)]
mod tests;
