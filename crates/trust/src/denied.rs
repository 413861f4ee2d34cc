//! CPU a server wanted and did not get: both the `server_starved` rule and
//! the `saturated` one (which discounts the late sends it explains) count
//! it, so it is defined once, apart from both.

use throng_model::ServerUsage;

/// CPU seconds the server wanted and did not get over a round, at most:
/// the smaller of its threads' run-queue wait and the CPU other processes
/// ran on its cores, plus what the hypervisor stole from those cores.
///
/// Neither figure alone is starvation. The run-queue wait also counts a
/// server's own threads queueing behind each other (more busy workers than
/// cores: a whole core's worth of waiting with nobody else there), and
/// others' CPU also counts work that ran while the server had nothing to
/// do. The server was denied CPU only where both hold, so the smaller
/// bounds it.
pub fn server_cpu_denied_s(u: &ServerUsage) -> f64 {
    u.runqueue_s.min(u.others_cpu_s) + u.steal_s
}
