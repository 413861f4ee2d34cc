//! What a diagnostic round shows of a server's settings, whatever its
//! configs say: whether its logs grew, and whether it opens its file for
//! every request.

use throng_model::{ParityEntry, Setting, Source};

/// What a diagnostic round showed of the settings, whatever the configs
/// say: whether the logs grew, and whether the server opens its file for
/// every request. Nothing when the round could not count.
pub fn live_parity(d: &throng_model::Diagnosis, configured: Option<&str>) -> Vec<ParityEntry> {
    if d.unavailable.is_some() || d.requests == 0 {
        return Vec::new();
    }
    // Only the run directory is watched: a log the config sends elsewhere
    // (/var/log) grows unseen, and "off" replaced a config that said on
    // while the server wrote 135,356 lines there. So growth says "on";
    // no growth confirms "off" only where the config did not say
    // otherwise, and leaves a config's "on" standing.
    let grew = d.log_bytes_per_request >= 1.0;
    let says_on = configured.is_some_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        !matches!(v.as_str(), "off" | "no" | "none" | "disabled" | "unknown")
    });
    let mut out = Vec::new();
    if grew || !says_on {
        out.push(ParityEntry {
            setting: Setting::AccessLog,
            value: if grew { "on" } else { "off" }.to_string(),
            source: Source::Live,
            detail: format!(
                "its logs in the run directory grew {:.1} bytes per request over {} requests",
                d.log_bytes_per_request, d.requests
            ),
        });
    }
    // Syscalls are only counted by name by a tool that names them.
    if !d.syscalls_per_request.is_empty() {
        let opens = d.syscalls_per_request.get("openat").copied().unwrap_or(0.0)
            + d.syscalls_per_request.get("open").copied().unwrap_or(0.0);
        out.push(ParityEntry {
            setting: Setting::OpenFileCache,
            value: if opens >= 0.5 {
                "off".to_string()
            } else {
                "on".to_string()
            },
            source: Source::Live,
            detail: format!("openat {opens:.2} per request"),
        });
    }
    out
}
