//! What an agent reports of its host and of the path to the server.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::protocol::{HostFacts, PathFacts};

pub fn host_facts(build: &str) -> HostFacts {
    HostFacts {
        arch: std::env::consts::ARCH.to_string(),
        build: build.to_string(),
        environment: throng_trust::snapshot::environment(),
        cpus: throng_engine::affinity::own_cpus(),
    }
}

/// Round trip by TCP connect (one SYN, one SYN-ACK: a round trip without
/// needing raw sockets for ICMP), the route's interface and MTUs.
pub fn path_facts(addr: SocketAddr, samples: u32) -> PathFacts {
    let mut f = PathFacts {
        target: addr.to_string(),
        ..PathFacts::default()
    };
    let mut rtts = Vec::new();
    let mut error = None;
    for _ in 0..samples.clamp(1, 50) {
        let t = Instant::now();
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(s) => {
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
                drop(s);
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    f.samples = rtts.len() as u32;
    if rtts.is_empty() {
        f.error = error.or(Some("no sample".into()));
    } else {
        rtts.sort_by(f64::total_cmp);
        f.rtt_min_us = Some(rtts[0]);
        f.rtt_median_us = Some(rtts[rtts.len() / 2]);
    }
    f.path_mtu = path_mtu(addr);
    f.interface = route_interface(addr);
    if let Some(dev) = &f.interface {
        let sys = |leaf: &str| {
            std::fs::read_to_string(format!("/sys/class/net/{dev}/{leaf}"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
        };
        f.mtu = sys("mtu").and_then(|m| u32::try_from(m).ok());
        // Virtual links report -1 or nothing.
        f.speed_mbps = sys("speed").and_then(|m| u64::try_from(m).ok());
        f.loopback = dev == "lo";
    }
    f
}

/// The kernel's idea of the path MTU, from a connected UDP socket.
fn path_mtu(addr: SocketAddr) -> Option<u32> {
    let bind = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let s = UdpSocket::bind(bind).ok()?;
    s.connect(addr).ok()?;
    let (level, name) = if addr.is_ipv4() {
        (libc::IPPROTO_IP, libc::IP_MTU)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    };
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid socket, and v/len describe an int-sized buffer.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0 && v > 0).then_some(v as u32)
}

/// `ip route get` names the interface a packet to `addr` leaves by.
fn route_interface(addr: SocketAddr) -> Option<String> {
    let out = Command::new("ip")
        .args(["route", "get", &addr.ip().to_string()])
        .output()
        .ok()?;
    parse_route_dev(&String::from_utf8_lossy(&out.stdout))
}

pub fn parse_route_dev(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == "dev" {
            return words.next().map(str::to_string);
        }
    }
    None
}

/// Programs from `names` that are not on the host: looked up in PATH and
/// the sbin directories, where Debian puts its daemons.
pub fn missing_programs(names: &[String]) -> Vec<String> {
    let path = std::env::var("PATH").unwrap_or_default();
    let mut dirs: Vec<String> = path.split(':').map(str::to_string).collect();
    for d in ["/usr/sbin", "/sbin", "/usr/local/sbin"] {
        if !dirs.iter().any(|x| x == d) {
            dirs.push(d.to_string());
        }
    }
    names
        .iter()
        .filter(|n| {
            if n.starts_with('/') {
                return !std::path::Path::new(n.as_str()).exists();
            }
            !dirs
                .iter()
                .any(|d| std::path::Path::new(d).join(n.as_str()).exists())
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_names_its_device() {
        assert_eq!(
            parse_route_dev("198.18.0.20 dev t1a src 198.18.0.11 uid 0 \n    cache "),
            Some("t1a".to_string())
        );
        assert_eq!(
            parse_route_dev("local 127.0.0.1 dev lo table local src 127.0.0.1"),
            Some("lo".to_string())
        );
        assert_eq!(
            parse_route_dev("RTNETLINK answers: Network is unreachable"),
            None
        );
    }

    #[test]
    fn a_loopback_path_is_named_loopback() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let f = path_facts(l.local_addr().unwrap(), 3);
        assert_eq!(f.samples, 3);
        assert_eq!(f.interface.as_deref(), Some("lo"));
        assert!(f.loopback);
        assert_eq!(f.mtu, Some(65536));
    }

    #[test]
    fn missing_programs_are_named() {
        let names = vec!["sh".to_string(), "no-such-program-xyz".to_string()];
        assert_eq!(missing_programs(&names), ["no-such-program-xyz"]);
    }
}
