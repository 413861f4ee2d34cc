//! The warmup: timed rounds per started server before the first level, at
//! the connections that level opens. They ready the server and measure
//! nothing, but their pace sizes the first level's rounds.
//!
//! A server that sizes its pool as it goes (Apache starts children as its
//! spare workers run short) may still be growing it when the first round
//! ends, and its figures would then depend on when it settled. So it is
//! warmed again while its last warmup found its shape (processes, threads,
//! listening sockets) changing, within that round or since the one
//! before, up to [`SETTLE_ROUNDS`] more rounds; the observer is told how
//! many it took and the shape it held, or that it never settled (its
//! steps then say `shape_changed` if it goes on changing). A first warmup
//! shorter than [`SETTLE_S`] is followed by one more round in any case, to
//! compare with. A server whose first warmup found it steady over
//! `SETTLE_S` or longer, or that was not sampled, costs no round more.

use throng_model::{ServerUsage, Shape, ShapeRange};

use super::failure::Down;
use super::level::LevelRun;
use super::Sweep;
use crate::observer::Event;
use crate::round::{Measured, RoundKind, ServerId};
use crate::spec::RoundLoad;
use crate::study::Level;

/// Warmup rounds after the first, at most, while a server's shape still
/// changes. A bound of rounds, each a whole reading, rather than of time,
/// which would cut one short; five of at least [`SETTLE_S`] cover a pool
/// Apache grows from one child to 63 (its prefork parent starts 1, 2, 4,
/// 8, 16, then 32 children a second while spare ones run short), and a
/// pool still changing after that is told rather than waited for.
pub const SETTLE_ROUNDS: u32 = 5;

/// Seconds each of those rounds lasts at least: Apache's parent looks at
/// its pool once a second (mpm_common, "the parent checks once a second"),
/// so two shorter rounds in a row could find the same pool between two of
/// its looks while it is still growing.
pub const SETTLE_S: f64 = 1.0;

impl Sweep<'_, '_> {
    /// Warms each server a level of `runs` (the launches so far) measures
    /// in this launch: every one in the first, and later only those of a
    /// comparison still wide (see `launches`).
    pub(super) fn warm_up(&mut self, runs: &[LevelRun]) {
        let study = self.study;
        if study.warmup_s <= 0.0 {
            return;
        }
        // Timed whatever the rounds are, and in the closed model even
        // before offered rates: it readies the server, at the connections
        // the first level opens.
        let first = Level::closed(self.levels[0].concurrency);
        let mut load = study.round_load(self.group, first, 1).timed(study.warmup_s);
        load.warmup_s = 0.0;
        for id in self.up.clone() {
            if self.interrupted() {
                break;
            }
            // Not started again for this launch: nothing to warm.
            if self.down[id.index()].is_some() {
                continue;
            }
            if !runs.is_empty() && !runs.iter().any(|r| r.measures(id)) {
                continue;
            }
            load.client_cpus = self.group.client_cpus_of(id.index()).to_vec();
            if let Some(m) = self.warmup_round(id, &load) {
                self.settle(id, &load, m.usage);
            }
        }
    }

    /// One warmup round; `None` when it failed, the server then down.
    fn warmup_round(&mut self, id: ServerId, load: &RoundLoad) -> Option<Measured> {
        match self.exec.round(id, load, RoundKind::Warmup) {
            Ok(m) => {
                self.paces.update(id, &m.summary);
                Some(m)
            }
            Err(e) => {
                self.down[id.index()] = Some(Down::Warmup(e));
                None
            }
        }
    }

    /// More warmup rounds while the server's shape changes, after a first
    /// that left it as `first` says.
    fn settle(&mut self, id: ServerId, load: &RoundLoad, first: ServerUsage) {
        // A first round shorter than a second may have fallen between two
        // of Apache's looks at its pool: steady in it says nothing yet.
        let short = first.processes > 0 && load.seconds < SETTLE_S;
        if !changing(&first, None) && !short {
            return;
        }
        let again = load.clone().timed(load.seconds.max(SETTLE_S));
        let mut last = first;
        for extra in 1..=SETTLE_ROUNDS {
            if self.interrupted() {
                return;
            }
            let Some(m) = self.warmup_round(id, &again) else {
                return;
            };
            let before = last.shape();
            last = m.usage;
            if !changing(&last, Some(before)) {
                let note = format!(
                    "{}: {} until its shape held, at {}",
                    self.name(id),
                    counted(extra, "more warmup round", "more warmup rounds"),
                    worded(last.shape())
                );
                self.ctx.observer.event(Event::Note(note));
                return;
            }
        }
        let note = format!(
            "{}: its shape still changed after {SETTLE_ROUNDS} more warmup rounds, now {}: its \
             steps say shape_changed if it goes on changing",
            self.name(id),
            worded(last.shape())
        );
        self.ctx.observer.event(Event::Note(note));
    }
}

/// Whether a warmup found the server's shape changing: within its round,
/// or since `before`, the round before's. Unsampled (no processes): not.
fn changing(u: &ServerUsage, before: Option<Shape>) -> bool {
    if u.processes == 0 {
        return false;
    }
    let mut range = u.shapes();
    if let Some(b) = before {
        range.cover(&ShapeRange::of(b));
    }
    range.changed()
}

/// "3 processes, 77 threads, 1 listening socket", leaving out listeners
/// that could not be read.
fn worded(s: Shape) -> String {
    let mut parts = vec![
        counted(s.processes, "process", "processes"),
        counted(s.threads, "thread", "threads"),
    ];
    if s.listeners > 0 {
        parts.push(counted(
            s.listeners,
            "listening socket",
            "listening sockets",
        ));
    }
    parts.join(", ")
}

fn counted(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
