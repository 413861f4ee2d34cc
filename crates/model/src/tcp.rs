//! A host's TCP segment counters (`/proc/net/snmp`, `Tcp:` lines): read
//! where a load runs and where a server runs, before and after a round, so
//! a round says how many segments the path made its hosts send again.
//!
//! The counters are a network namespace's, not a process's: on a machine
//! shared with other work they count that work's segments too.

use serde::{Deserialize, Serialize};

/// The kernel's TCP counters at one reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpCounters {
    /// `OutSegs`: segments sent, retransmissions excluded.
    pub out_segs: u64,
    /// `RetransSegs`: segments sent again.
    pub retrans_segs: u64,
}

/// What a host's TCP sent over a round: the difference of two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpSegments {
    /// Segments sent (`OutSegs`), retransmissions excluded.
    pub sent: u64,
    /// Segments sent again (`RetransSegs`).
    pub retransmitted: u64,
}

impl TcpCounters {
    /// The `Tcp:` counters of `/proc/net/snmp`'s text: a line of names
    /// followed by a line of values. `None` when either is missing.
    pub fn parse(snmp: &str) -> Option<TcpCounters> {
        let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
        let names: Vec<&str> = tcp.next()?.split_whitespace().skip(1).collect();
        let values: Vec<&str> = tcp.next()?.split_whitespace().skip(1).collect();
        let field = |name: &str| -> Option<u64> {
            let i = names.iter().position(|n| *n == name)?;
            values.get(i)?.parse().ok()
        };
        Some(TcpCounters {
            out_segs: field("OutSegs")?,
            retrans_segs: field("RetransSegs")?,
        })
    }

    /// This network namespace's counters now; `None` where /proc does not
    /// show them.
    pub fn read() -> Option<TcpCounters> {
        TcpCounters::parse(&std::fs::read_to_string("/proc/net/snmp").ok()?)
    }

    /// What was sent between `before` and this reading. A counter that went
    /// back (a namespace made again) counts from zero rather than wrapping.
    pub fn since(&self, before: &TcpCounters) -> TcpSegments {
        TcpSegments {
            sent: self.out_segs.saturating_sub(before.out_segs),
            retransmitted: self.retrans_segs.saturating_sub(before.retrans_segs),
        }
    }
}

impl TcpSegments {
    /// Two hosts' (or two readings') segments together.
    pub fn add(&mut self, o: &TcpSegments) {
        self.sent += o.sent;
        self.retransmitted += o.retransmitted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails \
        EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
        Tcp: 1 200 120000 -1 5731 2860 17 1 4 1234567 2345678 1204 0 21 0\n\
        Udp: InDatagrams NoPorts\nUdp: 5 0\n";

    #[test]
    fn the_tcp_lines_are_read_by_name() {
        assert_eq!(
            TcpCounters::parse(SNMP),
            Some(TcpCounters {
                out_segs: 2_345_678,
                retrans_segs: 1204
            })
        );
        assert_eq!(TcpCounters::parse("Ip: a\nIp: 1\n"), None);
        assert_eq!(
            TcpCounters::parse("Tcp: InSegs OutSegs\nTcp: 1 2\n"),
            None,
            "no RetransSegs"
        );
    }

    #[test]
    fn a_round_is_the_difference_of_two_readings() {
        let before = TcpCounters {
            out_segs: 1000,
            retrans_segs: 4,
        };
        let after = TcpCounters {
            out_segs: 91_000,
            retrans_segs: 1208,
        };
        assert_eq!(
            after.since(&before),
            TcpSegments {
                sent: 90_000,
                retransmitted: 1204
            }
        );
        assert_eq!(before.since(&after), TcpSegments::default());
    }

    #[test]
    fn this_namespace_has_counters() {
        // Every Linux kernel with /proc shows them.
        assert!(TcpCounters::read().is_some());
    }
}
