//! The rules that say when a step has enough rounds, and a group enough
//! launches.

use throng_stats::estimate;

/// When a step may stop adding rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Precision {
    /// Target half-width of the CI relative to the mean (0.02 = ±2%).
    pub target: f64,
    pub min_rounds: u32,
    pub max_rounds: u32,
    /// Wall time cap for one step, in seconds.
    pub max_step_s: f64,
    /// Starts of every server a group gets at least: what differs between
    /// two starts of one server (its pools as they happened to grow, its
    /// memory layout, the kernel's state after the previous server) is
    /// seen only across starts, so an interval that is to hold in the next
    /// run needs several. 1 is the old design: one start, intervals from
    /// its slices alone.
    pub launches: u32,
    /// Starts a group may get while its comparisons are not yet narrow.
    pub max_launches: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    More,
    Converged,
    /// Round or time cap hit before the interval was narrow enough.
    Capped,
}

impl Precision {
    /// Whether servers are started more than once a group.
    pub fn launched(&self) -> bool {
        self.launches > 1
    }

    /// Blocks a timed level gets in each launch: the study's minimum
    /// rounds spread over its first launches.
    pub fn per_launch(&self) -> u32 {
        self.min_rounds.div_ceil(self.launches.max(1)).max(1)
    }

    /// The least rounds a timed step gets over all its launches.
    pub fn least_rounds(&self) -> u32 {
        if self.launched() {
            self.per_launch() * self.launches
        } else {
            self.min_rounds
        }
    }

    /// The most launches a timed group gets: `max_launches`, and no more
    /// than the step's maximum rounds allow.
    pub fn launch_cap(&self) -> u32 {
        if !self.launched() {
            return 1;
        }
        self.max_launches
            .min(self.max_rounds / self.per_launch())
            .max(self.launches)
    }

    /// The launches of a counted level and each one's share of its
    /// `rounds`: as even as they divide, the first launches taking one more.
    /// Never more launches than rounds.
    pub fn counted_shares(&self, rounds: u32) -> Vec<u32> {
        let n = self.launches.clamp(1, rounds.max(1));
        (0..n)
            .map(|k| rounds / n + u32::from(k < rounds % n))
            .collect()
    }

    pub fn next(&self, values: &[f64], elapsed_s: f64) -> Next {
        let n = values.len() as u32;
        if n >= self.min_rounds.max(2) && estimate(values).relative_half_width() <= self.target {
            return Next::Converged;
        }
        if n >= self.max_rounds || (n >= self.min_rounds && elapsed_s >= self.max_step_s) {
            return Next::Capped;
        }
        Next::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_loop_rules() {
        let p = Precision {
            target: 0.02,
            min_rounds: 3,
            max_rounds: 6,
            max_step_s: 10.0,
            launches: 1,
            max_launches: 1,
        };
        // Two tight rounds are still too few.
        assert_eq!(p.next(&[100.0, 100.0], 1.0), Next::More);
        assert_eq!(p.next(&[100.0, 100.5, 99.5], 1.0), Next::Converged);
        assert_eq!(p.next(&[100.0, 150.0, 60.0], 1.0), Next::More);
        assert_eq!(p.next(&[100.0, 150.0, 60.0], 10.0), Next::Capped);
        // The time cap never cuts a step below its minimum rounds.
        assert_eq!(p.next(&[100.0, 150.0], 60.0), Next::More);
        assert_eq!(
            p.next(&[100.0, 150.0, 60.0, 100.0, 150.0, 60.0], 1.0),
            Next::Capped
        );
    }

    #[test]
    fn launches_share_the_rounds() {
        let p = Precision {
            target: 0.05,
            min_rounds: 20,
            max_rounds: 80,
            max_step_s: 6.0,
            launches: 3,
            max_launches: 5,
        };
        // 20 rounds over 3 launches: 7 a launch, up to 5 launches.
        assert_eq!((p.per_launch(), p.launch_cap()), (7, 5));
        assert_eq!(p.least_rounds(), 21);
        // The step's maximum rounds cap the launches too.
        let tight = Precision {
            max_rounds: 21,
            ..p
        };
        assert_eq!(tight.launch_cap(), 3);
        let one = Precision {
            launches: 1,
            max_launches: 1,
            ..p
        };
        assert_eq!(
            (one.launched(), one.per_launch(), one.launch_cap()),
            (false, 20, 1)
        );
        // A counted level's 8 rounds over 3 launches; 2 rounds over 3.
        assert_eq!(p.counted_shares(8), [3, 3, 2]);
        assert_eq!(p.counted_shares(2), [1, 1]);
        assert_eq!(one.counted_shares(5), [5]);
    }
}
