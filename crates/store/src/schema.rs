//! The schema, as the migrations that build it: a database at version N
//! has had the first N applied, in order, and never changes otherwise.

/// Migrations, in order; entry i moves the schema from version i to i+1.
pub(crate) const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    r#"
ALTER TABLE servers ADD COLUMN installed_bytes INTEGER NOT NULL DEFAULT 0;
CREATE TABLE features (
    server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    evidence TEXT NOT NULL,
    PRIMARY KEY (server_id, seq)
);
CREATE TABLE max_users (
    server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    cores INTEGER NOT NULL,
    workload TEXT NOT NULL,
    patience_s REAL NOT NULL,
    level INTEGER,
    broke_at INTEGER,
    broke_by TEXT NOT NULL,
    PRIMARY KEY (server_id, seq)
);
"#,
    r#"
ALTER TABLE servers ADD COLUMN profile TEXT NOT NULL DEFAULT 'defaults';
ALTER TABLE runs ADD COLUMN baseline TEXT;
ALTER TABLE rounds ADD COLUMN block INTEGER;
CREATE TABLE parity (
    server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    setting TEXT NOT NULL,
    value TEXT NOT NULL,
    source TEXT NOT NULL,
    detail TEXT NOT NULL,
    PRIMARY KEY (server_id, setting)
);
CREATE TABLE diagnoses (
    step_id INTEGER PRIMARY KEY REFERENCES steps(id) ON DELETE CASCADE,
    diagnosis TEXT NOT NULL
);
CREATE TABLE comparisons (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    workload TEXT NOT NULL,
    cores INTEGER NOT NULL,
    concurrency INTEGER,
    ratio REAL NOT NULL,
    ci_low REAL NOT NULL,
    ci_high REAL NOT NULL,
    pairs INTEGER NOT NULL,
    decision TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"#,
    // Open-model levels share their concurrency: the offered rate tells
    // them apart. NULL, as every older row reads, is the closed model.
    r#"
ALTER TABLE steps ADD COLUMN rate REAL;
ALTER TABLE comparisons ADD COLUMN rate REAL;
"#,
    // Servers are started several times a run: a round says which start
    // it measured, and a comparison how its interval was drawn and each
    // launch's own ratio (a JSON array). NULL, as older rows read, is one
    // launch and the order-statistic interval.
    r#"
ALTER TABLE rounds ADD COLUMN launch INTEGER;
ALTER TABLE comparisons ADD COLUMN interval TEXT;
ALTER TABLE comparisons ADD COLUMN launch_ratios TEXT;
"#,
    // The decision threshold a run used and where it came from (the
    // model's `Threshold` as JSON). NULL, as older runs read, is unknown:
    // they kept only the study file that may name it.
    r#"
ALTER TABLE runs ADD COLUMN threshold TEXT;
"#,
    // Where the next run's ratio should land, as a JSON pair; NULL where
    // the interval was not drawn over launches.
    r#"
ALTER TABLE comparisons ADD COLUMN next_run TEXT;
"#,
    // How many runs of the study on the machine that range was drawn
    // over, and whether their ratios spread beyond their launches. NULL,
    // as older rows read, is the run alone.
    r#"
ALTER TABLE comparisons ADD COLUMN next_run_runs INTEGER;
ALTER TABLE comparisons ADD COLUMN runs_differ INTEGER;
"#,
];
