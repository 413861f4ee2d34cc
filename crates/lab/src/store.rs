//! The SQLite store of runs. The schema is versioned with `PRAGMA
//! user_version`; each migration moves it one version up, inside a
//! transaction, so an old database is upgraded in place when opened.
//!
//! Rows are written as the lab goes (a step when it finishes), so a run
//! that is interrupted keeps everything it measured.

use std::path::Path;

use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};
use throng_model::{
    Environment, Estimate, Finding, RoundRecord, RunData, RunRecord, ServerRecord, ServerUsage,
    StepRecord, StepStatus, Summary, Verdict,
};

/// Migrations, in order; entry i moves the schema from version i to i+1.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    study_toml TEXT NOT NULL,
    started_unix_s REAL NOT NULL,
    finished_unix_s REAL,
    complete INTEGER NOT NULL DEFAULT 0,
    environment TEXT NOT NULL
);
CREATE TABLE findings (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    check_id TEXT NOT NULL,
    severity TEXT NOT NULL,
    message TEXT NOT NULL,
    fix TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE servers (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    recipe TEXT NOT NULL,
    version TEXT NOT NULL,
    package TEXT NOT NULL,
    model TEXT NOT NULL,
    exe_bytes INTEGER NOT NULL,
    UNIQUE (run_id, name)
);
CREATE TABLE configs (
    server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    path TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (server_id, seq)
);
CREATE TABLE steps (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    server TEXT NOT NULL,
    cores INTEGER NOT NULL,
    workload TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    status TEXT NOT NULL,
    failure TEXT,
    log_tail TEXT,
    server_cpus TEXT NOT NULL,
    client_cpus TEXT NOT NULL,
    shared_cores INTEGER NOT NULL,
    throughput TEXT NOT NULL,
    verdict TEXT NOT NULL
);
CREATE INDEX steps_run ON steps(run_id);
CREATE TABLE rounds (
    step_id INTEGER NOT NULL REFERENCES steps(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    requests_per_sec REAL NOT NULL,
    summary TEXT NOT NULL,
    server_usage TEXT NOT NULL,
    histogram BLOB NOT NULL,
    PRIMARY KEY (step_id, idx)
);
"#];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub struct Store {
    conn: Connection,
}

fn status_name(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Ok => "ok",
        StepStatus::Failed => "failed",
        StepStatus::Skipped => "skipped",
        StepStatus::Unsupported => "unsupported",
    }
}

fn status_parse(s: &str) -> StepStatus {
    match s {
        "ok" => StepStatus::Ok,
        "failed" => StepStatus::Failed,
        "unsupported" => StepStatus::Unsupported,
        _ => StepStatus::Skipped,
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Store {
    /// Opens (creating if needed) and migrates to the current schema.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let mut store = Store { conn };
        store.migrate()?;
        Ok(store)
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
            "INSERT INTO runs (study, study_toml, started_unix_s, finished_unix_s, complete, environment)
             VALUES (?1, ?2, ?3, NULL, 0, ?4)",
            params![
                run.study,
                run.study_toml,
                run.started_unix_s,
                serde_json::to_string(&run.environment)?
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
            params![run_id, now_unix(), complete],
        )?;
        Ok(())
    }

    pub fn add_server(&mut self, run_id: i64, s: &ServerRecord) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO servers (run_id, name, recipe, version, package, model, exe_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run_id,
                s.name,
                s.recipe,
                s.version,
                s.package,
                s.model,
                s.exe_bytes as i64
            ],
        )?;
        let sid = tx.last_insert_rowid();
        for (i, c) in s.configs.iter().enumerate() {
            tx.execute(
                "INSERT INTO configs (server_id, seq, path, content) VALUES (?1, ?2, ?3, ?4)",
                params![sid, i as i64, c.path, c.content],
            )?;
        }
        tx.commit()?;
        Ok(())
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
                                server_cpus, client_cpus, shared_cores, throughput, verdict)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                run_id,
                s.server,
                s.cores,
                s.workload,
                s.concurrency,
                status_name(s.status),
                s.failure,
                s.log_tail,
                serde_json::to_string(&s.server_cpus)?,
                serde_json::to_string(&s.client_cpus)?,
                s.shared_cores,
                serde_json::to_string(&s.throughput)?,
                serde_json::to_string(&s.verdict)?,
            ],
        )?;
        let step_id = tx.last_insert_rowid();
        for r in &s.rounds {
            tx.execute(
                "INSERT INTO rounds (step_id, idx, requests_per_sec, summary, server_usage, histogram)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    step_id,
                    r.index,
                    r.summary.requests_per_sec,
                    serde_json::to_string(&r.summary)?,
                    serde_json::to_string(&r.server)?,
                    r.histogram,
                ],
            )?;
        }
        tx.commit()?;
        Ok(step_id)
    }

    /// Replaces the verdicts of a run's steps (sweep verdicts are decided
    /// once a whole sweep is known).
    pub fn update_verdict(&mut self, run_id: i64, s: &StepRecord) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE steps SET verdict = ?6 WHERE run_id = ?1 AND server = ?2 AND cores = ?3 AND workload = ?4 AND concurrency = ?5",
            params![run_id, s.server, s.cores, s.workload, s.concurrency, serde_json::to_string(&s.verdict)?],
        )?;
        Ok(())
    }

    pub fn latest_run(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT max(id) FROM runs", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()?
            .flatten())
    }

    fn run_record(&self, id: i64) -> anyhow::Result<RunRecord> {
        let mut run = self
            .conn
            .query_row(
                "SELECT id, study, study_toml, started_unix_s, finished_unix_s, complete, environment FROM runs WHERE id = ?1",
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
                        },
                        r.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()?
            .with_context(|| format!("no run {id} in the database"))
            .map(|(mut run, env)| -> anyhow::Result<RunRecord> {
                run.environment = serde_json::from_str(&env)?;
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

    pub fn load_run(&self, id: i64) -> anyhow::Result<RunData> {
        let run = self.run_record(id)?;
        let mut servers = Vec::new();
        let mut q = self.conn.prepare(
            "SELECT id, name, recipe, version, package, model, exe_bytes FROM servers WHERE run_id = ?1 ORDER BY id",
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
                    configs: Vec::new(),
                },
            ))
        })?;
        let mut cq = self
            .conn
            .prepare("SELECT path, content FROM configs WHERE server_id = ?1 ORDER BY seq")?;
        for row in rows {
            let (sid, mut s) = row?;
            s.configs = cq
                .query_map([sid], |r| {
                    Ok(throng_model::ConfigFile {
                        path: r.get(0)?,
                        content: r.get(1)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            servers.push(s);
        }
        let mut steps = Vec::new();
        let mut q = self.conn.prepare(
            "SELECT id, server, cores, workload, concurrency, status, failure, log_tail, server_cpus,
                    client_cpus, shared_cores, throughput, verdict
             FROM steps WHERE run_id = ?1 ORDER BY server, cores, workload, concurrency, id",
        )?;
        let mut rq = self.conn.prepare(
            "SELECT idx, summary, server_usage, histogram FROM rounds WHERE step_id = ?1 ORDER BY idx",
        )?;
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
        ) in rows
        {
            let rounds: Vec<(u32, String, String, Vec<u8>)> = rq
                .query_map([sid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()?;
            let rounds = rounds
                .into_iter()
                .map(
                    |(index, summary, usage, histogram)| -> anyhow::Result<RoundRecord> {
                        Ok(RoundRecord {
                            index,
                            summary: serde_json::from_str::<Summary>(&summary)?,
                            server: serde_json::from_str::<ServerUsage>(&usage)?,
                            histogram,
                        })
                    },
                )
                .collect::<anyhow::Result<Vec<_>>>()?;
            steps.push(StepRecord {
                server,
                cores,
                workload,
                concurrency,
                status: status_parse(&status),
                failure,
                log_tail,
                server_cpus: serde_json::from_str(&scpu)?,
                client_cpus: serde_json::from_str(&ccpu)?,
                shared_cores: shared,
                throughput: serde_json::from_str::<Estimate>(&tp)?,
                rounds,
                verdict: serde_json::from_str::<Verdict>(&verdict)?,
            });
        }
        Ok(RunData {
            run,
            servers,
            steps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{ConfigFile, Severity};

    fn step(server: &str, concurrency: u32, rounds: u32) -> StepRecord {
        StepRecord {
            server: server.into(),
            cores: 1,
            workload: "tiny".into(),
            concurrency,
            status: StepStatus::Ok,
            failure: None,
            log_tail: None,
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
                })
                .collect(),
            verdict: Verdict::valid(),
        }
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
        v.verdict.push("noisy", "wide");
        st.update_verdict(id, &v).unwrap();
        drop(st);

        let st = Store::open(&path).unwrap();
        assert_eq!(st.latest_run().unwrap(), Some(id));
        let data = st.load_run(id).unwrap();
        assert!(!data.run.complete);
        assert_eq!(data.run.finished_unix_s, None);
        assert_eq!(data.run.doctor, run.doctor);
        assert_eq!(data.run.environment.cpus_online, 2);
        assert_eq!(data.servers[0].configs[0].content, "x");
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
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let e = Store::open(&path).err().unwrap().to_string();
        assert_eq!(
            e,
            format!(
                "the database has schema version 99, newer than this throng's {SCHEMA_VERSION}"
            )
        );
    }
}
