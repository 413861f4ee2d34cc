//! Number formatting for terminal output. Counts and dates come from the
//! report's figures and durations from the model's units, so the terminal
//! and the article print them alike.

pub use throng_report::figures::{grouped as human_count, utc};

/// Microseconds with a unit that keeps three significant digits, unit
/// against the number so a column of them stays narrow: "850µs".
pub fn human_us(us: f64) -> String {
    throng_model::units::duration_us(us, "")
}

/// Bytes in decimal units (MB = 10^6 bytes, as network rates are given).
pub fn human_bytes(b: f64) -> String {
    if b < 1e3 {
        format!("{b:.0} B")
    } else if b < 1e6 {
        format!("{:.1} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(human_us(850.0), "850µs");
        assert_eq!(human_us(1234.0), "1.23ms");
        assert_eq!(human_us(2_500_000.0), "2.50s");
        assert_eq!(human_bytes(12_300_000.0), "12.3 MB");
    }
}
