//! The path under load, on scripted figures: a round at the link's rate
//! is `link_bound` with its exact words, one well below it or with no
//! capacity known is not; segments sent again are named by host.

use throng_model::{
    Connections, CpuTime, HostShare, ReasonCode, ServerUsage, StepRecord, Summary, TcpCounters,
    TcpSegments, Verdict,
};
use throng_trust::path::{LinkCapacity, LinkSource, LINK_SHARE};
use throng_trust::verdict::{round_verdict_with, step_verdict_paired, PortUse, RoundContext};

/// A clean 10 s keep-alive round of large responses, 2 threads half busy
/// against a server using half its core: nothing else to say of it.
fn round(bytes_read: u64) -> Summary {
    let mut s = Summary {
        threads: 2,
        keep_alive: true,
        duration_s: 10.0,
        completed: 1_000,
        sent: 1_000,
        bytes_read,
        bytes_written: 100_000,
        client_cpu_s: CpuTime {
            user: 5.0,
            sys: 5.0,
            runqueue: 0.0,
            spun: 0.0,
        },
        connections: Connections {
            requested: 10,
            established: 10,
            ..Connections::default()
        },
        ..Summary::default()
    };
    s.status.insert(200, 1_000);
    s
}

fn server(tcp: Option<TcpSegments>) -> ServerUsage {
    ServerUsage {
        cpu_user_s: 3.0,
        cpu_sys_s: 2.0,
        wall_s: 10.0,
        tcp,
        ..ServerUsage::default()
    }
}

fn ctx(links: Vec<LinkCapacity>, tcp: Option<TcpSegments>) -> RoundContext {
    RoundContext {
        server: Some(server(tcp)),
        server_cores: Some(1),
        client_threads: 2,
        shared_cores: false,
        close_mode: false,
        links,
    }
}

fn judged(s: &Summary, c: &RoundContext) -> Verdict {
    round_verdict_with(s, None, c, PortUse::default())
}

fn eth0(host: Option<&str>) -> LinkCapacity {
    LinkCapacity::of_interface(host.map(str::to_string), "eth0", 1000)
}

fn messages(v: &Verdict) -> Vec<(ReasonCode, &str)> {
    v.reasons
        .iter()
        .map(|r| (r.code, r.message.as_str()))
        .collect()
}

#[test]
fn a_round_at_its_links_rate_is_link_bound() {
    // 95% of 1 Gbit/s (125 MB/s) over 10 s.
    let s = round(1_187_500_000);
    let v = judged(&s, &ctx(vec![eth0(None)], None));
    assert_eq!(
        messages(&v),
        vec![(
            ReasonCode::LinkBound,
            "the link set the pace, not the server: 119 MB/s of the path's 125 MB/s (1 Gbit/s, \
             /sys/class/net/eth0/speed); the figure is the link's, a lower bound on the server: \
             a faster link, or smaller responses, measure the server"
        )]
    );
    // The study's own figure names itself.
    let stated = LinkCapacity {
        bits_per_s: 1_000_000_000,
        source: LinkSource::Stated,
        host: None,
    };
    let v = judged(&s, &ctx(vec![stated], None));
    assert!(v.reasons[0]
        .message
        .contains("119 MB/s of the path's 125 MB/s (1 Gbit/s, as the study states)"));
    // The edge itself: exactly LINK_SHARE of the link fires.
    let edge = round((LINK_SHARE * 125e6 * 10.0) as u64);
    assert!(judged(&edge, &ctx(vec![eth0(None)], None)).has(ReasonCode::LinkBound));
    let below = round((LINK_SHARE * 125e6 * 10.0) as u64 - 1);
    assert!(judged(&below, &ctx(vec![eth0(None)], None)).is_valid());
}

#[test]
fn a_round_at_half_its_links_rate_or_with_no_capacity_known_is_not() {
    let half = round(625_000_000);
    assert!(judged(&half, &ctx(vec![eth0(None)], None)).is_valid());
    // Loopback, with no capacity stated: nothing to judge against.
    let full = round(1_187_500_000);
    assert!(judged(&full, &ctx(Vec::new(), None)).is_valid());
    // A link of unknown speed is never a capacity of 0.
    let zero = LinkCapacity::of_interface(None, "veth0", 0);
    assert!(judged(&full, &ctx(vec![zero], None)).is_valid());
}

#[test]
fn each_client_host_is_judged_on_its_own_share_and_named() {
    // Two hosts on 1 Gbit/s each: a carried 118 MB/s, b 40 MB/s. Merged
    // (158 MB/s) they are above either link, which says nothing alone.
    let mut s = round(1_580_000_000);
    let share = |host: &str, bytes_read: u64| HostShare {
        host: host.into(),
        threads: 1,
        duration_s: 10.0,
        bytes_read,
        bytes_written: 50_000,
        ..HostShare::default()
    };
    s.per_host = vec![
        share("ssh://a", 1_180_000_000),
        share("ssh://b", 400_000_000),
    ];
    let v = judged(
        &s,
        &ctx(vec![eth0(Some("ssh://a")), eth0(Some("ssh://b"))], None),
    );
    assert_eq!(v.reasons.len(), 1);
    assert_eq!(v.reasons[0].code, ReasonCode::LinkBound);
    assert!(v.reasons[0].message.starts_with(
        "client host ssh://a: the link set the pace, not the server: 118 MB/s of the path's \
         125 MB/s (1 Gbit/s, /sys/class/net/eth0/speed)"
    ));
    // A host the round has no share of is not judged.
    let v = judged(&s, &ctx(vec![eth0(Some("ssh://c"))], None));
    assert!(v.is_valid());
}

#[test]
fn segments_sent_again_are_counted_from_two_readings_and_named() {
    let before = TcpCounters {
        out_segs: 10_000,
        retrans_segs: 3,
    };
    let after = TcpCounters {
        out_segs: 100_000,
        retrans_segs: 1_207,
    };
    let here = after.since(&before);
    assert_eq!(
        here,
        TcpSegments {
            sent: 90_000,
            retransmitted: 1_204
        }
    );
    // One machine: its one reading counts client and server.
    let v = judged(&round(1_000_000), &ctx(Vec::new(), Some(here)));
    assert_eq!(
        messages(&v),
        vec![(
            ReasonCode::Retransmits,
            "1,204 TCP segments retransmitted during the round (this machine: 1,204 of 90,000 \
             sent): packets were lost on the path, and each loss held its requests back a \
             round trip or a timeout; the counters count client and server together, and any \
             other traffic of this machine"
        )]
    );
    // Apart: each client host's own, and the server host's.
    let mut s = round(1_000_000);
    s.per_host = vec![HostShare {
        host: "ssh://root@198.18.0.11".into(),
        duration_s: 10.0,
        tcp: Some(TcpSegments {
            sent: 40_000,
            retransmitted: 1_200,
        }),
        ..HostShare::default()
    }];
    let server_host = TcpSegments {
        sent: 120_000,
        retransmitted: 4,
    };
    let v = judged(&s, &ctx(Vec::new(), Some(server_host)));
    assert_eq!(
        messages(&v),
        vec![(
            ReasonCode::Retransmits,
            "1,204 TCP segments retransmitted during the round (client host \
             ssh://root@198.18.0.11: 1,200 of 40,000 sent; server host: 4 of 120,000 sent): \
             packets were lost on the path, and each loss held its requests back a round trip \
             or a timeout; the counters count each host's whole network namespace, any other \
             traffic of it included"
        )]
    );
}

#[test]
fn a_few_segments_sent_again_are_no_verdict() {
    // 9 in 1,000 is above the share but below the count.
    let few = TcpSegments {
        sent: 1_000,
        retransmitted: 9,
    };
    assert!(judged(&round(1_000_000), &ctx(Vec::new(), Some(few))).is_valid());
    // 10 in 100,000 is the count but a hundredth of the share.
    let rare = TcpSegments {
        sent: 100_000,
        retransmitted: 10,
    };
    assert!(judged(&round(1_000_000), &ctx(Vec::new(), Some(rare))).is_valid());
    // Exactly the share and the count: named.
    let edge = TcpSegments {
        sent: 10_000,
        retransmitted: 10,
    };
    assert!(judged(&round(1_000_000), &ctx(Vec::new(), Some(edge))).has(ReasonCode::Retransmits));
    // Unread counters say nothing.
    assert!(judged(&round(1_000_000), &ctx(Vec::new(), None)).is_valid());
}

#[test]
fn a_paired_step_is_link_bound_only_when_a_quarter_of_its_slices_were() {
    let step = StepRecord::new("nginx", 1, "large", 10);
    let at_link = judged(&round(1_187_500_000), &ctx(vec![eth0(None)], None));
    let clean = judged(&round(625_000_000), &ctx(vec![eth0(None)], None));
    let slices = |n_at: usize| -> Vec<Verdict> {
        (0..8)
            .map(|i| {
                if i < n_at {
                    at_link.clone()
                } else {
                    clean.clone()
                }
            })
            .collect()
    };
    assert!(step_verdict_paired(&step, &slices(1), 0.02, &[]).is_valid());
    let v = step_verdict_paired(&step, &slices(2), 0.02, &[]);
    assert_eq!(v.reasons.len(), 1);
    assert!(v.reasons[0]
        .message
        .ends_with("(in 2 of 8 rounds; figures of the first)"));
}
