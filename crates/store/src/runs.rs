//! Reading runs back: their records, servers and comparisons, apart from
//! the steps, which are most of a run's rows. What needs to know which
//! runs a database holds, and what they compared (the lab's search for a
//! calibration run), reads these without the steps' rounds.

use anyhow::Context;
use rusqlite::OptionalExtension;
use throng_model::{
    Comparison, Decision, Environment, Feature, FeatureResult, FeatureStatus, Finding,
    IntervalKind, MaxUsers, ParityEntry, RunData, RunRecord, ServerRecord, Setting, Source,
};

use crate::{profile, Store};

impl Store {
    pub fn latest_run(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT max(id) FROM runs", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()?
            .flatten())
    }

    pub(crate) fn run_record(&self, id: i64) -> anyhow::Result<RunRecord> {
        let mut run = self
            .conn
            .query_row(
                "SELECT id, study, study_toml, started_unix_s, finished_unix_s, complete, environment, baseline,
                        threshold
                 FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        RunRecord {
                            id: r.get(0)?,
                            study: r.get(1)?,
                            study_toml: r.get(2)?,
                            started_unix_s: r.get(3)?,
                            finished_unix_s: r.get(4)?,
                            complete: r.get(5)?,
                            environment: Environment::default(),
                            doctor: Vec::new(),
                            baseline: r.get(7)?,
                            threshold: None,
                        },
                        r.get::<_, String>(6)?,
                        r.get::<_, Option<String>>(8)?,
                    ))
                },
            )
            .optional()?
            .with_context(|| format!("no run {id} in the database"))
            .map(|(mut run, env, threshold)| -> anyhow::Result<RunRecord> {
                run.environment = serde_json::from_str(&env)?;
                run.threshold = threshold.map(|t| serde_json::from_str(&t)).transpose()?;
                Ok(run)
            })??;
        let mut q = self.conn.prepare(
            "SELECT check_id, severity, message, fix FROM findings WHERE run_id = ?1 ORDER BY seq",
        )?;
        let rows = q.query_map([id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
                r.get(3)?,
            ))
        })?;
        for row in rows {
            let (check, sev, message, fix) = row?;
            run.doctor.push(Finding {
                check,
                severity: serde_json::from_value(serde_json::Value::String(sev))?,
                message,
                fix,
            });
        }
        Ok(run)
    }

    pub fn list_runs(&self) -> anyhow::Result<Vec<RunRecord>> {
        let mut q = self.conn.prepare("SELECT id FROM runs ORDER BY id")?;
        let ids: Vec<i64> = q.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        ids.into_iter().map(|id| self.run_record(id)).collect()
    }

    /// A run without its steps: its record, servers and comparisons.
    pub fn load_outline(&self, id: i64) -> anyhow::Result<RunData> {
        Ok(RunData {
            run: self.run_record(id)?,
            servers: self.servers_of(id)?,
            steps: Vec::new(),
            comparisons: self.comparisons_of(id)?,
        })
    }

    pub(crate) fn servers_of(&self, id: i64) -> anyhow::Result<Vec<ServerRecord>> {
        let mut servers = Vec::new();
        let mut q = self.conn.prepare(
            "SELECT id, name, recipe, version, package, model, exe_bytes, installed_bytes, profile FROM servers WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = q.query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                ServerRecord {
                    name: r.get(1)?,
                    recipe: r.get(2)?,
                    version: r.get(3)?,
                    package: r.get(4)?,
                    model: r.get(5)?,
                    exe_bytes: r.get::<_, i64>(6)? as u64,
                    installed_bytes: r.get::<_, i64>(7)? as u64,
                    profile: profile(r.get(8)?)?,
                    ..ServerRecord::default()
                },
            ))
        })?;
        let mut cq = self
            .conn
            .prepare("SELECT path, content FROM configs WHERE server_id = ?1 ORDER BY seq")?;
        let mut fq = self.conn.prepare(
            "SELECT name, status, evidence FROM features WHERE server_id = ?1 ORDER BY seq",
        )?;
        let mut mq = self.conn.prepare(
            "SELECT cores, workload, patience_s, level, broke_at, broke_by FROM max_users
             WHERE server_id = ?1 ORDER BY seq",
        )?;
        let mut pq = self.conn.prepare(
            "SELECT setting, value, source, detail FROM parity WHERE server_id = ?1 ORDER BY rowid",
        )?;
        for row in rows {
            let (sid, mut s) = row?;
            let rows = pq
                .query_map([sid], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            // In the model's order of settings, whatever order they came in.
            let mut parity: Vec<ParityEntry> = rows
                .into_iter()
                .filter_map(|(setting, value, source, detail)| {
                    Some(ParityEntry {
                        setting: Setting::parse(&setting)?,
                        value,
                        source: [Source::Config, Source::Default, Source::Lab, Source::Live]
                            .into_iter()
                            .find(|s| s.name() == source)?,
                        detail,
                    })
                })
                .collect();
            parity.sort_by_key(|p| p.setting);
            s.parity = parity;
            s.configs = cq
                .query_map([sid], |r| {
                    Ok(throng_model::ConfigFile {
                        path: r.get(0)?,
                        content: r.get(1)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            let rows = fq
                .query_map([sid], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            // Only this program writes these rows, with names from
            // `Feature::ALL`; a name it does not know cannot be shown.
            s.features = rows
                .into_iter()
                .filter_map(|(name, status, evidence)| {
                    Some(FeatureResult::new(
                        Feature::parse(&name)?,
                        FeatureStatus::parse(&status),
                        evidence,
                    ))
                })
                .collect();
            s.max_users = mq
                .query_map([sid], |r| {
                    Ok(MaxUsers {
                        cores: r.get(0)?,
                        workload: r.get(1)?,
                        patience_s: r.get(2)?,
                        level: r.get(3)?,
                        broke_at: r.get(4)?,
                        broke_by: r.get(5)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            servers.push(s);
        }
        Ok(servers)
    }

    pub(crate) fn comparisons_of(&self, id: i64) -> anyhow::Result<Vec<Comparison>> {
        let mut q = self.conn.prepare(
            "SELECT a, b, workload, cores, concurrency, ratio, ci_low, ci_high, pairs, decision, rate,
                    interval, launch_ratios, next_run, next_run_runs, runs_differ
             FROM comparisons WHERE run_id = ?1 ORDER BY seq",
        )?;
        let comparisons = q
            .query_map([id], |r| {
                Ok(Comparison {
                    a: r.get(0)?,
                    b: r.get(1)?,
                    workload: r.get(2)?,
                    cores: r.get(3)?,
                    concurrency: r.get(4)?,
                    rate: r.get(10)?,
                    ratio: r.get(5)?,
                    ci_low: r.get(6)?,
                    ci_high: r.get(7)?,
                    pairs: r.get(8)?,
                    decision: Decision::parse(&r.get::<_, String>(9)?)
                        .unwrap_or(Decision::Undecided),
                    interval: r
                        .get::<_, Option<String>>(11)?
                        .as_deref()
                        .and_then(IntervalKind::parse)
                        .unwrap_or_default(),
                    launch_ratios: r
                        .get::<_, Option<String>>(12)?
                        .and_then(|j| serde_json::from_str(&j).ok())
                        .unwrap_or_default(),
                    next_run: r
                        .get::<_, Option<String>>(13)?
                        .and_then(|j| serde_json::from_str(&j).ok()),
                    next_run_runs: r.get(14)?,
                    runs_differ: r.get::<_, Option<bool>>(15)?.unwrap_or(false),
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(comparisons)
    }
}
