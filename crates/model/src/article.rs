//! The published article a study rebuilds: what it measured, what the
//! study measures instead on this machine, and each difference with its
//! reason. A benchmark's reader judges a figure by its setup, and a
//! rebuilt study that silently answered another question (a latency
//! without the connect where the article's included it, think time where
//! the article had none) would mislead more than no study at all; so the
//! study file says it, and the report opens with it.

use serde::{Deserialize, Serialize};

/// The `[article]` table of a study file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArticleNote {
    /// The article's title, as published.
    pub title: String,
    /// Who published it, where and when.
    pub source: String,
    /// What the article measured: its tool and command, its servers, its
    /// figures.
    pub measured: String,
    /// What this study measures on this machine.
    pub here: String,
    /// Each way the study differs from the article, with why.
    #[serde(default)]
    pub differences: Vec<String>,
}

/// The longest text a field may hold: a paragraph, not a page.
pub const MAX_ARTICLE_TEXT: usize = 2_000;

impl ArticleNote {
    /// The first field that a report could not show as it is: empty where
    /// text is needed, longer than a paragraph, or holding control
    /// characters (a line break is fine). `None` when all are fine.
    pub fn problem(&self) -> Option<String> {
        let fields = [
            ("title", &self.title),
            ("source", &self.source),
            ("measured", &self.measured),
            ("here", &self.here),
        ];
        for (name, text) in fields {
            if text.trim().is_empty() {
                return Some(format!("article.{name} is empty: say it in a sentence"));
            }
        }
        let differences = self
            .differences
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("differences[{i}]"), d));
        for (name, text) in fields
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .chain(differences)
        {
            if text.trim().is_empty() {
                return Some(format!("article.{name} is empty"));
            }
            if text.chars().count() > MAX_ARTICLE_TEXT {
                return Some(format!(
                    "article.{name} is {} characters: at most {MAX_ARTICLE_TEXT}",
                    text.chars().count()
                ));
            }
            if text.chars().any(|c| c.is_control() && c != '\n') {
                return Some(format!("article.{name} holds a control character"));
            }
        }
        None
    }
}
