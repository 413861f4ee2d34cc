//! What the machine's A/A calibration found of each server's launches,
//! for the runs after it. A run starts each server a few times (quick: six
//! to ten),
//! and a server whose starts are bimodal (on this machine one start of
//! Apache's event MPM in about six serves 30% less) shows no slow start in
//! two runs of five out of five: those runs promise intervals and
//! next-run ranges the next run leaves. A calibration starts each of its
//! servers dozens of times against a twin of itself, so the spread of its
//! twins' launch ratios is each server's own launch spread, measured
//! where it could show. A later run on the same machine takes it as the
//! least its pairs' launch variance can be (`throng_stats::reruns::Prior`).

use throng_model::{Comparison, Environment, Finding, IntervalKind, Profile, RunKind, Severity};
use throng_stats::calibration::{is_calibration, twins};
use throng_stats::reruns::Prior;
use throng_store::Store;

use crate::calibration::same_machine;
use crate::study::Study;

/// Calibration runs read at most, the latest first: as many as the
/// earlier runs a next-run range is drawn over, for the same reason (the
/// machine of a week ago says less of today's).
pub const MAX_CALIBRATIONS: usize = 19;

/// One server's launch spread, from the A/A comparisons of its twins in
/// the latest calibration runs of this machine: the same recipe and
/// profile, the same workload on as many cores, at one level or pooled
/// over the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpread {
    pub recipe: String,
    pub profile: Profile,
    pub workload: String,
    pub cores: u32,
    /// The level; `None` for the sweep's pooled comparison.
    pub concurrency: Option<u32>,
    /// Squared deviations of the twins' launch log ratios from their
    /// run's mean, summed over the runs, and their degrees of freedom.
    ss: f64,
    df: usize,
    /// The lowest and highest twin launch ratio seen.
    pub low: f64,
    pub high: f64,
    /// The calibration runs it was read from, the earliest first.
    pub runs: Vec<i64>,
}

impl ServerSpread {
    /// The variance of one launch's log rate: half a twin pair's, which
    /// carries both twins' starts.
    pub fn var(&self) -> f64 {
        self.ss / self.df as f64 / 2.0
    }

    /// How far apart two launches of the server land, 95% of the time, as
    /// a share: exp(1.96 √(2σ²)) − 1.
    pub fn between_launches(&self) -> f64 {
        (1.96 * (2.0 * self.var()).sqrt()).exp() - 1.0
    }
}

/// The launch spreads a run's servers have from the machine's
/// calibrations, with the run's server names.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpreads {
    spreads: Vec<ServerSpread>,
    /// This run's servers: name, recipe and profile.
    servers: Vec<(String, String, Profile)>,
}

impl LaunchSpreads {
    /// None: a run with no calibration of its machine, or a calibration
    /// run itself (its figures are what later runs learn from, not what
    /// it is judged by).
    pub fn none() -> LaunchSpreads {
        LaunchSpreads::default()
    }

    /// The spreads of `study`'s servers from the latest calibration runs
    /// on `here` in `store`.
    pub fn load(store: &Store, study: &Study, here: &Environment) -> anyhow::Result<LaunchSpreads> {
        let servers: Vec<(String, String, Profile)> = study
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.recipe.name.clone(), s.profile))
            .collect();
        let calibrating = study.servers.iter().all(|a| {
            study.servers.iter().any(|b| {
                a.name != b.name
                    && a.recipe.name == b.recipe.name
                    && a.profile == b.profile
                    && a.protocol == b.protocol
            })
        });
        if calibrating {
            return Ok(LaunchSpreads::none());
        }
        let mut runs = store.list_runs()?;
        runs.reverse();
        let mut read = Vec::new();
        for r in runs {
            if read.len() == MAX_CALIBRATIONS {
                break;
            }
            if !r.complete
                || !matches!(r.kind(), RunKind::Study { .. })
                || !same_machine(here, &r.environment)
                || !crate::futex::same_starts(&r.doctor, study.futex_global)
            {
                continue;
            }
            let outline = store.load_outline(r.id)?;
            if is_calibration(&outline.servers) {
                read.push(outline);
            }
        }
        read.reverse();
        let mut spreads = LaunchSpreads {
            spreads: Vec::new(),
            servers,
        };
        for run in &read {
            let server = |name: &str| run.servers.iter().find(|s| s.name == name);
            for c in &run.comparisons {
                let (Some(a), Some(b)) = (server(&c.a), server(&c.b)) else {
                    continue;
                };
                // Only the workloads this run measures: a spread of another
                // bounds nothing here and would be named for nothing.
                let measured = study.workloads.iter().any(|w| w.name() == c.workload);
                if twins(a, b) && c.interval == IntervalKind::Launches && measured {
                    spreads.add(run.run.id, &a.recipe, a.profile, c);
                }
            }
        }
        Ok(spreads)
    }

    /// One calibration run's pooled A/A comparison of `recipe` twins.
    fn add(&mut self, run: i64, recipe: &str, profile: Profile, c: &Comparison) {
        let logs: Option<Vec<f64>> = c
            .launch_ratios
            .iter()
            .map(|r| (r.is_finite() && *r > 0.0).then(|| r.ln()))
            .collect();
        let Some(logs) = logs.filter(|l| l.len() >= 2) else {
            return;
        };
        let Some(var) = throng_stats::variance(&logs) else {
            return;
        };
        let df = logs.len() - 1;
        let (low, high) = c
            .launch_ratios
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), r| (l.min(*r), h.max(*r)));
        let at = self.spreads.iter().position(|s| {
            s.recipe == recipe
                && s.profile == profile
                && s.workload == c.workload
                && s.cores == c.cores
                && s.concurrency == c.concurrency
        });
        let s = match at {
            Some(i) => &mut self.spreads[i],
            None => {
                self.spreads.push(ServerSpread {
                    recipe: recipe.to_string(),
                    profile,
                    workload: c.workload.clone(),
                    cores: c.cores,
                    concurrency: c.concurrency,
                    ss: 0.0,
                    df: 0,
                    low,
                    high,
                    runs: Vec::new(),
                });
                self.spreads.last_mut().expect("just pushed")
            }
        };
        s.ss += var * df as f64;
        s.df += df;
        s.low = s.low.min(low);
        s.high = s.high.max(high);
        if !s.runs.contains(&run) {
            s.runs.push(run);
        }
    }

    /// The spread of this run's server `name` where `c` was drawn: its
    /// workload, core count and level (or the sweep).
    fn of(&self, name: &str, c: &Comparison) -> Option<&ServerSpread> {
        let (_, recipe, profile) = self.servers.iter().find(|(n, _, _)| n == name)?;
        self.spreads.iter().find(|s| {
            &s.recipe == recipe
                && s.profile == *profile
                && s.workload == c.workload
                && s.cores == c.cores
                && s.concurrency == c.concurrency
        })
    }

    /// The least launch variance `c`'s pair can have: the sum of what the
    /// calibrations found of its servers (one alone where only one was
    /// calibrated, a bound from below all the same), at the fewer of their
    /// degrees of freedom. `None` when neither was calibrated.
    pub fn prior(&self, c: &Comparison) -> Option<Prior> {
        let found: Vec<&ServerSpread> = [&c.a, &c.b].iter().filter_map(|n| self.of(n, c)).collect();
        let df = found.iter().map(|s| s.df).min()?;
        Some(Prior {
            var: found.iter().map(|s| s.var()).sum(),
            df,
        })
    }

    /// A finding for each server of the run whose launches, by the
    /// calibrations, land further apart than the run's decision
    /// `threshold`: its pairs' intervals are drawn that wide, and the
    /// reader is told why before any of them.
    pub fn findings(&self, threshold: f64) -> Vec<Finding> {
        let mut out = Vec::new();
        for (name, recipe, profile) in &self.servers {
            // Named by the sweep's spread: one line a server and group.
            for s in self.spreads.iter().filter(|s| {
                &s.recipe == recipe
                    && s.profile == *profile
                    && s.concurrency.is_none()
                    && s.between_launches() > threshold
            }) {
                out.push(Finding {
                    check: "launches.spread".into(),
                    severity: Severity::Warn,
                    message: format!(
                        "{name}'s launches differ on this machine ({} on {} core{}): in \
                         calibration run{} {}, its twins' launches ran {:.2}–{:.2}× each other, \
                         ±{:.1}% between two launches; its pairs' intervals and next-run ranges \
                         are drawn with that spread",
                        s.workload,
                        s.cores,
                        if s.cores == 1 { "" } else { "s" },
                        if s.runs.len() == 1 { "" } else { "s" },
                        s.runs
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(", "),
                        s.low,
                        s.high,
                        s.between_launches() * 100.0
                    ),
                    fix: "more launches narrow them (the study's rounds.max_launches); \
                          docs/methodology.md, \"Launches that differ\""
                        .into(),
                });
            }
        }
        out
    }
}
