//! The report's tables, built once from a run and its figures; `outline`
//! places them in the article with the prose around them, and `html` and
//! `markdown` render the same [`Table`]s.

use throng_model::{Comparison, Feature, RunData, Severity, Verdict};

use crate::figures::{self, duration_us, grouped, mib, rate_with_ci, StepFigures};
use crate::summary::{StepRef, SummaryRow, SummaryWorkloads};
use crate::table::{cores_cell, Align, Cell, Column, Mark, Table};
use crate::{cost, parity, ratios};

pub use crate::session_table::{sessions, sessions_lines, SESSIONS_NOTE};

fn bytes_or_none(b: u64, text: impl Fn(u64) -> String) -> Cell {
    if b > 0 {
        Cell::lit(text(b))
    } else {
        Cell::none()
    }
}

/// A best figure with its verdict and the step it comes from; marked
/// "no valid step" when it is the best of suspect steps.
fn best_cell(value: String, mark: Mark, step: &StepRef) -> Cell {
    let cell = Cell::lit(value);
    let cell = if step.valid {
        cell
    } else {
        cell.warn(NO_VALID_STEP)
    };
    cell.mark(mark)
        .source(figures::step_source(step.cores, step.concurrency))
}

/// Why a server figure is "–": throng measures only the servers it starts.
pub const NOT_SAMPLED: &str = "not sampled (throng samples only the servers it starts)";

/// What the steps table's "–" in the server's columns means, when some
/// step has one for that reason; `None` otherwise.
pub fn steps_note(figs: &[StepFigures]) -> Option<String> {
    any_unsampled(figs)
        .then(|| format!("Server CPU and memory: – where the server was {NOT_SAMPLED}."))
}

/// Whether a step ran without its server being sampled. A step that did
/// not run has its "–" for that reason instead, and its verdict says so.
fn any_unsampled(figs: &[StepFigures]) -> bool {
    figs.iter()
        .any(|f| figures::measured(f) && !f.server_sampled)
}

/// A server of a saved `throng load` in words: "127.0.0.1:8080: target,
/// not started by throng; its version, package, model and configuration
/// are unknown, and its CPU and memory were not sampled."
pub fn target_line(server: &str, figs: &[StepFigures]) -> String {
    let sampled = figs.iter().any(|f| f.server == server && f.server_sampled);
    format!(
        "{server}: target, not started by throng; its version, package, model and \
         configuration are unknown{}.",
        if sampled {
            ""
        } else {
            ", and its CPU and memory were not sampled"
        }
    )
}

/// What marks a best figure taken from a suspect step because no step of
/// its workload was valid.
pub const NO_VALID_STEP: &str = "no valid step";

/// A column headed by a figure and the workload it shows: "req/s (tiny)".
fn workload_column(title: &str, workload: &str) -> Column {
    Column::with_head(
        Cell::lit(title).aside(format!("({workload})")),
        Align::Right,
    )
}

/// The summary, one line per server, in the spirit of ACME's thttpd "Web
/// Server Comparisons" table: best req/s on the smallest static workload
/// (and on the smallest dynamic one), best large-file MB/s, max users,
/// memory and executable size. Each column's heading names its workload.
pub fn summary(cols: &SummaryWorkloads, rows: &[SummaryRow]) -> Table {
    // A text column nobody has a value for is left out rather than drawn
    // empty: the target of a saved `throng load` was not started by throng,
    // which knows neither its version nor its model.
    let version = rows.iter().any(|s| !s.version.is_empty());
    let model = rows.iter().any(|s| !s.model.is_empty());
    let mut columns = vec![Column::left("Server")];
    if version {
        columns.push(Column::left("Version"));
    }
    if model {
        columns.push(Column::left("Model"));
    }
    let req = |w: &Option<String>| w.as_deref().map(|w| workload_column("req/s", w));
    columns.extend(req(&cols.small));
    columns.extend(req(&cols.dynamic));
    columns.extend(cols.large.as_deref().map(|w| workload_column("MB/s", w)));
    columns.push(match &cols.max_users {
        Some(w) => workload_column("Max users", w),
        None => Column::right("Max users"),
    });
    columns.extend([
        Column::right("Memory (peak PSS)"),
        Column::right("Executable"),
    ]);
    let mut t = Table::new(columns).section("summary", "Summary").wide();
    for s in rows {
        let rate = |v: &Option<f64>, verdict: &Option<Verdict>, step: &Option<StepRef>| match (
            v, verdict, step,
        ) {
            (Some(v), Some(verdict), Some(step)) => {
                best_cell(grouped(v.round() as u64), Mark::label(verdict), step)
            }
            _ => Cell::none(),
        };
        let mut row = vec![Cell::text(&s.server)];
        if version {
            row.push(Cell::text(&s.version));
        }
        if model {
            row.push(Cell::text(&s.model));
        }
        if cols.small.is_some() {
            row.push(rate(&s.small_rps, &s.small_verdict, &s.small_step));
        }
        if cols.dynamic.is_some() {
            row.push(match &s.dynamic_missing {
                Some(why) => Cell::none().warn(format!("unsupported: {why}")),
                None => rate(&s.dynamic_rps, &s.dynamic_verdict, &s.dynamic_step),
            });
        }
        if cols.large.is_some() {
            row.push(
                match (&s.large_mb_per_sec, &s.large_verdict, &s.large_step) {
                    (Some(v), Some(verdict), Some(step)) => {
                        best_cell(format!("{v:.1}"), Mark::label(verdict), step)
                    }
                    _ => Cell::none(),
                },
            );
        }
        row.push(match (s.max_users_source, s.max_users_cores) {
            (Some(source), Some(cores)) => {
                let value = match (s.max_users, &s.max_users_unbroken_by) {
                    // A search that broke nothing found no limit of the
                    // server's: its highest level is only where it stopped.
                    (Some(u), Some(_)) => format!("none found up to {}", grouped(u.into())),
                    (Some(u), None) if s.max_users_broke_at.is_none() => {
                        format!("{}+", grouped(u.into()))
                    }
                    (Some(u), None) => grouped(u.into()),
                    (None, _) => "none".into(),
                };
                let cell = Cell::lit(value);
                let cell = match s.max_users_unbroken_by.as_deref().and_then(limit_of) {
                    Some(limit) => cell.aside(limit),
                    None => cell,
                };
                cell.source(figures::labelled([
                    Some(source.label().to_string()),
                    figures::known_cores(cores),
                ]))
            }
            _ => Cell::none(),
        });
        row.extend([
            s.memory_bytes
                .map_or_else(Cell::none, |b| Cell::lit(mib(b))),
            bytes_or_none(s.exe_bytes.unwrap_or(0), |b| grouped(b) + " B"),
        ]);
        t.push(row);
    }
    t
}

/// What set the highest level of a search that broke nothing, from its
/// stored words: "the machine's limit" or "the study's cap".
fn limit_of(unbroken_by: &str) -> Option<&'static str> {
    if unbroken_by.contains("the machine's limit") {
        Some("(the machine's limit)")
    } else if unbroken_by.starts_with("no failure up to the cap") {
        Some("(the study's cap)")
    } else {
        None
    }
}

/// What the summary's columns hold, below the table: words, which each
/// writer escapes for its format.
pub fn summary_note(cols: &SummaryWorkloads, rows: &[SummaryRow], figs: &[StepFigures]) -> String {
    let mut parts = Vec::new();
    let mut shown = Vec::new();
    if let Some(w) = &cols.small {
        shown.push(format!(
            "req/s ({w}), the static workload with the smallest responses"
        ));
    }
    if let Some(w) = &cols.dynamic {
        shown.push(format!(
            "req/s ({w}), the dynamic workload with the smallest responses"
        ));
    }
    if let Some(w) = &cols.large {
        shown.push(format!("MB/s ({w}), the largest file"));
    }
    if !shown.is_empty() {
        parts.push(format!(
            "{}: the best mean over the steps with a valid verdict, with the step it comes from \
             (cores, concurrency); \"{NO_VALID_STEP}\" marks the best of suspect steps, shown \
             only when none was valid.",
            capitalise(&shown.join("; "))
        ));
    }
    if let Some(w) = &cols.max_users {
        parts.push(format!(
            "Max users ({}): the highest concurrency with no error and p99 under the patience, \
             from the search past the sweep when the run stored one for that core count \
             (searched), else from the sweep's own levels with a 3 s patience (sweep); the \
             highest over core counts. +: nothing broke up to the highest level tried.{}",
            w,
            if rows.iter().any(|r| r.max_users_unbroken_by.is_some()) {
                " None found up to N: the search broke nothing up to the highest level it could \
                 try, which is no limit of the server's; what set that level is beside it and \
                 under Max users, searched."
            } else {
                ""
            }
        ));
    }
    parts.push(if any_unsampled(figs) {
        format!("Memory: peak PSS of the server's process tree; – where it was {NOT_SAMPLED}.")
    } else {
        "Memory: peak PSS of the server's process tree.".to_string()
    });
    parts.join(" ")
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The feature table of ACME's thttpd comparison, as probed live: one row
/// per server; `None` when the run probed nothing and searched nothing.
pub fn features(run: &RunData) -> Option<Table> {
    if run
        .servers
        .iter()
        .all(|s| s.features.is_empty() && s.max_users.is_empty())
    {
        return None;
    }
    let mut columns = vec![
        Column::left("Server"),
        Column::left("Version"),
        Column::left("Model"),
    ];
    columns.extend(Feature::ALL.map(|f| Column::left(f.title())));
    columns.extend([Column::right("Package"), Column::right("Executable")]);
    let mut t = Table::new(columns).section("features", "Features").wide();
    for s in &run.servers {
        let mut row = vec![
            Cell::text(&s.name),
            if s.version.is_empty() {
                Cell::none()
            } else {
                Cell::text(&s.version)
            },
            Cell::text(&s.model),
        ];
        for f in Feature::ALL {
            row.push(match s.features.iter().find(|x| x.name == f) {
                Some(x) => {
                    let label = x.status.label();
                    Cell::lit(label)
                        .hook(format!("feature-{label}"))
                        .tip(&x.evidence)
                }
                None => Cell::none(),
            });
        }
        row.push(bytes_or_none(s.installed_bytes, mib));
        row.push(bytes_or_none(s.exe_bytes, mib));
        t.push(row);
    }
    Some(t)
}

/// What ACME's feature and size columns become here, under the features
/// table: the ones with a counterpart, and the ones without.
pub const FEATURES_NOTE: &str = "As ACME's thttpd table: Version is the installed package's \
    version, Model the concurrency model the recipe runs (processes for the table's pre-fork, \
    threads, an event loop for its select), Basic auth and Throttling probed live; Package is the installed size of the Debian \
    package and Executable the size of the server's binary (the table's exe). The table's release \
    date, active development, autoconf, chroot, tar bytes, source files and source lines have no \
    counterpart: the servers are binary packages, and the package metadata gives no upstream \
    release date.";

/// The stored max-users searches (Sametz's httperf comparison and ACME's
/// table reported max users); `None` when the run searched none.
pub fn max_users_searched(run: &RunData) -> Option<Table> {
    if run.servers.iter().all(|s| s.max_users.is_empty()) {
        return None;
    }
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::right("Cores"),
        Column::left("Workload"),
        Column::right("Max users"),
        Column::right("Broke at"),
        Column::left("What broke"),
    ])
    .subsection("Max users, searched")
    .wide();
    for s in &run.servers {
        for m in &s.max_users {
            t.push(vec![
                Cell::text(&s.name),
                Cell::lit(m.cores.to_string()),
                Cell::text(&m.workload),
                Cell::lit(m.level.map_or_else(|| "none".into(), |v| grouped(v.into()))),
                Cell::lit(m.broke_at.map_or_else(|| "–".into(), |v| grouped(v.into()))),
                Cell::text(&m.broke_by),
            ]);
        }
    }
    Some(t)
}

/// The best step of each server per workload, with where it was measured,
/// as the Apache/lighttpd/nginx/Varnish article tabulated each workload at
/// its own concurrency; `None` when nothing ran.
pub fn best(run: &RunData, figs: &[StepFigures]) -> Option<Table> {
    let workloads = figures::workload_names(run);
    if workloads.is_empty() {
        return None;
    }
    let mut columns = vec![Column::left("Server")];
    for w in &workloads {
        let unit = if figures::is_large(figs, w) {
            "MB/s, transfer min–max"
        } else {
            "req/s [95% CI]"
        };
        columns.push(Column::with_head(Cell::text(w).aside(unit), Align::Right));
    }
    let mut t = Table::new(columns)
        .section("best", "Best per workload")
        .wide();
    for s in figures::server_names(run) {
        let mut row = vec![Cell::text(&s)];
        for w in &workloads {
            let large = figures::is_large(figs, w);
            row.push(match figures::best(figs, &s, w, large) {
                Some(f) => {
                    let value = if large {
                        let range = match (f.min_us, f.max_us) {
                            (Some(lo), Some(hi)) => {
                                format!(", {}–{}", duration_us(lo), duration_us(hi))
                            }
                            _ => String::new(),
                        };
                        format!("{:.1}{range}", f.mb_per_sec)
                    } else {
                        rate_with_ci(&f.throughput)
                    };
                    let cell = best_cell(value, Mark::verdict(&f.verdict), &StepRef::of(f));
                    match faster_suspect(figs, f, large) {
                        Some(other) => cell.warn(format!(
                            "best valid step: its faster one ({}) was suspect, so servers \
                             may be compared at different levels",
                            figures::step_source(other.cores, other.concurrency)
                        )),
                        None => cell,
                    }
                }
                None => Cell::none(),
            });
        }
        t.push(row);
    }
    Some(t)
}

/// The server's faster step at another level than `chosen`, when the
/// best figure fell back to a valid step below it: the reader comparing
/// the row with another server's must know they were measured apart.
fn faster_suspect<'a>(
    figs: &'a [StepFigures],
    chosen: &StepFigures,
    large: bool,
) -> Option<&'a StepFigures> {
    let key = |f: &StepFigures| figures::headline(f, large);
    figs.iter()
        .filter(|f| f.server == chosen.server && f.workload == chosen.workload)
        .filter(|f| figures::measured(f) && !figures::is_valid(f))
        .filter(|f| (f.cores, f.concurrency) != (chosen.cores, chosen.concurrency))
        .filter(|f| key(f) > key(chosen))
        .max_by(|a, b| key(a).total_cmp(&key(b)))
}

/// Every step with its figures and verdict.
pub fn steps(figs: &[StepFigures]) -> Table {
    // A column of its own only when some step was offered a rate, so a
    // closed-model run's table keeps its shape.
    let offered = figs.iter().any(|f| f.rate.is_some());
    let mut columns = vec![
        Column::left("Server"),
        Column::right("Cores"),
        Column::left("Workload"),
        Column::right("Conc."),
    ];
    if offered {
        columns.push(Column::right(OFFERED));
    }
    columns.extend([
        Column::right("Rounds"),
        Column::right("req/s [95% CI]"),
        Column::right("MB/s"),
        Column::right("mean"),
        Column::right("p50"),
        Column::right("p99"),
        Column::right("Errors"),
        Column::right("CPU/req"),
        Column::right(SERVER_CPU).page_only(),
        Column::right("PSS peak"),
        Column::left("Verdict"),
    ]);
    let mut t = Table::new(columns).section("steps", "Every step").wide();
    let us = |v: Option<u64>| v.map_or_else(Cell::none, |v| Cell::lit(duration_us(v)));
    for f in figs {
        let cores = cores_cell(f.cores);
        let verdict = if f.status == throng_model::StepStatus::Ok {
            Mark::verdict(&f.verdict)
        } else {
            Mark::Failed(match &f.failure {
                Some(e) => format!("{}: {e}", f.status.name()),
                None => f.status.name().to_string(),
            })
        };
        let mut row = vec![
            Cell::text(&f.server),
            if f.shared_cores {
                cores.warn("shared")
            } else {
                cores
            },
            Cell::text(&f.workload),
            Cell::lit(f.concurrency.to_string()),
        ];
        if offered {
            row.push(f.rate.map_or_else(Cell::none, |r| Cell::lit(r.to_string())));
        }
        row.extend([
            // Rounds that completed nothing count, and say so: they add no
            // latency figures.
            if f.empty_rounds > 0 {
                Cell::lit(f.rounds.to_string()).warn(format!("{} empty", f.empty_rounds))
            } else {
                Cell::lit(f.rounds.to_string())
            },
            if f.rounds > 0 {
                Cell::lit(figures::step_rate_with_ci(f))
            } else {
                Cell::none()
            },
            Cell::lit(format!("{:.1}", f.mb_per_sec)),
            us(f.latency_mean_us.map(|m| m.round() as u64)),
            us(f.p50_us),
            us(f.p99_us),
            Cell::lit(grouped(f.errors)),
            f.cpu_us_per_request
                .map_or_else(Cell::none, |c| Cell::lit(format!("{c:.1} µs"))),
            f.cpu_utilisation
                .map_or_else(Cell::none, |c| Cell::lit(format!("{:.0}%", c * 100.0))),
            bytes_or_none(f.pss_peak_bytes.unwrap_or(0), mib),
            Cell::mark_only(verdict),
        ]);
        t.push(row);
    }
    t
}

/// Heading of the steps table's offered-rate column, there only when a
/// step was offered a rate.
pub const OFFERED: &str = "Offered req/s";

/// The summary table's heading when paired ratios lead the summary.
pub const BEST_FIGURES: &str = "Best figures per server";

/// Every stored pooled comparison, as stored; `None` when the run has none.
pub fn paired(run: &RunData) -> Option<Table> {
    let pooled: Vec<&Comparison> = ratios::sorted(run)
        .into_iter()
        .filter(|c| c.concurrency.is_none())
        .collect();
    if pooled.is_empty() {
        return None;
    }
    let mut t = Table::new(vec![
        Column::left("A"),
        Column::left("B"),
        Column::left("Workload"),
        Column::right("Cores"),
        Column::right("B/A req/s"),
        Column::right("95% CI"),
        Column::right("Pairs"),
        Column::left("Decision"),
    ])
    .subsection("Paired comparisons")
    .wide();
    for c in pooled {
        let mut row = vec![Cell::text(&c.a), Cell::text(&c.b)];
        row.extend(comparison_cells(c));
        t.push(row);
    }
    Some(t)
}

/// A pooled comparison's cells after its two sides: workload, cores,
/// ratio, interval, pairs and decision.
pub(crate) fn comparison_cells(c: &Comparison) -> [Cell; 6] {
    [
        Cell::text(&c.workload),
        cores_cell(c.cores),
        Cell::lit(ratios::ratio_text(c)),
        Cell::lit(ratios::interval_text(c)),
        Cell::lit(grouped(c.pairs.into())),
        Cell::lit(ratios::decision_words(c.decision)),
    ]
}

/// The stored per-level comparisons, one table per workload and core
/// count: a row per level, a column per pair of servers.
pub fn paired_per_level(run: &RunData) -> Vec<Table> {
    let mut out = Vec::new();
    for group in ratios::level_groups(run) {
        let first = group[0];
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        // Levels of offered rate share their concurrency: a level is both.
        let mut levels: Vec<(u32, Option<f64>)> = Vec::new();
        for c in &group {
            if !pairs.contains(&(c.a.as_str(), c.b.as_str())) {
                pairs.push((&c.a, &c.b));
            }
            if let Some(l) = c.concurrency.map(|l| (l, c.rate)) {
                if !levels.contains(&l) {
                    levels.push(l);
                }
            }
        }
        let mut columns = vec![Column::right("Conc.")];
        columns.extend(
            pairs
                .iter()
                .map(|(a, b)| Column::with_head(Cell::text(format!("{b} / {a}")), Align::Right)),
        );
        let title = figures::labelled([
            Some(first.workload.clone()),
            figures::known_cores(first.cores),
        ]);
        let mut t = Table::new(columns).subsection(&title).wide();
        for (level, rate) in levels {
            let mut row = vec![match rate {
                Some(r) => Cell::lit(format!("{level} @ {r} req/s")),
                None => Cell::lit(level.to_string()),
            }];
            for (a, b) in &pairs {
                let c = group.iter().find(|c| {
                    c.concurrency == Some(level) && c.rate == rate && c.a == *a && c.b == *b
                });
                row.push(c.map_or_else(Cell::none, |c| {
                    if c.bounded() {
                        Cell::lit(format!(
                            "{} [{}] {}",
                            ratios::ratio_text(c),
                            ratios::interval_text(c),
                            ratios::decision_words(c.decision)
                        ))
                        .aside(format!("({})", ratios::pairs_text(c.pairs)))
                    } else {
                        Cell::lit(format!(
                            "{} {}",
                            ratios::ratio_text(c),
                            ratios::decision_words(c.decision)
                        ))
                        .aside(ratios::interval_aside(c))
                    }
                }));
            }
            t.push(row);
        }
        out.push(t);
    }
    out
}

/// The settings that change results, a column per server headed by its
/// profile; `None` when no server's recipe says any.
pub fn parity(run: &RunData) -> Option<Table> {
    let rows = parity::rows(run);
    if rows.is_empty() {
        return None;
    }
    let mut columns = vec![Column::left("Setting")];
    columns.extend(run.servers.iter().map(|s| {
        Column::with_head(
            Cell::text(&s.name).aside(format!("({})", s.profile.name())),
            Align::Left,
        )
    }));
    let mut t = Table::new(columns)
        .section("parity", "Settings that change results")
        .wide();
    for r in rows {
        let mut row = vec![Cell::code(r.setting.name())];
        for e in &r.entries {
            row.push(match e {
                Some(e) => {
                    let cell = Cell::text(&e.value).aside(format!("({})", e.source.name()));
                    let cell = if e.detail.is_empty() {
                        cell
                    } else {
                        cell.tip(&e.detail)
                    };
                    if r.differs {
                        cell.highlight()
                    } else {
                        cell
                    }
                }
                None => Cell::none(),
            });
        }
        t.push(row);
    }
    Some(t)
}

/// The cost of a request at every step with a diagnostic round; `None`
/// when no step had one.
pub fn costs(figs: &[StepFigures]) -> Option<Table> {
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::right("Cores"),
        Column::left("Workload"),
        Column::right("Conc."),
        Column::left("Syscalls per request"),
        Column::right("CPU/req"),
        Column::right("Switches/req"),
        Column::right("Log/req"),
        Column::left("Counted by"),
    ])
    .subsection("Every diagnosed step")
    .wide();
    for f in figs {
        let Some(d) = &f.diagnosis else {
            continue;
        };
        t.push(vec![
            Cell::text(&f.server),
            cores_cell(f.cores),
            Cell::text(&f.workload),
            Cell::lit(f.concurrency.to_string()),
            Cell::text(cost::syscalls_or_why(d)),
            f.cpu_us_per_request
                .map_or_else(Cell::none, |c| Cell::lit(format!("{c:.1} µs"))),
            // Per request of none is unmeasured, not 0.
            if d.requests == 0 {
                Cell::none()
            } else {
                Cell::lit(format!("{:.2}", cost::switches(d)))
            },
            if d.requests == 0 {
                Cell::none()
            } else {
                Cell::lit(format!("{:.0} B", d.log_bytes_per_request))
            },
            if d.tool.is_empty() {
                Cell::none()
            } else {
                Cell::text(&d.tool)
            },
        ]);
    }
    (!t.rows.is_empty()).then_some(t)
}

/// Heading of the steps table's server CPU column, which Markdown leaves
/// out to stay narrow.
pub const SERVER_CPU: &str = "Server CPU";

/// The machine the run was measured on.
pub use crate::hosts::hosts;

pub fn environment(run: &RunData) -> Table {
    let e = &run.run.environment;
    let mut t = Table::key_value().section("environment", "Environment");
    // First, so that a reader knows the rows below describe the server
    // host; a run on one machine has no topology and keeps its old rows.
    if !e.hosts.is_empty() {
        t.push(vec![Cell::lit("Topology").head(), Cell::text(&e.topology)]);
    }
    let rows = [
        ("Host", e.hostname.clone()),
        ("CPU", e.cpu_model.clone()),
        ("CPUs online", e.cpus_online.to_string()),
        ("Memory", mib(e.memory_bytes)),
        ("Kernel", e.kernel.clone()),
        ("OS", e.os.clone()),
        (
            "Open files (soft / hard)",
            format!("{} / {}", e.nofile.0, e.nofile.1),
        ),
        ("throng", e.throng_version.clone()),
    ];
    for (k, v) in rows {
        t.push(vec![Cell::lit(k).head(), Cell::text(v)]);
    }
    if let Some(line) = crate::prices::line(&e.prices) {
        t.push(vec![
            Cell::lit("The servers' core's prices").head(),
            Cell::text(line),
        ]);
    }
    t
}

/// The sysctls that matter for benchmarking, as they were; `None` when none
/// were read.
pub fn kernel_settings(run: &RunData) -> Option<Table> {
    let sysctls = &run.run.environment.sysctls;
    if sysctls.is_empty() {
        return None;
    }
    let mut t = Table::key_value();
    for (k, v) in sysctls {
        t.push(vec![Cell::code(k), Cell::code(v)]);
    }
    Some(t)
}

/// `throng doctor`'s findings before the run; `None` when it did not run.
pub fn machine_check(run: &RunData) -> Option<Table> {
    if run.run.doctor.is_empty() {
        return None;
    }
    let mut t = Table::new(vec![
        Column::left("Check"),
        Column::left("Result"),
        Column::left("Finding"),
        Column::left("Fix"),
    ])
    .subsection("Machine check");
    for f in &run.run.doctor {
        let (hook, word) = match f.severity {
            Severity::Ok => ("valid", "ok"),
            Severity::Warn => ("warn", "warn"),
            Severity::Fail => ("fail", "fail"),
        };
        t.push(vec![
            Cell::code(&f.check),
            Cell::lit(word).hook(hook),
            Cell::text(&f.message),
            if f.fix.is_empty() {
                Cell::text("")
            } else {
                Cell::code(&f.fix)
            },
        ]);
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::MaxUsersSource;

    #[test]
    fn the_summary_names_each_columns_workload_and_where_figures_come_from() {
        let mut noisy = Verdict::valid();
        noisy.push(throng_model::ReasonCode::Noisy, "wide");
        let cols = SummaryWorkloads {
            small: Some("tiny".into()),
            dynamic: Some("cgi".into()),
            large: None,
            max_users: Some("tiny".into()),
        };
        let row = SummaryRow {
            server: "a".into(),
            version: "1".into(),
            model: "event loop".into(),
            small_workload: Some("tiny".into()),
            small_rps: Some(9_000.4),
            small_verdict: Some(Verdict::valid()),
            small_step: Some(StepRef {
                cores: 1,
                concurrency: 100,
                valid: true,
            }),
            large_workload: None,
            large_mb_per_sec: None,
            large_verdict: None,
            large_step: None,
            dynamic_workload: Some("cgi".into()),
            dynamic_rps: Some(842.0),
            dynamic_verdict: Some(noisy),
            dynamic_step: Some(StepRef {
                cores: 2,
                concurrency: 50,
                valid: false,
            }),
            dynamic_missing: None,
            max_users: Some(1600),
            max_users_tested: Some(3200),
            max_users_workload: Some("tiny".into()),
            max_users_cores: Some(1),
            max_users_source: Some(MaxUsersSource::Searched),
            max_users_broke_at: Some(3200),
            max_users_unbroken_by: None,
            memory_bytes: None,
            exe_bytes: None,
        };
        let md = crate::markdown::table(&summary(&cols, &[row]));
        assert_eq!(
            md.lines().nth(2).unwrap(),
            "| Server | Version | Model | req/s (tiny) | req/s (cgi) | Max users (tiny) | Memory (peak PSS) | Executable |"
        );
        assert_eq!(
            md.lines().nth(4).unwrap(),
            "| a | 1 | event loop | 9,000 — valid (1 core, c=100) | 842 (no valid step) — suspect: noisy (2 cores, c=50) | 1,600 (searched, 1 core) | – | – |"
        );
        let note = summary_note(&cols, &[], &[]);
        assert!(
            note.starts_with(
                "Req/s (tiny), the static workload with the smallest responses; req/s (cgi), the \
                 dynamic workload with the smallest responses: the best mean"
            ),
            "{note}"
        );
    }
}
