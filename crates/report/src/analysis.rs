//! Everything derived from a run once, for all formats.

use throng_model::RunData;

use crate::charts::{self, NamedChart};
use crate::figures::{self, StepFigures};
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
        }
    }
}
