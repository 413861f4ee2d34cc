//! What a diagnostic round shows of a server's settings, whatever its
//! configs say: whether its logs grew, and whether it opens its file for
//! every request; and what the measured rounds show of its protocol:
//! whether it kept the keep-alive connections it was loaded on.

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

/// A server that closed its connections after about every answer, where
/// the load asked for keep-alive, was not spoken to as the others were:
/// each of its answers carried a TCP handshake and its teardown, which
/// the servers that kept their connections paid once per 1,024 answers.
/// Python's `http.server`, answering HTTP/1.0, does so; its row said
/// "HTTP/1.1 cleartext" all the same. A new connection every this many
/// answers or fewer is not keep-alive.
const KEPT_BELOW: f64 = 2.0;

/// The protocol as the measured `rounds` showed it, when the server did
/// not keep its keep-alive connections; `None` when it did, or when the
/// load did not ask it to.
pub fn live_keep_alive(rounds: &[throng_model::RoundRecord], asked: &str) -> Option<ParityEntry> {
    let asked_keep_alive = rounds.iter().all(|r| r.summary.keep_alive);
    let completed: u64 = rounds.iter().map(|r| r.summary.completed).sum();
    let reconnects: u64 = rounds
        .iter()
        .map(|r| r.summary.connections.reconnects)
        .sum();
    if !asked_keep_alive || reconnects == 0 || completed == 0 {
        return None;
    }
    let per_connection = completed as f64 / reconnects as f64;
    (per_connection < KEPT_BELOW).then(|| ParityEntry {
        setting: Setting::Protocol,
        value: format!("{asked}, keep-alive not kept"),
        source: Source::Live,
        detail: format!(
            "the client reconnected {reconnects} times for {completed} answers over the measured \
             rounds: the server closed its connection after every {per_connection:.1} answers"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::RoundRecord;

    fn round(keep_alive: bool, completed: u64, reconnects: u64) -> RoundRecord {
        let mut r = RoundRecord::default();
        r.summary.keep_alive = keep_alive;
        r.summary.completed = completed;
        r.summary.connections.reconnects = reconnects;
        r
    }

    #[test]
    fn a_server_that_closes_after_each_answer_did_not_keep_alive() {
        let e = live_keep_alive(
            &[round(true, 500, 498), round(true, 500, 500)],
            "HTTP/1.1 cleartext",
        )
        .unwrap();
        assert_eq!(e.value, "HTTP/1.1 cleartext, keep-alive not kept");
        assert_eq!(e.source, Source::Live);
        assert_eq!(
            e.detail,
            "the client reconnected 998 times for 1000 answers over the measured rounds: the \
             server closed its connection after every 1.0 answers"
        );
    }

    #[test]
    fn a_request_limit_or_close_mode_is_not_a_server_that_drops_keep_alive() {
        // nginx's keepalive_requests 1024: a reconnect per 1,024 answers.
        assert_eq!(live_keep_alive(&[round(true, 10_240, 10)], "x"), None);
        // The load closed every connection itself.
        assert_eq!(live_keep_alive(&[round(false, 500, 500)], "x"), None);
        assert_eq!(live_keep_alive(&[round(true, 500, 0)], "x"), None);
        assert_eq!(live_keep_alive(&[], "x"), None);
    }
}
