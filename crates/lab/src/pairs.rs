//! Paired comparisons. On a shared machine the same work costs more CPU
//! time in some seconds than in others, and that slowness is correlated
//! over about two seconds: a server's requests per second wander ±10–20%
//! from round to round whoever is measured. Slices of different servers
//! measured back to back in one block see nearly the same slowness, so the
//! ratio of their rates cancels most of it (Abedi and Brecht, ICPE 2017:
//! randomized multiple interleaved trials). The median of the per-block
//! ratios, with its distribution-free interval, is what the lab decides on.

use throng_model::{Comparison, Decision, IntervalKind, StepRecord};

/// The order-statistic interval needs this many pairs to reach 95%
/// coverage; with fewer, a comparison stays undecided however it looks.
pub const MIN_PAIRS: usize = 6;

/// Per-block ratios of B's requests per second over A's: one for each
/// block in which both were measured and A completed responses.
pub fn block_ratios(a: &StepRecord, b: &StepRecord) -> Vec<f64> {
    let mut out = Vec::new();
    for rb in &b.rounds {
        let Some(block) = rb.block else { continue };
        let Some(ra) = a.rounds.iter().find(|r| r.block == Some(block)) else {
            continue;
        };
        let (x, y) = (ra.summary.requests_per_sec, rb.summary.requests_per_sec);
        if x > 0.0 && x.is_finite() && y.is_finite() {
            out.push(y / x);
        }
    }
    out
}

/// The comparison of B with A from their per-pair ratios; `None` without
/// any pair. `threshold` is the relative noise band around 1 (the study's
/// precision target).
pub fn compare(
    a: &StepRecord,
    b: &StepRecord,
    concurrency: Option<u32>,
    ratios: &[f64],
    threshold: f64,
) -> Option<Comparison> {
    let ci = throng_stats::median_ci(ratios, 0.95)?;
    let decision = if ratios.len() < MIN_PAIRS || ci.coverage < 0.95 {
        Decision::Undecided
    } else {
        Decision::of(ci.low, ci.high, threshold)
    };
    Some(Comparison {
        a: a.server.clone(),
        b: b.server.clone(),
        workload: a.workload.clone(),
        cores: a.cores,
        concurrency,
        // A level's comparison is at its rate too; the sweep's pooled one
        // is at none.
        rate: concurrency.and(a.rate),
        ratio: ci.median,
        ci_low: ci.low,
        ci_high: ci.high,
        pairs: ratios.len() as u32,
        decision,
        interval: IntervalKind::OrderStatistic,
        launch_ratios: Vec::new(),
    })
}

/// Every pair of `steps` (one level of one group, in the order the study
/// compares them: the baseline first), each later server against each
/// earlier one.
pub fn compare_level(steps: &[&StepRecord], threshold: f64) -> Vec<Comparison> {
    let mut out = Vec::new();
    for (i, a) in steps.iter().enumerate() {
        for b in &steps[i + 1..] {
            let ratios = block_ratios(a, b);
            if let Some(c) = compare(a, b, Some(a.concurrency), &ratios, threshold) {
                out.push(c);
            }
        }
    }
    out
}

/// Bootstrap resamples of the sweep's interval.
const RESAMPLES: usize = 2000;

/// Every pair of servers over the whole sweep of a group. The ratio is the
/// geometric mean over the levels of each level's median ratio: a server
/// may be 0.30× another at 10 connections and 0.21× at 100, and pooling
/// those pairs as one sample would count that real difference between
/// levels as noise. Its 95% interval is a stratified bootstrap: each
/// level's pairs are resampled within the level (the levels are the
/// study's choice, not a sample), 2000 times, and the 2.5th and 97.5th
/// percentiles of the resampled geometric means are the bounds. `sweeps`
/// holds each server's steps, in the study's comparison order.
pub fn compare_sweep(sweeps: &[Vec<&StepRecord>], threshold: f64) -> Vec<Comparison> {
    let mut out = Vec::new();
    for (i, sa) in sweeps.iter().enumerate() {
        for sb in &sweeps[i + 1..] {
            let mut levels: Vec<Vec<f64>> = Vec::new();
            for a in sa {
                if let Some(b) = sb.iter().find(|b| b.same_level(a)) {
                    let r = block_ratios(a, b);
                    if !r.is_empty() {
                        levels.push(r);
                    }
                }
            }
            let (Some(a), Some(b)) = (sa.first(), sb.first()) else {
                continue;
            };
            if let Some(c) = pooled(a, b, &levels, threshold) {
                out.push(c);
            }
        }
    }
    out
}

/// The sweep's comparison from each level's per-pair ratios.
fn pooled(
    a: &StepRecord,
    b: &StepRecord,
    levels: &[Vec<f64>],
    threshold: f64,
) -> Option<Comparison> {
    // One level: its own median and distribution-free interval.
    if let [only] = levels {
        return compare(a, b, None, only, threshold);
    }
    let gmean = |medians: &mut dyn Iterator<Item = f64>| -> f64 {
        let (sum, n) = medians.fold((0.0, 0usize), |(s, n), m| (s + m.ln(), n + 1));
        (sum / n as f64).exp()
    };
    let medians: Vec<f64> = levels
        .iter()
        .map(|l| throng_stats::median(l))
        .collect::<Option<_>>()?;
    if medians.is_empty() || medians.iter().any(|m| *m <= 0.0) {
        return None;
    }
    let ratio = gmean(&mut medians.iter().copied());
    let mut rng = Shuffle::new(levels.iter().map(Vec::len).sum::<usize>() as u64);
    let mut scratch: Vec<f64> = Vec::new();
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            gmean(&mut levels.iter().map(|l| {
                scratch.clear();
                scratch.extend((0..l.len()).map(|_| l[rng.below(l.len())]));
                throng_stats::median(&scratch).unwrap_or(1.0)
            }))
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let lo = means[(RESAMPLES as f64 * 0.025) as usize];
    let hi = means[(RESAMPLES as f64 * 0.975) as usize - 1];
    let pairs: usize = levels.iter().map(Vec::len).sum();
    let decision = if pairs < MIN_PAIRS {
        Decision::Undecided
    } else {
        Decision::of(lo, hi, threshold)
    };
    Some(Comparison {
        a: a.server.clone(),
        b: b.server.clone(),
        workload: a.workload.clone(),
        cores: a.cores,
        concurrency: None,
        rate: None,
        ratio,
        ci_low: lo.min(ratio),
        ci_high: hi.max(ratio),
        pairs: pairs as u32,
        decision,
        interval: IntervalKind::OrderStatistic,
        launch_ratios: Vec::new(),
    })
}

/// Whether every comparison is narrow enough: its interval's half-width
/// within `target` of its ratio, from enough pairs for a 95% interval.
pub fn all_narrow(cs: &[Comparison], target: f64) -> bool {
    cs.iter()
        .all(|c| c.pairs as usize >= MIN_PAIRS && c.relative_half_width() <= target)
}

/// A small deterministic generator for the order of slices in a block: a
/// run can be repeated in the same order, and no order favours a server.
pub struct Shuffle(u64);

impl Shuffle {
    pub fn new(seed: u64) -> Shuffle {
        Shuffle(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{RoundRecord, Summary};

    fn step(server: &str, c: u32, rates: &[(u32, f64)]) -> StepRecord {
        StepRecord {
            rounds: rates
                .iter()
                .enumerate()
                .map(|(i, &(block, rps))| RoundRecord {
                    index: i as u32,
                    block: Some(block),
                    summary: Summary {
                        requests_per_sec: rps,
                        ..Summary::default()
                    },
                    ..RoundRecord::default()
                })
                .collect(),
            ..StepRecord::new(server, 1, "tiny", c)
        }
    }

    #[test]
    fn blocks_are_paired_by_number_and_shared_slowness_cancels() {
        // Both servers slow down together in blocks 1 and 3; B is 1.5× A
        // in every block. A's block 4 has no partner; B's block 0 lost A.
        let a = step(
            "a",
            10,
            &[(0, 0.0), (1, 600.0), (2, 1000.0), (3, 700.0), (4, 900.0)],
        );
        let b = step("b", 10, &[(0, 10.0), (1, 900.0), (2, 1500.0), (3, 1050.0)]);
        assert_eq!(block_ratios(&a, &b), [1.5, 1.5, 1.5]);
    }

    #[test]
    fn a_comparison_needs_six_pairs_and_an_interval_clear_of_the_band() {
        let a = step("a", 10, &(0..8).map(|k| (k, 1000.0)).collect::<Vec<_>>());
        let fast = step(
            "b",
            10,
            &(0..8)
                .map(|k| (k, 1500.0 + f64::from(k)))
                .collect::<Vec<_>>(),
        );
        let c = &compare_level(&[&a, &fast], 0.02)[0];
        assert_eq!((c.a.as_str(), c.b.as_str(), c.pairs), ("a", "b", 8));
        assert_eq!(c.decision, Decision::Higher);
        // Sorted ratios 1.500..1.507; n = 8 gives [x(1), x(8)] at 99.2%.
        assert!((c.ci_low - 1.5).abs() < 1e-12 && (c.ci_high - 1.507).abs() < 1e-12);
        assert!((c.ratio - 1.5035).abs() < 1e-12);
        // Five pairs are too few, however clear.
        let few = step("b", 10, &(0..5).map(|k| (k, 1500.0)).collect::<Vec<_>>());
        assert_eq!(
            compare_level(&[&a, &few], 0.02)[0].decision,
            Decision::Undecided
        );
        assert!(!all_narrow(&compare_level(&[&a, &few], 0.02), 0.02));
        assert!(all_narrow(&compare_level(&[&a, &fast], 0.02), 0.02));
    }

    #[test]
    fn the_sweep_pools_every_level() {
        let a10 = step("a", 10, &(0..4).map(|k| (k, 1000.0)).collect::<Vec<_>>());
        let a20 = step("a", 20, &(0..4).map(|k| (k, 1000.0)).collect::<Vec<_>>());
        let b10 = step("b", 10, &(0..4).map(|k| (k, 990.0)).collect::<Vec<_>>());
        let b20 = step("b", 20, &(0..4).map(|k| (k, 1010.0)).collect::<Vec<_>>());
        let cs = compare_sweep(&[vec![&a10, &a20], vec![&b10, &b20]], 0.02);
        assert_eq!(cs.len(), 1);
        let c = &cs[0];
        assert_eq!((c.concurrency, c.pairs), (None, 8));
        // The geometric mean of 0.99 and 1.01; every resample is the same.
        assert!((c.ratio - (0.99f64 * 1.01).sqrt()).abs() < 1e-12, "{c:?}");
        assert!((c.ci_high - c.ci_low).abs() < 1e-12, "{c:?}");
        assert_eq!(c.decision, Decision::Equal);
    }

    #[test]
    fn a_real_difference_between_levels_is_not_noise_in_the_sweep() {
        // B is 0.30× A at one level and 0.21× at the other, each level
        // with ±2% scatter: pooled as one sample the interval would span
        // both; stratified, it holds the geometric mean closely.
        let scatter = [0.98, 1.0, 1.02, 0.99, 1.01, 1.0, 0.98, 1.02];
        let a10 = step("a", 10, &(0..8).map(|k| (k, 1000.0)).collect::<Vec<_>>());
        let a20 = step("a", 20, &(0..8).map(|k| (k, 1000.0)).collect::<Vec<_>>());
        let b10 = step(
            "b",
            10,
            &(0..8)
                .map(|k| (k, 300.0 * scatter[k as usize]))
                .collect::<Vec<_>>(),
        );
        let b20 = step(
            "b",
            20,
            &(0..8)
                .map(|k| (k, 210.0 * scatter[k as usize]))
                .collect::<Vec<_>>(),
        );
        let c = &compare_sweep(&[vec![&a10, &a20], vec![&b10, &b20]], 0.02)[0];
        let g = (0.30f64 * 0.21).sqrt();
        assert!((c.ratio - g).abs() < 1e-12, "{c:?}");
        assert!(c.ci_low >= g * 0.98 && c.ci_high <= g * 1.02, "{c:?}");
        assert_eq!((c.pairs, c.decision), (16, Decision::Lower));
    }

    #[test]
    fn the_shuffle_is_a_permutation_and_varies() {
        let mut s = Shuffle::new(7);
        let mut firsts = std::collections::BTreeSet::new();
        for _ in 0..40 {
            let mut v = [0, 1, 2, 3];
            s.shuffle(&mut v);
            let mut sorted = v;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3]);
            firsts.insert(v[0]);
        }
        assert_eq!(firsts.len(), 4);
    }
}
