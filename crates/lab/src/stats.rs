//! Throughput estimates over rounds: mean, median and a Student's t 95%
//! confidence interval, and the rule that says when a step has enough rounds.

use statrs::distribution::{ContinuousCDF, StudentsT};
use throng_model::Estimate;

pub fn estimate(values: &[f64]) -> Estimate {
    let n = values.len();
    if n == 0 {
        return Estimate::default();
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    // One round says nothing about spread: the interval is left at the mean
    // and the step's verdict calls it out (n = 1).
    let half = if n >= 2 {
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|d| d.inverse_cdf(0.975))
            .unwrap_or(f64::INFINITY);
        t * (var / n as f64).sqrt()
    } else {
        0.0
    };
    Estimate {
        mean,
        median,
        ci_low: mean - half,
        ci_high: mean + half,
        n: n as u32,
    }
}

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
    fn interval_matches_students_t() {
        let e = estimate(&[100.0, 102.0, 98.0, 101.0, 99.0]);
        assert_eq!(e.n, 5);
        assert_eq!(e.mean, 100.0);
        assert_eq!(e.median, 100.0);
        // s = sqrt(2.5), t(0.975, 4) = 2.776445...
        let half = 2.776_445_105_2 * (2.5f64 / 5.0).sqrt();
        assert!((e.ci_high - 100.0 - half).abs() < 1e-6, "{e:?}");
        assert!((e.ci_low - 100.0 + half).abs() < 1e-6);
        assert!((e.relative_half_width() - half / 100.0).abs() < 1e-9);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(estimate(&[]), Estimate::default());
        let one = estimate(&[7.0]);
        assert_eq!(
            (one.mean, one.median, one.ci_low, one.ci_high, one.n),
            (7.0, 7.0, 7.0, 7.0, 1)
        );
        assert_eq!(estimate(&[1.0, 3.0]).median, 2.0);
    }

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
