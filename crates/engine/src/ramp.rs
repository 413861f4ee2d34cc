//! An open model whose rate changes: stages of linear ramps between
//! targets (k6's ramping arrival rate), as data. The k-th request of the
//! run (from 0) falls due when the rate's integral reaches k, so the
//! requests of a stage are as many as its area, however they are spread
//! over connections, and each request's intended time is computed from
//! its index alone: no table, no allocation, a few stages walked per send.
//! The same stages, read as how many users are active (k6's ramping
//! VUs), shape a run of sessions: [`Ramp::at`] and [`Ramp::reaches`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The most stages a ramp may have: each send walks them.
pub const MAX_STAGES: usize = 64;

/// One stage: from the rate the one before ended at (0 before the first),
/// linearly to `to` requests per second over `length` (0 jumps to it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub length: Duration,
    pub to: f64,
}

/// The stages of a run, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    pub stages: Vec<Stage>,
}

impl Ramp {
    /// How long the whole schedule lasts.
    pub fn length(&self) -> Duration {
        self.stages.iter().map(|s| s.length).sum()
    }

    /// Requests due in the first `t` seconds: the rate's integral.
    pub fn due_by(&self, t: f64) -> f64 {
        let (mut from, mut done, mut at) = (0.0, 0.0, 0.0);
        for s in &self.stages {
            let len = s.length.as_secs_f64();
            if t < at + len {
                let x = t - at;
                let slope = (s.to - from) / len;
                return done + from * x + slope * x * x / 2.0;
            }
            done += (from + s.to) / 2.0 * len;
            at += len;
            from = s.to;
        }
        done
    }

    /// Requests due over the whole schedule.
    pub fn requests(&self) -> f64 {
        self.due_by(self.length().as_secs_f64())
    }

    /// The mean rate over the schedule: the open model's rate as its
    /// report and verdict judge a whole run.
    pub fn mean_rate(&self) -> f64 {
        let len = self.length().as_secs_f64();
        if len > 0.0 {
            self.requests() / len
        } else {
            0.0
        }
    }

    /// When the `k`-th request (from 0) falls due, in nanoseconds from the
    /// schedule's start; `None` when it falls due at or past its end.
    pub fn time_of(&self, k: u64) -> Option<u64> {
        let k = k as f64;
        // Whole areas (a stage of 2,000/s for 2 s) end on a whole request
        // that belongs to the next second, not to this schedule.
        if k >= self.requests() - 1e-6 {
            return None;
        }
        let (mut from, mut done, mut at) = (0.0f64, 0.0, 0.0);
        for s in &self.stages {
            let len = s.length.as_secs_f64();
            let area = (from + s.to) / 2.0 * len;
            if k < done + area {
                // Solve from·x + slope·x²/2 = k − done for x, in the form
                // that stays exact when the slope is 0 and stable when it
                // is negative.
                let need = k - done;
                let slope = (s.to - from) / len;
                let root = (from * from + 2.0 * slope * need).max(0.0).sqrt();
                let x = if from + root > 0.0 {
                    2.0 * need / (from + root)
                } else {
                    0.0
                };
                return Some(((at + x.min(len)) * 1e9).round() as u64);
            }
            done += area;
            at += len;
            from = s.to;
        }
        None
    }

    /// The target at `t` seconds from the start: between a stage's ends on
    /// its line, after a jump (a 0 s stage) its new value, past the end the
    /// last stage's.
    pub fn at(&self, t: f64) -> f64 {
        let (mut from, mut at) = (0.0, 0.0);
        for s in &self.stages {
            let len = s.length.as_secs_f64();
            if t < at + len {
                return from + (s.to - from) * (t - at) / len;
            }
            at += len;
            from = s.to;
        }
        from
    }

    /// The first instant at or after `after` seconds, within the schedule,
    /// at which the target is `level` or more; `None` when it never is
    /// again before the end.
    pub fn reaches(&self, level: f64, after: f64) -> Option<f64> {
        let (mut from, mut at) = (0.0f64, 0.0f64);
        for s in &self.stages {
            let len = s.length.as_secs_f64();
            let end = at + len;
            if len == 0.0 {
                if at >= after && s.to >= level {
                    return Some(at);
                }
            } else if after < end {
                let t0 = after.max(at);
                let v0 = from + (s.to - from) * (t0 - at) / len;
                if v0 >= level {
                    return Some(t0);
                }
                if s.to > from && s.to >= level {
                    let t = at + (level - from) / (s.to - from) * len;
                    // Rounding may put it a hair before t0 or past the end.
                    return Some(t.clamp(t0, end));
                }
            }
            at = end;
            from = s.to;
        }
        None
    }

    /// The largest target any stage reaches.
    pub fn peak(&self) -> f64 {
        self.stages.iter().map(|s| s.to).fold(0.0, f64::max)
    }

    /// Whether it can be run as users' stages: a few stages, each a whole
    /// number of users, some user at some point.
    pub fn check_users(&self) -> Result<(), &'static str> {
        if self.stages.is_empty() || self.stages.len() > MAX_STAGES {
            return Err("a ramp has 1 to 64 stages");
        }
        if self
            .stages
            .iter()
            .any(|s| !s.to.is_finite() || s.to < 0.0 || s.to.fract() != 0.0)
        {
            return Err("a stage's users are a whole number of 0 or more");
        }
        if self.peak() < 1.0 || self.length().is_zero() {
            return Err("the stages hold at least one user for some time");
        }
        Ok(())
    }

    /// [`Ramp::time_of`], or far past any end when it never falls due.
    pub(crate) fn due_ns(&self, k: u64) -> u64 {
        self.time_of(k).unwrap_or(u64::MAX / 2)
    }

    /// Whether it can be run: a few stages, rates that are numbers and
    /// not negative, some request due.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.stages.is_empty() || self.stages.len() > MAX_STAGES {
            return Err("a ramp has 1 to 64 stages");
        }
        if self.stages.iter().any(|s| !s.to.is_finite() || s.to < 0.0) {
            return Err("a stage's rate is a number of 0 or more");
        }
        if self.requests() < 1.0 {
            return Err("a ramp sends at least one request");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(stages: &[(f64, f64)]) -> Ramp {
        Ramp {
            stages: stages
                .iter()
                .map(|&(s, to)| Stage {
                    length: Duration::from_secs_f64(s),
                    to,
                })
                .collect(),
        }
    }

    #[test]
    fn the_requests_of_a_stage_are_its_area() {
        // 0 → 500 over 1 s, 500 → 2000 over 1 s, 2000 held 2 s.
        let r = ramp(&[(1.0, 500.0), (1.0, 2000.0), (2.0, 2000.0)]);
        assert_eq!(r.requests(), 5500.0);
        assert_eq!(r.due_by(1.0), 250.0);
        assert_eq!(r.due_by(2.0), 1500.0);
        assert_eq!(r.due_by(3.0), 3500.0);
        assert_eq!(r.length(), Duration::from_secs(4));
        assert_eq!(r.mean_rate(), 1375.0);
    }

    #[test]
    fn each_request_falls_due_where_the_integral_reaches_it() {
        let r = ramp(&[(1.0, 500.0), (1.0, 2000.0), (2.0, 2000.0)]);
        // 250 t² = k in the first stage.
        assert_eq!(r.time_of(0), Some(0));
        assert_eq!(r.time_of(250), Some(1_000_000_000));
        assert_eq!(r.time_of(1500), Some(2_000_000_000));
        assert_eq!(r.time_of(1501), Some(2_000_500_000));
        assert_eq!(r.time_of(5499), Some(3_999_500_000));
        assert_eq!(r.time_of(5500), None);
        // Exactly as many fall due in each second as its area, and in order.
        let mut per_second = [0u64; 4];
        let mut last = 0;
        for k in 0..5500 {
            let t = r.time_of(k).unwrap();
            assert!(t >= last, "{k}");
            last = t;
            per_second[(t / 1_000_000_000) as usize] += 1;
        }
        assert_eq!(per_second, [250, 1250, 2000, 2000]);
        // Down to 0, and a jump: 0 s stages change the rate at once.
        let r = ramp(&[(0.0, 1000.0), (1.0, 1000.0), (2.0, 0.0)]);
        assert_eq!(r.requests(), 2000.0);
        assert_eq!(r.time_of(999), Some(999_000_000));
        assert_eq!(r.time_of(1999).map(|t| t < 3_000_000_000), Some(true));
        assert_eq!(r.time_of(2000), None);
    }

    #[test]
    fn a_target_is_read_on_its_line_and_found_where_it_is_reached() {
        // 0 → 4 over 2 s, held 1 s, a jump to 8, down to 0 over 2 s.
        let r = ramp(&[(2.0, 4.0), (1.0, 4.0), (0.0, 8.0), (2.0, 0.0)]);
        assert_eq!(r.at(0.0), 0.0);
        assert_eq!(r.at(0.5), 1.0);
        assert_eq!(r.at(2.5), 4.0);
        assert_eq!(r.at(3.0), 8.0);
        assert_eq!(r.at(4.0), 4.0);
        assert_eq!(r.at(9.0), 0.0);
        assert_eq!(r.peak(), 8.0);
        assert_eq!(r.reaches(1.0, 0.0), Some(0.5));
        assert_eq!(r.reaches(4.0, 0.0), Some(2.0));
        // Already there: at once.
        assert_eq!(r.reaches(3.0, 2.5), Some(2.5));
        // Past the hold, only the jump reaches 5.
        assert_eq!(r.reaches(5.0, 0.0), Some(3.0));
        // On the way down, 7 is still met just after the jump.
        assert_eq!(r.reaches(7.0, 3.1), Some(3.1));
        assert_eq!(r.reaches(7.0, 3.5), None);
        assert_eq!(r.reaches(9.0, 0.0), None);
        assert!(r.check_users().is_ok());
        assert_eq!(
            ramp(&[(1.0, 2.5)]).check_users(),
            Err("a stage's users are a whole number of 0 or more")
        );
        assert_eq!(
            ramp(&[(0.0, 3.0)]).check_users(),
            Err("the stages hold at least one user for some time")
        );
    }

    #[test]
    fn a_ramp_that_cannot_run_is_refused() {
        assert!(ramp(&[]).check().is_err());
        assert!(ramp(&[(1.0, -1.0)]).check().is_err());
        assert!(ramp(&[(1.0, f64::NAN)]).check().is_err());
        assert!(ramp(&[(0.0, 100.0)]).check().is_err());
        assert!(ramp(&[(1.0, 1.0), (1.0, 1.0)]).check().is_ok());
    }
}
