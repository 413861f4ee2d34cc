//! The report as one self-contained HTML file: inline CSS and SVG, no script,
//! nothing fetched from the network, light and dark colour schemes. The
//! tables come from `tables` and are drawn by [`table`]; the prose around
//! them, the charts, failures and configurations are written here.

use std::fmt::Write;

use throng_model::RunData;

use crate::analysis::Analysis;
use crate::charts::NamedChart;
use crate::escape::xml as esc;
use crate::figures::{self, grouped};
use crate::table::{Align, Aside, Cell, Heading, Kind, Mark, Table};
use crate::{cost, parity, ratios, tables};

const CSS: &str = r#"
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --line: #d1d9e0;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --code: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d;
    --ok: #3fb950; --warn: #d29922; --bad: #f85149; --code: #161b22; }
}
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
  color: var(--fg); background: var(--bg); max-width: 1120px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.2em; margin-top: 2em; }
.meta { color: var(--muted); }
table { border-collapse: collapse; margin: 1em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; vertical-align: top; }
th { font-weight: 600; }
.t { text-align: left; }
.scroll { overflow-x: auto; }
.valid { color: var(--ok); }
.suspect, .warn { color: var(--warn); }
.failed, .fail { color: var(--bad); }
.v { font-size: 0.85em; display: block; }
.hl { box-shadow: inset 3px 0 var(--warn); font-weight: 600; }
figure.chart { margin: 1.5em 0; }
figure.chart svg { color: var(--fg); max-width: 100%; height: auto; }
figure.chart svg .bg { fill: var(--bg); }
figcaption { color: var(--muted); font-size: 0.9em; max-width: 760px; }
pre { background: var(--code); padding: 10px; overflow-x: auto; font-size: 0.85em; }
details { margin: 0.4em 0; }
summary { cursor: pointer; }
code { font-size: 0.9em; }
"#;

pub fn render(run: &RunData, a: &Analysis) -> String {
    let mut o = String::new();
    let r = &run.run;
    let env = &r.environment;
    let study = if r.study.is_empty() {
        "study"
    } else {
        &r.study
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>throng report: {} (run {})</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(study),
        r.id
    );
    let _ = writeln!(o, "<h1>Web server benchmark: {}</h1>", esc(study));
    let finished = r
        .finished_unix_s
        .map(figures::utc)
        .unwrap_or_else(|| "not finished".into());
    let _ = writeln!(
        o,
        "<p class=\"meta\">Run {} · started {} · finished {} · {} · measured by throng {} on {}</p>",
        r.id,
        esc(&figures::utc(r.started_unix_s)),
        esc(&finished),
        if r.complete {
            "<span class=\"valid\">complete</span>"
        } else {
            "<span class=\"failed\">incomplete: interrupted or the lab failed; numbers cover only what was measured</span>"
        },
        esc(&env.throng_version),
        esc(&env.hostname)
    );
    let fails = figures::flagged_findings(run);
    if !fails.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"warn\">The machine check found {} problem(s) before the run; see <a href=\"#environment\">Environment</a>.</p>",
            fails.len()
        );
    }

    let summary = tables::summary(&a.summary_workloads, &a.summary);
    if a.ratios.is_empty() {
        let _ = writeln!(o, "{}", table(&summary));
    } else {
        paired_summary(&mut o, run, a);
        let _ = writeln!(o, "{}", table(&summary.subsection(tables::BEST_FIGURES)));
    }
    // Workload names are escaped with the rest: the note is text.
    let _ = writeln!(
        o,
        "<p class=\"meta\">{}</p>",
        esc(&tables::summary_note(&a.summary_workloads, &a.steps, |w| w.to_string()))
    );
    if let Some(t) = tables::features(run) {
        // The evidence of each answer is its cell's tooltip.
        let _ = writeln!(o, "{}", table(&t));
        o.push_str(
            "<p>Every answer was seen on the running server; hover a cell for what was seen.</p>\n",
        );
    }
    if let Some(t) = tables::max_users_searched(run) {
        let _ = writeln!(o, "{}", table(&t));
    }
    if let Some(t) = tables::best(run, &a.steps) {
        let _ = writeln!(o, "{}", table(&t));
    }
    if let Some(t) = tables::parity(run) {
        let _ = writeln!(
            o,
            "{}\n<p class=\"meta\">{}</p>",
            table(&t),
            esc(parity::LEGEND)
        );
        list(&mut o, &parity::notes(run));
    }

    o.push_str("<h2 id=\"charts\">Charts</h2>\n");
    if a.charts.is_empty() {
        o.push_str("<p>No step was measured, so there is nothing to draw.</p>\n");
    }
    for c in &a.charts {
        chart(&mut o, c);
    }

    let levels = tables::paired_per_level(run);
    if !levels.is_empty() {
        let _ = writeln!(
            o,
            "{}\n<p class=\"meta\">{}</p>",
            heading(&Heading::section("paired", "Paired comparisons per level")),
            esc(ratios::LEVELS_NOTE)
        );
        for t in &levels {
            let _ = writeln!(o, "{}", table(t));
        }
    }
    let _ = writeln!(o, "{}", table(&tables::steps(&a.steps)));
    o.push_str("<p class=\"meta\">req/s: mean over rounds with the 95% confidence interval of the mean (Student's t). p50/p99: median over rounds. Server CPU: user + system time of the server's process tree over the wall time of the rounds that sampled it, all together (100% = one core).");
    if let Some(note) = tables::steps_note(&a.steps) {
        let _ = write!(o, " {}", esc(&note));
    }
    o.push_str("</p>\n");
    if let Some(t) = tables::sessions(&a.steps) {
        let _ = writeln!(o, "{}", table(&t));
        for l in tables::sessions_lines(&a.steps) {
            let _ = writeln!(o, "<p>{}</p>", esc(&l));
        }
        let _ = writeln!(o, "<p class=\"meta\">{}</p>", esc(tables::SESSIONS_NOTE));
    }
    if let Some(t) = tables::costs(&a.steps) {
        let _ = writeln!(
            o,
            "{}\n<p>{}</p>",
            heading(&Heading::section("cost", cost::HEADING)),
            esc(cost::INTRO)
        );
        list(&mut o, &cost::best_lines(run, &a.steps));
        let _ = writeln!(o, "{}", table(&t));
    }
    failures(&mut o, run);
    let _ = writeln!(o, "{}", table(&tables::environment(run)));
    if let Some(t) = tables::kernel_settings(run) {
        let _ = writeln!(
            o,
            "<details><summary>Kernel settings</summary>{}</details>",
            table(&t)
        );
    }
    if let Some(t) = tables::hosts(run) {
        let _ = writeln!(o, "{}", table(&t));
    }
    if let Some(t) = tables::machine_check(run) {
        let _ = writeln!(o, "{}", table(&t));
    }
    if figures::is_load_run(r) {
        o.push_str("<h2 id=\"servers\">Target</h2>\n");
        for s in &run.servers {
            let _ = writeln!(o, "<p>{}</p>", esc(&tables::target_line(&s.name, &a.steps)));
        }
        let _ = writeln!(
            o,
            "<h2 id=\"study\">Command</h2>\n<p>Run again with:</p>\n<pre>{}</pre>",
            esc(&figures::load_command(r))
        );
    } else {
        servers(&mut o, run);
        study_file(&mut o, r);
    }
    let _ = writeln!(
        o,
        "<p class=\"meta\">Generated from run {} by <code>throng report</code>.</p>\n</body>\n</html>",
        r.id
    );
    o
}

/// The study file, to measure again with.
fn study_file(o: &mut String, r: &throng_model::RunRecord) {
    o.push_str("<h2 id=\"study\">Study file</h2>\n");
    if r.study_toml.is_empty() {
        o.push_str("<p>The study file was not stored.</p>\n");
    } else {
        let _ = writeln!(
            o,
            "<p>Save this as <code>study.toml</code> and run <code>throng lab study.toml</code> to measure again.</p>\n<pre>{}</pre>",
            esc(&r.study_toml)
        );
    }
}

/// The summary when the run has paired ratios: each server against the
/// baseline in words, then every pooled comparison.
fn paired_summary(o: &mut String, run: &RunData, a: &Analysis) {
    let _ = writeln!(o, "{}", heading(&Heading::section("summary", "Summary")));
    if let Some(base) = &a.baseline {
        let _ = writeln!(o, "<p>{}</p>", esc(&ratios::intro(base)));
    }
    for g in &a.ratios {
        let _ = writeln!(o, "<p><strong>{}</strong></p>", esc(&g.title()));
        let lines: Vec<String> = g.lines.iter().map(|l| l.sentence()).collect();
        list(o, &lines);
    }
    if let Some(t) = tables::paired(run) {
        let _ = writeln!(
            o,
            "{}\n<p class=\"meta\">{}</p>",
            table(&t),
            esc(ratios::TABLE_NOTE)
        );
    }
    if let Some(t) = crate::protocols::table(run) {
        let _ = writeln!(o, "{}", table(&t));
    }
}

/// Plain-text lines as a list; nothing when there are none.
fn list(o: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    o.push_str("<ul>\n");
    for l in lines {
        let _ = writeln!(o, "<li>{}</li>", esc(l));
    }
    o.push_str("</ul>\n");
}

fn chart(o: &mut String, c: &NamedChart) {
    let _ = writeln!(
        o,
        "<figure class=\"chart\" id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
        esc(&c.id),
        c.svg,
        esc(&c.caption)
    );
}

fn failures(o: &mut String, run: &RunData) {
    let failed = figures::failures(run);
    if failed.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"failures\">Failures</h2>\n");
    for (step, why, log) in failed {
        let _ = writeln!(
            o,
            "<h3>{}</h3>\n<p class=\"failed\">{}</p>",
            esc(&step),
            esc(why)
        );
        if let Some(t) = log {
            let _ = writeln!(o, "<pre>{}</pre>", esc(t));
        }
    }
}

fn servers(o: &mut String, run: &RunData) {
    if run.servers.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"servers\">Servers and their configurations</h2>\n");
    for s in &run.servers {
        // What a recipe does not say (a command's version or model) is
        // left out, not shown as an empty field.
        let model = if s.model.is_empty() {
            String::new()
        } else {
            format!(" · {}", esc(&s.model))
        };
        let _ = writeln!(
            o,
            "<h3>{}</h3>\n<p>{} · recipe <code>{}</code> ({} profile) · package <code>{}</code>{model} · executable {}</p>",
            esc(&s.name),
            format!("{} {}", esc(&s.name), esc(&s.version)).trim_end(),
            esc(&s.recipe),
            esc(&s.profile),
            esc(if s.package.is_empty() { "–" } else { &s.package }),
            if s.exe_bytes > 0 { grouped(s.exe_bytes) + " bytes" } else { "size unknown".into() }
        );
        for c in &s.configs {
            let _ = writeln!(
                o,
                "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
                esc(&c.path),
                esc(&c.content)
            );
        }
    }
}

/// A table in HTML, from its heading to `</table>` (or the `</div>` of a
/// wide one), without a newline after it.
pub fn table(t: &Table) -> String {
    let mut o = String::new();
    if let Some(h) = &t.heading {
        let _ = writeln!(o, "{}", heading(h));
    }
    o.push_str(if t.wide {
        "<div class=\"scroll\"><table>\n"
    } else {
        "<table>\n"
    });
    if t.head_row {
        o.push_str("<tr>");
        for c in &t.columns {
            cell(&mut o, "th", &c.head, c.align);
        }
        o.push_str("</tr>\n");
    }
    for row in &t.rows {
        o.push_str("<tr>");
        for (c, col) in row.iter().zip(&t.columns) {
            cell(&mut o, if c.head { "th" } else { "td" }, c, col.align);
        }
        o.push_str("</tr>\n");
    }
    o.push_str(if t.wide { "</table></div>" } else { "</table>" });
    o
}

/// A heading, without a newline after it.
pub fn heading(h: &Heading) -> String {
    let id = h.id.map(|id| format!(" id=\"{id}\"")).unwrap_or_default();
    format!("<h{l}{id}>{}</h{l}>", esc(&h.text), l = h.level)
}

/// One cell: text to the left gets class `t` (numbers align right by
/// default); a verdict under a value is a `v` block, a verdict alone is
/// inline; the reasons and the evidence are tooltips.
fn cell(o: &mut String, tag: &str, c: &Cell, align: Align) {
    let classes: Vec<&str> = [
        (align == Align::Left).then_some("t"),
        c.hook.as_deref(),
        c.highlight.then_some("hl"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let class = if classes.is_empty() {
        String::new()
    } else {
        format!(" class=\"{}\"", classes.join(" "))
    };
    let tip = c
        .tip
        .as_deref()
        .map(|t| format!(" title=\"{}\"", esc(t)))
        .unwrap_or_default();
    let _ = write!(o, "<{tag}{class}{tip}>");
    match c.kind {
        Kind::Text | Kind::Literal => o.push_str(&esc(&c.text)),
        Kind::Code => {
            let _ = write!(o, "<code>{}</code>", esc(&c.text));
        }
    }
    match &c.aside {
        Some(Aside::Plain(a)) => {
            let _ = write!(o, " <small>{}</small>", esc(a));
        }
        Some(Aside::Warn(a)) => {
            let _ = write!(o, " <small class=\"suspect\">{}</small>", esc(a));
        }
        None => {}
    }
    if let Some(m) = &c.mark {
        let block = if c.text.is_empty() { "" } else { "v " };
        match m {
            Mark::Verdict {
                valid,
                label,
                reasons,
            } => {
                let class = if *valid { "valid" } else { "suspect" };
                let _ = write!(
                    o,
                    "<span class=\"{block}{class}\" title=\"{}\">{}</span>",
                    esc(&reasons.join("; ")),
                    esc(label)
                );
            }
            Mark::Failed(text) => {
                let _ = write!(o, "<span class=\"{block}failed\">{}</span>", esc(text));
            }
        }
    }
    if let Some(s) = &c.source {
        let _ = write!(o, "<small class=\"meta\">{}</small>", esc(s));
    }
    let _ = write!(o, "</{tag}>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Column;

    #[test]
    fn cells_carry_alignment_verdicts_and_tooltips() {
        let mut t = Table::new(vec![Column::left("Server"), Column::right("req/s")])
            .section("steps", "Every step")
            .wide();
        t.push(vec![
            Cell::text("<x>").hook("feature-yes").tip("a \"b\""),
            Cell::lit("1,000")
                .warn("shared")
                .mark(Mark::Verdict {
                    valid: true,
                    label: "valid".into(),
                    reasons: vec!["r1".into(), "r2".into()],
                })
                .source("1 core(s), c=10"),
        ]);
        t.push(vec![
            Cell::mark_only(Mark::Failed("skipped".into())),
            Cell::code(""),
        ]);
        assert_eq!(
            table(&t),
            "<h2 id=\"steps\">Every step</h2>\n<div class=\"scroll\"><table>\n\
             <tr><th class=\"t\">Server</th><th>req/s</th></tr>\n\
             <tr><td class=\"t feature-yes\" title=\"a &quot;b&quot;\">&lt;x&gt;</td>\
             <td>1,000 <small class=\"suspect\">shared</small><span class=\"v valid\" title=\"r1; r2\">valid</span><small class=\"meta\">1 core(s), c=10</small></td></tr>\n\
             <tr><td class=\"t\"><span class=\"failed\">skipped</span></td><td><code></code></td></tr>\n\
             </table></div>"
        );
    }
}
