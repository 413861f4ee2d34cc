//! Whether a step offered a rate kept up with it: the rule that ends a
//! rate sweep for a server, kept apart from the round rules it builds on.

use throng_model::{StepRecord, Summary};

use crate::denied::server_cpu_denied_s;

/// In the open model, more than 1% of sends later than 1 ms after their
/// schedule means the schedule was not kept. That alone says nothing of
/// who held it up: a connection waiting for a stalled server sends late just
/// as a starved client does. So late sends are named only as what a busy or
/// starved client caused, never as the cause.
pub const LATE_SEND_SHARE: f64 = 0.01;
/// Fewest unexplained late sends that can say a schedule was not kept. A
/// short round at a low rate sends a few hundred requests, of which 1% is
/// two or three: one scheduler hiccup on a shared machine (a neighbour's
/// burst the run-queue figure does not see) makes that many, while a
/// server that cannot keep up makes every send after its first stall late.
pub const LATE_SEND_MIN: f64 = 10.0;
/// Share of an offered rate a server must complete to have kept up with
/// it. An open-model round ends with the requests of its last moments still
/// in flight (about a latency's worth of sends, well under 1% at rates a
/// server keeps up with), so a server that kept up completes nearly all it
/// was offered; below 95% its queue was growing.
pub const KEEP_UP_SHARE: f64 = 0.95;

/// Whether a step offered a rate did not keep up with it: over its rounds
/// it completed less than [`KEEP_UP_SHARE`] of the rate, or more than
/// [`LATE_SEND_SHARE`] of its sends left more than 1 ms late beyond those
/// its client's own wait for a CPU explains. `Some` says by how much, as
/// the message of a `saturated` reason; `None` for a step that kept up,
/// that offered no rate or that measured no round.
///
/// A client thread waiting `w` seconds for a CPU holds back the sends of
/// its share of the connections for that long: about `w × rate / threads`
/// of them. Those are the client's lateness, not the server's, as for
/// `client_bound` (late sends alone never say who held the schedule up);
/// on a machine shared with other work they alone pass 1% of a short
/// round's sends.
///
/// Likewise a server denied `d` seconds of CPU on its `cores` (the bound
/// `server_starved` reports: a hypervisor's steal, others on its cores)
/// stood still for about `d / cores`, and the sends that fell due meanwhile
/// found their connections still waiting on it: about `d × rate / cores`.
/// Those are the machine's doing, which `server_starved` names; a server
/// past its capacity makes every later send late, far more than that.
pub fn saturation(step: &StepRecord) -> Option<String> {
    let rate = step.rate?;
    let cores = step.cores.max(1) as f64;
    let rounds: Vec<(&Summary, f64)> = step
        .rounds
        .iter()
        .map(|r| (&r.summary, server_cpu_denied_s(&r.server) / cores))
        .collect();
    not_kept(rate, &rounds).map(|why| {
        format!(
            "the server did not keep up with {rate} req/s: {why}; latency here is queueing \
             behind the schedule, and higher rates were not offered"
        )
    })
}

/// [`saturation`] for one `throng load --rate` run: the same rules over its
/// one round. A run that did not keep up measured its own length in its
/// latency, and may have left due requests unsent, whose latency is in no
/// figure; its numbers describe no steady state of the server.
pub fn schedule_not_kept(s: &Summary) -> Option<String> {
    let rate = s.rate.as_ref()?.target;
    // Against a server outside the lab its CPU is not known.
    not_kept(rate, &[(s, 0.0)]).map(|why| {
        format!(
            "the schedule of {rate} req/s was not kept: {why}; the latency measures how long \
             the run lasted as much as the server"
        )
    })
}

/// Why rounds offered `rate` did not keep up with it, joined; `None` when
/// they did or measured nothing. Each round comes with the seconds its
/// server stood still for want of a CPU (0 when unknown).
fn not_kept(rate: f64, rounds: &[(&Summary, f64)]) -> Option<String> {
    let seconds: f64 = rounds.iter().map(|(r, _)| r.duration_s).sum();
    if rounds.is_empty() || seconds <= 0.0 {
        return None;
    }
    let completed: u64 = rounds.iter().map(|(r, _)| r.completed).sum();
    let sent: u64 = rounds.iter().map(|(r, _)| r.sent).sum();
    let rate_reports = || rounds.iter().filter_map(|(r, _)| r.rate.as_ref());
    let late: u64 = rate_reports().map(|r| r.late_sends).sum();
    let unsent: u64 = rate_reports().map(|r| r.unsent).sum();
    let client_held: f64 = rounds
        .iter()
        .map(|(r, _)| rate * r.client_cpu_s.runqueue / r.threads.max(1) as f64)
        .sum();
    let server_held: f64 = rounds.iter().map(|(_, stood)| rate * stood).sum();
    let unexplained = (late as f64 - client_held - server_held).max(0.0);
    let achieved = completed as f64 / seconds;
    let late_share = if sent > 0 {
        unexplained / sent as f64
    } else {
        0.0
    };
    let mut why = Vec::new();
    if achieved < KEEP_UP_SHARE * rate {
        why.push(format!(
            "it completed {achieved:.0} req/s of the {rate} offered ({:.1}%, under {:.0}%)",
            achieved * 100.0 / rate,
            KEEP_UP_SHARE * 100.0
        ));
    }
    if late_share > LATE_SEND_SHARE && unexplained >= LATE_SEND_MIN {
        let client = (client_held >= 0.5)
            .then(|| format!("the {client_held:.0} its client's wait for a CPU"));
        let server = (server_held >= 0.5)
            .then(|| format!("the {server_held:.0} the CPU its server was denied"));
        let explained = match (client, server) {
            (Some(c), Some(s)) => Some(format!("{c} and {s} explain")),
            (Some(x), None) | (None, Some(x)) => Some(format!("{x} explains")),
            (None, None) => None,
        };
        why.push(if let Some(explained) = explained {
            format!(
                "{late} of {sent} sends left more than 1 ms late, {unexplained:.0} ({:.1}%) \
                 beyond {explained}",
                late_share * 100.0
            )
        } else {
            format!(
                "{late} of {sent} sends ({:.1}%) left more than 1 ms late",
                late_share * 100.0
            )
        });
    }
    // Requests that fell due while every connection still waited for an
    // answer were never sent: their latency is in no figure, which
    // flatters it however few the late sends.
    let due = sent + unsent;
    if unsent as f64 > LATE_SEND_SHARE * due as f64 && unsent as f64 >= LATE_SEND_MIN {
        why.push(format!(
            "{unsent} of {due} due requests ({:.1}%) were never sent, every connection \
             still waiting for an answer, and their latency is in no figure",
            unsent as f64 * 100.0 / due as f64
        ));
    }
    (!why.is_empty()).then(|| why.join(", and "))
}
