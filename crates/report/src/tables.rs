//! The report's tables, built once from a run and its figures; `html` and
//! `markdown` render the same [`Table`]s. What a format adds around a table
//! (its notes, the feature evidence as tooltips or as a list) stays with
//! the format.

use throng_model::{Feature, RunData, Severity};

use crate::figures::{self, duration_us, grouped, mib, rate_with_ci, StepFigures, SummaryRow};
use crate::table::{Align, Cell, Column, Mark, Table};

fn bytes_or_none(b: u64, text: impl Fn(u64) -> String) -> Cell {
    if b > 0 {
        Cell::lit(text(b))
    } else {
        Cell::none()
    }
}

/// The summary, one line per server, in the spirit of ACME's thttpd "Web
/// Server Comparisons" table: best small-file req/s, best large-file MB/s,
/// max users, memory and executable size.
pub fn summary(rows: &[SummaryRow]) -> Table {
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::left("Version"),
        Column::left("Model"),
        Column::right("Small files, req/s"),
        Column::right("Large files, MB/s"),
        Column::right("Max users"),
        Column::right("Memory (peak PSS)"),
        Column::right("Executable"),
    ])
    .section("summary", "Summary")
    .wide();
    for s in rows {
        let small = match (&s.small_rps, &s.small_verdict, &s.small_workload) {
            (Some(v), Some(verdict), Some(w)) => Cell::lit(grouped(v.round() as u64))
                .aside(format!("({w})"))
                .mark(Mark::verdict(verdict, &[])),
            _ => Cell::none(),
        };
        let large = match (&s.large_mb_per_sec, &s.large_verdict, &s.large_workload) {
            (Some(v), Some(verdict), Some(w)) => Cell::lit(format!("{v:.1}"))
                .aside(format!("({w})"))
                .mark(Mark::verdict(verdict, &[])),
            _ => Cell::none(),
        };
        let users = match (s.max_users, s.max_users_tested) {
            (Some(u), Some(t)) if u == t => format!("{u}+"),
            (Some(u), _) => u.to_string(),
            (None, Some(_)) => "none".into(),
            _ => "–".into(),
        };
        t.push(vec![
            Cell::text(&s.server),
            Cell::text(&s.version),
            Cell::text(&s.model),
            small,
            large,
            Cell::lit(users),
            s.memory_bytes
                .map_or_else(Cell::none, |b| Cell::lit(mib(b))),
            bytes_or_none(s.exe_bytes, |b| grouped(b) + " B"),
        ]);
    }
    t
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
    let mut columns = vec![Column::left("Server"), Column::left("Model")];
    columns.extend(Feature::ALL.map(|f| Column::left(f.title())));
    columns.extend([Column::right("Package"), Column::right("Executable")]);
    let mut t = Table::new(columns).section("features", "Features").wide();
    for s in &run.servers {
        let mut row = vec![Cell::text(&s.name), Cell::text(&s.model)];
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
                    Cell::lit(value)
                        .mark(Mark::verdict(&f.verdict, &f.verdict_reasons))
                        .source(format!("{} core(s), c={}", f.cores, f.concurrency))
                }
                None => Cell::none(),
            });
        }
        t.push(row);
    }
    Some(t)
}

/// Every step with its figures and verdict.
pub fn steps(figs: &[StepFigures]) -> Table {
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::right("Cores"),
        Column::left("Workload"),
        Column::right("Conc."),
        Column::right("Rounds"),
        Column::right("req/s [95% CI]"),
        Column::right("MB/s"),
        Column::right("p50"),
        Column::right("p99"),
        Column::right("Errors"),
        Column::right("CPU/req"),
        Column::right(SERVER_CPU),
        Column::right("PSS peak"),
        Column::left("Verdict"),
    ])
    .section("steps", "Every step")
    .wide();
    let us = |v: Option<u64>| v.map_or_else(Cell::none, |v| Cell::lit(duration_us(v)));
    for f in figs {
        let cores = Cell::lit(f.cores.to_string());
        let verdict = if f.status == throng_model::StepStatus::Ok {
            Mark::verdict(&f.verdict, &f.verdict_reasons)
        } else {
            Mark::Failed(match &f.failure {
                Some(e) => format!("{}: {e}", f.status.name()),
                None => f.status.name().to_string(),
            })
        };
        t.push(vec![
            Cell::text(&f.server),
            if f.shared_cores {
                cores.warn("shared")
            } else {
                cores
            },
            Cell::text(&f.workload),
            Cell::lit(f.concurrency.to_string()),
            Cell::lit(f.rounds.to_string()),
            if f.rounds > 0 {
                Cell::lit(rate_with_ci(&f.throughput))
            } else {
                Cell::none()
            },
            Cell::lit(format!("{:.1}", f.mb_per_sec)),
            us(f.p50_us),
            us(f.p99_us),
            Cell::lit(grouped(f.errors)),
            f.cpu_us_per_request
                .map_or_else(Cell::none, |c| Cell::lit(format!("{c:.1} µs"))),
            f.cpu_utilisation
                .map_or_else(Cell::none, |c| Cell::lit(format!("{:.0}%", c * 100.0))),
            bytes_or_none(f.pss_peak_bytes, mib),
            Cell::mark_only(verdict),
        ]);
    }
    t
}

/// Heading of the steps table's server CPU column, which Markdown leaves
/// out to stay narrow.
pub const SERVER_CPU: &str = "Server CPU";

/// The machine the run was measured on.
pub fn environment(run: &RunData) -> Table {
    let e = &run.run.environment;
    let mut t = Table::key_value().section("environment", "Environment");
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
