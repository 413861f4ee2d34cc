//! The article a study rebuilds, said before any figure: what it
//! measured, what this run measured instead, and each difference with its
//! reason. A reader holding the article beside the report compares the
//! two figure by figure, and needs to know first where they cannot agree
//! (a connect left in or out, one core where the article had four).

use serde::Deserialize;
use throng_model::{ArticleNote, RunRecord};

use crate::article::{Block, Section, Span};

/// What the stored study file's `[article]` table says, read leniently: a
/// run stored before studies had one, or a file whose table does not
/// parse here, has no article section (the lab validated the table when
/// the study ran).
pub fn note(r: &RunRecord) -> Option<ArticleNote> {
    #[derive(Deserialize)]
    struct Study {
        article: Option<ArticleNote>,
    }
    let study: Study = toml::from_str(&r.study_toml).ok()?;
    study.article.filter(|a| a.problem().is_none())
}

/// The section "The article and this study", when the study rebuilds one.
pub fn section(r: &RunRecord) -> Option<Section> {
    let a = note(r)?;
    let mut s = Section::new("article", "The article and this study");
    s.push(Block::paragraph(vec![
        Span::Strong(a.title.clone()),
        Span::text(format!(" ({})", a.source)),
    ]));
    s.push(Block::paragraph(vec![
        Span::Strong("What the article measured: ".into()),
        Span::text(a.measured.clone()),
    ]));
    s.push(Block::paragraph(vec![
        Span::Strong("What this study measures: ".into()),
        Span::text(a.here.clone()),
    ]));
    if !a.differences.is_empty() {
        s.push(Block::paragraph(vec![Span::Strong(
            "What differs, and why:".into(),
        )]));
        s.push(Block::List(a.differences.clone()));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(toml: &str) -> RunRecord {
        RunRecord {
            study_toml: toml.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_study_without_an_article_has_no_section() {
        assert!(section(&run("name = \"x\"\n")).is_none());
        assert!(section(&run("not toml [")).is_none());
    }

    #[test]
    fn the_article_section_says_each_part_in_order() {
        let r = run(r#"
name = "ladder"
[article]
title = "The fastest web server in the world?"
source = "Seravo, 2013"
measured = "ab -c C -n N, connect included"
here = "the same, over loopback"
differences = ["one core of two", "5000 requests a level"]
"#);
        let s = section(&r).unwrap();
        assert_eq!(s.blocks.len(), 5);
        match &s.blocks[4] {
            Block::List(items) => {
                assert_eq!(items, &["one core of two", "5000 requests a level"])
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_table_the_lab_would_refuse_is_left_out() {
        let r = run("name = \"x\"\n[article]\ntitle = \"\"\nsource = \"s\"\nmeasured = \"m\"\nhere = \"h\"\n");
        assert!(section(&r).is_none());
    }
}
