//! The output formats of a run, chosen by name or by file extension.

use std::str::FromStr;

use throng_model::RunData;

use crate::analysis::Analysis;
use crate::error::Result;
use crate::{html, markdown, outline, tabular};

/// One output format of a run.
pub trait Exporter {
    fn export(&self, run: &RunData) -> Result<Vec<u8>>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Markdown,
    Csv,
    Json,
}

impl Format {
    /// The format a file name asks for, by its extension.
    pub fn from_path(path: &std::path::Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "html" | "htm" => Some(Format::Html),
            "md" | "markdown" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Html => Box::new(HtmlExporter),
            Format::Markdown => Box::new(MarkdownExporter::default()),
            Format::Csv => Box::new(CsvExporter),
            Format::Json => Box::new(JsonExporter),
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "html" => Ok(Format::Html),
            "md" | "markdown" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            other => Err(format!(
                "unknown format {other:?}: use html, md, csv or json"
            )),
        }
    }
}

/// The article: summary, charts as inline SVG, every step, environment,
/// configs and the study file.
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn export(&self, run: &RunData) -> Result<Vec<u8>> {
        Ok(html::render(&outline::article(run, &Analysis::of(run))).into_bytes())
    }
}

/// The article in Markdown. Charts are linked as `<image_dir>/<id>.png` when
/// `image_dir` is set (`throng report --png DIR`), otherwise left out.
#[derive(Default)]
pub struct MarkdownExporter {
    pub image_dir: Option<String>,
}

impl Exporter for MarkdownExporter {
    fn export(&self, run: &RunData) -> Result<Vec<u8>> {
        let article = outline::article(run, &Analysis::of(run));
        Ok(markdown::render(&article, self.image_dir.as_deref()).into_bytes())
    }
}

/// One row per step.
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn export(&self, run: &RunData) -> Result<Vec<u8>> {
        Ok(tabular::csv(run, &Analysis::of(run)).into_bytes())
    }
}

/// The stored run plus the derived figures, for other tools; profiles
/// without their folded stacks.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, run: &RunData) -> Result<Vec<u8>> {
        tabular::json(run, &Analysis::of(run), false)
    }
}

/// [`JsonExporter`] with each profile's folded stacks (`folded_gz`) kept.
pub struct JsonWithStacksExporter;

impl Exporter for JsonWithStacksExporter {
    fn export(&self, run: &RunData) -> Result<Vec<u8>> {
        tabular::json(run, &Analysis::of(run), true)
    }
}
