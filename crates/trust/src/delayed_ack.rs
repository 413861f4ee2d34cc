//! The delayed-ACK rule: a spike of responses at the timer's delay, the
//! artefact of Nagle meeting a delayed ACK, told apart from queueing and
//! from a server that is simply that slow to begin its answers.

use hdrhistogram::Histogram;
use throng_model::{ReasonCode, Summary, Verdict};

/// Below this many responses, a share is not a pattern.
pub const MIN_RESPONSES: u64 = 100;

/// Delayed-ACK timers: Linux's minimum (40 ms) and the classic 200 ms (BSD,
/// Windows, Linux's maximum), as µs windows around them. The upper edges are
/// wide because the timer fires on a jiffy: on a HZ=250 kernel a 40 ms
/// delayed ACK is observed at 44–48 ms, on HZ=100 up to 50 ms.
pub const DELAYED_ACK_WINDOWS_US: [(u64, u64); 2] = [(38_000, 52_000), (195_000, 220_000)];
/// Share of responses inside a window that makes it a finding: a few
/// percent is already a visible tail and a systematic, not random, delay.
pub const DELAYED_ACK_SHARE: f64 = 0.05;
/// The window must hold this many times the responses of the bands of twice
/// its width on either side: a spike at the timer, not a broad distribution
/// that happens to cover it.
pub const DELAYED_ACK_SPIKE: f64 = 2.0;
/// When every response sits at the timer (the median is in the window), a
/// timer stall and plain queueing look alike in one run: 10,000 connections
/// on a server doing 40,000 req/s also wait ~250 ms each (Little's law). A
/// timer leaves both sides idle, queueing keeps them busy: above this share
/// of the client's threads (or a saturated server), it is queueing.
pub const DELAYED_ACK_MAX_BUSY: f64 = 0.5;

/// The rule, given how busy the round's client threads were (a share of
/// their time) and whether the server's cores were saturated.
pub(crate) fn delayed_ack(
    v: &mut Verdict,
    h: &Histogram<u64>,
    s: &Summary,
    client_busy: f64,
    server_saturated: bool,
) {
    let total = h.len();
    if total < MIN_RESPONSES {
        return;
    }
    let median = h.value_at_quantile(0.5);
    for (lo, hi) in DELAYED_ACK_WINDOWS_US {
        if (lo..=hi).contains(&median) && (client_busy >= DELAYED_ACK_MAX_BUSY || server_saturated)
        {
            continue;
        }
        let width = hi - lo;
        let inside = h.count_between(lo, hi);
        // Neighbouring bands, each twice the window's width, not touching it.
        let below = h.count_between(lo.saturating_sub(2 * width), lo.saturating_sub(1000));
        let above = h.count_between(hi + 1000, hi + 2 * width);
        let share = inside as f64 / total as f64;
        let before = h.count_between(0, lo.saturating_sub(1)) as f64 / total as f64;
        if share >= DELAYED_ACK_SHARE
            && inside as f64 >= DELAYED_ACK_SPIKE * (below + above) as f64
            && !first_byte_waited_too(s, lo, before + share / 2.0)
        {
            v.push(
                ReasonCode::DelayedAck,
                format!(
                    "{:.1}% of responses ({inside} of {total}) took {}–{} ms, a spike at the \
                     delayed-ACK timer ({} around it): the server likely writes a response \
                     in several small segments with Nagle on; it should set TCP_NODELAY or \
                     send headers and body in one write",
                    share * 100.0,
                    lo / 1000,
                    hi / 1000,
                    below + above
                ),
            );
            return;
        }
    }
}

/// Whether the spike's wait came before the answer began: at most `half`
/// of the first bytes (the share of responses below the window and half
/// of those in it) can have arrived before `lo`, by the first-byte
/// percentiles. The delayed-ACK stall holds back the rest of a response
/// whose first segment left at once: its first byte is early and its last
/// byte late. A server that takes 45 ms to answer has both late, and is
/// slow, not stalled by a timer. Without first-byte figures (runs stored
/// before them), nothing is ruled out.
fn first_byte_waited_too(s: &Summary, lo: u64, half: f64) -> bool {
    let Some(f) = s.first_byte_us.as_ref().filter(|f| f.count > 0) else {
        return false;
    };
    // The lowest percentile at or past the window bounds the share of
    // first bytes that came before it.
    let at_or_past = [
        (0.5, f.p50),
        (0.75, f.p75),
        (0.9, f.p90),
        (0.99, f.p99),
        (0.999, f.p999),
        (0.9999, f.p9999),
    ]
    .into_iter()
    .find(|&(_, v)| v >= lo)
    .map(|(q, _)| q);
    let bound = if f.min >= lo { Some(0.0) } else { at_or_past };
    bound.is_some_and(|q| q <= half + 1e-9)
}
