//! How each server's variance splits between the slices of one launch and
//! its launches, per group, as `throng_stats::launches` finds it: the
//! table, and a sentence for each server whose launches differ beyond its
//! slices, since its figure then says as much about how it started as
//! about the server.
//!
//! Lines here are plain text; each format escapes them whole, since server
//! and workload names come from the study.

use serde::Serialize;

use throng_model::{RunData, StepRecord};
use throng_stats::launches::{self, LaunchMachine, LaunchSplit, ServerLaunches};

use crate::figures;
use crate::ratios;
use crate::table::{Cell, Column, Table};

/// The split of one workload at one core count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchGroup {
    pub workload: String,
    pub cores: u32,
    /// The difference between launches that is worth a sentence: the
    /// study's precision.
    pub threshold: f64,
    pub servers: Vec<ServerLaunches>,
    /// What the machine did to every server in each launch; `null` with
    /// fewer than two launches.
    pub machine: Option<LaunchMachine>,
}

impl LaunchGroup {
    /// "tiny, 1 core".
    pub fn title(&self) -> String {
        figures::labelled([
            Some(self.workload.clone()),
            figures::known_cores(self.cores),
        ])
    }
}

/// Every group where a server was measured in two launches or more, in
/// the run's order of workloads and core counts.
pub fn groups(run: &RunData) -> Vec<LaunchGroup> {
    let threshold = ratios::threshold(run);
    let mut out = Vec::new();
    for w in figures::workload_names(run) {
        for cores in figures::core_counts(run) {
            let steps: Vec<StepRecord> = run
                .steps
                .iter()
                .filter(|s| s.workload == w && s.cores == cores)
                .cloned()
                .collect();
            let servers = launches::split(&steps, threshold);
            if servers.iter().any(|s| s.split.is_some()) {
                out.push(LaunchGroup {
                    workload: w.clone(),
                    cores,
                    threshold,
                    servers,
                    machine: launches::machine(&steps),
                });
            }
        }
    }
    out
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// "apache2-event: its launches differed by 12%: its figure depends on how
/// it started", or, where the machine moved between launches (`moved`),
/// on that too.
pub fn sentence(server: &str, split: &LaunchSplit, moved: bool) -> String {
    format!(
        "{server}: its launches differed by {:.0}%: its figure depends on how it started{}",
        split.spread * 100.0,
        if moved {
            ", or on how the machine moved between them"
        } else {
            ""
        }
    )
}

/// The sentences of a group's servers whose launches differ, after one
/// on the machine where every server moved together between launches
/// beyond the study's precision: a server that machine slowed more or
/// less than the others then reads as a launch of its own.
pub fn sentences(g: &LaunchGroup) -> Vec<String> {
    let machine = g
        .machine
        .as_ref()
        .filter(|m| m.spread > g.threshold)
        .map(|m| {
            let each: Vec<String> = m.factors.iter().map(|f| format!("{:.3}", f.1)).collect();
            format!(
                "every server's rate moved together by {:.0}% between launches (each launch's \
                 effect: {}): the machine moved, and part of a server's launches may be the \
                 machine's",
                m.spread * 100.0,
                each.join(", ")
            )
        });
    let moved = machine.is_some();
    machine
        .into_iter()
        .chain(g.servers.iter().filter_map(|s| {
            let split = s.split.as_ref()?;
            split.differs.then(|| sentence(&s.server, split, moved))
        }))
        .collect()
}

/// A row per server measured in two launches or more.
pub fn table(g: &LaunchGroup) -> Table {
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::right("Launches"),
        Column::right("Slice SD"),
        Column::right("Launch SD"),
        Column::right("Spread"),
        Column::right("p"),
    ])
    .subsection(&g.title());
    for s in &g.servers {
        let Some(split) = &s.split else {
            continue;
        };
        let p = if split.p_value < 0.001 {
            "< 0.001".to_string()
        } else {
            format!("{:.3}", split.p_value)
        };
        let spread = Cell::lit(pct(split.spread));
        t.push(vec![
            Cell::text(&s.server),
            Cell::lit(split.launches.len().to_string()),
            Cell::lit(pct(split.slice_sd)),
            Cell::lit(pct(split.launch_sd)),
            if split.differs {
                spread.highlight()
            } else {
                spread
            },
            Cell::lit(p),
        ]);
    }
    t
}

/// What the tables hold, before them.
pub fn note(threshold: f64) -> String {
    format!(
        "Each server was started more than once. A slice's requests per second is taken \
         relative to its block, fitted with each server's level (what the machine did to every \
         server measured in the block then cancels), each launch measured from its median \
         server. Slice SD: the spread of one slice around its launch's mean; launch SD: the \
         spread between launches beyond what the slices' noise explains; spread: the fastest \
         launch over the slowest. A server's launches differ when the spread is significant \
         (p < {}) and beyond the study's precision, {}.",
        launches::ALPHA,
        pct(threshold)
    )
}
