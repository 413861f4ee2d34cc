//! The privilege-drop probe: which process actually serves a request, and
//! as whom it runs.
//!
//! A server's process tree holds processes of several kinds (nginx's and
//! Apache's root masters, h2o's crash handler, Varnish's manager and its
//! cache child running as `vcache`), so judging by the tree's shape or by
//! one user name gets them wrong. The probe opens a connection, has a
//! request answered on it, and finds the process that holds the accepted
//! socket (matching /proc/net/tcp to /proc/PID/fd): that process must run
//! as a user other than root. Processes of the tree still running as root
//! are named in the evidence, so a reader sees the master for what it is.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use throng_model::{Feature, FeatureResult, FeatureStatus};
use throng_servers::sockets::{self, TcpSocket};
use throng_servers::{loopback, RunAs};

/// Real uid of a process (first field of `Uid:` in /proc/PID/status).
pub fn uid_of(pid: i32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {uid}"), |u| u.name)
}

fn chrooted(pid: i32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/root")).is_ok_and(|p| p != Path::new("/"))
}

/// Socket inodes of established TCP connections from `local_port` to
/// `remote_port`. Ports alone find the connection whatever address the
/// server listens on: while the probe's connection is open, its client
/// port is held on this host, and only a connection from another host
/// with the same port number to the server could match as well, which a
/// serving process of the same server would hold too.
fn socket_inodes(table: &[TcpSocket], local_port: u16, remote_port: u16) -> BTreeSet<u64> {
    table
        .iter()
        .filter(|s| {
            s.state == sockets::ESTABLISHED
                && s.local.port() == local_port
                && s.remote.port() == remote_port
        })
        .map(|s| s.inode)
        .collect()
}

/// The processes of `tree` that hold the server's end of a connection on
/// which a request was just answered.
fn serving_processes(addr: SocketAddr, tree: &[i32]) -> anyhow::Result<Vec<i32>> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.write_all(&loopback::request(addr, "/index.html", &[]))?;
    // Only that an answer began matters: the server has accepted the
    // connection and read from it by then.
    let mut buf = [0u8; 256];
    s.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now())))?;
    if s.read(&mut buf)? == 0 {
        anyhow::bail!("the server closed the connection without answering");
    }
    let client_port = s.local_addr()?.port();
    let inodes = socket_inodes(&sockets::tcp_sockets(), addr.port(), client_port);
    let found = sockets::holders(tree, &inodes);
    drop(s);
    if found.is_empty() {
        anyhow::bail!("no process of the server holds the accepted connection");
    }
    Ok(found)
}

/// Whether the server drops root before serving requests. `user`: the
/// unprivileged user the lab gives servers when it runs as root.
pub fn probe(addr: SocketAddr, tree: &[i32], user: Option<&RunAs>) -> FeatureResult {
    let untested =
        |why: String| FeatureResult::new(Feature::PrivilegeDrop, FeatureStatus::Untested, why);
    if user.is_none() {
        return untested(
            "the lab does not run as root, so there is no privilege to drop".to_string(),
        );
    }
    let serving = match serving_processes(addr, tree) {
        Ok(s) => s,
        Err(e) => return untested(format!("the serving process could not be found: {e:#}")),
    };
    let mut described = Vec::new();
    let mut root_serves = false;
    for &pid in &serving {
        let Some(uid) = uid_of(pid) else {
            return untested(format!("process {pid} could not be read"));
        };
        root_serves |= uid == 0;
        let chroot = if chrooted(pid) {
            "chrooted"
        } else {
            "not chrooted"
        };
        described.push(format!(
            "pid {pid} as {} (uid {uid}), {chroot}",
            user_name(uid)
        ));
    }
    let root_others: Vec<String> = tree
        .iter()
        .filter(|p| !serving.contains(p) && uid_of(**p) == Some(0))
        .map(|p| p.to_string())
        .collect();
    let others = match root_others.len() {
        0 => String::new(),
        1 => format!("; process {} of the tree runs as root", root_others[0]),
        _ => format!(
            "; processes {} of the tree run as root",
            root_others.join(", ")
        ),
    };
    let evidence = format!("requests served by {}{others}", described.join(" and "));
    let status = if root_serves {
        FeatureStatus::No
    } else {
        FeatureStatus::Yes
    };
    FeatureResult::new(Feature::PrivilegeDrop, status, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_found_in_the_kernels_table() {
        let table = sockets::parse_table("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000    33        0 4242 1 0000000000000000 20 4 30 10 -1\n\
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 4243 1 0000000000000000 100 0 0 10 0\n\
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 4244 1 0000000000000000 20 4 30 10 -1\n");
        // Port 0x1F90 = 8080 (the server), 0xC350 = 50000 (the client).
        assert_eq!(socket_inodes(&table, 8080, 50000), BTreeSet::from([4242]));
        assert_eq!(socket_inodes(&table, 50000, 8080), BTreeSet::from([4244]));
        assert!(socket_inodes(&table, 8080, 1).is_empty());
    }

    #[test]
    fn this_process_holds_its_own_accepted_socket() {
        // Not only on 127.0.0.1: a server on a benchmark network listens on
        // its host's address there (IPv6 where the host has it).
        for (ip, table) in [
            ("127.0.0.1", "/proc/net/tcp"),
            ("127.0.0.2", "/proc/net/tcp"),
            ("::1", "/proc/net/tcp6"),
        ] {
            let Ok(listener) = std::net::TcpListener::bind((ip, 0)) else {
                assert_eq!(ip, "::1", "cannot listen on {ip}");
                eprintln!("skipped {ip}: no IPv6 loopback");
                continue;
            };
            let addr = listener.local_addr().unwrap();
            let client = TcpStream::connect(addr).unwrap();
            let (_server_end, _) = listener.accept().unwrap();
            let client_port = client.local_addr().unwrap().port();
            let table = sockets::parse_table(&std::fs::read_to_string(table).unwrap());
            let inodes = socket_inodes(&table, addr.port(), client_port);
            assert_eq!(inodes.len(), 1, "{ip}");
            let me = std::process::id() as i32;
            assert_eq!(sockets::holders(&[me, 1], &inodes), [me], "{ip}");
        }
    }
}
