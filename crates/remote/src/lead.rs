//! How far ahead of now a synchronised start is scheduled. Every round
//! apart that is not part of a plan waits for it, so it is as long as the
//! request's way to the slowest host calls for and no longer: a few of
//! that host's measured round trips, and twice the lateness the hosts'
//! own starts have shown lately, measured on each start.

use std::time::Duration;

/// The least lead: a sleeping agent thread's wake-up and a pipe's write,
/// on a busy machine.
pub const LEAD_LEAST: Duration = Duration::from_millis(2);
/// The longest lead: a host later than this on every start is lost, not
/// slow, and the agent refuses starts much further ahead.
pub const LEAD_MOST: Duration = Duration::from_secs(2);
/// Round trips a request is given to reach a host: the one kept is the
/// shortest of the clock exchanges, and a loaded path takes a few times
/// that.
const ROUND_TRIPS: u32 = 4;

/// The lateness of the hosts' recent starts, and the lead it calls for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lead {
    late: Duration,
}

impl Lead {
    /// The lead for hosts whose slowest measured round trip is `rtt`.
    pub fn ahead(&self, rtt: Duration) -> Duration {
        ((rtt * ROUND_TRIPS).max(LEAD_LEAST) + self.late * 2).min(LEAD_MOST)
    }

    /// A start the latest host began `late` after its instant. An earlier
    /// lateness is halved at each start, so one hiccup (a first load's
    /// page faults, a preempted agent) lengthens the next few leads, not
    /// every one after it.
    pub fn observe(&mut self, late: Duration) {
        self.late = late.max(self.late / 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_lead_is_four_round_trips_at_least_two_ms_plus_twice_the_recent_lateness() {
        let mut l = Lead::default();
        assert_eq!(l.ahead(Duration::ZERO), 2 * MS);
        assert_eq!(l.ahead(Duration::from_micros(300)), 2 * MS);
        assert_eq!(
            l.ahead(Duration::from_micros(700)),
            Duration::from_micros(2800)
        );
        assert_eq!(l.ahead(40 * MS), 160 * MS);
        // A host 3 ms late: the next lead gives it twice that.
        l.observe(3 * MS);
        assert_eq!(l.ahead(Duration::ZERO), 8 * MS);
        // On time again: the lateness halves at each start.
        l.observe(Duration::ZERO);
        assert_eq!(l.ahead(Duration::ZERO), 5 * MS);
        l.observe(Duration::ZERO);
        assert_eq!(l.ahead(Duration::ZERO), Duration::from_micros(3500));
        // A later start counts at once.
        l.observe(10 * MS);
        assert_eq!(l.ahead(Duration::ZERO), 22 * MS);
        // Never beyond the most.
        l.observe(Duration::from_secs(5));
        assert_eq!(l.ahead(Duration::ZERO), LEAD_MOST);
        assert_eq!(Lead::default().ahead(Duration::from_secs(1)), LEAD_MOST);
    }
}
