//! How far a host's clock is from this one's, from four-timestamp
//! exchanges as NTP makes them: the exchange with the shortest round trip
//! bounds the offset most tightly, by half that round trip.

/// `t0` sent here, `t1` received there, `t2` replied there, `t3` received
/// here; Unix nanoseconds on each side's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub t0: u64,
    pub t1: u64,
    pub t2: u64,
    pub t3: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Offset {
    /// The host's clock minus this one's, nanoseconds.
    pub offset_ns: i64,
    /// Half the best round trip: the offset is certain to within this.
    pub uncertainty_ns: u64,
    /// The best round trip over the transport (not the benchmark network).
    pub rtt_ns: u64,
}

impl Offset {
    pub const ZERO: Offset = Offset {
        offset_ns: 0,
        uncertainty_ns: 0,
        rtt_ns: 0,
    };

    /// This machine's Unix time for an instant the host stamped.
    pub fn to_local_s(&self, host_unix_s: f64) -> f64 {
        host_unix_s - self.offset_ns as f64 / 1e9
    }

    /// The host's clock reading for an instant of this machine's.
    pub fn to_host_ns(&self, local_unix_ns: u64) -> u64 {
        (local_unix_ns as i128 + self.offset_ns as i128).max(0) as u64
    }
}

/// The offset from the exchange with the shortest round trip (time spent
/// on the host excluded).
pub fn best(exchanges: &[Exchange]) -> Option<Offset> {
    exchanges
        .iter()
        .filter(|e| e.t3 >= e.t0 && e.t2 >= e.t1)
        .map(|e| {
            let rtt = (e.t3 - e.t0).saturating_sub(e.t2 - e.t1);
            let offset = ((e.t1 as i128 - e.t0 as i128) + (e.t2 as i128 - e.t3 as i128)) / 2;
            Offset {
                offset_ns: offset as i64,
                uncertainty_ns: rtt / 2,
                rtt_ns: rtt,
            }
        })
        .min_by_key(|o| o.rtt_ns)
}

/// Rounds of exchanges a host's clock is given to come within a limit.
pub const ROUNDS: usize = 8;
/// Exchanges per host and round; the one with the shortest round trip
/// counts.
pub const SAMPLES: usize = 8;

/// The best offset (shortest round trip) of up to `rounds` rounds of
/// `measure`, ending at the first round whose best is within `limit_ns`.
/// A busy machine or path can hold up every exchange of one round (on a
/// 2-core machine running many hosts' agents at once, the best of eight
/// over ssh was once 2.08 ms); a time client keeps sampling for a quiet
/// moment rather than give up, and so does this, a bounded number of
/// times, so that a path that is slow for good is still refused.
pub fn settle<E>(
    limit_ns: u64,
    rounds: usize,
    mut measure: impl FnMut() -> Result<Offset, E>,
) -> Result<Offset, E> {
    let mut best = measure()?;
    for _ in 1..rounds {
        if best.uncertainty_ns <= limit_ns {
            break;
        }
        let o = measure()?;
        if o.rtt_ns < best.rtt_ns {
            best = o;
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtt(us: u64) -> Offset {
        Offset {
            offset_ns: us as i64,
            uncertainty_ns: us * 1_000 / 2,
            rtt_ns: us * 1_000,
        }
    }

    /// `settle` over a script of round trips (µs): its offset, and how
    /// many rounds it took.
    fn settle_scripted(rtts: &[u64]) -> (Offset, usize) {
        let mut k = 0;
        let o = settle(1_000_000, ROUNDS, || {
            k += 1;
            Ok::<_, ()>(rtt(rtts[k - 1]))
        })
        .unwrap();
        (o, k)
    }

    #[test]
    fn a_round_within_the_limit_ends_the_sampling() {
        // The third round's 1.9 ms round trip is the first whose half is
        // within 1 ms.
        assert_eq!(
            settle_scripted(&[2_600, 3_000, 1_900, 500, 100]),
            (rtt(1_900), 3)
        );
    }

    #[test]
    fn a_first_round_within_the_limit_is_the_only_one() {
        assert_eq!(settle_scripted(&[300, 100]), (rtt(300), 1));
    }

    #[test]
    fn a_path_slow_for_good_is_given_its_rounds_and_its_best_returned() {
        let script = [2_600, 2_300, 2_900, 2_200, 2_500, 2_400, 2_700, 2_250, 100];
        let (o, rounds) = settle_scripted(&script);
        assert_eq!(o, rtt(2_200));
        assert_eq!(o.uncertainty_ns, 1_100_000);
        assert_eq!(rounds, ROUNDS);
    }

    #[test]
    fn a_failed_round_fails_the_measure() {
        let mut k = 0;
        let r = settle(1_000_000, ROUNDS, || {
            k += 1;
            if k == 2 {
                Err("lost")
            } else {
                Ok(rtt(3_000))
            }
        });
        assert_eq!(r, Err("lost"));
        assert_eq!(k, 2);
    }

    #[test]
    fn the_shortest_round_trip_wins() {
        // Host 5 ms ahead. A slow exchange (2 ms each way, asymmetric) and a
        // fast one (100 µs each way).
        let slow = Exchange {
            t0: 1_000_000_000,
            t1: 1_000_000_000 + 5_000_000 + 3_000_000,
            t2: 1_000_000_000 + 5_000_000 + 3_010_000,
            t3: 1_000_000_000 + 4_010_000,
        };
        let fast = Exchange {
            t0: 2_000_000_000,
            t1: 2_000_000_000 + 5_000_000 + 100_000,
            t2: 2_000_000_000 + 5_000_000 + 150_000,
            t3: 2_000_000_000 + 250_000,
        };
        let o = best(&[slow, fast]).unwrap();
        assert_eq!(o.rtt_ns, 200_000);
        assert_eq!(o.uncertainty_ns, 100_000);
        assert_eq!(o.offset_ns, 5_000_000);
        assert_eq!(o.to_host_ns(10), 5_000_010);
        assert!((o.to_local_s(1.005) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn impossible_exchanges_are_ignored() {
        let bad = Exchange {
            t0: 10,
            t1: 5,
            t2: 4,
            t3: 20,
        };
        assert_eq!(best(&[bad]), None);
    }
}
