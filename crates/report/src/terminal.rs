//! Blocks of an article as plain text for a terminal: what `throng
//! compare` prints. Nothing is escaped, since a terminal renders no markup;
//! tables are drawn with box characters.

use comfy_table::presets::UTF8_FULL_CONDENSED;

use crate::article::{Block, Medium, Span};
use crate::table::{Align, Table};

/// Parts set apart by a blank line, each block of a part on its own lines.
pub fn parts(parts: &[Vec<Block>]) -> String {
    let texts: Vec<String> = parts
        .iter()
        .map(|blocks| {
            blocks
                .iter()
                .map(block)
                .filter(|b| !b.is_empty())
                .map(|b| b + "\n")
                .collect()
        })
        .collect();
    texts.join("\n")
}

/// One block, without a newline after it.
fn block(b: &Block) -> String {
    match b {
        Block::Paragraph(p) => spans(&p.spans),
        Block::Subheading(text) => text.clone(),
        Block::Table(t) => table(t),
        Block::Folded { table: t, more, .. } => {
            let mut t = t.clone();
            t.rows.extend(more.rows.iter().cloned());
            table(&t)
        }
        Block::List(lines) => lines
            .iter()
            .map(|l| format!("- {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
        Block::Chart(c) => c.title.clone(),
        Block::Code { text, .. } => text.trim_end().to_string(),
        Block::File { name, content } => format!("{name}:\n{}", content.trim_end()),
        Block::Facts(facts) => facts
            .iter()
            .map(|f| spans(f))
            .collect::<Vec<_>>()
            .join(", "),
        Block::Flame { file, title, .. } => format!("{title}: {file}"),
        Block::Only(Medium::Text, b) => block(b),
        Block::Only(Medium::Page, _) => String::new(),
    }
}

fn spans(spans: &[Span]) -> String {
    let mut o = String::new();
    for s in spans {
        match s {
            Span::Text(t)
            | Span::Strong(t)
            | Span::Code(t)
            | Span::Command(t)
            | Span::Stress(t)
            | Span::Only(Medium::Text, t) => o.push_str(t),
            Span::Link { text, .. } | Span::Flag { text, .. } => o.push_str(text),
            Span::Only(Medium::Page, _) => {}
        }
    }
    o.trim_start().to_string()
}

/// A table drawn with box characters for the terminal; numbers right-aligned.
pub fn table(t: &Table) -> String {
    let mut out = comfy_table::Table::new();
    out.load_preset(UTF8_FULL_CONDENSED);
    out.set_header(
        t.columns
            .iter()
            .map(|c| c.head.text.clone())
            .collect::<Vec<_>>(),
    );
    for row in &t.rows {
        out.add_row(row.iter().zip(&t.columns).map(|(c, col)| {
            let cell = comfy_table::Cell::new(&c.text);
            match col.align {
                Align::Right => cell.set_alignment(comfy_table::CellAlignment::Right),
                Align::Left => cell,
            }
        }));
    }
    out.to_string()
}
