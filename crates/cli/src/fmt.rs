//! Number formatting for terminal output.

/// 1234567 -> "1,234,567".
pub fn human_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Microseconds with a unit that keeps three significant digits.
pub fn human_us(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{:.2}s", us / 1e6)
    }
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

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc(t: f64) -> String {
    let secs = t.floor() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(human_count(0), "0");
        assert_eq!(human_count(1234567), "1,234,567");
        assert_eq!(human_us(850.0), "850µs");
        assert_eq!(human_us(1234.0), "1.23ms");
        assert_eq!(human_us(2_500_000.0), "2.50s");
        assert_eq!(human_bytes(12_300_000.0), "12.3 MB");
        assert_eq!(utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_795_000_000.0), "2026-11-18T11:06:40Z");
    }
}
