//! Protocols as a dimension: a study with `protocols = [...]` runs each
//! server once per protocol, as `nginx`, `nginx-h2`, `nginx-https1`; the
//! lab compares every pair, and this picks out the pairs that are one
//! server (one recipe, one profile) over two protocols, so a reader sees
//! "h2 against https1 on nginx" without hunting for it among pairs of
//! different servers.

use throng_model::{RunData, ServerRecord, Setting};

use crate::ratios;
use crate::table::{Cell, Column, Table};

/// How the lab spoke to `s`, as its parity row says; "HTTP/1.1
/// cleartext" for runs stored before the row said anything else.
fn protocol(s: &ServerRecord) -> &str {
    s.parity
        .iter()
        .find(|p| p.setting == Setting::Protocol)
        .map_or("HTTP/1.1 cleartext", |p| p.value.as_str())
}

/// The pooled comparisons between two protocols of one server; `None`
/// when the run measured no server over more than one.
pub fn table(run: &RunData) -> Option<Table> {
    let server = |name: &str| run.servers.iter().find(|s| s.name == name);
    let mut t = Table::new(vec![
        Column::left("Server"),
        Column::left("A"),
        Column::left("B"),
        Column::left("Workload"),
        Column::right("Cores"),
        Column::right("B/A req/s"),
        Column::right("95% CI"),
        Column::right("Pairs"),
        Column::left("Decision"),
    ])
    .subsection("Protocols compared on each server")
    .wide();
    let mut any = false;
    for c in ratios::sorted(run)
        .into_iter()
        .filter(|c| c.concurrency.is_none())
    {
        let (Some(a), Some(b)) = (server(&c.a), server(&c.b)) else {
            continue;
        };
        if a.recipe != b.recipe || a.profile != b.profile || protocol(a) == protocol(b) {
            continue;
        }
        any = true;
        let mut row = vec![
            Cell::text(&a.recipe),
            Cell::text(protocol(a)).aside(format!("({})", a.name)),
            Cell::text(protocol(b)).aside(format!("({})", b.name)),
        ];
        row.extend(crate::tables::comparison_cells(c));
        t.push(row);
    }
    any.then_some(t)
}

#[cfg(test)]
mod tests {
    use throng_model::{Comparison, Decision, ParityEntry, Source};

    use super::*;

    fn server(name: &str, recipe: &str, proto: Option<&str>) -> ServerRecord {
        ServerRecord {
            name: name.into(),
            recipe: recipe.into(),
            parity: proto
                .map(|p| ParityEntry {
                    setting: Setting::Protocol,
                    value: p.into(),
                    source: Source::Lab,
                    detail: String::new(),
                })
                .into_iter()
                .collect(),
            ..ServerRecord::default()
        }
    }

    fn cmp(a: &str, b: &str, ratio: f64) -> Comparison {
        Comparison {
            a: a.into(),
            b: b.into(),
            workload: "tiny".into(),
            cores: 1,
            concurrency: None,
            rate: None,
            ratio,
            ci_low: ratio - 0.05,
            ci_high: ratio + 0.05,
            pairs: 40,
            decision: Decision::Higher,
            interval: throng_model::IntervalKind::OrderStatistic,
            launch_ratios: Vec::new(),
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        }
    }

    #[test]
    fn only_one_server_over_two_protocols_is_a_row() {
        let run = RunData {
            servers: vec![
                server("nginx", "nginx", None),
                server("nginx-h2", "nginx", Some("HTTP/2 over TLS (ALPN h2)")),
                server("lighttpd", "lighttpd", None),
            ],
            comparisons: vec![
                cmp("nginx", "nginx-h2", 1.4),
                cmp("nginx", "lighttpd", 1.1),
                cmp("nginx-h2", "lighttpd", 0.8),
            ],
            ..RunData::default()
        };
        let t = table(&run).expect("one pair");
        assert_eq!(t.rows.len(), 1);
        let text = format!("{:?}", t.rows[0]);
        assert!(text.contains("HTTP/1.1 cleartext"), "{text}");
        assert!(text.contains("HTTP/2 over TLS (ALPN h2)"), "{text}");
        assert!(text.contains("1.40×"), "{text}");
        let without = RunData {
            comparisons: vec![cmp("nginx", "lighttpd", 1.1)],
            ..run
        };
        assert!(table(&without).is_none());
    }

    #[test]
    fn h3_is_compared_with_h2_and_https1_on_the_same_server() {
        let run = RunData {
            servers: vec![
                server("caddy", "caddy", Some("HTTP/1.1 over TLS")),
                server("caddy-h2", "caddy", Some("HTTP/2 over TLS (ALPN h2)")),
                server("caddy-h3", "caddy", Some("HTTP/3 over QUIC v1 (ALPN h3)")),
                server("nginx-h3", "nginx", Some("HTTP/3 over QUIC v1 (ALPN h3)")),
            ],
            comparisons: vec![
                cmp("caddy", "caddy-h2", 1.2),
                cmp("caddy", "caddy-h3", 0.7),
                cmp("caddy-h2", "caddy-h3", 0.6),
                cmp("caddy-h3", "nginx-h3", 1.5),
            ],
            ..RunData::default()
        };
        let t = table(&run).expect("three pairs");
        let rows: Vec<String> = t.rows.iter().map(|r| format!("{r:?}")).collect();
        assert_eq!(rows.len(), 3, "{rows:?}");
        let h3 = "HTTP/3 over QUIC v1 (ALPN h3)";
        let with_h3: Vec<&String> = rows.iter().filter(|r| r.contains(h3)).collect();
        assert_eq!(with_h3.len(), 2, "{rows:?}");
        assert!(
            with_h3
                .iter()
                .any(|r| r.contains("HTTP/2 over TLS (ALPN h2)")
                    && r.contains("0.60×")
                    && r.contains("0.55")
                    && r.contains("0.65")),
            "{rows:?}"
        );
        assert!(
            with_h3
                .iter()
                .any(|r| r.contains("HTTP/1.1 over TLS") && r.contains("0.70×")),
            "{rows:?}"
        );
        // Two servers over h3 are a comparison of servers, not of protocols.
        assert!(rows.iter().all(|r| !r.contains("nginx")), "{rows:?}");
    }
}
