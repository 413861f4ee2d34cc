//! The sections of a report that say how its figures were measured: the
//! machine, the servers and their configurations (or the target of a
//! saved `throng load`), and the study file or command to measure again.

use throng_model::{RunData, RunRecord, ServerRecord};

use crate::analysis::Analysis;
use crate::article::{Block, Section, Span};
use crate::figures::{self, grouped};
use crate::tables;

/// The machine: the environment (its kernel settings folded away), each
/// host of a spread run, and the machine check.
pub fn environment(run: &RunData) -> Section {
    let mut s = Section::opened_by(tables::environment(run));
    if let Some(more) = tables::kernel_settings(run) {
        if let Some(Block::Table(table)) = s.blocks.pop() {
            s.push(Block::Folded {
                table,
                label: "Kernel settings".into(),
                more,
            });
        }
    }
    if let Some(t) = tables::hosts(run) {
        s.push(Block::Table(t));
    }
    if let Some(t) = tables::machine_check(run) {
        s.push(Block::Table(t));
    }
    s
}

/// Each server with its version, recipe, package and configuration files;
/// for a saved `throng load`, its target instead, which throng did not
/// start. `None` when the run has no server.
pub fn servers(run: &RunData, a: &Analysis) -> Option<Section> {
    if figures::is_load_run(&run.run) {
        let mut s = Section::new("servers", "Target");
        for server in &run.servers {
            s.push(Block::text(tables::target_line(&server.name, &a.steps)));
        }
        return Some(s);
    }
    if run.servers.is_empty() {
        return None;
    }
    let mut s = Section::new("servers", "Servers and their configurations");
    for server in &run.servers {
        s.push(Block::Subheading(server.name.clone()));
        s.push(Block::Facts(facts(server)));
        for c in &server.configs {
            s.push(Block::File {
                name: c.path.clone(),
                content: c.content.clone(),
            });
        }
    }
    Some(s)
}

/// What a server is. What a recipe does not say (a command's version or
/// model) is left out, not shown as an empty field.
fn facts(s: &ServerRecord) -> Vec<Vec<Span>> {
    let mut facts = vec![
        vec![Span::text(
            format!("{} {}", s.name, s.version).trim_end().to_string(),
        )],
        vec![
            Span::text("recipe "),
            Span::Code(s.recipe.clone()),
            Span::text(format!(" ({} profile)", s.profile.name())),
        ],
        vec![
            Span::text("package "),
            Span::Code(if s.package.is_empty() {
                "–".into()
            } else {
                s.package.clone()
            }),
        ],
    ];
    if !s.model.is_empty() {
        facts.push(vec![Span::text(&s.model)]);
    }
    facts.push(vec![Span::text(if s.exe_bytes > 0 {
        format!("executable {} bytes", grouped(s.exe_bytes))
    } else {
        "executable size unknown".into()
    })]);
    facts
}

/// How to measure again: the study file of a lab run, the command of a
/// saved `throng load`.
pub fn study(r: &RunRecord) -> Option<Section> {
    if figures::is_load_run(r) {
        let mut s = Section::new("study", "Command");
        s.push(Block::text("Run again with:"));
        s.push(Block::Code {
            text: figures::load_command(r),
            lang: "sh",
        });
        return Some(s);
    }
    let mut s = Section::new("study", "Study file");
    if r.study_toml.is_empty() {
        s.push(Block::text("The study file was not stored."));
    } else {
        s.push(Block::paragraph(vec![
            Span::text("Save as "),
            Span::Command("study.toml".into()),
            Span::text(" and run "),
            Span::Command("throng lab study.toml".into()),
            Span::text(" to measure again."),
        ]));
        s.push(Block::Code {
            text: r.study_toml.clone(),
            lang: "toml",
        });
    }
    Some(s)
}
