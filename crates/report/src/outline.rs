//! What a report says and in which order: the [`Article`] of a run, built
//! once for every format. The sections about what was measured are built
//! here; those about how (the machine, the servers, the study) in
//! `provenance`.

use throng_model::RunData;

use crate::analysis::Analysis;
use crate::article::{Article, Block, Medium, Paragraph, Section, Span, Tone};
use crate::{
    calibration, cores_note, cost, figures, launches, origin, parity, protocols, provenance,
    ratios, tables,
};

/// The article of a run, from its title to the way to measure it again.
pub fn article(run: &RunData, a: &Analysis) -> Article {
    let r = &run.run;
    let study = if r.study.is_empty() {
        "study"
    } else {
        &r.study
    };
    let sections = [
        origin::section(r),
        Some(summary(run, a)),
        crate::workload_table::section(&a.steps),
        calibration::section(run),
        features(run),
        crate::ladder::section(run),
        tables::best(run, &a.steps).map(Section::opened_by),
        settings(run),
        Some(charts(a)),
        paired_levels(run, a),
        launch_split(a),
        run_to_run(run),
        Some(steps(a)),
        sessions(a),
        crate::httperf::section(run),
        costs(run, a),
        crate::where_cpu::section(run, &a.steps),
        failures(run),
        Some(provenance::environment(run)),
        provenance::servers(run, a),
        provenance::study(r),
    ];
    Article {
        label: format!("throng report: {study} (run {})", r.id),
        title: format!("Web server benchmark: {study}"),
        lead: lead(run),
        sections: sections.into_iter().flatten().collect(),
        colophon: vec![Block::only(
            Medium::Page,
            Block::note(vec![
                Span::text(format!("Generated from run {} by ", r.id)),
                Span::Command("throng report".into()),
                Span::text("."),
            ]),
        )],
    }
}

/// Which run, when, whether it finished, and whether the machine passed
/// its check.
fn lead(run: &RunData) -> Vec<Block> {
    let r = &run.run;
    let env = &r.environment;
    let finished = r
        .finished_unix_s
        .map(figures::utc)
        .unwrap_or_else(|| "not finished".into());
    let mut lead = vec![Block::note(vec![
        Span::text(format!(
            "Run {} · started {} · finished {finished} · ",
            r.id,
            figures::utc(r.started_unix_s)
        )),
        if r.complete {
            Span::Flag {
                good: true,
                text: "complete".into(),
            }
        } else {
            Span::Flag {
                good: false,
                text: "incomplete: interrupted or the lab failed; numbers cover only what was \
                       measured"
                    .into(),
            }
        },
        Span::text(format!(
            " · measured by throng {} on {}",
            env.throng_version, env.hostname
        )),
    ])];
    lead.extend(calibration::threshold_line(r));
    if let Some(note) = cores_note::auto_cores(run) {
        lead.push(Block::Paragraph(Paragraph {
            tone: Tone::Warn,
            spans: vec![Span::text(note)],
        }));
    }
    // A figure measured on a machine that failed its check is read with
    // that in mind.
    let flagged = figures::flagged_findings(run).len();
    if flagged > 0 {
        lead.push(Block::Paragraph(Paragraph {
            tone: Tone::Warn,
            spans: vec![
                Span::Stress(format!(
                    "The machine check found {flagged} problem(s) before the run"
                )),
                Span::text("; see "),
                Span::Link {
                    text: "Environment".into(),
                    anchor: "environment",
                },
                Span::text("."),
            ],
        }));
    }
    lead
}

/// The summary: the best figures per server, led by each server's paired
/// ratio against the baseline when the run has them.
fn summary(run: &RunData, a: &Analysis) -> Section {
    let table = tables::summary(&a.summary_workloads, &a.summary);
    let mut s = if a.ratios.is_empty() {
        Section::opened_by(table)
    } else {
        let mut s = Section::new("summary", "Summary");
        if let Some(base) = &a.baseline {
            s.push(Block::text(ratios::intro(base)));
        }
        if let Some(f) = &a.forest {
            s.push(Block::Chart(f.clone()));
        }
        for g in &a.ratios {
            s.push(Block::paragraph(vec![Span::Strong(g.title())]));
            s.push(Block::List(g.lines.iter().map(|l| l.sentence()).collect()));
        }
        if let Some(t) = tables::paired(run) {
            s.push(Block::Table(t));
            s.push(Block::note(vec![Span::text(ratios::TABLE_NOTE)]));
        }
        if let Some(t) = protocols::table(run) {
            s.push(Block::Table(t));
        }
        s.push(Block::Table(table.subsection(tables::BEST_FIGURES)));
        s
    };
    s.push(Block::note(vec![Span::text(tables::summary_note(
        &a.summary_workloads,
        &a.summary,
        &a.steps,
    ))]));
    s
}

/// The feature table of ACME's thttpd comparison, as probed live, with
/// what was seen for each answer (its cell's tooltip on a page, a list in
/// text), and the search for max users.
fn features(run: &RunData) -> Option<Section> {
    let mut s = Section::opened_by(tables::features(run)?);
    s.push(Block::note(vec![Span::text(tables::FEATURES_NOTE)]));
    s.push(Block::only(
        Medium::Page,
        Block::text("Every answer was seen on the running server; hover a cell for what was seen."),
    ));
    s.push(Block::only(
        Medium::Text,
        Block::text("Every answer was seen on the running server:"),
    ));
    let evidence = run
        .servers
        .iter()
        .flat_map(|s| {
            s.features.iter().map(|f| {
                format!(
                    "{} {}: {} — {}",
                    s.name,
                    f.name.title(),
                    f.status.label(),
                    f.evidence
                )
            })
        })
        .collect();
    s.push(Block::only(Medium::Text, Block::List(evidence)));
    if let Some(t) = tables::max_users_searched(run) {
        s.push(Block::Table(t));
        let patience = run
            .servers
            .iter()
            .flat_map(|s| &s.max_users)
            .map(|m| m.patience_s)
            .next()
            .unwrap_or(throng_model::max_users::DEFAULT_PATIENCE_S);
        s.push(Block::only(
            Medium::Text,
            Block::text(format!(
                "Max users: highest concurrency with no error and p99 under {patience} s, \
                 stepping up past the sweep until the server broke."
            )),
        ));
    }
    Some(s)
}

/// The settings that differ between servers and what each difference
/// likely does to the figures.
fn settings(run: &RunData) -> Option<Section> {
    let mut s = Section::opened_by(tables::parity(run)?);
    s.push(Block::note(vec![Span::text(parity::LEGEND)]));
    s.push(Block::List(parity::notes(run)));
    Some(s)
}

fn charts(a: &Analysis) -> Section {
    let mut s = Section::new("charts", "Charts");
    if a.charts.is_empty() {
        // A text article points to charts drawn beside it, and there are
        // none to point to.
        s.push(Block::only(
            Medium::Page,
            Block::text("No step was measured, so there is nothing to draw."),
        ));
    }
    for c in &a.charts {
        s.push(Block::Chart(c.clone()));
    }
    s
}

/// Each group's per-level table with its forest plot after it.
fn paired_levels(run: &RunData, a: &Analysis) -> Option<Section> {
    let levels = tables::paired_per_level(run);
    if levels.is_empty() {
        return None;
    }
    let mut s = Section::new("paired", "Paired comparisons per level");
    s.push(Block::note(vec![Span::text(ratios::LEVELS_NOTE)]));
    for (i, t) in levels.into_iter().enumerate() {
        s.push(Block::Table(t));
        // Both are built from the same groups in the same order.
        if let Some(f) = a.level_forests.get(i) {
            s.push(Block::Chart(f.clone()));
        }
    }
    Some(s)
}

/// How each server's variance splits between slices and launches, when
/// servers were started more than once.
fn launch_split(a: &Analysis) -> Option<Section> {
    let first = a.launches.first()?;
    let mut s = Section::new("launches", "Slices and launches");
    s.push(Block::note(vec![Span::text(launches::note(
        first.threshold,
    ))]));
    for g in &a.launches {
        s.push(Block::Table(launches::table(g)));
        for line in launches::sentences(g) {
            s.push(Block::Paragraph(Paragraph {
                tone: Tone::Warn,
                spans: vec![Span::text(line)],
            }));
        }
    }
    Some(s)
}

/// Where the next run should put each pooled ratio, and over how many
/// runs of the study that range was drawn.
fn run_to_run(run: &RunData) -> Option<Section> {
    let table = crate::reruns::table(run)?;
    let mut s = Section::new("reruns", "From run to run");
    if let Some(note) = crate::reruns::note(run) {
        s.push(Block::note(vec![Span::text(note)]));
    }
    s.push(Block::Table(table));
    for line in crate::reruns::sentences(run) {
        s.push(Block::Paragraph(Paragraph {
            tone: Tone::Warn,
            spans: vec![Span::text(line)],
        }));
    }
    Some(s)
}

fn steps(a: &Analysis) -> Section {
    let mut s = Section::opened_by(tables::steps(&a.steps));
    let mut note = vec![Span::Only(
        Medium::Page,
        "req/s: mean over rounds with the 95% confidence interval of the mean (Student's t). \
         p50/p99: median over rounds. Server CPU: user + system time of the server's process \
         tree over the wall time of the rounds that sampled it, all together (100% = one core)."
            .into(),
    )];
    if let Some(n) = tables::steps_note(&a.steps) {
        note.push(Span::text(format!(" {n}")));
    }
    s.push(Block::note(note));
    s
}

fn sessions(a: &Analysis) -> Option<Section> {
    let mut s = Section::opened_by(tables::sessions(&a.steps)?);
    for l in tables::sessions_lines(&a.steps) {
        s.push(Block::text(l));
    }
    s.push(Block::note(vec![Span::text(tables::SESSIONS_NOTE)]));
    Some(s)
}

fn costs(run: &RunData, a: &Analysis) -> Option<Section> {
    let t = tables::costs(&a.steps)?;
    let mut s = Section::new("cost", cost::HEADING);
    s.push(Block::text(cost::INTRO));
    s.push(Block::List(cost::best_lines(run, &a.steps)));
    s.push(Block::Table(t));
    Some(s)
}

/// Why each failed step failed, with the server's last output.
fn failures(run: &RunData) -> Option<Section> {
    let failed = figures::failures(run);
    if failed.is_empty() {
        return None;
    }
    let mut s = Section::new("failures", "Failures");
    for (step, why, log) in failed {
        s.push(Block::Subheading(step));
        s.push(Block::Paragraph(Paragraph {
            tone: Tone::Failed,
            spans: vec![Span::text(why)],
        }));
        if let Some(t) = log {
            s.push(Block::Code {
                text: t.to_string(),
                lang: "",
            });
        }
    }
    Some(s)
}
