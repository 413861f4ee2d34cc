//! The report as one article: sections in their order, each a heading and
//! blocks (prose, lists, tables, charts, code). `outline` builds it once
//! from a run and its analysis, deciding what the report says and in which
//! order; `html` and `markdown` render it block by block, so the two
//! formats cannot disagree on the outline. A format decides only how a
//! kind of block looks, and what it leaves out when it cannot show it
//! (a chart without an image to point to, a tooltip).
//!
//! Like [`crate::table`], this model knows no format.

use crate::charts::NamedChart;
use crate::table::{Heading, Table};

/// A whole report.
#[derive(Debug, Clone)]
pub struct Article {
    /// What names the document outside itself: a browser's tab.
    pub label: String,
    /// The article's own heading.
    pub title: String,
    /// Before the first section: what was measured, when, and what to read
    /// the figures with in mind.
    pub lead: Vec<Block>,
    pub sections: Vec<Section>,
    /// After the last section: where the document came from.
    pub colophon: Vec<Block>,
}

/// A section: its heading (with the anchor links point to) and its blocks.
#[derive(Debug, Clone)]
pub struct Section {
    pub heading: Heading,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(id: &'static str, title: &str) -> Section {
        Section {
            heading: Heading::section(id, title),
            blocks: Vec::new(),
        }
    }

    /// A section opened by a table whose heading is the section's.
    pub fn opened_by(mut table: Table) -> Section {
        let heading = table
            .heading
            .take()
            .expect("a table that opens a section has its heading");
        Section {
            heading,
            blocks: vec![Block::Table(table)],
        }
    }

    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }
}

/// Which kind of document a block is for, when it is not for every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    /// A page read on a screen (HTML): tooltips, folded details, colour,
    /// every column.
    Page,
    /// Plain text for articles and README files (Markdown): no tooltips,
    /// so what they hold is written out; narrower tables.
    Text,
}

#[derive(Debug, Clone)]
pub enum Block {
    Paragraph(Paragraph),
    /// A heading inside a section: a step that failed, a server.
    Subheading(String),
    Table(Table),
    /// A table with more rows that a page folds away under `label`; in
    /// text they are rows of the table.
    Folded {
        table: Table,
        label: String,
        more: Table,
    },
    /// Plain-text lines as a list; nothing when there are none.
    List(Vec<String>),
    Chart(NamedChart),
    /// Text shown as it is (a log, a study file, a command), with the
    /// language a text format may tag it with.
    Code {
        text: String,
        lang: &'static str,
    },
    /// A file by its name, its content folded away on a page.
    File {
        name: String,
        content: String,
    },
    /// Facts about one thing on one line, each format with its separator.
    Facts(Vec<Vec<Span>>),
    /// A flame graph: drawn inline on a page (its own search and zoom
    /// script working), named by the file `--flamegraphs` writes in text.
    Flame {
        file: String,
        title: String,
        svg: String,
    },
    /// A block for one medium only.
    Only(Medium, Box<Block>),
}

impl Block {
    pub fn paragraph(spans: Vec<Span>) -> Block {
        Block::Paragraph(Paragraph {
            tone: Tone::Plain,
            spans,
        })
    }

    /// One plain paragraph of text.
    pub fn text(text: impl Into<String>) -> Block {
        Block::paragraph(vec![Span::Text(text.into())])
    }

    /// A note on what a table or a chart holds, in small print on a page.
    pub fn note(spans: Vec<Span>) -> Block {
        Block::Paragraph(Paragraph {
            tone: Tone::Meta,
            spans,
        })
    }

    pub fn only(medium: Medium, block: Block) -> Block {
        Block::Only(medium, Box::new(block))
    }
}

#[derive(Debug, Clone)]
pub struct Paragraph {
    pub tone: Tone,
    pub spans: Vec<Span>,
}

/// How a paragraph reads beside the others: a colour on a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    /// About the figures rather than a figure: small print.
    Meta,
    /// Something to read the figures with in mind.
    Warn,
    /// Why something was not measured.
    Failed,
}

/// A run of text in a paragraph or a fact. Text from outside the report
/// and the report's own words alike are escaped by each format.
#[derive(Debug, Clone)]
pub enum Span {
    Text(String),
    Strong(String),
    /// Text from outside shown as code (a recipe, a package): code on a
    /// page, plain escaped text in Markdown, as a code cell of a table.
    Code(String),
    /// A file or command the report names: code in every format.
    Command(String),
    /// A link to a section of the article.
    Link {
        text: String,
        anchor: &'static str,
    },
    /// A state in one word or phrase: coloured on a page, bold in text when
    /// it is bad news.
    Flag {
        good: bool,
        text: String,
    },
    /// Stressed where nothing else carries it: bold in text, plain on a page
    /// whose paragraph already has its tone's colour.
    Stress(String),
    /// Text for one medium only.
    Only(Medium, String),
}

impl Span {
    pub fn text(text: impl Into<String>) -> Span {
        Span::Text(text.into())
    }
}
