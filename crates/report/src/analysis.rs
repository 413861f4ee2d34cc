//! Everything derived from a run once, for all formats.

use throng_model::RunData;

use crate::charts::{self, NamedChart};
use crate::figures::{self, StepFigures};
use crate::forests;
use crate::launches::{self, LaunchGroup};
use crate::ratios::{self, RatioGroup};
use crate::summary::{self, SummaryRow, SummaryWorkloads};

/// Everything derived from a run once, for all formats.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub steps: Vec<StepFigures>,
    /// The workloads the summary's columns show.
    pub summary_workloads: SummaryWorkloads,
    pub summary: Vec<SummaryRow>,
    /// The server the others are compared against.
    pub baseline: Option<String>,
    /// Each server's pooled paired ratio against the baseline, per workload
    /// and core count: what the summary leads with when the run has them.
    pub ratios: Vec<RatioGroup>,
    pub charts: Vec<NamedChart>,
    /// The pooled paired ratios drawn, which open the report.
    pub forest: Option<NamedChart>,
    /// Each group's per-level paired ratios drawn.
    pub level_forests: Vec<NamedChart>,
    /// How each server's variance splits between slices and launches.
    pub launches: Vec<LaunchGroup>,
    /// The time per request with its connect, drawn per workload.
    pub connect_included: Vec<NamedChart>,
}

impl Analysis {
    pub fn of(run: &RunData) -> Analysis {
        let steps: Vec<StepFigures> = run.steps.iter().map(figures::step_figures).collect();
        let summary_workloads = summary::summary_workloads(run, &steps);
        let summary = summary::summary_rows(run, &steps);
        let charts = charts::charts(run, &steps);
        Analysis {
            summary_workloads,
            summary,
            baseline: ratios::baseline(run),
            ratios: ratios::summary(run, &steps),
            steps,
            charts,
            forest: forests::pooled(run),
            level_forests: forests::levels(run),
            launches: launches::groups(run),
            connect_included: crate::ladder::charts(run),
        }
    }

    /// Every chart the article draws, in its order: what `--png` writes.
    pub fn every_chart(&self) -> Vec<&NamedChart> {
        self.forest
            .iter()
            .chain(&self.charts)
            .chain(&self.connect_included)
            .chain(&self.level_forests)
            .collect()
    }
}
