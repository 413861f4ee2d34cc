//! Parity: the settings each server ran with that change results, side by
//! side, and what a difference in each is likely to cost. The comment
//! sections under published benchmarks keep asking "was sendfile on for
//! both?", "was the access log off?"; the answer belongs in the article.
//!
//! Lines here are plain text; each format escapes them whole, since values
//! and server names come from recipes and the study.

use throng_model::{ParityEntry, RunData, Setting};

/// What a difference in a setting is likely to do to the figures.
pub fn effect(s: Setting) -> &'static str {
    match s {
        Setting::AccessLog => "a server that logs writes a log line per request",
        Setting::Sendfile => {
            "a server without it copies the file through user space on every response"
        }
        Setting::OpenFileCache => {
            "a server without it opens and stats the file on every request (see syscalls per \
             request)"
        }
        Setting::KeepAliveTimeout => {
            "a shorter timeout closes idle connections sooner, so a client that pauses reconnects"
        }
        Setting::KeepAliveRequests => {
            "a server with a limit closes connections after that many requests, so the client \
             reconnects"
        }
        Setting::Workers => {
            "more workers than cores queue behind each other; fewer leave cores idle"
        }
        Setting::Pinning => {
            "an unpinned server can be moved between cores, and leaves its caches behind when it is"
        }
        Setting::Gzip => {
            "a server that compresses spends CPU on every compressible response and sends fewer \
             bytes"
        }
        Setting::Etag => {
            "an ETag adds a header to every response, and some servers stat the file to compute it"
        }
        Setting::LastModified => {
            "a Last-Modified header adds bytes to every response and needs the file's \
             modification time"
        }
        Setting::TcpNodelay => {
            "without it a small response can wait for the client's delayed ACK (Nagle's \
             algorithm)"
        }
        Setting::TcpNopush => {
            "with it headers and body leave in full packets: fewer, larger segments"
        }
        Setting::ListenBacklog => {
            "a shorter queue of pending connections refuses or drops connects in a burst, which \
             shows as errors at high concurrency"
        }
        Setting::MaxConnections => {
            "a lower limit refuses or queues connections beyond it, which shows as errors or \
             latency at high concurrency"
        }
        Setting::Protocol => {
            "a different protocol is a different workload: framing and header handling change \
             the cost of every request, and a server that did not keep its connections alive \
             paid a TCP handshake for each answer"
        }
        Setting::Cipher => "a different cipher changes the CPU spent encrypting every byte",
        Setting::CongestionControl => {
            "a different congestion control grows and cuts each connection's sending window \
             its own way, and over QUIC it runs in the server's process, on its CPU"
        }
    }
}

/// One setting across the run's servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ParityRow<'a> {
    pub setting: Setting,
    /// One per server, in the run's order; `None` where the server's
    /// recipe does not say.
    pub entries: Vec<Option<&'a ParityEntry>>,
    /// Two servers that say ran with different values. A server that does
    /// not say is unknown, not different.
    pub differs: bool,
}

/// The settings any server has, in [`Setting::ALL`] order.
pub fn rows(run: &RunData) -> Vec<ParityRow<'_>> {
    let mut out = Vec::new();
    for setting in Setting::ALL {
        let entries: Vec<Option<&ParityEntry>> = run
            .servers
            .iter()
            .map(|s| s.parity.iter().find(|p| p.setting == setting))
            .collect();
        if entries.iter().all(Option::is_none) {
            continue;
        }
        let mut values = run
            .servers
            .iter()
            .zip(&entries)
            .filter_map(|(s, e)| e.and_then(|e| effective(run, &s.parity, e)));
        let differs = values
            .next()
            .is_some_and(|first| values.any(|v| v != first));
        out.push(ParityRow {
            setting,
            entries,
            differs,
        });
    }
    out
}

/// A value as compared between servers: each server's config spells the
/// same setting its own way ("60s" and "60", "off" and "OFF", etag "on"
/// and "enable"), and those are the same, not a difference to warn of.
fn canonical(value: &str) -> String {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "on" | "enable" | "enabled" | "true" | "yes" => return "on".into(),
        "off" | "disable" | "disabled" | "false" | "no" => return "off".into(),
        _ => {}
    }
    // A duration, in seconds: "60", "60s", "60 sec", "1m", "500ms".
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => Some(1.0),
        "ms" => Some(0.001),
        "m" | "min" | "mins" | "minute" | "minutes" => Some(60.0),
        "h" | "hour" | "hours" => Some(3600.0),
        _ => None,
    };
    match (num.parse::<f64>(), scale) {
        (Ok(n), Some(k)) if !num.is_empty() => format!("{}", n * k),
        _ => v,
    }
}

/// What a server's value of a setting does, as compared with the others':
/// its spelling folded ([`canonical`]), and each server's way of saying
/// the same thing brought to one word. `None` for a value no server can be
/// held to ("unknown": a server the lab did not configure, whose recipe
/// says nothing of it), which is unknown, not different.
fn effective(run: &RunData, own: &[ParityEntry], e: &ParityEntry) -> Option<String> {
    let v = canonical(&e.value);
    if v == "unknown" {
        return None;
    }
    Some(match e.setting {
        // Apache names what the tag is made of ("MTime Size"), lighttpd
        // says "enable", h2o "ON": all send one.
        Setting::Etag if v != "off" && v != "none" => "on".into(),
        Setting::Etag => "off".into(),
        // lighttpd names its network backend.
        Setting::Sendfile if v == "sendfile" || v == "linux-sendfile" => "on".into(),
        Setting::Sendfile if v == "writev" || v == "write" => "off".into(),
        // Apache corks only what it sends with sendfile.
        Setting::TcpNopush if v == "with sendfile" => own
            .iter()
            .find(|p| p.setting == Setting::Sendfile)
            .and_then(|p| effective(run, own, p))?,
        // The kernel caps every listen backlog at net.core.somaxconn, which
        // is what Go (Caddy) asks for and h2o's 65535 becomes. The machine's
        // value is known only for a run on one machine.
        Setting::ListenBacklog => {
            let somaxconn = run
                .run
                .environment
                .hosts
                .is_empty()
                .then(|| run.run.environment.sysctls.get("net.core.somaxconn"))
                .flatten()
                .and_then(|s| s.trim().parse::<u64>().ok());
            let asked = if v == "net.core.somaxconn" {
                Some(u64::MAX)
            } else {
                v.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
            };
            match (asked, somaxconn) {
                (Some(a), Some(m)) => a.min(m).to_string(),
                _ => v,
            }
        }
        _ => v,
    })
}

/// One line per setting that differs, with each server's value and the
/// likely effect: "sendfile (nginx on, apache2-event off): a server
/// without it copies the file through user space on every response".
pub fn notes(run: &RunData) -> Vec<String> {
    rows(run)
        .iter()
        .filter(|r| r.differs)
        .map(|r| {
            let values: Vec<String> = run
                .servers
                .iter()
                .zip(&r.entries)
                .filter_map(|(s, e)| e.map(|e| format!("{} {}", s.name, e.value)))
                .collect();
            format!(
                "{} ({}): {}",
                r.setting.name(),
                values.join(", "),
                effect(r.setting)
            )
        })
        .collect()
}

/// What the parity table's marks mean, under it.
pub const LEGEND: &str = "Each value says where it comes from: config (a line of the config \
    throng rendered), default (the server's documented default, not in the config), lab (set by \
    throng: workers, pinning, limits) or live (seen on the running server). Settings whose values \
    differ between servers are marked; what the difference is likely to do follows.";

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{ServerRecord, Source};

    fn server(name: &str, parity: &[(Setting, &str)]) -> ServerRecord {
        ServerRecord {
            name: name.into(),
            parity: parity
                .iter()
                .map(|(setting, value)| ParityEntry {
                    setting: *setting,
                    value: value.to_string(),
                    source: Source::Config,
                    detail: String::new(),
                })
                .collect(),
            ..ServerRecord::default()
        }
    }

    #[test]
    fn the_same_value_spelt_two_ways_is_no_difference() {
        let run = RunData {
            servers: vec![
                server(
                    "a",
                    &[
                        (Setting::KeepAliveTimeout, "60s"),
                        (Setting::Gzip, "off"),
                        (Setting::Etag, "on"),
                        (Setting::KeepAliveRequests, "100"),
                    ],
                ),
                server(
                    "b",
                    &[
                        (Setting::KeepAliveTimeout, "60"),
                        (Setting::Gzip, "OFF"),
                        (Setting::Etag, "enable"),
                        (Setting::KeepAliveRequests, "1000"),
                    ],
                ),
                server(
                    "c",
                    &[(Setting::KeepAliveTimeout, "1m"), (Setting::Etag, "ON")],
                ),
            ],
            ..RunData::default()
        };
        let differ: Vec<Setting> = rows(&run)
            .iter()
            .filter(|r| r.differs)
            .map(|r| r.setting)
            .collect();
        assert_eq!(differ, [Setting::KeepAliveRequests]);
        assert_eq!(canonical("5s"), canonical("5000ms"));
        assert_ne!(canonical("5s"), canonical("5m"));
        assert_eq!(canonical("unlimited"), "unlimited");
    }

    #[test]
    fn each_servers_way_of_saying_the_same_is_no_difference() {
        let mut run = RunData {
            servers: vec![
                server(
                    "nginx",
                    &[
                        (Setting::Etag, "on"),
                        (Setting::Sendfile, "on"),
                        (Setting::TcpNopush, "off"),
                        (Setting::ListenBacklog, "4096"),
                        (Setting::Gzip, "off"),
                    ],
                ),
                server(
                    "apache2-event",
                    &[
                        (Setting::Etag, "MTime Size"),
                        (Setting::Sendfile, "Off"),
                        (Setting::TcpNopush, "with sendfile"),
                        (Setting::ListenBacklog, "4096"),
                    ],
                ),
                server(
                    "lighttpd",
                    &[(Setting::Etag, "enable"), (Setting::Sendfile, "sendfile")],
                ),
                server("caddy", &[(Setting::ListenBacklog, "net.core.somaxconn")]),
                server(
                    "h2o",
                    &[
                        (Setting::Etag, "ON"),
                        (
                            Setting::ListenBacklog,
                            "65535 (capped by net.core.somaxconn)",
                        ),
                        (Setting::Gzip, "unknown"),
                    ],
                ),
            ],
            ..RunData::default()
        };
        run.run
            .environment
            .sysctls
            .insert("net.core.somaxconn".into(), "4096".into());
        let differ = |run: &RunData| -> Vec<Setting> {
            rows(run)
                .iter()
                .filter(|r| r.differs)
                .map(|r| r.setting)
                .collect()
        };
        // sendfile differs (on, off); tcp_nopush does not: Apache corks
        // only with sendfile, which is off. A server whose gzip is unknown
        // is no difference; every backlog is the kernel's 4096.
        assert_eq!(differ(&run), [Setting::Sendfile]);
        // Apache's sendfile on, as nginx's and lighttpd's backend: its
        // corking is on, nginx's off.
        run.servers[1].parity[1].value = "On".into();
        assert_eq!(differ(&run), [Setting::TcpNopush]);
        // A somaxconn of 1024 caps 4096, 65535 and Go's alike; unknown
        // (a run on several hosts), the spellings differ.
        run.run
            .environment
            .sysctls
            .insert("net.core.somaxconn".into(), "1024".into());
        assert_eq!(differ(&run), [Setting::TcpNopush]);
        run.run.environment.hosts.push(Default::default());
        assert_eq!(differ(&run), [Setting::TcpNopush, Setting::ListenBacklog]);
        // No ETag at all is a difference.
        run.servers[1].parity[0].value = "None".into();
        assert_eq!(
            differ(&run),
            [Setting::Etag, Setting::TcpNopush, Setting::ListenBacklog]
        );
    }

    #[test]
    fn only_known_values_that_differ_make_a_note() {
        let run = RunData {
            servers: vec![
                server("a", &[(Setting::Workers, "1"), (Setting::Sendfile, "on")]),
                server("b", &[(Setting::Sendfile, "off"), (Setting::Workers, "1")]),
                server("c", &[(Setting::Gzip, "on")]),
            ],
            ..RunData::default()
        };
        let rows = rows(&run);
        let settings: Vec<(Setting, bool)> = rows.iter().map(|r| (r.setting, r.differs)).collect();
        assert_eq!(
            settings,
            [
                (Setting::Sendfile, true),
                (Setting::Workers, false),
                (Setting::Gzip, false)
            ]
        );
        assert_eq!(
            notes(&run),
            ["sendfile (a on, b off): a server without it copies the file through user space on \
              every response"]
        );
    }
}
