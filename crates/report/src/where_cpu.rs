//! Where a request's CPU goes: each profiled server's CPU per request
//! split into components (`components`), the difference between two
//! compared servers told by the component it lies in, and the flame
//! graphs that show it (`flames`), each differential beside its pair.

use throng_model::{Diagnosis, HwCounters, RunData};

use crate::article::{Block, Medium, Paragraph, Section, Span, Tone};
use crate::components::{self, Component, Split};
use crate::cpu_bars;
use crate::crosscheck;
use crate::figures::{self, StepFigures};
use crate::flames;
use crate::table::{Cell, Column, Table};

pub const HEADING: &str = "Where a request's CPU goes";

pub const INTRO: &str = "The server's stacks were sampled on its own CPUs during each step's \
    diagnostic round (perf record, the cpu-clock event: one sample per 100 µs of CPU), and each \
    sample given to the component its innermost named frame belongs to. Samples times the period \
    over the round's responses is the CPU per request; the syscall counting that runs in the same \
    round costs some of it, under other kernel.";

/// How two servers' CPU per request differs, and the component most of it
/// is in.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuGap {
    /// The server that spends more CPU per request.
    pub more: String,
    pub fewer: String,
    /// How much more, in microseconds.
    pub by_us: f64,
    /// Where `more` spends the most more.
    pub component: Component,
    pub component_us: f64,
    pub concurrency: u32,
}

impl CpuGap {
    /// "nginx spends 3.1 µs more CPU per request than nginx-tuned at c=10,
    /// 2.4 µs of it in files and page cache (see its flame graph)".
    pub fn sentence(&self) -> String {
        format!(
            "{} spends {:.1} µs more CPU per request than {} at c={}, {:.1} µs of it in {} (see their flame graphs)",
            self.more,
            self.by_us,
            self.fewer,
            self.concurrency,
            self.component_us,
            self.component.name()
        )
    }
}

fn split_at<'a>(
    figs: &'a [StepFigures],
    server: &str,
    workload: &str,
    cores: u32,
    level: u32,
) -> Option<(&'a StepFigures, Split)> {
    figs.iter()
        .filter(|f| {
            f.server == server
                && f.workload == workload
                && f.cores == cores
                && f.concurrency == level
        })
        .find_map(|f| Some((f, components::split(f.diagnosis.as_ref()?)?)))
}

/// How `a` and `b` differ in CPU per request at the highest level both
/// were profiled at; `None` without such a level or a difference of at
/// least 0.1 µs.
pub fn cpu_gap(
    figs: &[StepFigures],
    a: &str,
    b: &str,
    workload: &str,
    cores: u32,
) -> Option<CpuGap> {
    let level = figs
        .iter()
        .filter(|f| f.server == a && f.workload == workload && f.cores == cores)
        .map(|f| f.concurrency)
        .filter(|&l| {
            split_at(figs, a, workload, cores, l).is_some()
                && split_at(figs, b, workload, cores, l).is_some()
        })
        .max()?;
    let (_, sa) = split_at(figs, a, workload, cores, level)?;
    let (_, sb) = split_at(figs, b, workload, cores, level)?;
    let (more, fewer, hi, lo) = if sb.total() >= sa.total() {
        (b, a, sb, sa)
    } else {
        (a, b, sa, sb)
    };
    let by_us = hi.total() - lo.total();
    if by_us < 0.1 {
        return None;
    }
    let (component, component_us) = Component::ALL
        .iter()
        .map(|&c| (c, hi.of(c) - lo.of(c)))
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    Some(CpuGap {
        more: more.to_string(),
        fewer: fewer.to_string(),
        by_us,
        component,
        component_us,
        concurrency: level,
    })
}

/// "kernel named, user 33% named": how far the frames were named.
fn symbols(d: &Diagnosis) -> String {
    let Some(p) = &d.profile else {
        return String::new();
    };
    let user = if p.user_frames == 0 {
        "no user frames".to_string()
    } else {
        format!(
            "user {:.0}% named",
            100.0 * p.user_frames_named as f64 / p.user_frames as f64
        )
    };
    let kernel = if p.kernel_symbols {
        "kernel named"
    } else {
        "kernel as addresses"
    };
    format!("{kernel}, {user}")
}

/// Every profiled step's split, one row each.
pub fn table(figs: &[StepFigures]) -> Option<Table> {
    let mut cols = vec![
        Column::left("Server"),
        Column::right("Cores"),
        Column::left("Workload"),
        Column::right("Conc."),
        Column::right("CPU/req"),
    ];
    // Coloured on a page as the stacked bars draw each component.
    cols.extend(Component::ALL.iter().map(|c| {
        Column::right(c.name()).swatch(crate::svg::PALETTE[c.color() % crate::svg::PALETTE.len()])
    }));
    let counted = figs.iter().any(|f| counted(f).is_some());
    if counted {
        cols.extend(
            ["cycles/req", "instr./req", "IPC", "cache misses/req"]
                .into_iter()
                .map(Column::right),
        );
    }
    cols.push(Column::left("Symbols").page_only());
    let mut t = Table::new(cols)
        .subsection("CPU per request by component (µs)")
        .wide();
    for f in figs {
        let Some(d) = &f.diagnosis else { continue };
        let Some(s) = components::split(d) else {
            continue;
        };
        let mut row = vec![
            Cell::text(&f.server),
            Cell::lit(f.cores.to_string()),
            Cell::text(&f.workload),
            Cell::lit(f.concurrency.to_string()),
            Cell::lit(format!("{:.1} µs", s.total())),
        ];
        row.extend(s.us.iter().map(|(_, v)| Cell::lit(format!("{v:.1}"))));
        if counted {
            row.extend(counter_cells(f));
        }
        row.push(Cell::text(symbols(d)));
        t.push(row);
    }
    (!t.rows.is_empty()).then_some(t)
}

/// A step's hardware counters, when the machine could read them.
fn counted(f: &StepFigures) -> Option<(&HwCounters, u64)> {
    let d = f.diagnosis.as_ref()?;
    let c = d.profile.as_ref()?.counters.as_ref()?;
    (c.absent.is_none() && d.requests > 0).then_some((c, d.requests))
}

/// Cycles, instructions, their ratio and cache misses per request; blank
/// for a step without counters.
fn counter_cells(f: &StepFigures) -> Vec<Cell> {
    let Some((c, requests)) = counted(f) else {
        return vec![Cell::lit(String::new()); 4];
    };
    let per = |n: u64| n as f64 / requests as f64;
    let ipc = if c.cycles == 0 {
        String::new()
    } else {
        format!("{:.2}", c.instructions as f64 / c.cycles as f64)
    };
    vec![
        Cell::lit(format!("{:.0}", per(c.cycles))),
        Cell::lit(format!("{:.0}", per(c.instructions))),
        Cell::lit(ipc),
        Cell::lit(format!("{:.1}", per(c.cache_misses))),
    ]
}

/// "Hardware counters: not available on this machine: perf stat: cycles
/// <not supported>", once for each reason the profiled steps give.
pub fn counters_absent(figs: &[StepFigures]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in figs {
        let Some(why) = f
            .diagnosis
            .as_ref()
            .and_then(|d| d.profile.as_ref())
            .and_then(|p| p.counters.as_ref())
            .and_then(|c| c.absent.as_ref())
        else {
            continue;
        };
        let line = format!("Hardware counters (cycles, instructions, cache misses): {why}.");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// "nginx (tiny, 1 core, c=10): profile absent: no perf on PATH".
pub fn absent_lines(figs: &[StepFigures]) -> Vec<String> {
    figs.iter()
        .filter_map(|f| {
            let why = f.diagnosis.as_ref()?.profile.as_ref()?.absent.as_ref()?;
            Some(format!(
                "{} ({}, {}): profile absent: {why}",
                f.server,
                f.workload,
                figures::step_source(f.cores, f.concurrency)
            ))
        })
        .collect()
}

/// The section, when any step was profiled or says why it was not.
pub fn section(run: &RunData, figs: &[StepFigures]) -> Option<Section> {
    let table = table(figs);
    let absent = absent_lines(figs);
    if table.is_none() && absent.is_empty() {
        return None;
    }
    let mut s = Section::new("profiles", HEADING);
    s.push(Block::text(INTRO));
    if let Some(t) = table {
        s.push(Block::Table(t));
    }
    // Text has the table; the bars are its figures drawn.
    for c in cpu_bars::charts(figs, &figures::server_names(run)) {
        s.push(Block::only(Medium::Page, Block::Chart(c)));
    }
    s.push(Block::List(absent));
    for line in crosscheck::disagreements(figs) {
        s.push(Block::Paragraph(Paragraph {
            tone: Tone::Warn,
            spans: vec![Span::text(line)],
        }));
    }
    for line in counters_absent(figs) {
        s.push(Block::note(vec![Span::text(line)]));
    }
    // The article shows each server's graph at the step its bar is drawn
    // at (a graph is a few hundred kilobytes); `--flamegraphs` writes
    // every profiled step's.
    let graphs: Vec<flames::FlameGraph> = flames::servers(figs)
        .into_iter()
        .filter(|g| {
            let large = figures::is_large(figs, &g.workload);
            cpu_bars::headline_split(figs, &g.servers[0], &g.workload, g.cores, large)
                .is_some_and(|(f, _)| f.concurrency == g.concurrency)
        })
        .collect();
    let mut drawn: Vec<String> = Vec::new();
    for c in run.comparisons.iter().filter(|c| c.concurrency.is_none()) {
        // A pair's differential graph stands without the sentence, which
        // needs the two servers' CPU per request 0.1 µs apart or more.
        if let Some(g) = cpu_gap(figs, &c.a, &c.b, &c.workload, c.cores) {
            s.push(Block::text(g.sentence()));
        }
        let mine: Vec<flames::FlameGraph> = flames::differentials(run, figs)
            .into_iter()
            .filter(|d| {
                d.servers == [c.a.clone(), c.b.clone()]
                    && d.workload == c.workload
                    && d.cores == c.cores
                    && !drawn.contains(&d.file)
            })
            .collect();
        for d in mine {
            drawn.push(d.file.clone());
            s.push(Block::Flame {
                file: d.file,
                title: d.title,
                svg: d.svg,
            });
        }
    }
    for g in graphs {
        s.push(Block::Flame {
            file: g.file,
            title: g.title,
            svg: g.svg,
        });
    }
    Some(s)
}
