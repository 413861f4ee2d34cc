//! CSV and JSON: the numbers without the prose.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::Serialize;
use throng_model::{Comparison, Profile, RunData, Setting, Source};

use crate::analysis::Analysis;
use crate::error::Result;
use crate::escape::csv_text;
use crate::figures::StepFigures;
use crate::launches::LaunchGroup;
use crate::summary::SummaryRow;

/// Version of the JSON report document. Bump on any incompatible change.
pub const JSON_SCHEMA: u32 = 1;

const CSV_HEADER: &str = "run,server,version,cores,workload,concurrency,status,rounds,\
rps_mean,rps_median,rps_ci_low,rps_ci_high,mb_per_sec,latency_mean_us,p50_us,p99_us,min_us,\
max_us,completed,errors,server_cpu_us_per_request,server_cpu_utilisation,pss_peak_bytes,\
rss_peak_bytes,shared_cores,verdict,failure";

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        String::new()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

pub fn csv(run: &RunData, a: &Analysis) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push_str("\r\n");
    for f in &a.steps {
        let version = run
            .servers
            .iter()
            .find(|s| s.name == f.server)
            .map(|s| s.version.as_str())
            .unwrap_or("");
        let fields = [
            run.run.id.to_string(),
            csv_text(&f.server),
            csv_text(version),
            f.cores.to_string(),
            csv_text(&f.workload),
            f.concurrency.to_string(),
            f.status.name().to_string(),
            f.rounds.to_string(),
            num(f.throughput.mean),
            num(f.throughput.median),
            num(f.throughput.ci_low),
            num(f.throughput.ci_high),
            num(f.mb_per_sec),
            f.latency_mean_us.map(num).unwrap_or_default(),
            opt(f.p50_us),
            opt(f.p99_us),
            opt(f.min_us),
            opt(f.max_us),
            f.completed.to_string(),
            f.errors.to_string(),
            f.cpu_us_per_request.map(num).unwrap_or_default(),
            f.cpu_utilisation.map(num).unwrap_or_default(),
            opt(f.pss_peak_bytes),
            opt(f.rss_peak_bytes),
            f.shared_cores.to_string(),
            csv_text(&f.verdict.label()),
            csv_text(f.failure.as_deref().unwrap_or("")),
        ];
        out.push_str(&fields.join(","));
        out.push_str("\r\n");
    }
    out
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: u32,
    baseline: Option<&'a str>,
    run: &'a RunData,
    summary: &'a [SummaryRow],
    comparisons: &'a [Comparison],
    /// Per group, each server's variance split between slices and
    /// launches; empty when every server was started once.
    launches: &'a [LaunchGroup],
    servers: Vec<JsonServer<'a>>,
    steps: &'a [StepFigures],
}

/// A server's settings keyed by setting, for tools that look one up.
#[derive(Serialize)]
struct JsonServer<'a> {
    name: &'a str,
    profile: Profile,
    parity: JsonParity<'a>,
}

/// Settings in [`Setting::ALL`] order, each under [`Setting::name`], as
/// recipes and the database spell it: the enum's derived serde name spells
/// the keep-alive settings `keep_alive_*`, which nothing else uses.
struct JsonParity<'a>(BTreeMap<Setting, JsonSetting<'a>>);

impl Serialize for JsonParity<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k.name(), v)?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct JsonSetting<'a> {
    value: &'a str,
    source: Source,
    detail: &'a str,
}

/// The run and its figures; the folded stacks only when `stacks` is set:
/// they are most of a profiled run's bytes and no figure of the JSON needs
/// them (the database keeps them, `--flamegraphs` draws them).
pub fn json(run: &RunData, a: &Analysis, stacks: bool) -> Result<Vec<u8>> {
    let (run, steps) = if stacks {
        (
            std::borrow::Cow::Borrowed(run),
            std::borrow::Cow::Borrowed(&a.steps[..]),
        )
    } else {
        let mut run = run.clone();
        for s in &mut run.steps {
            strip_stacks(s.diagnosis.as_mut());
        }
        let mut steps = a.steps.clone();
        for f in &mut steps {
            strip_stacks(f.diagnosis.as_mut());
        }
        (std::borrow::Cow::Owned(run), std::borrow::Cow::Owned(steps))
    };
    let run = run.as_ref();
    let servers = run
        .servers
        .iter()
        .map(|s| JsonServer {
            name: &s.name,
            profile: s.profile,
            parity: JsonParity(
                s.parity
                    .iter()
                    .map(|p| {
                        let value = JsonSetting {
                            value: &p.value,
                            source: p.source,
                            detail: &p.detail,
                        };
                        (p.setting, value)
                    })
                    .collect(),
            ),
        })
        .collect();
    let mut v = serde_json::to_vec_pretty(&JsonReport {
        schema: JSON_SCHEMA,
        baseline: a.baseline.as_deref(),
        run,
        summary: &a.summary,
        comparisons: &run.comparisons,
        launches: &a.launches,
        servers,
        steps: &steps,
    })?;
    v.push(b'\n');
    Ok(v)
}

/// A profile's folded stacks left out; its figures stay.
fn strip_stacks(d: Option<&mut throng_model::Diagnosis>) {
    if let Some(p) = d.and_then(|d| d.profile.as_mut()) {
        p.folded_gz.clear();
    }
}
