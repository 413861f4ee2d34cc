//! The report in Markdown, for articles and README files: the [`Article`]
//! block by block, in its order. Its tables are drawn by [`table`], as the
//! comparison's are.

use std::fmt::Write;

use crate::article::{Article, Block, Medium, Span};
use crate::escape::{md_cell as cell, md_fence};
use crate::table::{Align, Aside, Cell, Heading, Kind, Table};

/// The article in Markdown; charts are images in `image_dir` when it is
/// given (the PNGs written beside the file), else their figures as tables
/// (a forest plot's are the comparisons' tables already, and it is left
/// out).
pub fn render(article: &Article, image_dir: Option<&str>) -> String {
    let md = Markdown { image_dir };
    let mut o = String::new();
    let _ = writeln!(o, "# {}\n", cell(&article.title));
    md.blocks(&mut o, &article.lead);
    for s in &article.sections {
        let mut body = String::new();
        md.blocks(&mut body, &s.blocks);
        // A section of what text cannot show (charts without images) is
        // left out, heading and all.
        if !body.is_empty() {
            let _ = writeln!(o, "{}", heading(&s.heading));
            o.push_str(&body);
        }
    }
    md.blocks(&mut o, &article.colophon);
    o
}

/// Blocks without a title, a blank line between them: a comparison, which
/// is printed or pasted whole rather than read as an article.
pub fn body(blocks: &[Block]) -> String {
    let md = Markdown { image_dir: None };
    let texts: Vec<String> = blocks
        .iter()
        .map(|b| md.block(b))
        .filter(|b| !b.is_empty())
        .collect();
    texts.join("\n")
}

struct Markdown<'a> {
    image_dir: Option<&'a str>,
}

impl Markdown<'_> {
    /// Each block followed by a blank line; a block with nothing to show
    /// leaves none.
    fn blocks(&self, o: &mut String, blocks: &[Block]) {
        for b in blocks {
            let md = self.block(b);
            if !md.is_empty() {
                o.push_str(&md);
                o.push('\n');
            }
        }
    }

    /// One block and its newline.
    fn block(&self, b: &Block) -> String {
        match b {
            Block::Paragraph(p) => line(&spans(&p.spans)),
            Block::Subheading(text) => heading(&Heading::subsection(text)),
            Block::Table(t) => table(t),
            // Text cannot fold: the folded rows are rows of the table.
            Block::Folded { table: t, more, .. } => {
                let mut t = t.clone();
                t.rows.extend(more.rows.iter().cloned());
                table(&t)
            }
            Block::List(lines) => lines.iter().map(|l| format!("- {}\n", cell(l))).collect(),
            Block::Chart(c) => match self.image_dir {
                Some(dir) => format!(
                    "![{}]({}/{}.png)\n\n{}\n",
                    cell(&c.title),
                    dir.trim_end_matches('/'),
                    c.id,
                    c.caption
                ),
                // Without an image to point to, the chart's figures as
                // its table, so the text report holds every number the
                // page draws.
                None => match &c.data {
                    Some(data) => format!(
                        "{}\n{}\n\n{}",
                        heading(&Heading::subsection(&c.title)),
                        c.caption,
                        table(data)
                    ),
                    None => String::new(),
                },
            },
            Block::Code { text, lang } => md_fence(text, lang),
            Block::File { name, content } => {
                format!("{}:\n\n{}", cell(name), md_fence(content, ""))
            }
            Block::Facts(facts) => {
                let facts: Vec<String> = facts.iter().map(|f| spans(f)).collect();
                line(&facts.join(", "))
            }
            Block::Flame { file, title, .. } => line(&format!("{}: `{}`", cell(title), file)),
            Block::Only(Medium::Text, b) => self.block(b),
            Block::Only(Medium::Page, _) => String::new(),
        }
    }
}

/// A paragraph's text and its newline; nothing when it has no text.
fn line(text: &str) -> String {
    let text = text.trim_start();
    if text.is_empty() {
        String::new()
    } else {
        format!("{text}\n")
    }
}

/// Spans as escaped text. Markdown has no colour: what a page colours as
/// bad news is bold here.
fn spans(spans: &[Span]) -> String {
    let mut o = String::new();
    for s in spans {
        match s {
            Span::Text(t) | Span::Code(t) | Span::Only(Medium::Text, t) => o.push_str(&cell(t)),
            Span::Link { text, .. } => o.push_str(&cell(text)),
            Span::Only(Medium::Page, _) => {}
            Span::Strong(t) | Span::Stress(t) => {
                let _ = write!(o, "**{}**", cell(t));
            }
            Span::Command(t) => {
                let _ = write!(o, "`{t}`");
            }
            Span::Flag { good: true, text } => o.push_str(&cell(text)),
            Span::Flag { good: false, text } => {
                let _ = write!(o, "**{}**", cell(text));
            }
        }
    }
    o
}

/// A table in Markdown (GitHub's pipe tables), from its heading to the
/// newline of its last row. Text from outside is escaped so it cannot
/// break the table or inject HTML; what the report wrote is printed as is.
pub fn table(t: &Table) -> String {
    if t.columns.iter().any(|c| c.page_only) {
        return table(&t.clone().narrow());
    }
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
    fn a_section_with_nothing_for_text_is_left_out_and_folded_rows_join_their_table() {
        use crate::article::{Article, Block, Medium, Section};
        let mut env = Table::key_value();
        env.push(vec![Cell::lit("Host").head(), Cell::text("a")]);
        let mut more = Table::key_value();
        more.push(vec![Cell::code("net.core.somaxconn"), Cell::code("4096")]);
        let mut page = Section::new("charts", "Charts");
        page.push(Block::only(Medium::Page, Block::text("for a page")));
        let mut machine = Section::new("environment", "Environment");
        machine.push(Block::Folded {
            table: env,
            label: "Kernel settings".into(),
            more,
        });
        let article = Article {
            label: "l".into(),
            title: "T".into(),
            lead: vec![Block::only(Medium::Text, Block::text("for text"))],
            sections: vec![page, machine],
            colophon: Vec::new(),
        };
        assert_eq!(
            render(&article, None),
            "# T\n\nfor text\n\n## Environment\n\n| | |\n|---|---|\n| Host | a |\n\
             | net.core.somaxconn | 4096 |\n\n"
        );
    }

    #[test]
    fn key_value_tables_have_a_blank_heading_row() {
        let mut t = Table::key_value();
        t.push(vec![Cell::lit("Host").head(), Cell::code("x_y")]);
        assert_eq!(table(&t), "| | |\n|---|---|\n| Host | x\\_y |\n");
    }
}
