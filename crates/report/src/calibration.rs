//! A/A calibration in the report: for a calibration run (every server has
//! a twin of its recipe, profile and protocol), how often each A/A pair's
//! intervals excluded 1.00 and how far they spread, and the smallest
//! difference the machine can decide; for every run, the decision
//! threshold it used and where that came from. The figures are
//! `throng_stats::calibration`'s, the ones the lab took its threshold from.

use throng_model::{RunData, RunRecord, Threshold, ThresholdSource};
use throng_stats::calibration::{Calibration, PairSpread};

use crate::article::{Block, Section, Span};
use crate::figures;
use crate::table::{Cell, Column, Table};

/// "±3.1%".
fn percent(share: f64) -> String {
    format!("±{:.1}%", share * 100.0)
}

/// Where a threshold came from, in words: "set by the study",
/// "from calibration run 12 (2026-11-29)".
pub fn source_words(t: &Threshold) -> String {
    match t.source {
        ThresholdSource::Study => "set by the study".into(),
        ThresholdSource::Calibration {
            run,
            started_unix_s,
            measured,
        } => {
            let day: String = figures::utc(started_unix_s).chars().take(10).collect();
            let held = if t.held() {
                format!(
                    "; it measured {}, held to the lab's range of {}–{}",
                    percent(measured),
                    percent(throng_model::CALIBRATED_FLOOR),
                    percent(throng_model::CALIBRATED_CEILING)
                )
            } else {
                String::new()
            };
            format!("from calibration run {run} ({day}){held}")
        }
        ThresholdSource::Default => {
            "the study's default, as this machine had no calibration run".into()
        }
    }
}

/// The line near the top of a report: which threshold decided the run's
/// comparisons and where it came from. `None` for a run stored before runs
/// kept it, and for a saved load.
pub fn threshold_line(r: &RunRecord) -> Option<Block> {
    let t = r.threshold.as_ref()?;
    Some(Block::note(vec![Span::text(format!(
        "Decision threshold {}, {}: a comparison is higher or lower only when its whole 95% \
         interval lies beyond it.",
        percent(t.value),
        source_words(t)
    ))]))
}

/// What the table's columns hold, under it.
pub const NOTE: &str = "Each A/A pair is one setup run twice, so each of its comparisons (every \
    level's and the pooled one) should find 1.00. Excluding 1.00: the intervals that lie wholly \
    above or below it; a 95% interval does so by chance about one time in twenty. Largest \
    shift: the farthest a ratio fell from 1.00, |ratio − 1|. Largest half-width: the widest interval, \
    half its width. Reach: the farthest an interval's bound lay from 1.00, which is at least \
    both.";

fn row(p: &PairSpread) -> Vec<Cell> {
    vec![
        Cell::text(&p.a),
        Cell::text(&p.b),
        Cell::lit(p.intervals.to_string()),
        Cell::lit(format!(
            "{} ({:.0}%)",
            p.excluding,
            p.share_excluding() * 100.0
        )),
        Cell::lit(format!("{:.1}%", p.largest_shift * 100.0)),
        Cell::lit(format!("{:.1}%", p.largest_half_width * 100.0)),
        if p.intervals == 0 {
            Cell::none()
        } else {
            Cell::lit(percent(p.reach))
        },
    ]
}

/// The calibration section; `None` when the run is not a calibration run.
pub fn section(run: &RunData) -> Option<Section> {
    let c = Calibration::of(run)?;
    let mut s = Section::new("calibration", "A/A calibration");
    s.push(Block::text(
        "Every server of this run has a twin: the same recipe, profile and protocol under \
         another name. Whatever separates twins is this machine's noise, not a difference \
         between servers; comparisons between servers that are not twins are left out here.",
    ));
    let mut t = Table::new(vec![
        Column::left("A"),
        Column::left("B"),
        Column::right("Intervals"),
        Column::right("Excluding 1.00"),
        Column::right("Largest shift"),
        Column::right("Largest half-width"),
        Column::right("Reach"),
    ]);
    for p in &c.pairs {
        t.push(row(p));
    }
    s.push(Block::Table(t));
    s.push(Block::note(vec![Span::text(NOTE)]));
    let unsteady: Vec<String> = c
        .pairs
        .iter()
        .filter(|p| p.unsteady)
        .map(|p| format!("{}/{}", p.b, p.a))
        .collect();
    if !unsteady.is_empty() && unsteady.len() < c.pairs.len() {
        s.push(Block::text(format!(
            "{}: a twin's launches differed beyond its slices (launches_differ), a spread of \
             that server's own starts rather than the machine's; left out of the smallest \
             difference below.",
            unsteady.join(", ")
        )));
    }
    let unbounded: u32 = c.pairs.iter().map(|p| p.unbounded).sum();
    if unbounded > 0 {
        s.push(Block::text(format!(
            "{unbounded} A/A comparison(s) had too few pairs for an interval and are not counted."
        )));
    }
    s.push(Block::paragraph(match c.smallest_decidable() {
        Some(d) => vec![
            Span::text(format!(
                "{} of {} A/A intervals exclude 1.00. ",
                c.excluding(),
                c.intervals()
            )),
            Span::Strong(format!(
                "The smallest difference this machine can decide: {}",
                percent(d)
            )),
            Span::text(
                ", the farthest any steady A/A interval reached from 1.00: at that threshold every \
                 comparison of a server with itself is decided equal. Studies that do not pin \
                 their precision take it as their decision threshold on this machine.",
            ),
        ],
        None => vec![Span::text(
            "No A/A comparison has an interval, so this run decides no threshold.",
        )],
    }));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Comparison, Decision, ServerRecord};

    fn server(name: &str, recipe: &str) -> ServerRecord {
        ServerRecord {
            name: name.into(),
            recipe: recipe.into(),
            ..ServerRecord::default()
        }
    }

    fn cmp(a: &str, b: &str, level: Option<u32>, lo: f64, hi: f64) -> Comparison {
        let ratio = (lo + hi) / 2.0;
        throng_testkit::model::comparison(a, b, level, [ratio, lo, hi], 40, Decision::Undecided)
    }

    fn texts(b: &Block) -> String {
        match b {
            Block::Paragraph(p) => p
                .spans
                .iter()
                .map(|s| match s {
                    Span::Text(t) | Span::Strong(t) => t.as_str(),
                    _ => "",
                })
                .collect(),
            _ => String::new(),
        }
    }

    #[test]
    fn a_calibration_run_shows_each_pairs_spread_and_the_smallest_decidable_difference() {
        let run = RunData {
            servers: vec![
                server("nginx", "nginx"),
                server("nginx-again", "nginx"),
                server("apache2-event", "apache2-event"),
                server("apache2-event-again", "apache2-event"),
            ],
            comparisons: vec![
                cmp("nginx", "nginx-again", Some(10), 0.98, 1.02),
                cmp("nginx", "nginx-again", None, 1.01, 1.03),
                cmp("nginx", "apache2-event", None, 0.4, 0.5),
                cmp("apache2-event", "apache2-event-again", Some(10), 0.95, 1.05),
            ],
            ..RunData::default()
        };
        let s = section(&run).unwrap();
        assert_eq!(s.heading.text, "A/A calibration");
        let Block::Table(t) = &s.blocks[1] else {
            panic!("{:?}", s.blocks[1]);
        };
        let rows: Vec<Vec<&str>> = t
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.text.as_str()).collect())
            .collect();
        assert_eq!(
            rows,
            [
                vec![
                    "nginx",
                    "nginx-again",
                    "2",
                    "1 (50%)",
                    "2.0%",
                    "2.0%",
                    "±3.0%"
                ],
                vec![
                    "apache2-event",
                    "apache2-event-again",
                    "1",
                    "0 (0%)",
                    "0.0%",
                    "5.0%",
                    "±5.0%"
                ],
            ]
        );
        assert_eq!(
            texts(&s.blocks[3]),
            "1 of 3 A/A intervals exclude 1.00. The smallest difference this machine can \
             decide: ±5.0%, the farthest any steady A/A interval reached from 1.00: at that \
             threshold \
             every comparison of a server with itself is decided equal. Studies that do not pin \
             their precision take it as their decision threshold on this machine."
        );
        // A run of different servers is no calibration.
        let quick = RunData {
            servers: vec![server("nginx", "nginx"), server("h2o", "h2o")],
            ..run
        };
        assert!(section(&quick).is_none());
    }

    #[test]
    fn the_threshold_line_says_where_the_threshold_came_from() {
        let line = |t: Option<Threshold>| {
            let r = RunRecord {
                threshold: t,
                ..RunRecord::default()
            };
            threshold_line(&r).map(|b| texts(&b))
        };
        assert_eq!(line(None), None);
        // 2026-11-29 12:00 UTC.
        let day = 1_795_953_600.0;
        assert_eq!(
            line(Some(Threshold::calibrated(12, day, 0.031))).unwrap(),
            "Decision threshold ±3.1%, from calibration run 12 (2026-11-29): a comparison is \
             higher or lower only when its whole 95% interval lies beyond it."
        );
        assert_eq!(
            source_words(&Threshold::calibrated(12, day, 0.002)),
            "from calibration run 12 (2026-11-29); it measured ±0.2%, held to the lab's range \
             of ±0.5%–±25.0%"
        );
        let study = Threshold {
            value: 0.05,
            source: ThresholdSource::Study,
        };
        assert_eq!(
            line(Some(study)).unwrap(),
            "Decision threshold ±5.0%, set by the study: a comparison is higher or lower only \
             when its whole 95% interval lies beyond it."
        );
        let default = Threshold {
            value: 0.02,
            source: ThresholdSource::Default,
        };
        assert_eq!(
            source_words(&default),
            "the study's default, as this machine had no calibration run"
        );
    }
}
