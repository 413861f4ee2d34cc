//! The words a load is stated in — durations, ranges of them, header
//! fields, the order of a URL list, the spacing of arrivals — read one way
//! for `throng load`'s options and a study's `[load]` tables alike. Errors
//! are data: each front end words them with its own option or key.

use std::time::Duration;

use thiserror::Error;
use throng_engine::users::Spacing;
use throng_engine::Order;

/// The longest duration a load may state: a year. It is what keeps a
/// `Duration` from overflowing (it holds no 10^17 hours), and past it a
/// figure is a typo whatever it times. A front end may hold its own times
/// to less: a study holds every one of its times to a day.
pub const MAX_SECONDS: f64 = 365.0 * 86_400.0;

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    /// No number leads it.
    #[error("not a number")]
    NotANumber,
    /// A unit other than us, µs, ms, s, m, min or h.
    #[error("unknown unit {0:?}")]
    UnknownUnit(String),
    /// Longer than [`MAX_SECONDS`].
    #[error("longer than a year")]
    TooLong,
}

/// "10s", "250ms", "2m", "1h", "1.5s", "300us" or a plain number of
/// seconds; blanks around the number or the unit are ignored.
pub fn duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let (num, unit) = t.split_at(
        t.find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len()),
    );
    let v: f64 = num.parse().map_err(|_| DurationError::NotANumber)?;
    let secs = match unit.trim() {
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        u => return Err(DurationError::UnknownUnit(u.to_string())),
    };
    // The number is digits and dots only: never negative nor NaN, and
    // within the cap always a Duration.
    if secs > MAX_SECONDS {
        return Err(DurationError::TooLong);
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Why a text is not a range of durations.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RangeError {
    /// No `-` between two durations.
    #[error("not a range")]
    NotARange,
    /// One end is not a duration: the text of that end, and why.
    #[error("{0:?}: {1}")]
    End(String, DurationError),
    /// The high end is below the low one.
    #[error("ends before it starts")]
    Backwards,
}

/// "0.5s-2s", "500ms-1s": a think time drawn from a range.
pub fn duration_range(text: &str) -> Result<(Duration, Duration), RangeError> {
    let (a, b) = text.split_once('-').ok_or(RangeError::NotARange)?;
    let end = |s: &str| duration(s).map_err(|e| RangeError::End(s.to_string(), e));
    let (low, high) = (end(a)?, end(b)?);
    if high < low {
        return Err(RangeError::Backwards);
    }
    Ok((low, high))
}

/// A header field as written, `Name: value`, without its colon.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("not of the form `Name: value`")]
pub struct HeaderError;

/// "Name: value" into its name and value, each trimmed. What a name or a
/// value may hold is the engine's check (`LoadSpec::validate`).
pub fn header(text: &str) -> Result<(String, String), HeaderError> {
    let (n, v) = text.split_once(':').ok_or(HeaderError)?;
    Ok((n.trim().to_string(), v.trim().to_string()))
}

/// "random" or "sequential": how a load walks its URLs.
pub fn order(text: &str) -> Option<Order> {
    match text {
        "random" => Some(Order::Random),
        "sequential" => Some(Order::Sequential),
        _ => None,
    }
}

/// "exponential" or "uniform": how users arriving at a rate are spaced.
pub fn spacing(text: &str) -> Option<Spacing> {
    match text {
        "exponential" => Some(Spacing::Exponential),
        "uniform" => Some(Spacing::Uniform),
        _ => None,
    }
}

/// Methods whose requests carry a body: RFC 9110 gives one no meaning in
/// GET, HEAD, DELETE or OPTIONS, and a server may refuse it there.
pub const BODY_METHODS: &[&str] = &["POST", "PUT", "PATCH"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        assert_eq!(duration("10s"), Ok(ms(10_000)));
        assert_eq!(duration("250ms"), Ok(ms(250)));
        assert_eq!(duration("2m"), Ok(ms(120_000)));
        assert_eq!(duration("1.5"), Ok(ms(1500)));
        assert_eq!(duration(" 3 s "), Ok(ms(3000)));
        assert_eq!(duration("300us"), Ok(Duration::from_micros(300)));
        assert_eq!(duration("24h"), Ok(ms(86_400_000)));
        assert_eq!(duration("8760h"), Ok(Duration::from_secs(31_536_000)));
        assert_eq!(duration("8761h"), Err(DurationError::TooLong));
        assert_eq!(duration("99999999999999999h"), Err(DurationError::TooLong));
        assert_eq!(duration("ten"), Err(DurationError::NotANumber));
        assert_eq!(duration("-1s"), Err(DurationError::NotANumber));
        assert_eq!(duration("1.2.3s"), Err(DurationError::NotANumber));
        assert_eq!(
            duration("5parsecs"),
            Err(DurationError::UnknownUnit("parsecs".into()))
        );
    }

    #[test]
    fn ranges() {
        let ms = Duration::from_millis;
        assert_eq!(duration_range("0.5s-2s"), Ok((ms(500), ms(2000))));
        assert_eq!(duration_range("1s"), Err(RangeError::NotARange));
        assert_eq!(duration_range("2s-1s"), Err(RangeError::Backwards));
        assert_eq!(
            duration_range("1s-soon"),
            Err(RangeError::End("soon".into(), DurationError::NotANumber))
        );
    }

    #[test]
    fn headers_orders_and_spacings() {
        assert_eq!(header(" X-A :  b:c "), Ok(("X-A".into(), "b:c".into())));
        assert_eq!(header("X-A b"), Err(HeaderError));
        assert_eq!(order("random"), Some(Order::Random));
        assert_eq!(order("Random"), None);
        assert_eq!(spacing("uniform"), Some(Spacing::Uniform));
        assert_eq!(spacing("poisson"), None);
    }
}
