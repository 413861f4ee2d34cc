//! The `shape_changed` rule: a server whose pool of processes, threads or
//! listening sockets was not the same over a step's measured rounds.
//!
//! A server sizes its pool as it goes (Apache starts children as spare
//! workers run short, and stops them as they idle): the figure of a round
//! measured before the pool grew and one measured after it are two
//! servers' figures, and the step's mean is neither. The size it settles
//! at depends on how its start and its warmup happened to go, so runs of
//! the same study disagree, with nothing in any one of them to say why.
//!
//! Memory is not part of the shape. A server's resident memory moves with
//! every buffer a request borrows and returns, its allocator's arenas and
//! the files it maps, and rises over any run as caches fill: counted, it
//! would call every server changed. The processes, threads and listeners
//! are what the server serves with, and change only when it (or its
//! config) decides so.

use throng_model::{ReasonCode, ServerUsage, StepRecord, Verdict};

/// Why a round's figure is the server's growth rather than a busy
/// client's limit: its pool of processes or threads changed within the
/// round. Apache's prefork, started with one child, forks more while the
/// first round runs (1, 2, 4... a second), and connections wait in its
/// listen queue meanwhile; the load generator may look busy, but what
/// held the rate down was the server still growing.
pub fn grew_in_round(u: &ServerUsage) -> Option<String> {
    let r = u.shape_range.filter(|r| r.changed())?;
    Some(format!(
        "the server's pool changed during the round ({}–{} processes, {}–{} threads): it was \
         still starting workers while it was measured, so the round measured its growth, not \
         the load generator's limit nor its capacity; warm it up until its pool holds, or fix \
         the pool's size",
        r.min.processes, r.max.processes, r.min.threads, r.max.threads
    ))
}

/// Adds `shape_changed` when the step's measured rounds did not all find
/// the server in one shape, within a round or between rounds. Rounds
/// whose server was not sampled (no processes) say nothing.
pub fn shape_changed(v: &mut Verdict, step: &StepRecord) {
    let sampled: Vec<_> = step
        .rounds
        .iter()
        .map(|r| &r.server)
        .filter(|u| u.processes > 0)
        .collect();
    let Some(last) = sampled.last() else {
        return;
    };
    let mut range = sampled[0].shapes();
    for u in &sampled[1..] {
        range.cover(&u.shapes());
    }
    if !range.changed() {
        return;
    }
    let end = last.shape();
    let counts = [
        (
            range.min.processes,
            range.max.processes,
            end.processes,
            "process",
            "processes",
        ),
        (
            range.min.threads,
            range.max.threads,
            end.threads,
            "thread",
            "threads",
        ),
        (
            range.min.listeners,
            range.max.listeners,
            end.listeners,
            "listening socket",
            "listening sockets",
        ),
    ];
    let varied = counts.iter().filter(|(lo, hi, ..)| lo != hi);
    let ranges: Vec<String> = varied
        .clone()
        .map(|(lo, hi, _, _, many)| format!("{lo}–{hi} {many}"))
        .collect();
    // The step's range and ends say it for the whole step: a round's
    // own (a busy client before a growing pool) gives way to them.
    v.reasons.retain(|r| r.code != ReasonCode::ShapeChanged);
    let ends: Vec<String> = varied
        .map(|&(_, _, n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
        .collect();
    v.push(
        ReasonCode::ShapeChanged,
        format!(
            "the server's shape changed during measurement: {} over {}, {} at the end: \
             its pool grew or shrank while it was measured, so its rounds did not all measure \
             the same server; warm it up until its pool holds, or fix the pool's size (as \
             Apache's tuned profile does)",
            ranges.join(", "),
            match sampled.len() {
                1 => "1 round".to_string(),
                n => format!("{n} rounds"),
            },
            ends.join(" and ")
        ),
    );
}
