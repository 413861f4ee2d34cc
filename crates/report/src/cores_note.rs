//! The warning a run of `cores = "auto"` carries when the machine it ran
//! on swept fewer core counts than a full sweep: its main axis has
//! collapsed, and the report says how far it went here, why, and what to
//! do (the lab said the same before it started).

use throng_model::{RunData, StepStatus};

/// The note, from the study stored with the run and the machine it ran
/// on; `None` for a study that lists its core counts, a run spread over
/// hosts (where every CPU of the server host serves), or a full sweep.
pub fn auto_cores(run: &RunData) -> Option<String> {
    let r = &run.run;
    if !r.environment.hosts.is_empty() {
        return None;
    }
    let study = r.study_toml.parse::<toml::Table>().ok()?;
    if study.get("cores").and_then(|c| c.as_str()) != Some("auto") {
        return None;
    }
    let mut swept: Vec<u32> = run
        .steps
        .iter()
        .filter(|s| s.status != StepStatus::Skipped)
        .map(|s| s.cores)
        .collect();
    swept.sort_unstable();
    swept.dedup();
    throng_model::cores::auto_cores_note(&swept, r.environment.cpus_online)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::StepRecord;

    /// static-sweep's run on a machine of `cpus` CPUs that measured
    /// `cores`, spread over hosts or not.
    fn run(cores_key: &str, cpus: u32, measured: &[u32], apart: bool) -> RunData {
        let mut run = RunData::default();
        run.run.study_toml = format!("name = \"static-sweep\"\ncores = {cores_key}\n");
        run.run.environment.cpus_online = cpus;
        if apart {
            run.run.environment.hosts = vec![Default::default()];
        }
        run.steps = measured
            .iter()
            .map(|&c| StepRecord {
                server: "nginx".into(),
                cores: c,
                workload: "tiny".into(),
                concurrency: 100,
                rate: None,
                status: StepStatus::Ok,
                failure: None,
                log_tail: None,
                server_cpus: vec![0],
                client_cpus: vec![1],
                shared_cores: false,
                throughput: Default::default(),
                rounds: Vec::new(),
                verdict: throng_model::Verdict::valid(),
                diagnosis: None,
            })
            .collect();
        run
    }

    #[test]
    fn an_auto_sweep_on_two_cpus_says_it_swept_one_core_and_what_to_do() {
        assert_eq!(
            auto_cores(&run("\"auto\"", 2, &[1], false)).unwrap(),
            "cores = \"auto\" swept 1 server core only on this machine, not 1, 2, 4 and 8: it \
             has 2 CPUs, and each count keeps a CPU for the load generator (one CPU for the \
             server, one for the client). To sweep 2, 4 and 8 cores, run the study on a machine \
             of 9 CPUs or more, or with the servers on a host of their own and the load from \
             another (server_host and client_hosts, docs/study-format.md#hosts), where every CPU \
             of the server host serves."
        );
        // Listed counts, a full sweep, or a run apart: nothing to say.
        assert_eq!(auto_cores(&run("[1]", 2, &[1], false)), None);
        assert_eq!(auto_cores(&run("\"auto\"", 16, &[1, 2, 4, 8], false)), None);
        assert_eq!(auto_cores(&run("\"auto\"", 2, &[1, 2], true)), None);
    }
}
