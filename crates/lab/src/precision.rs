//! The rule that says when a step has enough rounds.

use throng_stats::estimate;

/// When a step may stop adding rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Precision {
    /// Target half-width of the CI relative to the mean (0.02 = ±2%).
    pub target: f64,
    pub min_rounds: u32,
    pub max_rounds: u32,
    /// Wall time cap for one step, in seconds.
    pub max_step_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    More,
    Converged,
    /// Round or time cap hit before the interval was narrow enough.
    Capped,
}

impl Precision {
    pub fn next(&self, values: &[f64], elapsed_s: f64) -> Next {
        let n = values.len() as u32;
        if n >= self.min_rounds.max(2) && estimate(values).relative_half_width() <= self.target {
            return Next::Converged;
        }
        if n >= self.max_rounds || (n >= self.min_rounds && elapsed_s >= self.max_step_s) {
            return Next::Capped;
        }
        Next::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_loop_rules() {
        let p = Precision {
            target: 0.02,
            min_rounds: 3,
            max_rounds: 6,
            max_step_s: 10.0,
        };
        // Two tight rounds are still too few.
        assert_eq!(p.next(&[100.0, 100.0], 1.0), Next::More);
        assert_eq!(p.next(&[100.0, 100.5, 99.5], 1.0), Next::Converged);
        assert_eq!(p.next(&[100.0, 150.0, 60.0], 1.0), Next::More);
        assert_eq!(p.next(&[100.0, 150.0, 60.0], 10.0), Next::Capped);
        // The time cap never cuts a step below its minimum rounds.
        assert_eq!(p.next(&[100.0, 150.0], 60.0), Next::More);
        assert_eq!(
            p.next(&[100.0, 150.0, 60.0, 100.0, 150.0, 60.0], 1.0),
            Next::Capped
        );
    }
}
