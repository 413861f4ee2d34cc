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

#[cfg(test)]
mod tests {
    use super::*;

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
