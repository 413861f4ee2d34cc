//! A load spread over client hosts, as one summary: the remote crate's
//! `FleetRun` handed to the one conversion of a load's result
//! (`throng_load::record`), which links no other host's code.

use throng_load::record::{summarize_spread, HostLoad};
use throng_model::Summary;
use throng_remote::FleetRun;

/// The merged figures with each host's share beside them, its TCP
/// segments sent again among them.
pub fn summarize_fleet(run: &FleetRun) -> Summary {
    let hosts: Vec<HostLoad> = run
        .hosts
        .iter()
        .map(|h| HostLoad {
            host: h.place.to_string(),
            result: &h.result,
            clock_offset_ms: h.offset.offset_ns as f64 / 1e6,
        })
        .collect();
    let mut s = summarize_spread(&run.merged, &hosts);
    for (share, h) in s.per_host.iter_mut().zip(&run.hosts) {
        share.tcp = h.tcp;
    }
    s
}
