//! Where the next run of the study should put each pooled ratio, and over
//! how many runs of it on this machine that range was drawn. A run's own
//! interval is drawn over its launches; what differs between runs minutes
//! apart shows only across runs, so a run alone says so, and a pair whose
//! runs differed beyond their launches is named.
//!
//! Lines here are plain text; each format escapes them whole, since server
//! and workload names come from the study.

use throng_model::{Comparison, RunData};

use crate::figures;
use crate::table::{Cell, Column, Table};

/// The pooled comparisons with a next-run range, in reading order.
fn ranged(run: &RunData) -> Vec<&Comparison> {
    crate::ratios::sorted(run)
        .into_iter()
        .filter(|c| c.concurrency.is_none() && c.next_run.is_some())
        .collect()
}

/// "apache2-event/nginx (tiny, 1 core)".
fn label(c: &Comparison) -> String {
    format!(
        "{}/{} ({})",
        c.b,
        c.a,
        figures::labelled([Some(c.workload.clone()), figures::known_cores(c.cores)])
    )
}

/// The most runs any range was drawn over (1: this run alone).
fn runs_over(cs: &[&Comparison]) -> u32 {
    cs.iter()
        .map(|c| c.next_run_runs.unwrap_or(1))
        .max()
        .unwrap_or(1)
}

/// What the table holds, before it.
pub fn note(run: &RunData) -> Option<String> {
    let cs = ranged(run);
    if cs.is_empty() {
        return None;
    }
    let how = match runs_over(&cs) {
        1 => "This run alone: no earlier run of this study on this machine was stored, so the \
              ranges count what differs between launches but cannot see what differs between \
              runs minutes apart."
            .to_string(),
        n => format!(
            "Drawn over up to {n} runs of this study on this machine, this one included: the \
             launches' spread pooled over those runs, or the runs' own spread where it is larger."
        ),
    };
    Some(format!(
        "Where running the study again should put each ratio (95%), around this run's figure. \
         {how} Comparing two runs checks each against the other's range."
    ))
}

/// A row per pooled comparison with a next-run range.
pub fn table(run: &RunData) -> Option<Table> {
    let cs = ranged(run);
    if cs.is_empty() {
        return None;
    }
    let mut t = Table::new(vec![
        Column::left("Pair"),
        Column::right("Ratio (95% CI)"),
        Column::right("Next run"),
        Column::right("Runs"),
    ]);
    for c in cs {
        let [lo, hi] = c.next_run.unwrap_or([c.ci_low, c.ci_high]);
        let next = Cell::lit(format!("{lo:.3}–{hi:.3}"));
        t.push(vec![
            Cell::text(label(c)),
            Cell::lit(format!("{:.3} ({:.3}–{:.3})", c.ratio, c.ci_low, c.ci_high)),
            if c.runs_differ {
                next.highlight()
            } else {
                next
            },
            Cell::lit(c.next_run_runs.unwrap_or(1).to_string()),
        ]);
    }
    Some(t)
}

/// A sentence for each pair whose runs differed beyond their launches:
/// "apache2-event/nginx (tiny, 1 core): runs of this study on this
/// machine differed beyond their launches (over 5 runs): the next run
/// should read 0.121–0.191, not this run's 0.172–0.177".
pub fn sentences(run: &RunData) -> Vec<String> {
    ranged(run)
        .into_iter()
        .filter(|c| c.runs_differ)
        .map(|c| {
            let [lo, hi] = c.next_run.unwrap_or([c.ci_low, c.ci_high]);
            let runs = c.next_run_runs.unwrap_or(1);
            format!(
                "{}: runs of this study on this machine differed beyond their launches (over \
                 {runs} runs): the next run should read {lo:.3}–{hi:.3}, wider than this run's \
                 own interval {:.3}–{:.3}{}",
                label(c),
                c.ci_low,
                c.ci_high,
                few(runs)
            )
        })
        .collect()
}

/// Below this many runs the runs' own spread, which a range takes once it
/// exceeds the launches', is known to so few degrees of freedom that
/// Student's t widens the range several times over (12.7 at two runs,
/// 4.3 at three, against 2.2 for the launches): the reader is told that
/// the width is the runs' count as much as the machine's, and what
/// narrows it.
const FEW_RUNS: u32 = 5;

fn few(runs: u32) -> String {
    if runs >= FEW_RUNS {
        return String::new();
    }
    let df = runs.saturating_sub(1);
    format!(
        "; {runs} runs know that spread to {df} degree{} of freedom, so the range is wide \
         for their count, and each run of the study stored narrows it",
        if df == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{IntervalKind, RunRecord};

    fn run_with(cs: Vec<Comparison>) -> RunData {
        RunData {
            run: RunRecord {
                id: 7,
                ..RunRecord::default()
            },
            comparisons: cs,
            ..RunData::default()
        }
    }

    fn pooled(next: [f64; 2], runs: u32, differ: bool) -> Comparison {
        Comparison {
            interval: IntervalKind::Launches,
            next_run: Some(next),
            next_run_runs: Some(runs),
            runs_differ: differ,
            ..throng_testkit::model::comparison(
                "nginx",
                "apache2-event",
                None,
                [0.172, 0.168, 0.177],
                40,
                throng_model::Decision::Lower,
            )
        }
    }

    #[test]
    fn a_pair_whose_runs_differed_is_named_with_its_range_and_the_runs_behind_it() {
        let run = run_with(vec![pooled([0.121, 0.191], 5, true)]);
        assert_eq!(
            sentences(&run),
            [
                "apache2-event/nginx (tiny, 1 core): runs of this study on this machine differed \
              beyond their launches (over 5 runs): the next run should read 0.121–0.191, wider \
              than this run's own interval 0.168–0.177"
            ]
        );
        assert!(note(&run).unwrap().contains("Drawn over up to 5 runs"));
        let t = table(&run).unwrap();
        assert_eq!(t.rows.len(), 1);
    }

    #[test]
    fn a_range_drawn_over_few_runs_says_its_width_is_their_count() {
        let run = run_with(vec![pooled([0.133, 0.219], 2, true)]);
        assert_eq!(
            sentences(&run),
            [
                "apache2-event/nginx (tiny, 1 core): runs of this study on this machine differed \
              beyond their launches (over 2 runs): the next run should read 0.133–0.219, wider \
              than this run's own interval 0.168–0.177; 2 runs know that spread to 1 degree of \
              freedom, so the range is wide for their count, and each run of the study stored \
              narrows it"
            ]
        );
        let run = run_with(vec![pooled([0.150, 0.195], 4, true)]);
        assert!(sentences(&run)[0].ends_with("; 4 runs know that spread to 3 degrees of freedom, so the range is wide for their count, and each run of the study stored narrows it"));
    }

    #[test]
    fn a_run_alone_says_what_its_ranges_cannot_see() {
        let run = run_with(vec![pooled([0.165, 0.180], 1, false)]);
        assert!(sentences(&run).is_empty());
        assert!(note(&run)
            .unwrap()
            .contains("cannot see what differs between runs minutes apart"));
        assert_eq!(note(&run_with(Vec::new())), None);
        assert!(table(&run_with(Vec::new())).is_none());
    }
}
