//! One table model for every format. The report's tables (summary, paired
//! comparisons, best per workload, parity, every step, sessions, cost per
//! request, features, max users searched, environment, hosts, machine
//! check) and the comparison's are built once as a [`Table`], from the
//! analysis and the run, and `html::table` and `markdown::table` turn a
//! `Table` into their markup, the way hyperfine's markup exporters share
//! one table. Formats then differ only in how a kind of cell looks, never
//! in what a table holds.
//!
//! This module knows no format: it depends on nothing else in the crate.

use throng_model::Verdict;

/// Which side a column's values line up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Words: names, workloads, verdicts.
    Left,
    /// Numbers.
    Right,
}

/// Where a cell's text came from, which decides how it is escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// From outside the report (a server, a study, a user, an error):
    /// escaped for every format.
    Text,
    /// Written by the report itself (numbers, units, headings, fixed
    /// words): Markdown prints it as written, so the brackets of
    /// "12,345 [12,100–12,590]" stay brackets.
    Literal,
    /// From outside and shown as code (checks, sysctls, commands): in HTML a
    /// `<code>` element unless empty, in Markdown escaped text.
    Code,
}

/// Something said right after a cell's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aside {
    /// A qualifier in small print: a workload "(tiny)", a unit.
    Plain(String),
    /// A warning about the value ("shared" cores): coloured in HTML,
    /// in parentheses in Markdown.
    Warn(String),
}

/// Whether the value of a cell can be believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// A verdict: whether it is valid (its colour in HTML), its label
    /// ("valid", "suspect: noisy") and the reasons behind it (the tooltip
    /// in HTML).
    Verdict {
        valid: bool,
        label: String,
        reasons: Vec<String>,
    },
    /// No number at all: "failed: the server exited", "skipped".
    Failed(String),
}

impl Mark {
    /// A step's verdict with each reason as "code: message".
    pub fn verdict(v: &Verdict) -> Mark {
        Mark::Verdict {
            valid: v.is_valid(),
            label: v.label(),
            reasons: v
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.message))
                .collect(),
        }
    }

    /// A verdict by its label alone, where the step it comes from is
    /// shown elsewhere with its reasons.
    pub fn label(v: &Verdict) -> Mark {
        Mark::Verdict {
            valid: v.is_valid(),
            label: v.label(),
            reasons: Vec::new(),
        }
    }

    pub fn text(&self) -> &str {
        match self {
            Mark::Verdict { label, .. } => label,
            Mark::Failed(text) => text,
        }
    }
}

/// One cell: a value, and what the formats may say around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub text: String,
    pub kind: Kind,
    /// A heading for its row (the environment's keys): `<th>` in HTML.
    pub head: bool,
    pub aside: Option<Aside>,
    /// The value's verdict, after it; alone when `text` is empty.
    pub mark: Option<Mark>,
    /// Where the value was measured ("1 core(s), c=50"), after the verdict.
    pub source: Option<String>,
    /// A style hook for HTML ("feature-yes", "warn"); Markdown ignores it.
    pub hook: Option<String>,
    /// What backs the value (a feature's evidence): the tooltip in HTML.
    pub tip: Option<String>,
    /// The value stands out from its row (a setting one server has
    /// otherwise): a class in HTML, bold in Markdown.
    pub highlight: bool,
}

impl Cell {
    fn new(text: impl Into<String>, kind: Kind) -> Cell {
        Cell {
            text: text.into(),
            kind,
            head: false,
            aside: None,
            mark: None,
            source: None,
            hook: None,
            tip: None,
            highlight: false,
        }
    }

    /// Text from outside the report.
    pub fn text(text: impl Into<String>) -> Cell {
        Cell::new(text, Kind::Text)
    }

    /// Text the report wrote: a number, a unit, a heading.
    pub fn lit(text: impl Into<String>) -> Cell {
        Cell::new(text, Kind::Literal)
    }

    /// Text from outside, as code.
    pub fn code(text: impl Into<String>) -> Cell {
        Cell::new(text, Kind::Code)
    }

    /// "–": nothing to show.
    pub fn none() -> Cell {
        Cell::lit("–")
    }

    /// A verdict (or a failure) standing alone.
    pub fn mark_only(mark: Mark) -> Cell {
        Cell::lit("").mark(mark)
    }

    pub fn aside(mut self, text: impl Into<String>) -> Cell {
        self.aside = Some(Aside::Plain(text.into()));
        self
    }

    pub fn warn(mut self, text: impl Into<String>) -> Cell {
        self.aside = Some(Aside::Warn(text.into()));
        self
    }

    pub fn mark(mut self, mark: Mark) -> Cell {
        self.mark = Some(mark);
        self
    }

    pub fn source(mut self, text: impl Into<String>) -> Cell {
        self.source = Some(text.into());
        self
    }

    pub fn hook(mut self, hook: impl Into<String>) -> Cell {
        self.hook = Some(hook.into());
        self
    }

    pub fn tip(mut self, tip: impl Into<String>) -> Cell {
        self.tip = Some(tip.into());
        self
    }

    pub fn head(mut self) -> Cell {
        self.head = true;
        self
    }

    pub fn highlight(mut self) -> Cell {
        self.highlight = true;
        self
    }
}

/// A column: its heading and alignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub head: Cell,
    pub align: Align,
    /// A figure a page has room for and a narrower text format leaves out.
    pub page_only: bool,
    /// A colour a page shows before the heading: the colour a chart
    /// beside the table draws the column's figures in.
    pub swatch: Option<&'static str>,
}

impl Column {
    pub fn left(title: &str) -> Column {
        Column::with_head(Cell::lit(title), Align::Left)
    }

    pub fn right(title: &str) -> Column {
        Column::with_head(Cell::lit(title), Align::Right)
    }

    /// A column whose heading is a cell of its own (outside text, an aside).
    pub fn with_head(head: Cell, align: Align) -> Column {
        Column {
            head,
            align,
            page_only: false,
            swatch: None,
        }
    }

    pub fn page_only(mut self) -> Column {
        self.page_only = true;
        self
    }

    pub fn swatch(mut self, color: &'static str) -> Column {
        self.swatch = Some(color);
        self
    }
}

/// The heading a table opens its section with, or one that opens a
/// section of several tables and prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 2 for a section, 3 for a subsection.
    pub level: u8,
    /// Anchor in HTML, for links within the article.
    pub id: Option<&'static str>,
    pub text: String,
}

impl Heading {
    /// A section: `level` 2, with an anchor.
    pub fn section(id: &'static str, text: &str) -> Heading {
        Heading {
            level: 2,
            id: Some(id),
            text: text.to_string(),
        }
    }

    /// A subsection: `level` 3, without an anchor.
    pub fn subsection(text: &str) -> Heading {
        Heading {
            level: 3,
            id: None,
            text: text.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub heading: Option<Heading>,
    pub columns: Vec<Column>,
    /// False for key/value tables (the environment), whose column headings
    /// say nothing: HTML leaves the row out, Markdown leaves it blank.
    pub head_row: bool,
    pub rows: Vec<Vec<Cell>>,
    /// Wider than a page: HTML lets it scroll sideways.
    pub wide: bool,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            heading: None,
            columns,
            head_row: true,
            rows: Vec::new(),
            wide: false,
        }
    }

    /// A table of keys and values, without column headings.
    pub fn key_value() -> Table {
        Table {
            head_row: false,
            ..Table::new(vec![Column::left(""), Column::left("")])
        }
    }

    /// A section of its own: `level` 2, with an anchor.
    pub fn section(mut self, id: &'static str, text: &str) -> Table {
        self.heading = Some(Heading::section(id, text));
        self
    }

    /// A subsection: `level` 3, without an anchor.
    pub fn subsection(mut self, text: &str) -> Table {
        self.heading = Some(Heading::subsection(text));
        self
    }

    pub fn wide(mut self) -> Table {
        self.wide = true;
        self
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len(), "row width");
        self.rows.push(row);
    }

    /// The table without its page-only columns, for a narrower format.
    pub fn narrow(mut self) -> Table {
        while let Some(i) = self.columns.iter().position(|c| c.page_only) {
            self.columns.remove(i);
            for row in &mut self.rows {
                row.remove(i);
            }
        }
        self
    }
}

/// A core count in a table: "–" when it is not known (a server throng did
/// not start), not 0.
pub(crate) fn cores_cell(cores: u32) -> Cell {
    if cores > 0 {
        Cell::lit(cores.to_string())
    } else {
        Cell::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_only_column_leaves_a_narrow_table_with_its_cells() {
        let mut t = Table::new(vec![
            Column::left("a"),
            Column::right("b").page_only(),
            Column::left("c"),
        ]);
        t.push(vec![Cell::text("1"), Cell::lit("2"), Cell::code("3")]);
        let t = t.narrow();
        assert_eq!(t.columns.len(), 2);
        assert_eq!(t.columns[1].head.text, "c");
        assert_eq!(t.rows[0][1], Cell::code("3"));
    }
}
