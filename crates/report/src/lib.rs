//! `throng report` and `throng compare` as pure functions: a stored run in,
//! bytes out. Nothing here reads a database or writes a file, so every output
//! can be tested byte for byte against a fixture.
//!
//! The way through: [`Analysis`] derives the figures and charts of a run
//! once; `ratios`, `parity` and `cost` word what the lab stored about
//! fairness (paired ratios, settings, the cost of a request) as plain
//! text; `tables` builds the report's tables from all of it as one
//! format-free [`table::Table`] model; `outline` puts tables, prose,
//! charts and code in their sections and order as one [`article::Article`];
//! `html` and `markdown` render that article block by block, `tabular` the
//! CSV and JSON. A comparison is blocks of the same model, drawn by
//! `markdown` and `terminal`; `agreement` checks two runs' paired ratios
//! against each other's intervals. The statistics are `throng-stats`', the stored
//! schema `throng-model`'s.

pub mod agreement;
pub mod analysis;
pub mod article;
pub mod calibration;
pub mod chart_data;
pub mod charts;
pub mod compare;
pub mod components;
pub mod cores_note;
pub mod cost;
pub mod cpu_bars;
pub mod crosscheck;
pub mod error;
pub mod escape;
pub mod export;
pub mod figures;
pub mod flames;
pub mod forest;
pub mod forests;
pub mod hosts;
pub mod html;
pub mod httperf;
pub mod ladder;
pub mod launches;
pub mod markdown;
pub mod origin;
pub mod outline;
pub mod parity;
pub mod png;
pub mod prices;
pub mod protocols;
pub mod provenance;
pub mod ratios;
pub mod reruns;
pub mod session_table;
pub mod stacked;
pub mod summary;
pub mod svg;
pub mod table;
pub mod tables;
pub mod tabular;
pub mod terminal;
pub mod where_cpu;
pub mod workload_table;

pub use analysis::Analysis;
pub use charts::NamedChart;
pub use error::{ReportError, Result};
pub use export::{
    CsvExporter, Exporter, Format, HtmlExporter, JsonExporter, JsonWithStacksExporter,
    MarkdownExporter,
};
pub use figures::StepFigures;
pub use summary::SummaryRow;
