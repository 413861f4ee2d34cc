//! Everything derived from a run once, for all formats.

use throng_model::RunData;

use crate::charts::{self, NamedChart};
use crate::figures::{self, StepFigures, SummaryRow, SummaryWorkloads};

/// Everything derived from a run once, for all formats.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub steps: Vec<StepFigures>,
    /// The workloads the summary's columns show.
    pub summary_workloads: SummaryWorkloads,
    pub summary: Vec<SummaryRow>,
    pub charts: Vec<NamedChart>,
}

impl Analysis {
    pub fn of(run: &RunData) -> Analysis {
        let steps: Vec<StepFigures> = run.steps.iter().map(figures::step_figures).collect();
        let summary_workloads = figures::summary_workloads(run, &steps);
        let summary = figures::summary_rows(run, &steps);
        let charts = charts::charts(run, &steps);
        Analysis {
            steps,
            summary_workloads,
            summary,
            charts,
        }
    }
}
