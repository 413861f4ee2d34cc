//! Which of a run's paired comparisons are drawn as forest plots, and how
//! each row reads: the pooled ones of every group in one plot that opens
//! the report, and each group's levels in a plot of their own beside the
//! per-level tables.

use throng_model::{Comparison, RunData};

use crate::charts::NamedChart;
use crate::escape::slug;
use crate::figures::{self, server_names};
use crate::forest::{self, Forest, Mark, Row};
use crate::ratios;

/// What every forest of a run says under it.
const CAPTION: &str = "Each row is B over A: the square is the ratio of their requests per \
    second, the line its 95% interval, on a log axis so that 0.8 and 1.25 lie as far from 1; \
    each circle under it is one launch's own ratio, when the servers were started more than \
    once, and launches far apart say the interval depends on how the servers started. The \
    shaded band is 1 ± the run's decision threshold: an interval inside it is equal within noise, one \
    wholly outside it is a decided difference. A hollow point is a ratio from too few pairs to \
    bound.";

/// What a group's per-level plot says under it, after the pooled one.
const LEVELS_CAPTION: &str = "The plot of the summary for each level of this group: B over A with \
    its 95% interval on a log axis, each launch's own ratio as a circle, 1 ± the run's decision threshold \
    shaded.";

/// `c` read against the baseline when it compares the baseline, so every
/// row of the baseline's says "X / baseline".
fn readable(c: &Comparison, baseline: Option<&str>) -> Comparison {
    match baseline {
        Some(base) if c.b == base => ratios::oriented(c, base, &c.a).unwrap_or_else(|| c.clone()),
        _ => c.clone(),
    }
}

/// A comparison's level for a row: "all levels", "c=50", "c=50 at
/// 2000 req/s".
fn level(c: &Comparison) -> String {
    match (c.concurrency, c.rate) {
        (None, _) => "all levels".into(),
        (Some(n), None) => format!("c={n}"),
        (Some(n), Some(r)) => format!("c={n} at {r} req/s"),
    }
}

/// One comparison as one mark: its figures after the axis.
pub fn mark(c: &Comparison, name: String, color: usize) -> Mark {
    // An unbounded ratio's words are drawn beside its point.
    let text = if c.bounded() {
        format!("{} [{}]", ratios::ratio_text(c), ratios::interval_text(c))
    } else {
        ratios::ratio_text(c)
    };
    Mark {
        name,
        ratio: c.ratio,
        interval: c.bounded().then_some((c.ci_low, c.ci_high)),
        pairs: c.pairs,
        launches: c.launch_ratios.clone(),
        color,
        text,
    }
}

fn rows(run: &RunData, of: &[&Comparison]) -> Vec<Row> {
    let servers = server_names(run);
    let base = ratios::baseline(run);
    of.iter()
        .map(|c| {
            let c = readable(c, base.as_deref());
            let color = servers.iter().position(|s| *s == c.b).unwrap_or(0);
            Row {
                label: format!("{} / {}", c.b, c.a),
                detail: figures::labelled([
                    Some(c.workload.clone()),
                    figures::known_cores(c.cores),
                    Some(level(&c)),
                ]),
                marks: vec![mark(&c, String::new(), color)],
                flag: None,
            }
        })
        .collect()
}

/// Every group's pooled comparisons in one plot; `None` when the run
/// stored none.
pub fn pooled(run: &RunData) -> Option<NamedChart> {
    let of: Vec<&Comparison> = ratios::sorted(run)
        .into_iter()
        .filter(|c| c.concurrency.is_none())
        .collect();
    if of.is_empty() {
        return None;
    }
    let title = "Paired ratios over each sweep, with their 95% intervals".to_string();
    Some(NamedChart {
        id: "forest".into(),
        caption: CAPTION.into(),
        svg: forest::render(&Forest {
            title: title.clone(),
            rows: rows(run, &of),
            band: Some(ratios::threshold(run)),
        }),
        title,
        data: None,
    })
}

/// Each group's per-level comparisons, a plot per workload and core count.
pub fn levels(run: &RunData) -> Vec<NamedChart> {
    let mut out = Vec::new();
    for group in ratios::level_groups(run) {
        let first = group[0];
        let title = figures::labelled([
            Some(format!("Paired ratios per level, {}", first.workload)),
            figures::known_cores(first.cores),
        ]);
        let id = match first.cores {
            0 => format!("forest-{}", slug(&first.workload)),
            c => format!("forest-{}-{c}c", slug(&first.workload)),
        };
        out.push(NamedChart {
            id,
            caption: LEVELS_CAPTION.into(),
            svg: forest::render(&Forest {
                title: title.clone(),
                rows: rows(run, &group),
                band: Some(ratios::threshold(run)),
            }),
            title,
            data: None,
        });
    }
    out
}
