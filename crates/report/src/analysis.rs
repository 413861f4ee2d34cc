//! Everything derived from a run once, for all formats.

use throng_model::RunData;

use crate::charts::{self, NamedChart};
use crate::figures::{self, StepFigures, SummaryRow};

/// Everything derived from a run once, for all formats.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub steps: Vec<StepFigures>,
    pub summary: Vec<SummaryRow>,
    pub charts: Vec<NamedChart>,
}

impl Analysis {
    pub fn of(run: &RunData) -> Analysis {
        let steps: Vec<StepFigures> = run.steps.iter().map(figures::step_figures).collect();
        let summary = figures::summary_rows(run, &steps);
        let charts = charts::charts(run, &steps);
        Analysis {
            steps,
            summary,
            charts,
        }
    }
}
