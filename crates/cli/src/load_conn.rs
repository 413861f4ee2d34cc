//! `throng load`'s options for how connections are opened and closed:
//! the local addresses they come from, and closing with a reset.

use std::net::{IpAddr, Ipv4Addr};

use anyhow::{bail, Result};
use throng_engine::{EngineError, LoadSpec, SpecError};

/// More source addresses than any load opens connections.
const MOST_SOURCES: u32 = 65_536;

#[derive(clap::Args, Debug, Default)]
pub struct ConnArgs {
    /// Open connections from these local addresses, in turn
    /// (comma-separated; IPv4 ranges as 127.0.0.1-127.0.0.8), each with
    /// the kernel's choice of port (IP_BIND_ADDRESS_NO_PORT): a load of
    /// new connections then goes past the ~28,000 ports of one address.
    #[arg(long, value_name = "ADDRS")]
    pub source: Option<String>,
    /// Close connections with a reset (SO_LINGER 0) instead of a FIN: no
    /// TIME_WAIT on either end, so a --close run does not run out of
    /// ports; the server sees every client abort, and the output says so.
    #[arg(long)]
    pub linger0: bool,
}

pub fn apply(a: &ConnArgs, spec: &mut LoadSpec) -> Result<()> {
    if let Some(list) = &a.source {
        spec.sources = parse_sources(list)?;
    }
    spec.linger_zero = a.linger0;
    Ok(())
}

/// "127.0.0.1-127.0.0.4,::1" → each address, ranges inclusive.
pub fn parse_sources(list: &str) -> Result<Vec<IpAddr>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let ip = |s: &str| -> Result<IpAddr> {
            s.trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("--source: `{s}` is not an IP address"))
        };
        match part.split_once('-') {
            None => out.push(ip(part)?),
            Some((a, b)) => {
                let (IpAddr::V4(a), IpAddr::V4(b)) = (ip(a)?, ip(b)?) else {
                    bail!("--source: `{part}`: ranges are of IPv4 addresses; list IPv6 ones");
                };
                let (a, b) = (u32::from(a), u32::from(b));
                if b < a {
                    bail!("--source: `{part}`: the range ends before it starts");
                }
                if b - a >= MOST_SOURCES {
                    bail!("--source: `{part}`: more than {MOST_SOURCES} addresses");
                }
                out.extend((a..=b).map(|n| IpAddr::V4(Ipv4Addr::from(n))));
            }
        }
        if out.len() > MOST_SOURCES as usize {
            bail!("--source: more than {MOST_SOURCES} addresses");
        }
    }
    // The kernel binds these, and the connection then leaves from another
    // address than the one the summary names.
    if let Some(bad) = out.iter().find(|ip| {
        ip.is_unspecified()
            || ip.is_multicast()
            || matches!(ip, IpAddr::V4(v4) if v4.is_broadcast())
    }) {
        bail!("--source {bad}: not an address a connection can come from (unspecified, multicast or broadcast)");
    }
    if out.is_empty() {
        bail!("--source: give at least one address");
    }
    Ok(out)
}

/// A spec the engine refused over these options, in their words.
pub fn spec_error(e: &SpecError) -> Option<String> {
    match e {
        SpecError::SourceFamily { from, target } => Some(format!(
            "--source {from} cannot reach {target}: give addresses of the URL's family"
        )),
        _ => None,
    }
}

/// Why the run could not start over these options, in their words.
pub fn engine_error(e: &EngineError) -> Option<String> {
    match e {
        EngineError::Source { addr, source } => {
            Some(if source.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
                format!("--source {addr}: no interface of this machine has this address")
            } else {
                format!("--source {addr}: cannot bind it: {source}")
            })
        }
        _ => None,
    }
}

/// What the headline adds: where connections come from, and how they end.
pub fn headline(spec: &LoadSpec) -> String {
    let mut o = String::new();
    match spec.sources.len() {
        0 => {}
        1 => o.push_str(&format!(", from {}", spec.sources[0])),
        n => o.push_str(&format!(", from {n} source addresses in turn")),
    }
    if spec.linger_zero {
        o.push_str(", closed with a reset (SO_LINGER 0: no TIME_WAIT, the server sees aborts)");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        for bad in ["0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "ff02::1"] {
            assert!(
                parse_sources(bad)
                    .unwrap_err()
                    .to_string()
                    .starts_with(&format!("--source {bad}: not an address")),
                "{bad}"
            );
        }
        let got = parse_sources("127.0.0.1-127.0.0.3, ::1").unwrap();
        let want: Vec<IpAddr> = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "::1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(got, want);
        for (bad, says) in [
            ("127.0.0.3-127.0.0.1", "ends before it starts"),
            ("10.0.0.0-10.1.0.0", "more than 65536"),
            ("::1-::2", "ranges are of IPv4"),
            ("localhost", "not an IP address"),
            (",", "at least one"),
        ] {
            let e = parse_sources(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
