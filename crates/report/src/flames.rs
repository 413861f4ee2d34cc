//! Flame graphs of the stored profiles, as inferno draws them (the
//! format of Brendan Gregg's FlameGraph, each SVG carrying its own search
//! and zoom script): one per server and diagnosed step, and one
//! differential per compared pair, both sides per request, so the colours
//! say where B spends more (red) or less (blue) per request than A, not
//! where it served more requests.

use throng_model::{Diagnosis, RunData};

use crate::components;
use crate::figures::StepFigures;

/// One drawn flame graph.
#[derive(Debug, Clone, PartialEq)]
pub struct FlameGraph {
    /// A file name of its own: letters, digits, `-`, `_` and `.` only.
    pub file: String,
    /// What it shows, as its title says.
    pub title: String,
    /// The servers it explains (one, or A then B).
    pub servers: Vec<String>,
    pub workload: String,
    pub cores: u32,
    pub concurrency: u32,
    pub svg: String,
}

/// The folded stacks of a diagnosis as nanoseconds of CPU per request,
/// the unit both sides of a differential share.
fn per_request(d: &Diagnosis) -> Option<String> {
    let p = d.profile.as_ref()?;
    let text = components::folded(p)?;
    if d.requests == 0 || text.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (stack, n) in components::lines(&text) {
        let ns = (n as f64 * p.period_ns as f64 / d.requests as f64).round() as u64;
        if ns > 0 {
            out.push_str(stack);
            out.push(' ');
            out.push_str(&ns.to_string());
            out.push('\n');
        }
    }
    Some(out)
}

fn options(title: String, subtitle: String) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title;
    o.subtitle = Some(subtitle);
    o.count_name = "ns per request".to_string();
    // The same stacks draw the same bytes: reports are compared as files.
    o.deterministic = true;
    o.hash = true;
    o
}

fn draw(lines: &str, opt: &mut inferno::flamegraph::Options<'_>) -> Option<String> {
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(opt, lines.lines(), &mut svg).ok()?;
    String::from_utf8(svg).ok()
}

/// A name made safe to be a file's.
fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn where_(f: &StepFigures) -> String {
    format!("{}-{}c-c{}", file_part(&f.workload), f.cores, f.concurrency)
}

/// The first of a server's steps at a level that holds a profile.
fn profiled<'a>(
    figs: &'a [StepFigures],
    server: &str,
    at: &StepFigures,
) -> Option<&'a StepFigures> {
    figs.iter().find(|f| {
        f.server == server
            && f.workload == at.workload
            && f.cores == at.cores
            && f.concurrency == at.concurrency
            && f.diagnosis.as_ref().and_then(per_request).is_some()
    })
}

/// Every server's flame graph at each level it was profiled at.
pub fn servers(figs: &[StepFigures]) -> Vec<FlameGraph> {
    let mut out: Vec<FlameGraph> = Vec::new();
    for f in figs {
        let Some(lines) = f.diagnosis.as_ref().and_then(per_request) else {
            continue;
        };
        let file = format!("{}-{}.svg", file_part(&f.server), where_(f));
        if out.iter().any(|g| g.file == file) {
            continue;
        }
        let title = format!("{}: CPU per request", f.server);
        let subtitle = format!(
            "{}, {} cores, c={}: the diagnostic round's stacks, kernel frames marked _[k]",
            f.workload, f.cores, f.concurrency
        );
        if let Some(svg) = draw(&lines, &mut options(title.clone(), subtitle)) {
            out.push(FlameGraph {
                file,
                title,
                servers: vec![f.server.clone()],
                workload: f.workload.clone(),
                cores: f.cores,
                concurrency: f.concurrency,
                svg,
            });
        }
    }
    out
}

/// For each pooled comparison, B against A per request at the highest
/// level both were profiled at.
pub fn differentials(run: &RunData, figs: &[StepFigures]) -> Vec<FlameGraph> {
    let mut out: Vec<FlameGraph> = Vec::new();
    for c in run.comparisons.iter().filter(|c| c.concurrency.is_none()) {
        let level = figs
            .iter()
            .filter(|f| f.server == c.a && f.workload == c.workload && f.cores == c.cores)
            .filter(|f| profiled(figs, &c.a, f).is_some() && profiled(figs, &c.b, f).is_some())
            .max_by_key(|f| f.concurrency);
        let Some(at) = level else { continue };
        let (Some(fa), Some(fb)) = (profiled(figs, &c.a, at), profiled(figs, &c.b, at)) else {
            continue;
        };
        let (Some(la), Some(lb)) = (
            fa.diagnosis.as_ref().and_then(per_request),
            fb.diagnosis.as_ref().and_then(per_request),
        ) else {
            continue;
        };
        let file = format!(
            "diff-{}-vs-{}-{}.svg",
            file_part(&c.b),
            file_part(&c.a),
            where_(at)
        );
        if out.iter().any(|g| g.file == file) {
            continue;
        }
        let (la, lb) = (rooted(&la), rooted(&lb));
        let mut folded = Vec::new();
        let opt = inferno::differential::Options {
            normalize: false,
            strip_hex: false,
        };
        if inferno::differential::from_readers(opt, la.as_bytes(), lb.as_bytes(), &mut folded)
            .is_err()
        {
            continue;
        }
        let Ok(folded) = String::from_utf8(folded) else {
            continue;
        };
        let title = format!("{} against {}: CPU per request", c.b, c.a);
        let subtitle = format!(
            "{}, {} cores, c={}: widths are {}'s, red where it spends more per request than {}, blue less",
            at.workload, at.cores, at.concurrency, c.b, c.a
        );
        if let Some(svg) = draw(&folded, &mut options(title.clone(), subtitle)) {
            out.push(FlameGraph {
                file,
                title,
                servers: vec![c.a.clone(), c.b.clone()],
                workload: at.workload.clone(),
                cores: at.cores,
                concurrency: at.concurrency,
                svg,
            });
        }
    }
    out
}

/// The stacks without the process's name that leads them: two servers of
/// one program share it, two programs would share nothing.
fn rooted(lines: &str) -> String {
    lines
        .lines()
        .filter_map(|l| l.split_once(';').map(|(_, rest)| format!("{rest}\n")))
        .collect()
}

/// Every flame graph of a run: the servers' first, then the pairs'.
pub fn all(run: &RunData, figs: &[StepFigures]) -> Vec<FlameGraph> {
    let mut out = servers(figs);
    out.extend(differentials(run, figs));
    out
}
