//! The path under load: whether the link between client and server, not
//! the server, set the pace of a round (`link_bound`), and whether its
//! hosts had to send segments again (`retransmits`).
//!
//! Both are pure functions of what a round measured and what is known of
//! its path; the lab and the agents read the figures (link speeds from
//! /sys, segment counters from /proc/net/snmp) and hand them here.

use throng_model::{ReasonCode, Summary, TcpSegments, Verdict};

/// Bytes per second at or above this share of a path's capacity are the
/// link's pace, not the server's. The figures counted are HTTP's own
/// bytes, heads and bodies (`bytes_read` and `bytes_written`, the larger
/// direction, since an Ethernet link carries each direction at its full
/// rate); on the wire each 1448-byte TCP payload of a 1500-byte MTU rides
/// in 1538 bytes of frame, so a full link carries at most 94% of its rate
/// as HTTP bytes. 90% is within 4% of that ceiling, where a round's ramp
/// and a few retransmits land a link that was full, and above where a
/// server that sets its own pace comes near a link by chance.
pub const LINK_SHARE: f64 = 0.90;

/// A host whose TCP sent at least this share of its segments again named
/// in the round's verdict. Loss costs each request that meets it a round
/// trip at best (fast retransmit) and 200 ms at worst (the minimum
/// retransmission timeout): at one segment in a thousand, a round's
/// 99.9th percentile latency can be made of retransmissions, not of the
/// server.
pub const RETRANSMIT_SHARE: f64 = 0.001;

/// Fewer retransmitted segments than this are never a verdict, whatever
/// their share: a short round sends few segments, and a handful of
/// retransmissions (a tail loss probe on a connection going idle, a lost
/// SYN) is ordinary on any network.
pub const RETRANSMIT_MIN: u64 = 10;

/// Where a path's capacity was learnt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkSource {
    /// The study's `link_capacity`.
    Stated,
    /// `/sys/class/net/INTERFACE/speed` on the client host, for the
    /// interface that carries the route to the server.
    Sys { interface: String },
}

/// A path's capacity, and whose load it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkCapacity {
    pub bits_per_s: u64,
    pub source: LinkSource,
    /// The client host this path leaves from, judged on that host's own
    /// share of the load (`per_host`); `None`: the whole load's path,
    /// judged on the merged figures.
    pub host: Option<String>,
}

impl LinkCapacity {
    /// A client host's link as its /sys shows it (`Mb/s`, as the kernel
    /// gives it).
    pub fn of_interface(host: Option<String>, interface: &str, mbps: u64) -> LinkCapacity {
        LinkCapacity {
            bits_per_s: mbps.saturating_mul(1_000_000),
            source: LinkSource::Sys {
                interface: interface.to_string(),
            },
            host,
        }
    }

    fn bytes_per_s(&self) -> f64 {
        self.bits_per_s as f64 / 8.0
    }
}

/// `link_bound` on every path known: the merged load against a capacity
/// the study states, each client host's share against its own link.
pub fn link_bound(v: &mut Verdict, s: &Summary, links: &[LinkCapacity]) {
    for link in links {
        let (whose, bytes, duration_s) = match &link.host {
            None => (
                String::new(),
                s.bytes_read.max(s.bytes_written),
                s.duration_s,
            ),
            Some(h) => match s.per_host.iter().find(|x| &x.host == h) {
                Some(x) => (
                    format!("client host {h}: "),
                    x.bytes_read.max(x.bytes_written),
                    x.duration_s,
                ),
                None => continue,
            },
        };
        if duration_s <= 0.0 || link.bits_per_s == 0 {
            continue;
        }
        let rate = bytes as f64 / duration_s;
        if rate < LINK_SHARE * link.bytes_per_s() {
            continue;
        }
        let source = match &link.source {
            LinkSource::Stated => "as the study states".to_string(),
            LinkSource::Sys { interface } => format!("/sys/class/net/{interface}/speed"),
        };
        v.push(
            ReasonCode::LinkBound,
            format!(
                "{whose}the link set the pace, not the server: {} of the path's {} ({}, \
                 {source}); the figure is the link's, a lower bound on the server: a faster \
                 link, or smaller responses, measure the server",
                megabytes(rate),
                megabytes(link.bytes_per_s()),
                bits_words(link.bits_per_s)
            ),
        );
    }
}

/// `retransmits`: the hosts whose TCP sent segments again during the
/// round, named with their counts when one of them reached
/// [`RETRANSMIT_SHARE`] of what it sent. `server` is the server host's
/// reading over the round's window; with no client hosts (`per_host`
/// empty) the load ran on that same machine, and its one reading counts
/// both sides.
pub fn retransmits(v: &mut Verdict, s: &Summary, server: Option<&TcpSegments>) {
    let here = s.per_host.is_empty();
    let mut hosts: Vec<(String, TcpSegments)> = s
        .per_host
        .iter()
        .filter_map(|h| h.tcp.map(|t| (format!("client host {}", h.host), t)))
        .collect();
    if let Some(t) = server {
        let who = if here { "this machine" } else { "server host" };
        hosts.push((who.to_string(), *t));
    }
    let heavy = hosts.iter().any(|(_, t)| {
        t.retransmitted >= RETRANSMIT_MIN
            && t.sent > 0
            && t.retransmitted as f64 >= RETRANSMIT_SHARE * t.sent as f64
    });
    if !heavy {
        return;
    }
    let total: u64 = hosts.iter().map(|(_, t)| t.retransmitted).sum();
    let each: Vec<String> = hosts
        .iter()
        .map(|(who, t)| {
            format!(
                "{who}: {} of {} sent",
                grouped(t.retransmitted),
                grouped(t.sent)
            )
        })
        .collect();
    let whose = if here {
        "client and server together, and any other traffic of this machine"
    } else {
        "each host's whole network namespace, any other traffic of it included"
    };
    v.push(
        ReasonCode::Retransmits,
        format!(
            "{} TCP segments retransmitted during the round ({}): packets were lost on the \
             path, and each loss held its requests back a round trip or a timeout; the \
             counters count {whose}",
            grouped(total),
            each.join("; ")
        ),
    );
}

/// `117 MB/s`, in decimal megabytes as `mb_per_sec` counts them.
fn megabytes(bytes_per_s: f64) -> String {
    let mb = bytes_per_s / 1e6;
    if mb < 10.0 {
        format!("{mb:.2} MB/s")
    } else {
        format!("{mb:.0} MB/s")
    }
}

/// `1 Gbit/s`, `2.5 Gbit/s`, `100 Mbit/s`.
pub fn bits_words(bits_per_s: u64) -> String {
    let (v, unit) = if bits_per_s >= 1_000_000_000 {
        (bits_per_s as f64 / 1e9, "Gbit/s")
    } else if bits_per_s >= 1_000_000 {
        (bits_per_s as f64 / 1e6, "Mbit/s")
    } else {
        (bits_per_s as f64 / 1e3, "kbit/s")
    };
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// `1,204`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_counts_are_worded_as_read() {
        assert_eq!(bits_words(1_000_000_000), "1 Gbit/s");
        assert_eq!(bits_words(2_500_000_000), "2.5 Gbit/s");
        assert_eq!(bits_words(10_000_000_000), "10 Gbit/s");
        assert_eq!(bits_words(100_000_000), "100 Mbit/s");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1204), "1,204");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(megabytes(117.4e6), "117 MB/s");
        assert_eq!(megabytes(6.25e6), "6.25 MB/s");
    }
}
