//! `link_capacity`: the rate of the path between client and server hosts
//! as the study states it, and the paths a run knows, which the
//! `link_bound` verdict judges a round's bytes per second against.

use anyhow::bail;
use throng_model::{HostRecord, HostRole};
use throng_trust::path::{LinkCapacity, LinkSource};

/// The fastest link a study may state: beyond 10 Tbit/s is a typo.
const MAX_BITS: f64 = 1e13;

/// `"1Gbit"`, `"2.5 Gbit/s"`, `"100Mbit"`: a rate in bits per second, as
/// links are sold and as /sys gives them. Bytes are refused rather than
/// guessed at, since a `B` for a `b` is a factor of 8.
pub fn parse_link_capacity(text: &str) -> anyhow::Result<u64> {
    let refuse = || {
        anyhow::anyhow!(
            "link_capacity {text:?}: give the path's rate in bits per second, such as \"1Gbit\", \
             \"2.5Gbit\" or \"100Mbit\""
        )
    };
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let t = t.strip_suffix("bit").ok_or_else(refuse)?;
    let (number, scale) = match t.char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        Some((i, 'G')) => (&t[..i], 1e9),
        Some((i, 'T')) => (&t[..i], 1e12),
        _ => return Err(refuse()),
    };
    let number = number.trim();
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(refuse());
    }
    let v: f64 = number.parse().map_err(|_| refuse())?;
    let bits = v * scale;
    if bits < 1e3 {
        bail!("link_capacity {text:?}: a path carries at least 1kbit");
    }
    if bits > MAX_BITS {
        bail!("link_capacity {text:?}: above 10Tbit, which no path carries");
    }
    Ok(bits.round() as u64)
}

/// The study's `link_capacity`, when it states one.
pub fn stated(text: Option<&str>) -> anyhow::Result<Option<u64>> {
    text.map(parse_link_capacity).transpose()
}

/// The paths of a run: the one the study states, judged on the whole
/// load, and each client host's link where its /sys shows the speed of
/// the interface its route to the server leaves by. A path on one
/// machine's loopback has no link to judge.
pub fn path_links(stated: Option<u64>, hosts: &[HostRecord]) -> Vec<LinkCapacity> {
    let stated = stated.map(|bits_per_s| LinkCapacity {
        bits_per_s,
        source: LinkSource::Stated,
        host: None,
    });
    let shown = hosts
        .iter()
        .filter(|h| h.role == HostRole::Client && !h.loopback)
        .filter_map(|h| {
            let interface = h.interface.as_deref()?;
            let mbps = h.link_mbps.filter(|m| *m > 0)?;
            Some(LinkCapacity::of_interface(
                Some(h.host.clone()),
                interface,
                mbps,
            ))
        });
    stated.into_iter().chain(shown).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_in_bits() {
        assert_eq!(parse_link_capacity("1Gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_link_capacity("2.5 Gbit/s").unwrap(), 2_500_000_000);
        assert_eq!(parse_link_capacity("100Mbit").unwrap(), 100_000_000);
        assert_eq!(parse_link_capacity("10Gbit/s").unwrap(), 10_000_000_000);
        assert_eq!(parse_link_capacity("640kbit").unwrap(), 640_000);
    }

    #[test]
    fn anything_else_is_one_line() {
        let no = |t: &str| parse_link_capacity(t).unwrap_err().to_string();
        let words = "give the path's rate in bits per second, such as \"1Gbit\", \"2.5Gbit\" or \
                     \"100Mbit\"";
        assert_eq!(no("1GB"), format!("link_capacity \"1GB\": {words}"));
        assert_eq!(no("1G"), format!("link_capacity \"1G\": {words}"));
        assert_eq!(no("fast"), format!("link_capacity \"fast\": {words}"));
        assert_eq!(no("-1Gbit"), format!("link_capacity \"-1Gbit\": {words}"));
        assert_eq!(no("Gbit"), format!("link_capacity \"Gbit\": {words}"));
        assert_eq!(
            no("0Gbit"),
            "link_capacity \"0Gbit\": a path carries at least 1kbit"
        );
        assert_eq!(
            no("100Tbit"),
            "link_capacity \"100Tbit\": above 10Tbit, which no path carries"
        );
    }

    #[test]
    fn a_study_states_it_at_its_top_level() {
        let study = |extra: &str| {
            crate::study::Study::parse(
                &format!(
                    "name = \"l\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
                     concurrency = [10]\n{extra}"
                ),
                &throng_servers::Recipes::builtin(),
            )
        };
        assert_eq!(
            study("link_capacity = \"1Gbit\"\n").unwrap().link_capacity,
            Some(1_000_000_000)
        );
        assert_eq!(study("").unwrap().link_capacity, None);
        assert_eq!(
            study("link_capacity = \"125MB\"\n")
                .unwrap_err()
                .to_string(),
            "link_capacity \"125MB\": give the path's rate in bits per second, such as \
             \"1Gbit\", \"2.5Gbit\" or \"100Mbit\""
        );
    }

    #[test]
    fn each_client_host_with_a_link_speed_is_a_path() {
        let host = |name: &str, role, mbps: Option<u64>, loopback| HostRecord {
            host: name.into(),
            role,
            interface: Some("eth0".into()),
            link_mbps: mbps,
            loopback,
            ..HostRecord::default()
        };
        let hosts = [
            host("ssh://s", HostRole::Server, Some(1000), false),
            host("ssh://a", HostRole::Client, Some(1000), false),
            host("ssh://b", HostRole::Client, None, false),
            host("ssh://c", HostRole::Client, Some(10000), true),
        ];
        let links = path_links(Some(2_000_000_000), &hosts);
        assert_eq!(
            links,
            vec![
                LinkCapacity {
                    bits_per_s: 2_000_000_000,
                    source: LinkSource::Stated,
                    host: None
                },
                LinkCapacity {
                    bits_per_s: 1_000_000_000,
                    source: LinkSource::Sys {
                        interface: "eth0".into()
                    },
                    host: Some("ssh://a".into())
                },
            ]
        );
        assert_eq!(path_links(None, &[]), vec![]);
    }
}
