//! The report as one self-contained HTML file: inline CSS and SVG, no script,
//! nothing fetched from the network, light and dark colour schemes. What
//! it says and in which order is the [`Article`]'s; this module draws its
//! blocks, and its tables with [`table`].

use std::fmt::Write;

use crate::article::{Article, Block, Medium, Paragraph, Span, Tone};
use crate::charts::NamedChart;
use crate::escape::xml as esc;
use crate::table::{Align, Aside, Cell, Heading, Kind, Mark, Table};

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

pub fn render(article: &Article) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&article.label)
    );
    let _ = writeln!(o, "<h1>{}</h1>", esc(&article.title));
    blocks(&mut o, &article.lead);
    for s in &article.sections {
        let _ = writeln!(o, "{}", heading(&s.heading));
        blocks(&mut o, &s.blocks);
    }
    blocks(&mut o, &article.colophon);
    o.push_str("</body>\n</html>\n");
    o
}

/// Each block on its own line; a block with nothing to show leaves none.
fn blocks(o: &mut String, blocks: &[Block]) {
    for b in blocks {
        let html = block(b);
        if !html.is_empty() {
            o.push_str(&html);
            o.push('\n');
        }
    }
}

/// One block, without a newline after it.
fn block(b: &Block) -> String {
    match b {
        Block::Paragraph(p) => paragraph(p),
        Block::Subheading(text) => format!("<h3>{}</h3>", esc(text)),
        Block::Table(t) => table(t),
        Block::Folded {
            table: t,
            label,
            more,
        } => format!(
            "{}\n<details><summary>{}</summary>{}</details>",
            table(t),
            esc(label),
            table(more)
        ),
        Block::List(lines) => list(lines),
        Block::Chart(c) => chart(c),
        Block::Code { text, .. } => format!("<pre>{}</pre>", esc(text)),
        Block::File { name, content } => format!(
            "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
            esc(name),
            esc(content)
        ),
        Block::Facts(facts) => {
            let facts: Vec<String> = facts.iter().map(|f| spans(f)).collect();
            format!("<p>{}</p>", facts.join(" · "))
        }
        // An object of its own, so each graph's script and ids stay its own.
        Block::Flame { file, title, svg } => format!(
            "<figure class=\"flame\" id=\"{}\">\n<object type=\"image/svg+xml\" width=\"100%\" data=\"data:image/svg+xml;base64,{}\"></object><figcaption>{}</figcaption>\n</figure>",
            esc(file),
            {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.encode(svg)
            },
            esc(title)
        ),
        Block::Only(Medium::Page, b) => block(b),
        Block::Only(Medium::Text, _) => String::new(),
    }
}

fn paragraph(p: &Paragraph) -> String {
    let class = match p.tone {
        Tone::Plain => "",
        Tone::Meta => " class=\"meta\"",
        Tone::Warn => " class=\"warn\"",
        Tone::Failed => " class=\"failed\"",
    };
    format!("<p{class}>{}</p>", spans(&p.spans))
}

fn spans(spans: &[Span]) -> String {
    let mut o = String::new();
    for s in spans {
        match s {
            Span::Text(t) | Span::Stress(t) | Span::Only(Medium::Page, t) => o.push_str(&esc(t)),
            Span::Only(Medium::Text, _) => {}
            Span::Strong(t) => {
                let _ = write!(o, "<strong>{}</strong>", esc(t));
            }
            Span::Code(t) | Span::Command(t) => {
                let _ = write!(o, "<code>{}</code>", esc(t));
            }
            Span::Link { text, anchor } => {
                let _ = write!(o, "<a href=\"#{anchor}\">{}</a>", esc(text));
            }
            Span::Flag { good, text } => {
                let class = if *good { "valid" } else { "failed" };
                let _ = write!(o, "<span class=\"{class}\">{}</span>", esc(text));
            }
        }
    }
    o
}

/// Plain-text lines as a list; nothing when there are none.
fn list(lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut o = String::from("<ul>\n");
    for l in lines {
        let _ = writeln!(o, "<li>{}</li>", esc(l));
    }
    o.push_str("</ul>");
    o
}

fn chart(c: &NamedChart) -> String {
    format!(
        "<figure class=\"chart\" id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
        esc(&c.id),
        c.svg,
        esc(&c.caption)
    )
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
            let mut th = String::new();
            cell(&mut th, "th", &c.head, c.align);
            // The palette's colours are the report's own, never outside text.
            if let (Some(color), Some(at)) = (c.swatch, th.find('>')) {
                th.insert_str(
                    at + 1,
                    &format!(
                        "<span class=\"swatch\" style=\"display:inline-block;width:0.8em;\
                         height:0.8em;margin-right:0.3em;background:{color}\"></span>"
                    ),
                );
            }
            o.push_str(&th);
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
    fn blocks_for_text_leave_nothing_and_facts_share_a_line() {
        let facts = Block::Facts(vec![
            vec![Span::text("nginx 1.22")],
            vec![Span::text("recipe "), Span::Code("<n>".into())],
        ]);
        assert_eq!(
            block(&facts),
            "<p>nginx 1.22 · recipe <code>&lt;n&gt;</code></p>"
        );
        assert_eq!(
            block(&Block::only(Medium::Text, Block::text("for text"))),
            ""
        );
    }

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
