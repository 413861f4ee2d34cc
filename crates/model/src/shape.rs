//! A server's shape: the processes, threads and listening sockets its
//! tree is made of, and their range over a round's readings. Apart from
//! the usage they are read with because whether two shapes are one
//! server is a rule of its own (`ShapeRange::changed`), which the
//! verdicts and the warmup share.

use serde::{Deserialize, Serialize};

/// What a server's process tree is made of at one reading: the pool a
/// server sized for itself, which a figure depends on as much as on its
/// code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub processes: u32,
    pub threads: u32,
    /// 0 when the tree's descriptors could not be read.
    #[serde(default)]
    pub listeners: u32,
}

/// A pool that moved by one worker in this many or fewer is the same
/// server: 1/64 is under the ±2% a step's precision aims at, so no figure
/// could tell the two apart.
pub const SPARE_SHARE: u64 = 64;

/// The fewest and the most of each count of a [`Shape`] over some
/// readings, each count on its own: `min.processes` and `min.threads` may
/// come from different readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapeRange {
    pub min: Shape,
    pub max: Shape,
}

impl ShapeRange {
    /// The range of one reading.
    pub fn of(s: Shape) -> ShapeRange {
        ShapeRange { min: s, max: s }
    }

    /// Whether any count took more than one value.
    pub fn varied(&self) -> bool {
        self.min != self.max
    }

    /// Whether the server it covers is no longer one server: its
    /// processes or threads moved by more than one in [`SPARE_SHARE`] of
    /// the most it had, or its listening sockets moved at all. Prefork
    /// forking one more spare beside 129 children, as a burst of new
    /// connections can make it do, serves as it did (an idle child is
    /// idle); a third child beside two, or 25 threads beside 52, does not.
    pub fn changed(&self) -> bool {
        let moved = |lo: u32, hi: u32| u64::from(hi - lo) * SPARE_SHARE > u64::from(hi);
        moved(self.min.processes, self.max.processes)
            || moved(self.min.threads, self.max.threads)
            || self.min.listeners != self.max.listeners
    }

    /// Widened to cover `other` too. Listening sockets of 0 were not read,
    /// so they widen nothing.
    pub fn cover(&mut self, other: &ShapeRange) {
        let (lo, hi) = (&mut self.min, &mut self.max);
        lo.processes = lo.processes.min(other.min.processes);
        hi.processes = hi.processes.max(other.max.processes);
        lo.threads = lo.threads.min(other.min.threads);
        hi.threads = hi.threads.max(other.max.threads);
        if other.min.listeners > 0 {
            lo.listeners = match lo.listeners {
                0 => other.min.listeners,
                l => l.min(other.min.listeners),
            };
        }
        hi.listeners = hi.listeners.max(other.max.listeners);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(lo: (u32, u32, u32), hi: (u32, u32, u32)) -> ShapeRange {
        let shape = |(processes, threads, listeners)| Shape {
            processes,
            threads,
            listeners,
        };
        ShapeRange {
            min: shape(lo),
            max: shape(hi),
        }
    }

    #[test]
    fn a_move_of_one_in_64_or_less_is_the_same_server() {
        assert!(!range((130, 130, 1), (131, 131, 1)).changed());
        assert!(range((130, 130, 1), (131, 131, 1)).varied());
        assert!(range((130, 130, 1), (133, 133, 1)).changed());
        assert!(range((2, 52, 1), (3, 52, 1)).changed());
        assert!(!range((2, 1027, 1), (2, 1043, 1)).changed());
        assert!(range((2, 1027, 1), (2, 1044, 1)).changed());
        // A listener is never a spare.
        assert!(range((130, 130, 1), (130, 130, 2)).changed());
        assert!(!range((4, 4, 1), (4, 4, 1)).changed());
    }
}
