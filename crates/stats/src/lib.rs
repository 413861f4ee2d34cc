//! The statistics behind the lab's precision loop, reports and
//! comparisons, in one place so a figure is estimated the same way when it
//! is measured and when it is reported.
//!
//! Benchmarks repeat few rounds (often 3 to 10), so every function here is
//! written for small samples: Student's t rather than the normal for
//! intervals, an exact Mann–Whitney distribution when there are no ties, and
//! order-statistic intervals for medians that say what coverage they reach.

pub mod calibration;
pub mod launches;
pub mod reruns;

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use throng_model::Estimate;

pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let v = sorted(xs);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Sample variance (n − 1 in the denominator); needs two values.
pub fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    Some(xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// Mean with its 95% confidence interval from Student's t: (mean, low, high).
/// With one value the interval is that value, since nothing is known of the
/// spread; callers show `n` so a reader can tell.
pub fn mean_ci95(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let m = mean(xs)?;
    let Some(var) = variance(xs) else {
        return Some((m, m, m));
    };
    let n = xs.len() as f64;
    let t = StudentsT::new(0.0, 1.0, n - 1.0).ok()?.inverse_cdf(0.975);
    let half = t * (var / n).sqrt();
    Some((m, m - half, m + half))
}

/// The model's `Estimate` (mean, median, 95% CI of the mean) of a sample.
pub fn estimate(xs: &[f64]) -> Estimate {
    match (mean_ci95(xs), median(xs)) {
        (Some((mean, ci_low, ci_high)), Some(median)) => Estimate {
            mean,
            median,
            ci_low,
            ci_high,
            n: xs.len() as u32,
        },
        _ => Estimate::default(),
    }
}

/// A distribution-free interval for the median: [x(k), x(n+1−k)] of the
/// sorted sample, with the coverage it actually has.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MedianCi {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// Probability that the interval holds the true median. At least the
    /// level asked for when the sample is large enough (n ≥ 6 for 95%);
    /// below that the widest interval, min to max, is returned and this says
    /// how much less it covers.
    pub coverage: f64,
}

pub fn median_ci(xs: &[f64], level: f64) -> Option<MedianCi> {
    let median = median(xs)?;
    let v = sorted(xs);
    let n = v.len();
    // Coverage of [x(k), x(n+1-k)] is 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2).
    let binom_cdf = |k: usize| -> f64 {
        let mut c = 1.0f64;
        let mut sum = 0.0f64;
        let half_n = 0.5f64.powi(n as i32);
        for i in 0..=k {
            if i > 0 {
                c = c * (n - i + 1) as f64 / i as f64;
            }
            sum += c * half_n;
        }
        sum
    };
    let coverage_of = |k: usize| 1.0 - 2.0 * if k == 0 { 0.0 } else { binom_cdf(k - 1) };
    let mut k = 1;
    while k < n.div_ceil(2) && coverage_of(k + 1) >= level {
        k += 1;
    }
    Some(MedianCi {
        median,
        low: v[k - 1],
        high: v[n - k],
        coverage: coverage_of(k),
    })
}

/// Geometric mean of positive values; `None` when any value is not positive
/// (a ratio of zero throughput has no meaningful average).
pub fn geometric_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty()
        || xs
            .iter()
            .any(|x| x.is_nan() || *x <= 0.0 || x.is_infinite())
    {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// Result of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MannWhitney {
    /// U of the first sample: pairs (a, b) with a > b, ties counting one half
    /// (R's `W`).
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// True when the p-value comes from the exact distribution of U (no ties,
    /// both samples under 50); false for the normal approximation with tie
    /// and continuity corrections.
    pub exact: bool,
}

/// Two-sided Mann–Whitney U (Wilcoxon rank-sum) test.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 || a.iter().chain(b).any(|x| x.is_nan()) {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut rank_sum_a = 0.0;
    // Sum of t^3 - t over groups of ties, for the variance correction.
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let midrank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_sum_a += all[i..=j].iter().filter(|x| x.1).count() as f64 * midrank;
        i = j + 1;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u = rank_sum_a - n1f * (n1f + 1.0) / 2.0;

    if ties == 0.0 && n1 < 50 && n2 < 50 {
        let dist = u_distribution(n1, n2);
        let total: f64 = dist.iter().sum();
        let ui = u.round() as usize;
        let le: f64 = dist[..=ui].iter().sum::<f64>() / total;
        let ge: f64 = dist[ui..].iter().sum::<f64>() / total;
        return Some(MannWhitney {
            u,
            p_value: (2.0 * le.min(ge)).min(1.0),
            exact: true,
        });
    }

    let nf = n1f + n2f;
    let sigma = ((n1f * n2f / 12.0) * ((nf + 1.0) - ties / (nf * (nf - 1.0)))).sqrt();
    if sigma == 0.0 {
        return Some(MannWhitney {
            u,
            p_value: 1.0,
            exact: false,
        });
    }
    let d = u - n1f * n2f / 2.0;
    let z = (d - 0.5 * d.signum()) / sigma;
    let normal = Normal::new(0.0, 1.0).ok()?;
    Some(MannWhitney {
        u,
        p_value: (2.0 * normal.cdf(-z.abs())).min(1.0),
        exact: false,
    })
}

/// Counts of each value of U for samples of n1 and n2 without ties: the
/// number of orderings of the pooled sample giving U = u.
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // f(i, j) as a vector over u; f(i, j)[u] = f(i-1, j)[u-j] + f(i, j-1)[u],
    // splitting on whether the largest pooled value belongs to the first
    // sample (then it beats all j of the second) or not.
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        cur.push(vec![1.0]);
        for j in 1..=n2 {
            let mut v = vec![0.0; i * j + 1];
            for (u, c) in prev[j].iter().enumerate() {
                v[u + j] += c;
            }
            for (u, c) in cur[j - 1].iter().enumerate() {
                v[u] += c;
            }
            cur.push(v);
        }
        prev = cur;
    }
    prev.swap_remove(n2)
}

/// Result of Welch's unequal-variances t-test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Welch {
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Two-sided Welch's t-test of mean(a) = mean(b). `None` with fewer than two
/// values in a sample, or when both samples have no spread (t is undefined).
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let (v1, v2) = (variance(a)?, variance(b)?);
    let (s1, s2) = (v1 / n1, v2 / n2);
    let se2 = s1 + s2;
    if se2 == 0.0 {
        return None;
    }
    let t = (mean(a)? - mean(b)?) / se2.sqrt();
    let df = se2 * se2 / (s1 * s1 / (n1 - 1.0) + s2 * s2 / (n2 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Welch {
        t,
        df,
        p_value: (2.0 * dist.cdf(-t.abs())).min(1.0),
    })
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    // Student's sleep data (Cushny & Peebles 1905, as in R's `sleep` data
    // set): extra hours of sleep under two drugs.
    const SLEEP_1: [f64; 10] = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
    const SLEEP_2: [f64; 10] = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

    #[test]
    fn welch_matches_the_sleep_data_textbook_result() {
        // R: t.test(extra ~ group, data = sleep) gives
        // t = -1.8608, df = 17.776, p-value = 0.07939.
        let w = welch_t_test(&SLEEP_1, &SLEEP_2).unwrap();
        assert!(close(w.t, -1.8608, 5e-5), "t = {}", w.t);
        assert!(close(w.df, 17.776, 5e-4), "df = {}", w.df);
        assert!(close(w.p_value, 0.07939, 5e-6), "p = {}", w.p_value);
    }

    #[test]
    fn welch_is_undefined_without_spread_or_samples() {
        assert_eq!(welch_t_test(&[1.0, 1.0], &[2.0, 2.0]), None);
        assert_eq!(welch_t_test(&[1.0], &[2.0, 3.0]), None);
    }

    #[test]
    fn mann_whitney_exact_matches_hollander_wolfe() {
        // Hollander & Wolfe (1973), Nonparametric Statistical Methods, p. 69,
        // the example of R's wilcox.test: W = 35, one-sided p (greater) =
        // 0.1272, so two-sided p = 0.2544.
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.u, 35.0);
        assert!(r.exact);
        assert!(close(r.p_value, 0.2544, 5e-5), "p = {}", r.p_value);
        // U of the other sample is n1 n2 - U, with the same two-sided p.
        let r2 = mann_whitney_u(&y, &x).unwrap();
        assert_eq!(r2.u, 15.0);
        assert!(close(r2.p_value, r.p_value, 1e-12));
    }

    #[test]
    fn mann_whitney_with_ties_matches_the_sleep_data_result() {
        // R: wilcox.test(extra ~ group, data = sleep) gives W = 25.5,
        // p-value = 0.06933 (normal approximation, tie and continuity
        // corrected).
        let r = mann_whitney_u(&SLEEP_1, &SLEEP_2).unwrap();
        assert_eq!(r.u, 25.5);
        assert!(!r.exact);
        assert!(close(r.p_value, 0.06933, 5e-6), "p = {}", r.p_value);
    }

    #[test]
    fn mann_whitney_small_samples_cannot_reach_five_percent() {
        // With 3 against 3 the most extreme ordering has two-sided p = 2/20.
        let r = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(r.u, 0.0);
        assert!(close(r.p_value, 0.1, 1e-12));
    }

    #[test]
    fn u_distribution_counts_all_orderings() {
        // C(5, 2) = 10 orderings; U ranges over 0..=6.
        let d = u_distribution(2, 3);
        assert_eq!(d, vec![1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0]);
    }

    #[test]
    fn mean_ci_uses_student_t() {
        // mean 3, sd sqrt(2.5), t(0.975, 4) = 2.776445: half-width 1.963243.
        let (m, lo, hi) = mean_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(m, 3.0);
        assert!(close(hi - m, 1.963243, 1e-6), "half = {}", hi - m);
        assert!(close(m - lo, 1.963243, 1e-6));
        assert_eq!(mean_ci95(&[7.0]), Some((7.0, 7.0, 7.0)));
        assert_eq!(mean_ci95(&[]), None);
    }

    #[test]
    fn median_interval_reaches_its_level_from_six_values() {
        // n = 6: [x(1), x(6)] covers 1 - 2/64 = 0.96875.
        let ci = median_ci(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 0.95).unwrap();
        assert_eq!((ci.median, ci.low, ci.high), (3.5, 1.0, 6.0));
        assert!(close(ci.coverage, 0.96875, 1e-12));
        // n = 3 can only offer min..max with coverage 1 - 2/8.
        let ci = median_ci(&[3.0, 1.0, 2.0], 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 3.0));
        assert!(close(ci.coverage, 0.75, 1e-12));
        // n = 20: k = 6 gives coverage 0.9586 (k = 7 would give 0.8847).
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = median_ci(&xs, 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (6.0, 15.0));
        assert!(close(ci.coverage, 0.958610, 1e-6), "{}", ci.coverage);
    }

    #[test]
    fn geometric_mean_of_ratios() {
        assert!(close(geometric_mean(&[2.0, 8.0]).unwrap(), 4.0, 1e-12));
        assert!(close(geometric_mean(&[0.5, 2.0]).unwrap(), 1.0, 1e-12));
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
        assert_eq!(geometric_mean(&[]), None);
    }

    #[test]
    fn median_and_estimate() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let e = estimate(&[10.0, 12.0, 14.0]);
        assert_eq!((e.mean, e.median, e.n), (12.0, 12.0, 3));
        // sd 2, t(0.975, 2) = 4.302653: half-width 4.968275.
        assert!(close(e.ci_high - 12.0, 4.968275, 1e-6));
    }

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
}
