//! The split of a request's CPU across servers as one stacked bar each:
//! per group (workload and cores), each profiled server at the level of
//! its headline figure, its components end to end in their colours.

use crate::charts::NamedChart;
use crate::components::{self, Component, Split};
use crate::escape::slug;
use crate::figures::{self, StepFigures};
use crate::stacked::{self, Part, StackedBar, StackedChart};

/// A server's profiled step it is drawn at: of its steps in the group
/// with a profile, the one with the best headline figure (the level its
/// throughput is reported at, when that level was profiled).
pub fn headline_split<'a>(
    figs: &'a [StepFigures],
    server: &str,
    workload: &str,
    cores: u32,
    large: bool,
) -> Option<(&'a StepFigures, Split)> {
    figs.iter()
        .filter(|f| f.server == server && f.workload == workload && f.cores == cores)
        .filter(|f| figures::measured(f))
        .filter_map(|f| Some((f, components::split(f.diagnosis.as_ref()?)?)))
        .max_by(|(a, _), (b, _)| {
            figures::headline(a, large).total_cmp(&figures::headline(b, large))
        })
}

/// The chart of one group's servers; `None` when none was profiled.
pub fn chart(
    figs: &[StepFigures],
    servers: &[String],
    workload: &str,
    cores: u32,
) -> Option<NamedChart> {
    let large = figures::is_large(figs, workload);
    let bars: Vec<StackedBar> = servers
        .iter()
        .filter_map(|s| {
            let (f, split) = headline_split(figs, s, workload, cores, large)?;
            Some(StackedBar {
                label: format!("{s} (c={})", f.concurrency),
                values: split.us.iter().map(|(_, v)| *v).collect(),
            })
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    let chart = StackedChart {
        title: figures::labelled([
            Some(format!("CPU per request by component, {workload}")),
            figures::known_cores(cores),
        ]),
        x_label: "server CPU per request (µs)".into(),
        unit: "µs".into(),
        parts: Component::ALL
            .iter()
            .map(|c| Part {
                name: c.name().to_string(),
                color: c.color(),
            })
            .collect(),
        bars,
    };
    Some(NamedChart {
        id: format!("cpu-split-{}-{cores}c", slug(workload)),
        title: chart.title.clone(),
        caption: "Each server at the level of its headline figure (c=): its sampled CPU per \
                  request, split into the components of the table above, in its order."
            .into(),
        svg: stacked::stacked_bar_chart(&chart),
        // The table above holds every figure it draws.
        data: None,
    })
}

/// One chart per group (workload, cores) with a profiled server.
pub fn charts(figs: &[StepFigures], servers: &[String]) -> Vec<NamedChart> {
    let mut groups: Vec<(&str, u32)> = Vec::new();
    for f in figs {
        if !groups.contains(&(f.workload.as_str(), f.cores)) {
            groups.push((&f.workload, f.cores));
        }
    }
    groups
        .into_iter()
        .filter_map(|(w, c)| chart(figs, servers, w, c))
        .collect()
}
