//! Quantities worded for people, shared by the terminal and the report so
//! both round and scale a figure the same way; each front end picks only
//! its spacing.

/// Microseconds with the unit that keeps about three significant digits:
/// "850µs", "1.25ms", "2.00s". `gap` goes between number and unit: the
/// terminal's columns use none, the report's prose a space ("850 µs").
pub fn duration_us(us: f64, gap: &str) -> String {
    if us < 1000.0 {
        format!("{us:.0}{gap}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}{gap}ms", us / 1e3)
    } else {
        format!("{:.2}{gap}s", us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_three_digits_and_the_asked_gap() {
        assert_eq!(duration_us(850.0, ""), "850µs");
        assert_eq!(duration_us(850.0, " "), "850 µs");
        assert_eq!(duration_us(999.0, " "), "999 µs");
        assert_eq!(duration_us(1000.0, " "), "1.00 ms");
        assert_eq!(duration_us(1_250.0, ""), "1.25ms");
        assert_eq!(duration_us(999_999.0, " "), "1000.00 ms");
        assert_eq!(duration_us(2_000_000.0, ""), "2.00s");
    }
}
