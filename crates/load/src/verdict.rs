//! Whether a load's figures can be believed: the one place a load's
//! summary gets its verdict, for `throng load`, its spread over hosts and
//! a lab round alike, so the same figures are judged by the same rules
//! wherever they were measured.

use hdrhistogram::Histogram;
use throng_engine::LoadResult;
use throng_model::{LocalServer, ReasonCode, Summary, Verdict};
use throng_trust::verdict::{round_verdict, round_verdict_with, PortUse, RoundContext};

/// The ports a verdict judges: this machine's, read as the round ends
/// when the round churned connections, or those a client host read for
/// itself (a load from elsewhere never concerns this machine's).
#[derive(Debug, Clone)]
pub enum Ports {
    Here,
    Read(PortUse),
}

/// A round's verdict: the checks of one measured window. A lab round is
/// judged so; its step then judges the schedule over all its rounds.
pub fn round(s: &Summary, latency: &Histogram<u64>, ctx: &RoundContext, ports: Ports) -> Verdict {
    match ports {
        Ports::Here => round_verdict(s, Some(latency), ctx),
        Ports::Read(p) => round_verdict_with(s, Some(latency), ctx, p),
    }
}

/// The verdict of a load that is a step of its own (`throng load`): its
/// round's checks, and whether an open model's schedule was kept.
pub fn load(s: &Summary, latency: &Histogram<u64>, ctx: &RoundContext, ports: Ports) -> Verdict {
    let mut v = round(s, latency, ctx, ports);
    if let Some(why) = throng_trust::verdict::schedule_not_kept(s) {
        v.push(ReasonCode::Saturated, why);
    }
    v
}

/// The context of a load against a server throng did not start: nothing
/// is known of its process or its cores.
pub fn outside(client_threads: u64, close_mode: bool) -> RoundContext {
    RoundContext {
        server: None,
        server_cores: None,
        client_threads: client_threads as u32,
        shared_cores: false,
        close_mode,
        links: Vec::new(),
    }
}

/// The context of a load against a server of this machine that throng
/// did not start but found listening on the target's port: its usage over
/// the measured window is known, as the lab knows its own servers'.
pub fn local(client_threads: u64, close_mode: bool, server: &LocalServer) -> RoundContext {
    RoundContext {
        server: Some(server.usage.clone()),
        server_cores: server.cores,
        shared_cores: server.shared_cores,
        ..outside(client_threads, close_mode)
    }
}

/// A load run on this machine against a server outside the lab, as
/// `throng load` prints and stores it: its summary and that summary's
/// verdict.
pub fn judged(r: &LoadResult, close_mode: bool) -> (Summary, Verdict) {
    judged_seeing(r, close_mode, None)
}

/// [`judged`], with the server found on this machine when there was one:
/// its usage goes into the summary, with its CPU per response, and into
/// the verdict's context.
pub fn judged_seeing(
    r: &LoadResult,
    close_mode: bool,
    server: Option<LocalServer>,
) -> (Summary, Verdict) {
    let mut s = crate::record::summarize(r);
    s.local_server = server.map(|mut l| {
        let cpu_s = l.usage.cpu_user_s + l.usage.cpu_sys_s;
        l.cpu_us_per_request = (s.completed > 0).then(|| cpu_s * 1e6 / s.completed as f64);
        l
    });
    let ctx = match &s.local_server {
        Some(l) => local(s.threads, close_mode, l),
        None => outside(s.threads, close_mode),
    };
    let v = load(&s, &r.latency, &ctx, Ports::Here);
    (s, v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::ServerUsage;

    /// One keep-alive round of 2 s on one thread, its client half idle.
    fn summary() -> Summary {
        let mut s = Summary {
            duration_s: 2.0,
            threads: 1,
            keep_alive: true,
            completed: 100_000,
            sent: 100_000,
            ..Summary::default()
        };
        s.client_cpu_s.user = 0.5;
        s.connections.requested = 4;
        s.connections.established = 4;
        s
    }

    fn server(runqueue_s: f64, others_cpu_s: f64) -> LocalServer {
        LocalServer {
            name: "nginx".into(),
            pids: vec![10, 11],
            cores: Some(1),
            shared_cores: false,
            cpu_us_per_request: None,
            usage: ServerUsage {
                cpu_user_s: 0.4,
                cpu_sys_s: 0.6,
                wall_s: 2.0,
                runqueue_s,
                others_cpu_s,
                ..ServerUsage::default()
            },
        }
    }

    fn starved(ctx: &RoundContext) -> bool {
        let h = Histogram::<u64>::new(3).unwrap();
        load(&summary(), &h, ctx, Ports::Here).has(ReasonCode::ServerStarved)
    }

    #[test]
    fn a_local_server_kept_off_its_core_is_judged_starved() {
        // Half its core to a neighbour: 1 s waited while others ran 1 s.
        let half = server(1.0, 1.0);
        let ctx = local(1, false, &half);
        assert_eq!(
            (ctx.server.as_ref(), ctx.server_cores),
            (Some(&half.usage), Some(1))
        );
        assert!(starved(&ctx));
        // Its own queueing, or a busy core it never waited for, is not.
        assert!(!starved(&local(1, false, &server(1.0, 0.0))));
        assert!(!starved(&local(1, false, &server(0.05, 1.0))));
        // Nothing known of the server: never judged.
        assert!(!starved(&outside(1, false)));
    }

    #[test]
    fn a_local_server_on_the_loads_own_cpus_is_said_to_share_them() {
        let h = Histogram::<u64>::new(3).unwrap();
        let apart = server(0.0, 0.0);
        let v = load(&summary(), &h, &local(1, false, &apart), Ports::Here);
        assert!(!v.has(ReasonCode::SharedCores), "{v:?}");
        let shared = LocalServer {
            shared_cores: true,
            ..apart
        };
        let v = load(&summary(), &h, &local(1, false, &shared), Ports::Here);
        assert!(v.has(ReasonCode::SharedCores), "{v:?}");
        assert!(!v.is_valid());
    }
}
