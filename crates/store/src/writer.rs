//! A run as it is written: begun with its record and its servers, its rows
//! added as they are measured, finished once. A study's run and a saved
//! `throng load` are written through it alike, so a run is stored in one
//! order whoever measured it, and a run that is dropped unfinished stays
//! marked incomplete.

use throng_model::{
    Comparison, ConfigFile, Environment, Finding, MaxUsers, ParityEntry, RunRecord, ServerRecord,
    StepRecord, Threshold,
};

use crate::Store;

/// What a run is before it has an id: the rest of its [`RunRecord`] is
/// what the store sets (its id, its end, whether it completed).
pub struct NewRun {
    pub study: String,
    /// The study's TOML, or a saved load's command line.
    pub study_toml: String,
    pub started_unix_s: f64,
    pub environment: Environment,
    pub doctor: Vec<Finding>,
    pub baseline: Option<String>,
    /// The decision threshold the run's comparisons are decided with.
    pub threshold: Option<Threshold>,
    pub servers: Vec<ServerRecord>,
}

/// The rows of one run, written in the order they are measured.
pub struct RunWriter<'a> {
    store: &'a mut Store,
    id: i64,
}

impl<'a> RunWriter<'a> {
    /// Stores the run, not yet finished, with its servers.
    pub fn begin(store: &'a mut Store, run: NewRun) -> anyhow::Result<RunWriter<'a>> {
        let id = store.begin_run(&RunRecord {
            id: 0,
            study: run.study,
            study_toml: run.study_toml,
            started_unix_s: run.started_unix_s,
            finished_unix_s: None,
            complete: false,
            environment: run.environment,
            doctor: run.doctor,
            baseline: run.baseline,
            threshold: run.threshold,
        })?;
        for s in &run.servers {
            store.add_server(id, s)?;
        }
        Ok(RunWriter { store, id })
    }

    pub fn id(&self) -> i64 {
        self.id
    }

    pub fn step(&mut self, step: &StepRecord) -> anyhow::Result<i64> {
        self.store.add_step(self.id, step)
    }

    /// A step's verdict, judged again once its comparisons are known.
    pub fn verdict(&mut self, step: &StepRecord) -> anyhow::Result<()> {
        self.store.update_verdict(self.id, step)
    }

    pub fn features(
        &mut self,
        server: &str,
        found: &[throng_model::FeatureResult],
    ) -> anyhow::Result<()> {
        self.store.add_features(self.id, server, found)
    }

    pub fn configs(&mut self, server: &str, configs: &[ConfigFile]) -> anyhow::Result<()> {
        self.store.add_configs(self.id, server, configs)
    }

    pub fn max_users(&mut self, server: &str, m: &MaxUsers) -> anyhow::Result<()> {
        self.store.add_max_users(self.id, server, m)
    }

    pub fn comparisons(&mut self, cs: &[Comparison]) -> anyhow::Result<()> {
        self.store.add_comparisons(self.id, cs)
    }

    pub fn parity(&mut self, server: &str, entries: &[ParityEntry]) -> anyhow::Result<()> {
        self.store.add_parity(self.id, server, entries)
    }

    pub fn prices(&mut self, p: &throng_model::CorePrices) -> anyhow::Result<()> {
        self.store.add_prices(self.id, p)
    }

    /// Ends the run: `complete` when everything asked for was measured.
    pub fn finish(&mut self, complete: bool) -> anyhow::Result<()> {
        self.store.finish_run(self.id, complete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_begun_with_its_servers_and_stays_incomplete_until_finished() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let new = || NewRun {
            study: "quick".into(),
            study_toml: "name = \"quick\"\n".into(),
            started_unix_s: 1_700_000_000.0,
            environment: Environment::default(),
            doctor: Vec::new(),
            baseline: Some("nginx".into()),
            threshold: None,
            servers: vec![ServerRecord {
                name: "nginx".into(),
                recipe: "nginx".into(),
                ..ServerRecord::default()
            }],
        };
        let mut run = RunWriter::begin(&mut store, new()).unwrap();
        run.step(&StepRecord::new("nginx", 1, "tiny", 4)).unwrap();
        // Dropped unfinished, as a run whose process died.
        let first = run.id();
        let mut run = RunWriter::begin(&mut store, new()).unwrap();
        run.finish(true).unwrap();
        let second = run.id();
        let one = store.load_run(first).unwrap();
        assert_eq!(
            (
                one.run.complete,
                one.run.finished_unix_s,
                one.servers.len(),
                one.steps.len()
            ),
            (false, None, 1, 1)
        );
        assert_eq!(one.run.baseline.as_deref(), Some("nginx"));
        assert!(store.load_run(second).unwrap().run.complete);
    }
}
