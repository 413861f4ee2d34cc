//! The report's Sessions table and the sentences under it: users who
//! think, one row per step that walked sessions.

use crate::figures::{self, duration_us, grouped, SessionFigures, StepFigures};
use crate::table::{cores_cell, Cell, Column, Table};

/// The steps whose users walked sessions, with their sessions.
fn session_steps(figs: &[StepFigures]) -> impl Iterator<Item = (&StepFigures, &SessionFigures)> {
    figs.iter()
        .filter_map(|f| f.sessions.as_ref().map(|x| (f, x)))
}

/// Whether the session steps differ in workload, and in known core
/// count: a row or a sentence then has to say which it is.
fn session_qualifiers(figs: &[StepFigures]) -> (bool, bool) {
    let mut steps = session_steps(figs).map(|(f, _)| f);
    let Some(first) = steps.next() else {
        return (false, false);
    };
    steps.fold((false, false), |(w, c), f| {
        (
            w || f.workload != first.workload,
            c || (f.cores != first.cores && f.cores > 0),
        )
    })
}

/// Users who walked sessions (httperf's `--wsesslog`: pages with bursts
/// and think time), one row per step that had them; `None` when no step
/// did, so a run of plain requests keeps its article.
pub fn sessions(figs: &[StepFigures]) -> Option<Table> {
    session_steps(figs).next()?;
    let (_, several_cores) = session_qualifiers(figs);
    let mut columns = vec![Column::left("Server")];
    if several_cores {
        columns.push(Column::right("Cores"));
    }
    columns.extend([
        Column::left("Workload"),
        Column::right("Users"),
        Column::right("Sessions/s"),
        Column::right("Started"),
        Column::right("Completed"),
        Column::right("Failed"),
        Column::right("Unfinished"),
        Column::right("Turned away"),
        Column::right("Session p50"),
        Column::right("Session p99"),
        Column::right("Think (mean)"),
        Column::right("Most active"),
    ]);
    let mut t = Table::new(columns).section("sessions", "Sessions").wide();
    let us = |v: Option<u64>| v.map_or_else(Cell::none, |v| Cell::lit(duration_us(v)));
    let count = |v: u64| Cell::lit(grouped(v));
    for (f, x) in session_steps(figs) {
        let mut row = vec![Cell::text(&f.server)];
        if several_cores {
            row.push(cores_cell(f.cores));
        }
        row.extend([
            Cell::text(&f.workload),
            count(f.concurrency.into()),
            Cell::lit(format!("{:.1}", x.sessions_per_sec)),
            count(x.counts.started),
            count(x.counts.completed),
            count(x.counts.failed),
            count(x.counts.unfinished),
            // A fixed population never arrives, so it has nobody to turn
            // away: "–", not a reassuring 0.
            if x.arrival_per_sec.is_some() {
                count(x.counts.turned_away)
            } else {
                Cell::none()
            },
            us(x.duration_p50_us),
            us(x.duration_p99_us),
            us(x.think_mean_us.map(|m| m.round() as u64)),
            count(x.active_max),
        ]);
        t.push(row);
    }
    Some(t)
}

/// What the sessions table's columns hold, below it.
pub const SESSIONS_NOTE: &str = "Users: the step's level, the users walking sessions at \
    once (at most, when they arrive at a rate). Sessions/s: completed sessions per second, \
    median over rounds. Started, completed, failed, unfinished and turned away: sums over \
    rounds; turned away counts arriving users who found every user slot taken (– for a fixed \
    population of users, who never arrive). Session p50 and p99: of the time from a completed \
    session's first send to its last answer, the median over rounds of each round's own p50 \
    and p99 (rounds that completed no session add none); percentiles are never averaged. \
    Think (mean): the mean of every think time observed, from a page's last answer to the \
    next page's send. Most active: the most users active at once in any round.";

/// The sessions that went wrong, in words: a sentence naming every step
/// with a failed session, another naming every step that turned users
/// away. Plain text; empty when nothing went wrong.
pub fn sessions_lines(figs: &[StepFigures]) -> Vec<String> {
    let (workload, cores) = session_qualifiers(figs);
    let step = |f: &StepFigures| {
        let which = figures::labelled([
            workload.then(|| f.workload.clone()),
            if cores {
                figures::known_cores(f.cores)
            } else {
                None
            },
        ]);
        let which = if which.is_empty() {
            String::new()
        } else {
            format!(" ({which})")
        };
        format!(
            "{}{which} at {} {}",
            f.server,
            grouped(f.concurrency.into()),
            plural(f.concurrency.into(), "user", "users")
        )
    };
    let failed: Vec<String> = session_steps(figs)
        .filter(|(_, x)| x.counts.failed > 0)
        .map(|(f, x)| {
            format!(
                "{}: {} of {} {} failed",
                step(f),
                grouped(x.counts.failed),
                grouped(x.counts.started),
                plural(x.counts.started, "session", "sessions")
            )
        })
        .collect();
    let away: Vec<String> = session_steps(figs)
        .filter(|(_, x)| x.counts.turned_away > 0)
        .map(|(f, x)| {
            let arrived = x.counts.arrived();
            format!(
                "{}: {} of {} arriving {} {} turned away",
                step(f),
                grouped(x.counts.turned_away),
                grouped(arrived),
                plural(arrived, "user", "users"),
                plural(x.counts.turned_away, "was", "were")
            )
        })
        .collect();
    let mut out = Vec::new();
    if !failed.is_empty() {
        out.push(format!(
            "{} — a session fails once when any of its requests fails.",
            failed.join("; ")
        ));
    }
    if !away.is_empty() {
        out.push(format!(
            "{} — every user slot was taken when they arrived, so fewer users walked sessions \
             than the arrival rate asked for.",
            away.join("; ")
        ));
    }
    out
}

fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}
