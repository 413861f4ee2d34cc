//! The decision threshold a run decides its comparisons with: the study's
//! own when it pins one, else the smallest difference the latest
//! calibration run of this machine could decide, else the study's
//! fallback. The figure is `throng_stats::calibration`'s, the one a
//! calibration run's report shows.

use throng_model::{Environment, RunKind, RunRecord, Threshold, ThresholdSource};
use throng_stats::calibration::Calibration;
use throng_store::Store;

use crate::study::PrecisionRule;

/// Whether a run measured on `then` calibrates one measured on `now`.
/// Noise is the machine's: its CPUs, its kernel's scheduling, the
/// neighbours that share it. The host name alone may be shared by every
/// container of an image, and the CPU model alone by a fleet, so both
/// must match; and a run spread over hosts has the network's noise on top
/// of the server host's, so it calibrates only runs spread likewise.
pub fn same_machine(now: &Environment, then: &Environment) -> bool {
    now.hostname == then.hostname
        && now.cpu_model == then.cpu_model
        && now.hosts.is_empty() == then.hosts.is_empty()
}

/// The latest complete calibration run measured on `here` that decides
/// anything, with its smallest decidable difference. An interrupted
/// calibration, or one whose A/A pairs had too few slices for an
/// interval, says nothing of the machine and is passed over for an older
/// one.
pub fn latest(store: &Store, here: &Environment) -> anyhow::Result<Option<(RunRecord, f64)>> {
    let mut runs = store.list_runs()?;
    runs.reverse();
    for r in runs {
        if !r.complete
            || !matches!(r.kind(), RunKind::Study { .. })
            || !same_machine(here, &r.environment)
        {
            continue;
        }
        let outline = store.load_outline(r.id)?;
        if !throng_stats::calibration::is_calibration(&outline.servers) {
            continue;
        }
        // Its steps too: their verdicts say whose launches differed, and
        // those twins do not set the machine's threshold.
        let run = store.load_run(r.id)?;
        if let Some(d) = Calibration::of(&run).and_then(|c| c.smallest_decidable()) {
            return Ok(Some((run.run, d)));
        }
    }
    Ok(None)
}

/// The threshold of a run of a study with `rule` about to start on `here`.
pub fn threshold(
    rule: PrecisionRule,
    store: &Store,
    here: &Environment,
) -> anyhow::Result<Threshold> {
    Ok(match rule {
        PrecisionRule::Pinned(value) => Threshold {
            value,
            source: ThresholdSource::Study,
        },
        PrecisionRule::Calibrated { fallback } => match latest(store, here)? {
            Some((run, d)) => Threshold::calibrated(run.id, run.started_unix_s, d),
            None => Threshold {
                value: fallback,
                source: ThresholdSource::Default,
            },
        },
    })
}

/// The threshold in one line for the run's progress: "decision threshold
/// ±3.1%, from calibration run 12".
pub fn note(t: &Threshold) -> String {
    let from = match t.source {
        ThresholdSource::Study => "set by the study".to_string(),
        ThresholdSource::Calibration { run, measured, .. } if t.held() => format!(
            "from calibration run {run}, whose ±{:.1}% is held to the range the lab takes",
            measured * 100.0
        ),
        ThresholdSource::Calibration { run, .. } => format!("from calibration run {run}"),
        ThresholdSource::Default => {
            "the study's default: no calibration run of this machine".to_string()
        }
    };
    format!("decision threshold ±{:.1}%, {from}", t.value * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_is_this_machines_when_host_and_cpu_both_match() {
        let here = Environment {
            hostname: "lab1".into(),
            cpu_model: "AMD EPYC 7B13".into(),
            ..Environment::default()
        };
        assert!(same_machine(&here, &here.clone()));
        let other_host = Environment {
            hostname: "lab2".into(),
            ..here.clone()
        };
        assert!(!same_machine(&here, &other_host));
        let other_cpu = Environment {
            cpu_model: "Intel Xeon".into(),
            ..here.clone()
        };
        assert!(!same_machine(&here, &other_cpu));
        let spread = Environment {
            hosts: vec![throng_model::HostRecord::default()],
            ..here.clone()
        };
        assert!(!same_machine(&here, &spread));
    }

    #[test]
    fn the_note_says_the_threshold_and_where_it_came_from() {
        let study = Threshold {
            value: 0.05,
            source: ThresholdSource::Study,
        };
        assert_eq!(note(&study), "decision threshold ±5.0%, set by the study");
        assert_eq!(
            note(&Threshold::calibrated(12, 1.0, 0.031)),
            "decision threshold ±3.1%, from calibration run 12"
        );
        assert_eq!(
            note(&Threshold::calibrated(12, 1.0, 0.4)),
            "decision threshold ±25.0%, from calibration run 12, whose ±40.0% is held to the \
             range the lab takes"
        );
        let default = Threshold {
            value: 0.05,
            source: ThresholdSource::Default,
        };
        assert_eq!(
            note(&default),
            "decision threshold ±5.0%, the study's default: no calibration run of this machine"
        );
    }
}
