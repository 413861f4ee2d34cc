//! How a server's variance splits between the slices of one launch and its
//! launches: a one-way analysis of variance with launches as the groups.
//!
//! A slice's rate is first made relative to its block, so what the machine
//! did to every server during that block (a neighbour's build, the clock)
//! cancels, and to its server's level, since levels differ for real: the
//! two are fitted together, as a block may have measured some servers
//! only. What is left is a server's own slice-to-slice noise and whatever
//! a start of the server left behind for the rounds that followed it.

use std::collections::BTreeMap;

use statrs::distribution::{ContinuousCDF, FisherSnedecor};
use throng_model::StepRecord;

/// One launch of a server: its effect as a factor on its rate (1.12 =
/// its rounds ran 12% faster than the server's mean) and its slices.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LaunchEffect {
    pub launch: u32,
    pub factor: f64,
    pub slices: u32,
}

/// A server's variance split between slices and launches.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LaunchSplit {
    /// Standard deviation of a slice's log relative rate around its
    /// launch's mean (≈ the relative spread of one slice).
    pub slice_sd: f64,
    /// Standard deviation between launches beyond what the slices' own
    /// noise gives their means (method of moments, floored at 0).
    pub launch_sd: f64,
    /// Launches in their order.
    pub launches: Vec<LaunchEffect>,
    /// The F statistic of launches against slices, and its p-value.
    pub f: f64,
    pub p_value: f64,
    /// The fastest launch's effect over the slowest's, less one.
    pub spread: f64,
    /// The launches differ beyond the slices (p < [`ALPHA`]) by more than
    /// the threshold the split was asked with.
    pub differs: bool,
}

/// The significance a difference between launches is called at: strict,
/// since every server of every group is tested.
pub const ALPHA: f64 = 0.01;

/// One server of a group and its split; `None` when it was measured in
/// fewer than two launches, or too few slices to tell noise from launch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerLaunches {
    pub server: String,
    pub split: Option<LaunchSplit>,
}

/// A level: its connections and its offered rate's bits.
type Level = (u32, Option<u64>);

/// A block: its level and its number there.
type Block = (Level, u32);

/// A server at a level.
type Cell<'a> = (&'a str, Level);

/// A slice of one server: its level, block, launch and log rate.
struct Slice<'a> {
    server: &'a str,
    level: Level,
    block: u32,
    launch: u32,
    log_rate: f64,
}

/// Each server of `steps` (one group: one workload and core count, its
/// servers and levels) in the order first seen, with how its variance
/// splits. Rounds without a launch or a block, or with no rate, are left
/// out.
///
/// A slice's rate is taken relative to its block's effect ([`fit`]),
/// which removes what the machine did during it. All servers of a launch
/// share its blocks, so a launch that moved one server alone moves that
/// effect too, and would be blamed in part on every server beside it; each
/// launch is therefore measured from its median server (its launch mean,
/// over all the launch's slices), which stays with the servers that held.
/// With two servers the median is the mean and nothing moves.
pub fn split(steps: &[StepRecord], threshold: f64) -> Vec<ServerLaunches> {
    let slices = slices(steps);
    let (block, level) = fit(&slices);
    let centred = |s: &Slice| s.log_rate - block[&(s.level, s.block)] - level[&(s.server, s.level)];
    let launch_mean = means(slices.iter().map(|s| ((s.launch, s.server), centred(s))));
    let mut by_launch: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (&(launch, _), &m) in &launch_mean {
        by_launch.entry(launch).or_default().push(m);
    }
    let reference: BTreeMap<u32, f64> = by_launch
        .into_iter()
        .filter_map(|(l, v)| Some((l, crate::median(&v)?)))
        .collect();

    let mut servers: Vec<&str> = Vec::new();
    for s in &slices {
        if !servers.contains(&s.server) {
            servers.push(s.server);
        }
    }
    servers
        .into_iter()
        .map(|server| {
            let mut launches: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for s in slices.iter().filter(|s| s.server == server) {
                launches
                    .entry(s.launch)
                    .or_default()
                    .push(centred(s) - reference[&s.launch]);
            }
            ServerLaunches {
                server: server.to_string(),
                split: anova(&launches, threshold),
            }
        })
        .collect()
}

/// The rounds of `steps` that carry a launch, a block and a rate.
fn slices(steps: &[StepRecord]) -> Vec<Slice<'_>> {
    steps
        .iter()
        .flat_map(|s| {
            let level = (s.concurrency, s.rate.map(f64::to_bits));
            s.rounds.iter().filter_map(move |r| {
                let rate = r.summary.requests_per_sec;
                (rate > 0.0 && rate.is_finite()).then_some(Slice {
                    server: &s.server,
                    level,
                    block: r.block?,
                    launch: r.launch?,
                    log_rate: rate.ln(),
                })
            })
        })
        .collect()
}

/// What the machine did to every server in each launch of a group, as a
/// factor (0.87: the servers measured in that launch ran 13% slower than
/// over the group). The split cancels it, each slice being read against
/// its block; but a machine that moves between launches slows some
/// servers more than others, and that difference reads as a launch of
/// theirs. A context switch's price read before each launch can hold
/// while this moves (a host whose memory or caches other guests share),
/// so it is read from the servers' own rates: each server's departure
/// from its level in the fit [`split`] reads it from, each level's blocks
/// centred on their mean (levels differ for real), averaged over the
/// server's slices in the launch; the launch's figure is the median over
/// its servers, so that one server whose start differed does not move
/// it (with two servers the median is the mean). `None` with fewer than
/// two launches.
pub fn machine(steps: &[StepRecord]) -> Option<LaunchMachine> {
    let slices = slices(steps);
    let (block, level) = fit(&slices);
    let level_mean = means(block.iter().map(|(&(l, _), &e)| (l, e)));
    let departures = means(slices.iter().map(|s| {
        (
            (s.launch, s.server),
            s.log_rate - level[&(s.server, s.level)] - level_mean[&s.level],
        )
    }));
    let mut by_launch: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (&(launch, _), &d) in &departures {
        by_launch.entry(launch).or_default().push(d);
    }
    if by_launch.len() < 2 {
        return None;
    }
    let factors: Vec<(u32, f64)> = by_launch
        .into_iter()
        .filter_map(|(l, v)| Some((l, crate::median(&v)?.exp())))
        .collect();
    let max = factors.iter().map(|f| f.1).fold(f64::MIN, f64::max);
    let min = factors.iter().map(|f| f.1).fold(f64::MAX, f64::min);
    Some(LaunchMachine {
        factors,
        spread: max / min - 1.0,
    })
}

/// The machine over a group's launches ([`machine`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LaunchMachine {
    /// Each launch and what the machine did to every server in it.
    pub factors: Vec<(u32, f64)>,
    /// The fastest launch's factor over the slowest's, less one.
    pub spread: f64,
}

/// Passes of [`fit`] at most: a run's design converges in a handful; the
/// bound keeps a degenerate one from looping.
const FIT_PASSES: usize = 200;

/// Each slice's log rate as its server's figure at its level plus what its
/// block did to every server measured in it: the two-way additive fit, by
/// turns (each part the mean of what the other leaves), until neither
/// moves. Where every server was measured in every block this is each
/// slice over its block's geometric mean, each server's level mean taken
/// out. Where a block measured some servers only (a launch past the
/// study's least measures only the comparisons still wide), its geometric
/// mean is of those servers, not of the group: a block of the fastest and
/// the slowest server reads each against a mean the others would have
/// moved, and that launch looked faster or slower for servers that had
/// not moved. The fit reads a block's effect from each server's departure
/// from its own level instead.
fn fit<'a>(slices: &[Slice<'a>]) -> (BTreeMap<Block, f64>, BTreeMap<Cell<'a>, f64>) {
    let mut level = means(slices.iter().map(|s| ((s.server, s.level), s.log_rate)));
    let mut block = BTreeMap::new();
    for _ in 0..FIT_PASSES {
        block = means(
            slices
                .iter()
                .map(|s| ((s.level, s.block), s.log_rate - level[&(s.server, s.level)])),
        );
        let next = means(
            slices
                .iter()
                .map(|s| ((s.server, s.level), s.log_rate - block[&(s.level, s.block)])),
        );
        let moved = next
            .iter()
            .map(|(k, v)| (v - level[k]).abs())
            .fold(0.0, f64::max);
        level = next;
        if moved < 1e-12 {
            break;
        }
    }
    (block, level)
}

fn means<K: Ord>(values: impl Iterator<Item = (K, f64)>) -> BTreeMap<K, f64> {
    let mut sums: BTreeMap<K, (f64, f64)> = BTreeMap::new();
    for (k, v) in values {
        let e = sums.entry(k).or_default();
        e.0 += v;
        e.1 += 1.0;
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

/// The one-way analysis of variance of log relative rates grouped by
/// launch; `None` with fewer than two launches or no slice to spare
/// within them.
fn anova(launches: &BTreeMap<u32, Vec<f64>>, threshold: f64) -> Option<LaunchSplit> {
    let k = launches.len();
    let n: usize = launches.values().map(Vec::len).sum();
    if k < 2 || n <= k {
        return None;
    }
    let grand = launches.values().flatten().sum::<f64>() / n as f64;
    let mut between = 0.0;
    let mut within = 0.0;
    let mut effects = Vec::new();
    for (&launch, xs) in launches {
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        between += xs.len() as f64 * (m - grand).powi(2);
        within += xs.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        effects.push(LaunchEffect {
            launch,
            factor: (m - grand).exp(),
            slices: xs.len() as u32,
        });
    }
    let (df_b, df_w) = ((k - 1) as f64, (n - k) as f64);
    let (ms_b, ms_w) = (between / df_b, within / df_w);
    // The slices a launch's mean stands on, for launches of unequal size.
    let n0 = (n as f64
        - launches
            .values()
            .map(|v| (v.len() as f64).powi(2))
            .sum::<f64>()
            / n as f64)
        / df_b;
    let launch_var = ((ms_b - ms_w) / n0).max(0.0);
    let (f, p_value) = if ms_w > 0.0 {
        let f = ms_b / ms_w;
        let p = FisherSnedecor::new(df_b, df_w).ok()?.sf(f);
        (f, p)
    } else if ms_b > 0.0 {
        (f64::INFINITY, 0.0)
    } else {
        (0.0, 1.0)
    };
    let factors = effects.iter().map(|e| e.factor);
    let max = factors.clone().fold(f64::MIN, f64::max);
    let min = factors.fold(f64::MAX, f64::min);
    let spread = max / min - 1.0;
    Some(LaunchSplit {
        slice_sd: ms_w.sqrt(),
        launch_sd: launch_var.sqrt(),
        launches: effects,
        f,
        p_value,
        spread,
        differs: p_value < ALPHA && spread > threshold,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::RoundRecord;

    /// A slice's noise, ±1% in a fixed pattern that sums to nothing over
    /// each block of five.
    const NOISE: [f64; 5] = [0.01, -0.01, 0.005, -0.005, 0.0];

    /// `servers` (name, rate) at two levels, `launches` launches of
    /// `blocks` blocks each, every server's slices jittered by [`NOISE`]
    /// and the machine drifting by block; `boost(server, launch)` is the
    /// truth a launch left behind.
    fn group(
        servers: &[(&str, f64)],
        launches: u32,
        blocks: u32,
        boost: impl Fn(&str, u32) -> f64,
    ) -> Vec<StepRecord> {
        let mut steps = Vec::new();
        for (si, (name, rate)) in servers.iter().enumerate() {
            for (level, conc) in [(1.0, 10), (1.6, 50)] {
                let mut step = StepRecord::new(name, 1, "tiny", conc);
                for launch in 0..launches {
                    for b in 0..blocks {
                        let block = launch * blocks + b;
                        let drift = 1.0 + 0.03 * f64::from(block % 4);
                        let noise = 1.0 + NOISE[(block as usize + 2 * si) % NOISE.len()];
                        let mut r = RoundRecord {
                            index: block,
                            block: Some(block),
                            launch: Some(launch),
                            ..RoundRecord::default()
                        };
                        r.summary.requests_per_sec =
                            rate * level * drift * noise * boost(name, launch);
                        step.rounds.push(r);
                    }
                }
                steps.push(step);
            }
        }
        steps
    }

    const SERVERS: [(&str, f64); 3] = [
        ("nginx", 40_000.0),
        ("lighttpd", 52_000.0),
        ("apache2-event", 21_000.0),
    ];

    #[test]
    fn a_launch_that_ran_faster_is_found_with_its_spread() {
        let steps = group(&SERVERS, 3, 10, |s, l| {
            if s == "apache2-event" && l == 2 {
                1.12
            } else {
                1.0
            }
        });
        let split = split(&steps, 0.02);
        let names: Vec<&str> = split.iter().map(|s| s.server.as_str()).collect();
        assert_eq!(names, ["nginx", "lighttpd", "apache2-event"]);
        let apache = split[2].split.as_ref().unwrap();
        // The noise sums to nothing over each launch, so the truth comes
        // back to the last digits.
        assert!(
            (apache.spread - 0.12).abs() < 1e-9,
            "spread {}",
            apache.spread
        );
        assert!(apache.differs);
        assert!(apache.p_value < 1e-9, "p {}", apache.p_value);
        // What is left of the ±1% once each block's mean is taken out.
        assert!(
            (apache.slice_sd - 0.007_009).abs() < 1e-5,
            "slice sd {}",
            apache.slice_sd
        );
        // Two launches at 1 and one at 1.12, in logs: the sd of the three
        // is ln 1.12 / √3 = 0.06543, less the slices' share in it.
        assert!(
            (apache.launch_sd - 0.065_41).abs() < 1e-4,
            "launch sd {}",
            apache.launch_sd
        );
        let factors: Vec<u32> = apache.launches.iter().map(|l| l.slices).collect();
        assert_eq!(factors, [20, 20, 20]);
        let third = apache.launches[2].factor / apache.launches[0].factor;
        assert!((third - 1.12).abs() < 1e-9, "launch 2 over 0: {third}");
        // The servers beside it held, and measuring each launch from its
        // median server keeps them clear of it.
        for s in &split[..2] {
            let sp = s.split.as_ref().unwrap();
            assert!(!sp.differs, "{}: {sp:?}", s.server);
            assert!(sp.spread < 0.01, "{}: spread {}", s.server, sp.spread);
        }
    }

    /// A launch past the study's least, as `quick` runs them: every
    /// server measured at one level, and at the other only the servers of
    /// the comparisons still wide, so those blocks hold two servers of
    /// three.
    fn with_a_partial_launch(boost: impl Fn(&str, u32) -> f64) -> Vec<StepRecord> {
        let mut steps = group(&SERVERS, 3, 10, &boost);
        for step in &mut steps {
            if step.concurrency == 50 && step.server == "nginx" {
                continue;
            }
            let (level, first) = if step.concurrency == 10 {
                (1.0, 30)
            } else {
                (1.6, 40)
            };
            let rate = SERVERS.iter().find(|(n, _)| *n == step.server).unwrap().1 * level;
            for b in 0..10 {
                let block = first + b;
                let drift = 1.0 + 0.03 * f64::from(block % 4);
                let mut r = RoundRecord {
                    index: block,
                    block: Some(block),
                    launch: Some(3),
                    ..RoundRecord::default()
                };
                let noise = if b % 2 == 0 { 1.01 } else { 0.99 };
                r.summary.requests_per_sec = rate * drift * noise * boost(&step.server, 3);
                step.rounds.push(r);
            }
        }
        steps
    }

    #[test]
    fn a_launch_that_measured_only_some_servers_is_not_a_launch_that_differed() {
        // Two of three servers measured at one level, their blocks' mean
        // is of those two: the fast one reads faster than in a full block
        // and the slow one slower, though neither moved.
        let split = split(&with_a_partial_launch(|_, _| 1.0), 0.02);
        for s in &split {
            let sp = s.split.as_ref().unwrap();
            assert!(!sp.differs, "{}: {sp:?}", s.server);
            assert!(sp.spread < 0.005, "{}: spread {}", s.server, sp.spread);
        }
    }

    #[test]
    fn a_server_that_moved_in_a_partial_launch_is_found_there_alone() {
        let split = split(
            &with_a_partial_launch(|s, l| if s == "lighttpd" && l == 3 { 1.10 } else { 1.0 }),
            0.02,
        );
        let lighttpd = split[1].split.as_ref().unwrap();
        assert!(lighttpd.differs, "{lighttpd:?}");
        // A block of two servers cannot tell one's move from the other's
        // opposite one, so part of the move made in those blocks is
        // shared with apache2-event there: read short of the truth, not
        // past it, and not given to the servers beside it.
        let fourth = lighttpd.launches[3].factor / lighttpd.launches[0].factor;
        assert!((1.08..=1.10).contains(&fourth), "launch 3 over 0: {fourth}");
        for s in [&split[0], &split[2]] {
            let sp = s.split.as_ref().unwrap();
            assert!(!sp.differs, "{}: {sp:?}", s.server);
        }
    }

    #[test]
    fn a_machine_that_slowed_every_server_in_a_launch_is_read_from_the_blocks() {
        // Every server 13% slower in the second of three launches: the
        // servers' splits cancel it, and the machine's reading names it.
        let steps = group(&SERVERS, 3, 10, |_, l| if l == 1 { 0.87 } else { 1.0 });
        for s in split(&steps, 0.02) {
            let sp = s.split.unwrap();
            assert!(!sp.differs, "{}: {sp:?}", s.server);
            assert!(sp.spread < 1e-9, "{}: spread {}", s.server, sp.spread);
        }
        let m = machine(&steps).unwrap();
        let launches: Vec<u32> = m.factors.iter().map(|f| f.0).collect();
        assert_eq!(launches, [0, 1, 2]);
        // The machine's drift by block (3% steps, 1 + 0.03 (block mod 4))
        // falls unevenly on the launches' ten blocks each, so it is in the
        // truth too; the slices' ±1% noise moves each block's mean by a
        // few parts in ten thousand.
        let drift = |l: u32| {
            ((0..10)
                .map(|b| (1.0 + 0.03 * f64::from((l * 10 + b) % 4)).ln())
                .sum::<f64>()
                / 10.0)
                .exp()
        };
        let second = m.factors[1].1 / m.factors[0].1;
        let truth = 0.87 * drift(1) / drift(0);
        assert!(
            (second - truth).abs() < 1e-3,
            "launch 1 over 0: {second} against {truth}"
        );
        // Launches 0 and 2 have the same blocks' drift (20 is 0 mod 4).
        assert!((m.spread - (1.0 / truth - 1.0)).abs() < 1e-3, "{m:?}");
        // A machine that held but for its drift reads as that drift.
        let held = machine(&group(&SERVERS, 3, 10, |_, _| 1.0)).unwrap();
        assert!(held.spread < 0.02, "{held:?}");
        // One server whose start differed (apache2-event 12% faster in
        // the third launch) leaves the machine where it was: the median
        // server held.
        let alone = machine(&group(&SERVERS, 3, 10, |s, l| {
            if s == "apache2-event" && l == 2 {
                1.12
            } else {
                1.0
            }
        }))
        .unwrap();
        assert!(
            (alone.spread - held.spread).abs() < 1e-3,
            "{alone:?} against {held:?}"
        );
        assert!(machine(&group(&SERVERS, 1, 10, |_, _| 1.0)).is_none());
    }

    #[test]
    fn launches_that_agree_are_not_called_different() {
        let steps = group(&SERVERS, 3, 10, |_, _| 1.0);
        for s in split(&steps, 0.02) {
            let sp = s.split.unwrap();
            assert!(!sp.differs, "{}: {sp:?}", s.server);
            assert!(sp.spread < 0.01, "{}: spread {}", s.server, sp.spread);
            assert_eq!(sp.launch_sd, 0.0, "{}", s.server);
        }
    }

    #[test]
    fn a_difference_within_the_threshold_is_not_called() {
        // Significant, but no larger than the study's precision asks.
        let steps = group(&SERVERS, 2, 10, |s, l| {
            if s == "nginx" && l == 1 {
                1.015
            } else {
                1.0
            }
        });
        let nginx = split(&steps, 0.02).remove(0).split.unwrap();
        assert!((nginx.spread - 0.015).abs() < 1e-9, "{}", nginx.spread);
        assert!(!nginx.differs);
        let nginx = split(&steps, 0.01).remove(0).split.unwrap();
        assert!(nginx.differs);
    }

    #[test]
    fn one_launch_or_none_says_nothing() {
        let steps = group(&SERVERS, 1, 10, |_, _| 1.0);
        assert!(split(&steps, 0.02).iter().all(|s| s.split.is_none()));
        let mut steps = group(&SERVERS, 2, 4, |_, _| 1.0);
        for s in &mut steps {
            for r in &mut s.rounds {
                r.launch = None;
            }
        }
        assert!(split(&steps, 0.02).is_empty());
    }
}
