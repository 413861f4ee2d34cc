//! The SQLite store of runs. The schema is versioned with `PRAGMA
//! user_version`; each migration moves it one version up, inside a
//! transaction, so an old database is upgraded in place when opened.
//!
//! Rows are written as the lab goes (a step when it finishes), so a run
//! that is interrupted keeps everything it measured.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};
use throng_model::{
    Comparison, Estimate, FeatureResult, MaxUsers, ParityEntry, Profile, RoundRecord, RunData,
    RunRecord, ServerRecord, ServerUsage, StepRecord, StepStatus, Summary, Verdict,
};

mod runs;
mod schema;
mod writer;
use schema::MIGRATIONS;
pub use writer::{NewRun, RunWriter};

/// A database that is not throng's, in words naming the file: said as it
/// is, not under "open FILE".
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotResults(String);

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub struct Store {
    conn: Connection,
}

/// A run's steps by outcome. Skipped and unsupported steps count in
/// `steps` only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepCounts {
    pub steps: u64,
    /// Measured, and no check fired.
    pub valid: u64,
    /// Measured, with at least one reason to doubt the figures.
    pub suspect: u64,
    /// The server failed (or, for `throng load`, the load could not run).
    pub failed: u64,
}

fn insert_features(
    conn: &Connection,
    sid: i64,
    first_seq: i64,
    features: &[FeatureResult],
) -> anyhow::Result<()> {
    for (i, f) in features.iter().enumerate() {
        conn.execute(
            "INSERT INTO features (server_id, seq, name, status, evidence) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![sid, first_seq + i as i64, f.name.name(), f.status.label(), f.evidence],
        )?;
    }
    Ok(())
}

fn insert_parity(conn: &Connection, sid: i64, parity: &[ParityEntry]) -> anyhow::Result<()> {
    for p in parity {
        // A setting seen again (live evidence after the config's value)
        // replaces what was known before.
        conn.execute(
            "INSERT OR REPLACE INTO parity (server_id, setting, value, source, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![sid, p.setting.name(), p.value, p.source.name(), p.detail],
        )?;
    }
    Ok(())
}

fn insert_max_users(conn: &Connection, sid: i64, m: &MaxUsers) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO max_users (server_id, seq, cores, workload, patience_s, level, broke_at, broke_by)
         VALUES (?1, (SELECT coalesce(max(seq) + 1, 0) FROM max_users WHERE server_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7)",
        params![sid, m.cores, m.workload, m.patience_s, m.level, m.broke_at, m.broke_by],
    )?;
    Ok(())
}

/// A server's stored profile. Only this program writes the column, so a
/// name it does not know is a damaged database, said as one.
pub(crate) fn profile(name: String) -> rusqlite::Result<Profile> {
    Profile::parse(&name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            8,
            rusqlite::types::Type::Text,
            format!("unknown profile {name:?}").into(),
        )
    })
}

impl Store {
    /// Opens (creating if needed) and migrates to the current schema.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let open = || -> anyhow::Result<Store> {
            let conn = Connection::open(path)?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            let mut store = Store { conn };
            // Before the journal mode, which another program's file would
            // keep.
            store.check_ours(path)?;
            store.conn.pragma_update(None, "foreign_keys", "ON")?;
            store.conn.pragma_update(None, "journal_mode", "WAL")?;
            store.migrate()?;
            Ok(store)
        };
        open().map_err(|e| {
            // SQLite's own words ("file is not a database: Error code 26")
            // name neither the file nor what the user pointed at.
            let not_sqlite = e
                .downcast_ref::<rusqlite::Error>()
                .is_some_and(|e| e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase));
            if e.is::<NotResults>() {
                e
            } else if not_sqlite {
                anyhow::anyhow!(
                    "{} is not a results database: it is not an SQLite file",
                    path.display()
                )
            } else {
                e.context(format!("open {}", path.display()))
            }
        })
    }

    /// A database holding tables is throng's only if it has the tables
    /// and columns of the first schema and a schema version: another
    /// program's database, even one with a `runs` table of its own, is
    /// refused before anything is written into it, where the migrations
    /// would add throng's tables beside its own.
    fn check_ours(&self, path: &Path) -> anyhow::Result<()> {
        let mut q = self.conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?;
        let tables: Vec<String> = q.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        if tables.is_empty() {
            return Ok(());
        }
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        let first = ["runs", "findings", "servers", "configs", "steps", "rounds"];
        let has_all = first.iter().all(|t| tables.iter().any(|n| n == t));
        // Preparing a statement is enough to know the columns are there.
        let columns = || {
            self.conn
                .prepare("SELECT study, study_toml, started_unix_s, complete FROM runs LIMIT 0")
                .is_ok()
                && self
                    .conn
                    .prepare(
                        "SELECT run_id, server, cores, workload, concurrency FROM steps LIMIT 0",
                    )
                    .is_ok()
        };
        if version >= 1 && has_all && columns() {
            return Ok(());
        }
        let shown: Vec<&str> = tables.iter().take(3).map(String::as_str).collect();
        let more = if tables.len() > 3 { ", ..." } else { "" };
        Err(NotResults(format!(
            "{} is not a results database: it holds another program's tables ({}{more}); \
             give --db a file of its own",
            path.display(),
            shown.join(", ")
        ))
        .into())
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            anyhow::bail!(
                "the database has schema version {version}, newer than this throng's {SCHEMA_VERSION}"
            );
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    pub fn schema_version(&self) -> anyhow::Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    /// Inserts a run (incomplete until `finish_run`) and its doctor findings.
    pub fn begin_run(&mut self, run: &RunRecord) -> anyhow::Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (study, study_toml, started_unix_s, finished_unix_s, complete, environment, baseline,
                               threshold)
             VALUES (?1, ?2, ?3, NULL, 0, ?4, ?5, ?6)",
            params![
                run.study,
                run.study_toml,
                run.started_unix_s,
                serde_json::to_string(&run.environment)?,
                run.baseline,
                run.threshold.map(|t| serde_json::to_string(&t)).transpose()?,
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (i, f) in run.doctor.iter().enumerate() {
            tx.execute(
                "INSERT INTO findings (run_id, seq, check_id, severity, message, fix) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, i as i64, f.check, serde_json::to_value(f.severity)?.as_str(), f.message, f.fix],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    pub fn finish_run(&mut self, run_id: i64, complete: bool) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE runs SET finished_unix_s = ?2, complete = ?3 WHERE id = ?1",
            params![run_id, throng_model::unix_now(), complete],
        )?;
        Ok(())
    }

    /// A reading of the servers' core's prices, added to the run's
    /// environment (kept there, as JSON, so no column changes).
    pub fn add_prices(&mut self, run_id: i64, p: &throng_model::CorePrices) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let json: String = tx.query_row(
            "SELECT environment FROM runs WHERE id = ?1",
            params![run_id],
            |r| r.get(0),
        )?;
        let mut env: throng_model::Environment = serde_json::from_str(&json)?;
        env.prices.push(p.clone());
        tx.execute(
            "UPDATE runs SET environment = ?2 WHERE id = ?1",
            params![run_id, serde_json::to_string(&env)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    pub fn add_server(&mut self, run_id: i64, s: &ServerRecord) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO servers (run_id, name, recipe, version, package, model, exe_bytes, installed_bytes, profile)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run_id,
                s.name,
                s.recipe,
                s.version,
                s.package,
                s.model,
                s.exe_bytes as i64,
                s.installed_bytes as i64,
                s.profile.name(),
            ],
        )?;
        let sid = tx.last_insert_rowid();
        insert_parity(&tx, sid, &s.parity)?;
        for (i, c) in s.configs.iter().enumerate() {
            tx.execute(
                "INSERT INTO configs (server_id, seq, path, content) VALUES (?1, ?2, ?3, ?4)",
                params![sid, i as i64, c.path, c.content],
            )?;
        }
        insert_features(&tx, sid, 0, &s.features)?;
        for m in &s.max_users {
            insert_max_users(&tx, sid, m)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn server_id(&self, run_id: i64, server: &str) -> anyhow::Result<i64> {
        self.conn
            .query_row(
                "SELECT id FROM servers WHERE run_id = ?1 AND name = ?2",
                params![run_id, server],
                |r| r.get(0),
            )
            .with_context(|| format!("no server {server:?} in run {run_id}"))
    }

    /// Stores the probed features of a server already stored.
    pub fn add_features(
        &mut self,
        run_id: i64,
        server: &str,
        features: &[FeatureResult],
    ) -> anyhow::Result<()> {
        let sid = self.server_id(run_id, server)?;
        let tx = self.conn.transaction()?;
        let next: i64 = tx.query_row(
            "SELECT coalesce(max(seq) + 1, 0) FROM features WHERE server_id = ?1",
            [sid],
            |r| r.get(0),
        )?;
        insert_features(&tx, sid, next, features)?;
        tx.commit()?;
        Ok(())
    }

    /// Records the package's installed size of a server already stored.
    pub fn set_installed_bytes(
        &mut self,
        run_id: i64,
        server: &str,
        bytes: u64,
    ) -> anyhow::Result<()> {
        let sid = self.server_id(run_id, server)?;
        self.conn.execute(
            "UPDATE servers SET installed_bytes = ?2 WHERE id = ?1",
            params![sid, bytes as i64],
        )?;
        Ok(())
    }

    /// Stores (or replaces, setting by setting) the parity of a server
    /// already stored.
    pub fn add_parity(
        &mut self,
        run_id: i64,
        server: &str,
        parity: &[ParityEntry],
    ) -> anyhow::Result<()> {
        let sid = self.server_id(run_id, server)?;
        let tx = self.conn.transaction()?;
        insert_parity(&tx, sid, parity)?;
        tx.commit()?;
        Ok(())
    }

    /// Stores a run's paired comparisons, after those already stored.
    pub fn add_comparisons(&mut self, run_id: i64, cs: &[Comparison]) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let next: i64 = tx.query_row(
            "SELECT coalesce(max(seq) + 1, 0) FROM comparisons WHERE run_id = ?1",
            [run_id],
            |r| r.get(0),
        )?;
        for (i, c) in cs.iter().enumerate() {
            tx.execute(
                "INSERT INTO comparisons (run_id, seq, a, b, workload, cores, concurrency, ratio, ci_low, ci_high, pairs, decision, rate, interval, launch_ratios, next_run, next_run_runs, runs_differ)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                params![
                    run_id,
                    next + i as i64,
                    c.a,
                    c.b,
                    c.workload,
                    c.cores,
                    c.concurrency,
                    c.ratio,
                    c.ci_low,
                    c.ci_high,
                    c.pairs,
                    c.decision.name(),
                    c.rate,
                    c.interval.name(),
                    serde_json::to_string(&c.launch_ratios)?,
                    c.next_run.map(|r| serde_json::to_string(&r)).transpose()?,
                    c.next_run_runs,
                    c.runs_differ
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores one max-users search of a server already stored.
    pub fn add_max_users(&mut self, run_id: i64, server: &str, m: &MaxUsers) -> anyhow::Result<()> {
        let sid = self.server_id(run_id, server)?;
        insert_max_users(&self.conn, sid, m)
    }

    /// Adds rendered configs to a server already stored (one set per core
    /// count and workload it was started for).
    pub fn add_configs(
        &mut self,
        run_id: i64,
        server: &str,
        configs: &[throng_model::ConfigFile],
    ) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let sid: i64 = tx.query_row(
            "SELECT id FROM servers WHERE run_id = ?1 AND name = ?2",
            params![run_id, server],
            |r| r.get(0),
        )?;
        let next: i64 = tx.query_row(
            "SELECT coalesce(max(seq) + 1, 0) FROM configs WHERE server_id = ?1",
            [sid],
            |r| r.get(0),
        )?;
        for (i, c) in configs.iter().enumerate() {
            tx.execute(
                "INSERT INTO configs (server_id, seq, path, content) VALUES (?1, ?2, ?3, ?4)",
                params![sid, next + i as i64, c.path, c.content],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn add_step(&mut self, run_id: i64, s: &StepRecord) -> anyhow::Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO steps (run_id, server, cores, workload, concurrency, status, failure, log_tail,
                                server_cpus, client_cpus, shared_cores, throughput, verdict, rate)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                run_id,
                s.server,
                s.cores,
                s.workload,
                s.concurrency,
                s.status.name(),
                s.failure,
                s.log_tail,
                serde_json::to_string(&s.server_cpus)?,
                serde_json::to_string(&s.client_cpus)?,
                s.shared_cores,
                serde_json::to_string(&s.throughput)?,
                serde_json::to_string(&s.verdict)?,
                s.rate,
            ],
        )?;
        let step_id = tx.last_insert_rowid();
        for r in &s.rounds {
            tx.execute(
                "INSERT INTO rounds (step_id, idx, requests_per_sec, summary, server_usage, histogram, block, launch)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    step_id,
                    r.index,
                    r.summary.requests_per_sec,
                    serde_json::to_string(&r.summary)?,
                    serde_json::to_string(&r.server)?,
                    r.histogram,
                    r.block,
                    r.launch,
                ],
            )?;
        }
        if let Some(d) = &s.diagnosis {
            tx.execute(
                "INSERT INTO diagnoses (step_id, diagnosis) VALUES (?1, ?2)",
                params![step_id, serde_json::to_string(d)?],
            )?;
        }
        tx.commit()?;
        Ok(step_id)
    }

    /// Replaces the verdicts of a run's steps (sweep verdicts are decided
    /// once a whole sweep is known).
    pub fn update_verdict(&mut self, run_id: i64, s: &StepRecord) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE steps SET verdict = ?6 WHERE run_id = ?1 AND server = ?2 AND cores = ?3 AND workload = ?4 AND concurrency = ?5 AND rate IS ?7",
            params![run_id, s.server, s.cores, s.workload, s.concurrency, serde_json::to_string(&s.verdict)?, s.rate],
        )?;
        Ok(())
    }

    /// Each run's steps counted by outcome, without reading their rounds:
    /// what a list of runs shows. Runs without a step are absent.
    pub fn step_counts(&self) -> anyhow::Result<BTreeMap<i64, StepCounts>> {
        // A verdict is valid when it has no reason; only steps that ran
        // (status ok) have one worth counting.
        let mut q = self.conn.prepare(
            "SELECT run_id, count(*),
                    coalesce(sum(status = 'ok' AND json_array_length(verdict, '$.reasons') = 0), 0),
                    coalesce(sum(status = 'ok' AND json_array_length(verdict, '$.reasons') > 0), 0),
                    coalesce(sum(status = 'failed'), 0)
             FROM steps GROUP BY run_id",
        )?;
        let rows = q.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                StepCounts {
                    steps: r.get::<_, i64>(1)? as u64,
                    valid: r.get::<_, i64>(2)? as u64,
                    suspect: r.get::<_, i64>(3)? as u64,
                    failed: r.get::<_, i64>(4)? as u64,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn load_run(&self, id: i64) -> anyhow::Result<RunData> {
        let run = self.run_record(id)?;
        let servers = self.servers_of(id)?;
        let mut steps = Vec::new();
        let mut q = self.conn.prepare(
            "SELECT id, server, cores, workload, concurrency, status, failure, log_tail, server_cpus,
                    client_cpus, shared_cores, throughput, verdict, rate
             FROM steps WHERE run_id = ?1 ORDER BY server, cores, workload, concurrency, rate, id",
        )?;
        let mut rq = self.conn.prepare(
            "SELECT idx, summary, server_usage, histogram, block, launch FROM rounds WHERE step_id = ?1 ORDER BY idx",
        )?;
        let mut dq = self
            .conn
            .prepare("SELECT diagnosis FROM diagnoses WHERE step_id = ?1")?;
        type Row = (
            i64,
            String,
            u32,
            String,
            u32,
            String,
            Option<String>,
            Option<String>,
            String,
            String,
            bool,
            String,
            String,
            Option<f64>,
        );
        let rows: Vec<Row> = q
            .query_map([id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                    r.get(13)?,
                ))
            })?
            .collect::<Result<_, _>>()?;
        for (
            sid,
            server,
            cores,
            workload,
            concurrency,
            status,
            failure,
            log_tail,
            scpu,
            ccpu,
            shared,
            tp,
            verdict,
            rate,
        ) in rows
        {
            type RoundRow = (u32, String, String, Vec<u8>, Option<u32>, Option<u32>);
            let rounds: Vec<RoundRow> = rq
                .query_map([sid], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect::<Result<_, _>>()?;
            let rounds = rounds
                .into_iter()
                .map(
                    |(index, summary, usage, histogram, block, launch)| -> anyhow::Result<RoundRecord> {
                        Ok(RoundRecord {
                            index,
                            summary: serde_json::from_str::<Summary>(&summary)?,
                            server: serde_json::from_str::<ServerUsage>(&usage)?,
                            histogram,
                            block,
                            launch,
                        })
                    },
                )
                .collect::<anyhow::Result<Vec<_>>>()?;
            let diagnosis = dq
                .query_row([sid], |r| r.get::<_, String>(0))
                .optional()?
                .map(|d| serde_json::from_str(&d))
                .transpose()?;
            steps.push(StepRecord {
                server,
                cores,
                workload,
                concurrency,
                rate,
                status: StepStatus::parse(&status).unwrap_or(StepStatus::Skipped),
                failure,
                log_tail,
                server_cpus: serde_json::from_str(&scpu)?,
                client_cpus: serde_json::from_str(&ccpu)?,
                shared_cores: shared,
                throughput: serde_json::from_str::<Estimate>(&tp)?,
                rounds,
                verdict: serde_json::from_str::<Verdict>(&verdict)?,
                diagnosis,
            });
        }
        let comparisons = self.comparisons_of(id)?;
        Ok(RunData {
            run,
            servers,
            steps,
            comparisons,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{
        ConfigFile, Decision, Environment, Feature, FeatureStatus, Finding, Setting, Severity,
        Source,
    };

    fn step(server: &str, concurrency: u32, rounds: u32) -> StepRecord {
        StepRecord {
            server_cpus: vec![0],
            client_cpus: vec![1],
            shared_cores: false,
            throughput: Estimate {
                mean: 10.0,
                median: 10.0,
                ci_low: 9.0,
                ci_high: 11.0,
                n: rounds,
            },
            rounds: (0..rounds)
                .map(|i| RoundRecord {
                    index: i,
                    summary: Summary {
                        completed: 100 + i as u64,
                        requests_per_sec: 10.0,
                        ..Summary::default()
                    },
                    server: ServerUsage {
                        processes: 2,
                        threads: 3,
                        ..ServerUsage::default()
                    },
                    histogram: vec![1, 2, 3, i as u8],
                    block: None,
                    launch: None,
                })
                .collect(),
            ..StepRecord::new(server, 1, "tiny", concurrency)
        }
    }

    #[test]
    fn diagnoses_and_comparisons_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("t.db")).unwrap();
        let id = st
            .begin_run(&RunRecord {
                baseline: Some("nginx".into()),
                ..RunRecord::default()
            })
            .unwrap();
        st.add_server(id, &server_with_features()).unwrap();
        // Live evidence replaces the config's value of the same setting.
        let live = ParityEntry {
            setting: Setting::AccessLog,
            value: "off".into(),
            source: Source::Live,
            detail: "the logs grew 0 bytes in 1200 requests".into(),
        };
        st.add_parity(id, "squid", std::slice::from_ref(&live))
            .unwrap();
        let mut s = step("squid", 10, 2);
        s.rounds[0].block = Some(0);
        s.diagnosis = Some(throng_model::Diagnosis {
            tool: "perf stat".into(),
            seconds: 0.5,
            requests: 1200,
            syscalls_per_request: [("openat".to_string(), 1.0), ("writev".to_string(), 1.0)]
                .into_iter()
                .collect(),
            total_per_request: Some(6.5),
            voluntary_switches_per_request: 0.25,
            ..Default::default()
        });
        st.add_step(id, &s).unwrap();
        st.add_step(id, &step("squid", 50, 1)).unwrap();
        let cs = [Comparison {
            a: "nginx".into(),
            b: "squid".into(),
            workload: "tiny".into(),
            cores: 1,
            concurrency: None,
            rate: None,
            ratio: 1.5,
            ci_low: 1.25,
            ci_high: 1.75,
            pairs: 40,
            decision: Decision::Higher,
            interval: throng_model::IntervalKind::OrderStatistic,
            launch_ratios: Vec::new(),
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        }];
        st.add_comparisons(id, &cs).unwrap();
        let data = st.load_run(id).unwrap();
        assert_eq!(data.run.baseline.as_deref(), Some("nginx"));
        assert_eq!(data.comparisons, cs);
        assert_eq!(data.steps[0].diagnosis, s.diagnosis);
        assert_eq!(data.steps[1].diagnosis, None);
        assert_eq!(
            data.steps[0]
                .rounds
                .iter()
                .map(|r| r.block)
                .collect::<Vec<_>>(),
            [Some(0), None]
        );
        let server = &data.servers[0];
        assert_eq!(server.profile, "tuned");
        assert_eq!(server.parity.len(), 2);
        assert_eq!(server.parity[0], live);
        assert_eq!(server.parity[1].value, "1");
    }

    #[test]
    fn rate_levels_of_one_concurrency_stay_apart() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("t.db")).unwrap();
        let id = st.begin_run(&RunRecord::default()).unwrap();
        let at = |rate: f64, rounds: u32| StepRecord {
            rate: Some(rate),
            ..step("nginx", 4, rounds)
        };
        // Stored out of order, with a closed-model step of the same
        // concurrency beside them.
        st.add_step(id, &at(400.0, 2)).unwrap();
        st.add_step(id, &step("nginx", 4, 1)).unwrap();
        st.add_step(id, &at(200.0, 3)).unwrap();
        let mut v = at(400.0, 2);
        v.verdict
            .push(throng_model::ReasonCode::Saturated, "did not keep up");
        st.update_verdict(id, &v).unwrap();
        let cs = [Comparison {
            a: "nginx".into(),
            b: "h2o".into(),
            workload: "tiny".into(),
            cores: 1,
            concurrency: Some(4),
            rate: Some(400.0),
            ratio: 1.0,
            ci_low: 0.99,
            ci_high: 1.01,
            pairs: 6,
            decision: Decision::Equal,
            interval: throng_model::IntervalKind::OrderStatistic,
            launch_ratios: Vec::new(),
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        }];
        st.add_comparisons(id, &cs).unwrap();
        let data = st.load_run(id).unwrap();
        let levels: Vec<(u32, Option<f64>, &str)> = data
            .steps
            .iter()
            .map(|s| (s.concurrency, s.rate, s.verdict.label()))
            .map(|(c, r, l)| (c, r, if l == "valid" { "valid" } else { "suspect" }))
            .collect();
        assert_eq!(
            levels,
            [
                (4, None, "valid"),
                (4, Some(200.0), "valid"),
                (4, Some(400.0), "suspect")
            ]
        );
        assert_eq!(data.steps[2], v);
        assert_eq!(data.comparisons, cs);
    }

    #[test]
    fn a_version_3_database_gains_rates_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.db");
        {
            let c = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..3] {
                c.execute_batch(sql).unwrap();
            }
            c.pragma_update(None, "user_version", 3).unwrap();
            c.execute(
                "INSERT INTO runs (id, study, study_toml, started_unix_s, complete, environment)
                 VALUES (1, 'old', '', 1.0, 1, ?1)",
                [serde_json::to_string(&Environment::default()).unwrap()],
            )
            .unwrap();
            c.execute_batch(
                "INSERT INTO steps (id, run_id, server, cores, workload, concurrency, status,
                                    server_cpus, client_cpus, shared_cores, throughput, verdict)
                 VALUES (1, 1, 'nginx', 1, 'tiny', 10, 'ok', '[0]', '[1]', 0,
                         '{\"mean\":1.0,\"median\":1.0,\"ci_low\":1.0,\"ci_high\":1.0,\"n\":1}',
                         '{\"reasons\":[]}');
                 INSERT INTO comparisons (run_id, seq, a, b, workload, cores, concurrency, ratio,
                                          ci_low, ci_high, pairs, decision)
                 VALUES (1, 0, 'nginx', 'h2o', 'tiny', 1, 10, 1.0, 0.9, 1.1, 6, 'equal');",
            )
            .unwrap();
        }
        let st = Store::open(&path).unwrap();
        assert_eq!(st.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(SCHEMA_VERSION, 8);
        let data = st.load_run(1).unwrap();
        // Older runs kept no threshold: it is unknown, not a default.
        assert_eq!(data.run.threshold, None);
        assert_eq!((data.steps[0].concurrency, data.steps[0].rate), (10, None));
        assert_eq!(
            (data.comparisons[0].concurrency, data.comparisons[0].rate),
            (Some(10), None)
        );
        // Nor a range for the next run: the run alone, runs not differing.
        let c = &data.comparisons[0];
        assert_eq!(
            (c.next_run, c.next_run_runs, c.runs_differ),
            (None, None, false)
        );
    }

    #[test]
    fn round_trip_in_report_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut st = Store::open(&path).unwrap();
        assert_eq!(st.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(st.latest_run().unwrap(), None);
        let run = RunRecord {
            study: "quick".into(),
            study_toml: "name = 'quick'".into(),
            started_unix_s: 1.5,
            environment: Environment {
                cpus_online: 2,
                ..Environment::default()
            },
            doctor: vec![Finding {
                check: "cpu.governor".into(),
                severity: Severity::Warn,
                message: "m".into(),
                fix: "f".into(),
            }],
            threshold: Some(throng_model::Threshold::calibrated(7, 1.0e9, 0.031)),
            ..RunRecord::default()
        };
        let id = st.begin_run(&run).unwrap();
        st.add_server(
            id,
            &ServerRecord {
                name: "nginx".into(),
                recipe: "nginx".into(),
                configs: vec![ConfigFile {
                    path: "nginx.conf".into(),
                    content: "x".into(),
                }],
                ..ServerRecord::default()
            },
        )
        .unwrap();
        st.add_step(id, &step("nginx", 50, 3)).unwrap();
        st.add_step(id, &step("h2o", 10, 4)).unwrap();
        st.add_step(id, &step("nginx", 10, 3)).unwrap();
        let mut v = step("nginx", 10, 3);
        v.verdict.push(throng_model::ReasonCode::Noisy, "wide");
        st.update_verdict(id, &v).unwrap();
        drop(st);

        let st = Store::open(&path).unwrap();
        assert_eq!(st.latest_run().unwrap(), Some(id));
        let data = st.load_run(id).unwrap();
        assert!(!data.run.complete);
        assert_eq!(data.run.finished_unix_s, None);
        assert_eq!(data.run.doctor, run.doctor);
        assert_eq!(data.run.environment.cpus_online, 2);
        assert_eq!(data.run.threshold, run.threshold);
        assert_eq!(data.servers[0].configs[0].content, "x");
        // The outline is the run without its steps.
        let outline = st.load_outline(id).unwrap();
        assert_eq!(
            (outline.run, outline.servers, outline.steps.len()),
            (data.run.clone(), data.servers.clone(), 0)
        );
        let order: Vec<(&str, u32)> = data
            .steps
            .iter()
            .map(|s| (s.server.as_str(), s.concurrency))
            .collect();
        assert_eq!(order, [("h2o", 10), ("nginx", 10), ("nginx", 50)]);
        assert_eq!(data.steps[0], step("h2o", 10, 4));
        assert_eq!(data.steps[1].verdict.label(), "suspect: noisy");
        assert_eq!(data.steps[2].rounds[2].histogram, [1, 2, 3, 2]);
        assert_eq!(data.steps[2].rounds[2].summary.completed, 102);
        assert!(st.load_run(id + 1).is_err());
    }

    #[test]
    fn finish_and_list() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("t.db")).unwrap();
        let a = st
            .begin_run(&RunRecord {
                study: "a".into(),
                ..RunRecord::default()
            })
            .unwrap();
        let b = st
            .begin_run(&RunRecord {
                study: "b".into(),
                ..RunRecord::default()
            })
            .unwrap();
        st.finish_run(a, true).unwrap();
        let runs = st.list_runs().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].id, runs[0].complete), (a, true));
        assert!(runs[0].finished_unix_s.unwrap() > 1.0e9);
        assert_eq!(
            (runs[1].id, runs[1].complete, runs[1].study.as_str()),
            (b, false, "b")
        );
    }

    #[test]
    fn steps_are_counted_by_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("t.db")).unwrap();
        let a = st.begin_run(&RunRecord::default()).unwrap();
        let empty = st.begin_run(&RunRecord::default()).unwrap();
        let b = st.begin_run(&RunRecord::default()).unwrap();
        st.add_step(a, &step("nginx", 10, 1)).unwrap();
        let mut suspect = step("nginx", 50, 1);
        suspect
            .verdict
            .push(throng_model::ReasonCode::ClientBound, "busy");
        suspect
            .verdict
            .push(throng_model::ReasonCode::Noisy, "wide");
        st.add_step(a, &suspect).unwrap();
        let failed = StepRecord {
            status: StepStatus::Failed,
            failure: Some("exited".into()),
            ..StepRecord::new("h2o", 1, "tiny", 10)
        };
        st.add_step(a, &failed).unwrap();
        let skipped = StepRecord {
            status: StepStatus::Skipped,
            ..StepRecord::new("h2o", 4, "tiny", 10)
        };
        st.add_step(a, &skipped).unwrap();
        st.add_step(b, &step("nginx", 10, 2)).unwrap();
        let counts = st.step_counts().unwrap();
        assert_eq!(
            counts[&a],
            StepCounts {
                steps: 4,
                valid: 1,
                suspect: 1,
                failed: 1
            }
        );
        assert_eq!(
            counts[&b],
            StepCounts {
                steps: 1,
                valid: 1,
                ..StepCounts::default()
            }
        );
        assert!(!counts.contains_key(&empty));
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let e = format!("{:#}", Store::open(&path).err().unwrap());
        assert_eq!(
            e,
            format!(
                "open {}: the database has schema version 99, newer than this throng's {SCHEMA_VERSION}",
                path.display()
            )
        );
    }

    fn server_with_features() -> ServerRecord {
        ServerRecord {
            name: "squid".into(),
            recipe: "squid".into(),
            version: "5.7".into(),
            package: "squid".into(),
            model: "event loop".into(),
            exe_bytes: 7_123_456,
            installed_bytes: 13_894_656,
            profile: Profile::Tuned,
            parity: vec![
                ParityEntry {
                    setting: Setting::AccessLog,
                    value: "off".into(),
                    source: Source::Config,
                    detail: "access_log none".into(),
                },
                ParityEntry {
                    setting: Setting::Workers,
                    value: "1".into(),
                    source: Source::Lab,
                    detail: String::new(),
                },
            ],
            configs: vec![ConfigFile {
                path: "c1-tiny/squid/squid.conf".into(),
                content: "workers 1\n".into(),
            }],
            features: vec![
                FeatureResult {
                    name: Feature::BasicAuth,
                    status: FeatureStatus::Yes,
                    evidence: "401 without credentials, 200 with".into(),
                },
                FeatureResult {
                    name: Feature::Sendfile,
                    status: FeatureStatus::No,
                    evidence: "config: no `sendfile on` (nginx's default is off)".into(),
                },
                FeatureResult {
                    name: Feature::Tls,
                    status: FeatureStatus::Untested,
                    evidence: "untested until TLS load lands".into(),
                },
            ],
            max_users: vec![
                MaxUsers {
                    cores: 1,
                    workload: "tiny".into(),
                    patience_s: 3.0,
                    level: Some(512),
                    broke_at: Some(1024),
                    broke_by: "37 resets".into(),
                },
                MaxUsers {
                    cores: 2,
                    workload: "tiny".into(),
                    patience_s: 0.5,
                    level: None,
                    broke_at: Some(2),
                    broke_by: "p99 4.1 s".into(),
                },
            ],
        }
    }

    #[test]
    fn features_installed_bytes_and_max_users_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut st = Store::open(&path).unwrap();
        let id = st.begin_run(&RunRecord::default()).unwrap();
        let full = server_with_features();
        st.add_server(id, &full).unwrap();

        // The lab's order: the server first, then what it learns about it.
        let later = ServerRecord {
            name: "nginx".into(),
            recipe: "nginx".into(),
            ..ServerRecord::default()
        };
        st.add_server(id, &later).unwrap();
        st.set_installed_bytes(id, "nginx", 1_234_567).unwrap();
        st.add_features(id, "nginx", &full.features[..2]).unwrap();
        st.add_features(id, "nginx", &full.features[2..]).unwrap();
        for m in &full.max_users {
            st.add_max_users(id, "nginx", m).unwrap();
        }
        assert!(st.add_features(id, "h2o", &full.features).is_err());
        assert!(st.add_max_users(id, "h2o", &full.max_users[0]).is_err());
        assert!(st.set_installed_bytes(id, "h2o", 1).is_err());
        drop(st);

        let data = Store::open(&path).unwrap().load_run(id).unwrap();
        assert_eq!(data.servers.len(), 2);
        assert_eq!(data.servers[0], full);
        assert_eq!(
            data.servers[1],
            ServerRecord {
                installed_bytes: 1_234_567,
                features: full.features.clone(),
                max_users: full.max_users.clone(),
                ..later
            }
        );
    }

    #[test]
    fn version_1_database_is_migrated_and_old_rows_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        // Rows as a throng of schema version 1 wrote them.
        c.execute(
            "INSERT INTO runs (id, study, study_toml, started_unix_s, finished_unix_s, complete, environment)
             VALUES (1, 'quick', 'name = \"quick\"', 1.5, 2.5, 1, ?1)",
            [serde_json::to_string(&Environment {
                cpus_online: 2,
                ..Environment::default()
            })
            .unwrap()],
        )
        .unwrap();
        c.execute_batch(
            r#"
INSERT INTO servers (id, run_id, name, recipe, version, package, model, exe_bytes)
    VALUES (1, 1, 'nginx', 'nginx', '1.22.1', 'nginx-light', 'event loop', 1234);
INSERT INTO configs (server_id, seq, path, content) VALUES (1, 0, 'nginx.conf', 'x');
"#,
        )
        .unwrap();
        let old = step("nginx", 10, 1);
        c.execute(
            "INSERT INTO steps (id, run_id, server, cores, workload, concurrency, status, failure, log_tail,
                                server_cpus, client_cpus, shared_cores, throughput, verdict)
             VALUES (1, 1, 'nginx', 1, 'tiny', 10, 'ok', NULL, NULL, '[0]', '[1]', 0, ?1, ?2)",
            params![
                serde_json::to_string(&old.throughput).unwrap(),
                serde_json::to_string(&old.verdict).unwrap()
            ],
        )
        .unwrap();
        let r = &old.rounds[0];
        c.execute(
            "INSERT INTO rounds (step_id, idx, requests_per_sec, summary, server_usage, histogram)
             VALUES (1, 0, 10.0, ?1, ?2, ?3)",
            params![
                serde_json::to_string(&r.summary).unwrap(),
                serde_json::to_string(&r.server).unwrap(),
                r.histogram
            ],
        )
        .unwrap();
        drop(c);

        let mut st = Store::open(&path).unwrap();
        assert_eq!(st.schema_version().unwrap(), SCHEMA_VERSION);
        let data = st.load_run(1).unwrap();
        assert_eq!(
            (
                data.run.study.as_str(),
                data.run.complete,
                data.run.finished_unix_s
            ),
            ("quick", true, Some(2.5))
        );
        assert_eq!(data.run.environment.cpus_online, 2);
        assert_eq!(
            data.servers,
            [ServerRecord {
                name: "nginx".into(),
                recipe: "nginx".into(),
                version: "1.22.1".into(),
                package: "nginx-light".into(),
                model: "event loop".into(),
                exe_bytes: 1234,
                configs: vec![ConfigFile {
                    path: "nginx.conf".into(),
                    content: "x".into(),
                }],
                installed_bytes: 0,
                features: Vec::new(),
                max_users: Vec::new(),
                profile: Profile::Defaults,
                parity: Vec::new(),
            }]
        );
        assert_eq!(data.steps, [old]);

        // The migrated database takes the new rows for the old server.
        st.add_features(1, "nginx", &server_with_features().features)
            .unwrap();
        st.set_installed_bytes(1, "nginx", 99).unwrap();
        drop(st);
        let st = Store::open(&path).unwrap();
        assert_eq!(st.schema_version().unwrap(), SCHEMA_VERSION);
        let s = &st.load_run(1).unwrap().servers[0];
        assert_eq!((s.installed_bytes, s.features.len()), (99, 3));
    }
}
