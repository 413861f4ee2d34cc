//! The report in Markdown, for articles and README files. The tables come
//! from `tables` and are drawn by [`table`], as the comparison's are.

use std::fmt::Write;

use throng_model::RunData;

use crate::analysis::Analysis;
use crate::escape::{md_cell as cell, md_fence};
use crate::figures::{self, grouped};
use crate::table::{Align, Aside, Cell, Heading, Kind, Table};
use crate::{cost, parity, ratios, tables};

pub fn render(run: &RunData, a: &Analysis, image_dir: Option<&str>) -> String {
    let mut o = String::new();
    let r = &run.run;
    let env = &r.environment;
    let study = if r.study.is_empty() {
        "study"
    } else {
        &r.study
    };
    let _ = writeln!(o, "# Web server benchmark: {}\n", cell(study));
    let _ = writeln!(
        o,
        "Run {} · started {} · finished {} · {} · measured by throng {} on {}\n",
        r.id,
        figures::utc(r.started_unix_s),
        r.finished_unix_s
            .map(figures::utc)
            .unwrap_or_else(|| "not finished".into()),
        if r.complete {
            "complete"
        } else {
            "**incomplete**: interrupted or the lab failed"
        },
        cell(&env.throng_version),
        cell(&env.hostname)
    );
    // As the HTML report says it: a figure measured on a machine that
    // failed its check is read with that in mind.
    let flagged = figures::flagged_findings(run).len();
    if flagged > 0 {
        let _ = writeln!(
            o,
            "**The machine check found {flagged} problem(s) before the run**; see Environment.\n"
        );
    }

    let summary = tables::summary(&a.summary_workloads, &a.summary);
    if a.ratios.is_empty() {
        o.push_str(&table(&summary));
    } else {
        paired_summary(&mut o, run, a);
        o.push_str(&table(&summary.subsection(tables::BEST_FIGURES)));
    }
    let _ = write!(
        o,
        "\n{}\n\n",
        tables::summary_note(&a.summary_workloads, &a.steps, cell)
    );
    features(&mut o, run);
    if let Some(t) = tables::parity(run) {
        let _ = write!(o, "{}\n{}\n\n", table(&t), cell(parity::LEGEND));
        list(&mut o, &parity::notes(run));
    }

    if let Some(dir) = image_dir {
        o.push_str("## Charts\n\n");
        for c in &a.charts {
            let _ = writeln!(
                o,
                "![{}]({}/{}.png)\n\n{}\n",
                cell(&c.title),
                dir.trim_end_matches('/'),
                c.id,
                c.caption
            );
        }
    }

    let levels = tables::paired_per_level(run);
    if !levels.is_empty() {
        let _ = write!(
            o,
            "{}\n{}\n\n",
            heading(&Heading::section("paired", "Paired comparisons per level")),
            cell(ratios::LEVELS_NOTE)
        );
        for t in &levels {
            o.push_str(&table(t));
            o.push('\n');
        }
    }
    o.push_str(&table(&tables::steps(&a.steps).without(tables::SERVER_CPU)));
    if let Some(note) = tables::steps_note(&a.steps) {
        let _ = write!(o, "\n{}\n", cell(&note));
    }
    if let Some(t) = tables::sessions(&a.steps) {
        o.push('\n');
        o.push_str(&table(&t));
        for l in tables::sessions_lines(&a.steps) {
            let _ = write!(o, "\n{}\n", cell(&l));
        }
        let _ = write!(o, "\n{}\n", cell(tables::SESSIONS_NOTE));
    }
    if let Some(t) = tables::costs(&a.steps) {
        let _ = write!(
            o,
            "\n{}\n{}\n\n",
            heading(&Heading::section("cost", cost::HEADING)),
            cell(cost::INTRO)
        );
        list(&mut o, &cost::best_lines(run, &a.steps));
        o.push_str(&table(&t));
    }

    // The kernel settings are rows of the environment's table here.
    let mut env = tables::environment(run);
    if let Some(k) = tables::kernel_settings(run) {
        env.rows.extend(k.rows);
    }
    o.push('\n');
    o.push_str(&table(&env));
    if let Some(t) = tables::hosts(run) {
        o.push('\n');
        o.push_str(&table(&t));
    }
    if let Some(t) = tables::machine_check(run) {
        o.push('\n');
        o.push_str(&table(&t));
    }

    failures(&mut o, run);

    if figures::is_load_run(r) {
        target(&mut o, run, a);
    } else if !run.servers.is_empty() {
        o.push_str("\n## Servers and their configurations\n");
        for s in &run.servers {
            // What a recipe does not say (a command's version or model)
            // is left out, not shown as an empty field.
            let said =
                |label: &str, v: &str| (!v.is_empty()).then(|| format!("{label}{}", cell(v)));
            let parts: Vec<String> = [
                Some(
                    format!("{} {}", cell(&s.name), cell(&s.version))
                        .trim_end()
                        .to_string(),
                ),
                Some(format!(
                    "recipe {} ({} profile)",
                    cell(&s.recipe),
                    cell(&s.profile)
                )),
                said("package ", &s.package),
                said("", &s.model),
                Some(if s.exe_bytes > 0 {
                    format!("executable {} bytes", grouped(s.exe_bytes))
                } else {
                    "executable size unknown".into()
                }),
            ]
            .into_iter()
            .flatten()
            .collect();
            let _ = writeln!(o, "\n### {}\n\n{}\n", cell(&s.name), parts.join(", "));
            for c in &s.configs {
                let _ = writeln!(o, "{}:\n\n{}", cell(&c.path), md_fence(&c.content, ""));
            }
        }
    }

    if figures::is_load_run(r) {
        let _ = writeln!(
            o,
            "\n## Command\n\nRun again with:\n\n{}",
            md_fence(&figures::load_command(r), "sh")
        );
    } else if !r.study_toml.is_empty() {
        let _ = writeln!(
            o,
            "\n## Study file\n\nSave as `study.toml` and run `throng lab study.toml` to measure again.\n\n{}",
            md_fence(&r.study_toml, "toml")
        );
    }
    o
}

/// The server of a saved `throng load`: what it is instead of a version,
/// package, model and configuration throng cannot know.
fn target(o: &mut String, run: &RunData, a: &Analysis) {
    let lines: Vec<String> = run
        .servers
        .iter()
        .map(|s| cell(&tables::target_line(&s.name, &a.steps)))
        .collect();
    let _ = writeln!(o, "\n## Target\n\n{}", lines.join("\n\n"));
}

/// The summary when the run has paired ratios: each server against the
/// baseline in words, then every pooled comparison.
fn paired_summary(o: &mut String, run: &RunData, a: &Analysis) {
    o.push_str(&heading(&Heading::section("summary", "Summary")));
    if let Some(base) = &a.baseline {
        let _ = write!(o, "\n{}\n", cell(&ratios::intro(base)));
    }
    o.push('\n');
    for g in &a.ratios {
        let _ = write!(o, "**{}**\n\n", cell(&g.title()));
        let lines: Vec<String> = g.lines.iter().map(|l| l.sentence()).collect();
        list(o, &lines);
    }
    if let Some(t) = tables::paired(run) {
        let _ = write!(o, "{}\n{}\n\n", table(&t), cell(ratios::TABLE_NOTE));
    }
    if let Some(t) = crate::protocols::table(run) {
        let _ = write!(o, "{}\n\n", table(&t));
    }
}

/// Plain-text lines as a list followed by a blank line; nothing when
/// there are none.
fn list(o: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    for l in lines {
        let _ = writeln!(o, "- {}", cell(l));
    }
    o.push('\n');
}

/// The feature table of ACME's thttpd comparison, as probed live, with
/// each answer's evidence listed below it and the search for max users.
fn features(o: &mut String, run: &RunData) {
    let Some(t) = tables::features(run) else {
        return;
    };
    o.push_str(&table(&t));
    o.push_str("\nEvery answer was seen on the running server:\n\n");
    for s in &run.servers {
        for f in &s.features {
            let _ = writeln!(
                o,
                "- {} {}: {} — {}",
                cell(&s.name),
                cell(f.name.title()),
                f.status.label(),
                cell(&f.evidence)
            );
        }
    }
    if let Some(t) = tables::max_users_searched(run) {
        o.push('\n');
        o.push_str(&table(&t));
        let patience = run
            .servers
            .iter()
            .flat_map(|s| &s.max_users)
            .map(|m| m.patience_s)
            .next()
            .unwrap_or(throng_model::max_users::DEFAULT_PATIENCE_S);
        let _ = writeln!(o, "\nMax users: highest concurrency with no error and p99 under {patience} s, stepping up past the sweep until the server broke.");
    }
    o.push('\n');
}

/// A table in Markdown (GitHub's pipe tables), from its heading to the
/// newline of its last row. Text from outside is escaped so it cannot
/// break the table or inject HTML; what the report wrote is printed as is.
pub fn table(t: &Table) -> String {
    let mut o = String::new();
    if let Some(h) = &t.heading {
        o.push_str(&heading(h));
        o.push('\n');
    }
    if t.head_row {
        let heads: Vec<String> = t.columns.iter().map(|c| content(&c.head)).collect();
        let _ = writeln!(o, "| {} |", heads.join(" | "));
    } else {
        // Pipe tables need a heading row; a key/value table's is blank.
        let _ = writeln!(o, "|{}", " |".repeat(t.columns.len()));
    }
    o.push('|');
    for c in &t.columns {
        o.push_str(match c.align {
            Align::Left => "---|",
            Align::Right => "--:|",
        });
    }
    o.push('\n');
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(content).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o
}

/// A heading and its newline. Its text is escaped: a subsection can be
/// named after a workload.
pub fn heading(h: &Heading) -> String {
    format!("{} {}\n", "#".repeat(h.level.into()), cell(&h.text))
}

/// A cell's text with what goes around it: an aside after the value (a
/// warning in parentheses, since Markdown has no colour), the verdict after
/// a dash, where it was measured in parentheses.
fn content(c: &Cell) -> String {
    let mut s = match c.kind {
        Kind::Text | Kind::Code => cell(&c.text),
        Kind::Literal => c.text.clone(),
    };
    if c.highlight && !s.is_empty() {
        s = format!("**{s}**");
    }
    match &c.aside {
        Some(Aside::Plain(a)) => {
            s.push(' ');
            s.push_str(&cell(a));
        }
        Some(Aside::Warn(a)) => {
            let _ = write!(s, " ({})", cell(a));
        }
        None => {}
    }
    if let Some(m) = &c.mark {
        if !c.text.is_empty() {
            s.push_str(" — ");
        }
        s.push_str(&cell(m.text()));
    }
    if let Some(src) = &c.source {
        let _ = write!(s, " ({})", cell(src));
    }
    s
}

/// Why each failed step failed, with the server's last output: the HTML
/// report had them and this one did not, so a server's own error message
/// was in no Markdown report.
fn failures(o: &mut String, run: &RunData) {
    let failed = figures::failures(run);
    if failed.is_empty() {
        return;
    }
    o.push_str("\n## Failures\n");
    for (step, why, log) in failed {
        let _ = writeln!(o, "\n### {}\n\n{}\n", cell(&step), cell(why));
        if let Some(t) = log {
            o.push_str(&md_fence(t, ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Column, Mark};

    #[test]
    fn tables_escape_outside_text_and_keep_their_own() {
        let mut t = Table::new(vec![
            Column::left("Server"),
            Column::right("req/s [95% CI]"),
        ])
        .subsection("Steps");
        t.push(vec![
            Cell::text("a|b").warn("shared"),
            Cell::lit("1,000 [900–1,100]").mark(Mark::Verdict {
                valid: false,
                label: "suspect: client_bound".into(),
                reasons: vec![],
            }),
        ]);
        t.push(vec![
            Cell::mark_only(Mark::Failed("failed: *gone*".into())),
            Cell::none(),
        ]);
        assert_eq!(
            table(&t),
            "### Steps\n\n| Server | req/s [95% CI] |\n|---|--:|\n\
             | a\\|b (shared) | 1,000 [900–1,100] — suspect: client\\_bound |\n\
             | failed: \\*gone\\* | – |\n"
        );
    }

    #[test]
    fn key_value_tables_have_a_blank_heading_row() {
        let mut t = Table::key_value();
        t.push(vec![Cell::lit("Host").head(), Cell::code("x_y")]);
        assert_eq!(table(&t), "| | |\n|---|---|\n| Host | x\\_y |\n");
    }
}
