//! Which process holds a TCP socket: the kernel's tables (/proc/net/tcp
//! and tcp6) name each socket's addresses, state and inode, and a
//! process's /proc/PID/fd links name the inodes it holds.
//!
//! Two questions are asked of them. Which processes of a server answered a
//! request (the privilege-drop probe). And whether what answered on a
//! server's port is the server at all: its port is the kernel's choice of
//! a free one, made before the server starts, and another program can
//! take it in between. The server then cannot listen (nginx retries for
//! 2.5 s before it gives up), while every request to the port is answered
//! by the other program, whose figures would be stored as the server's.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// One row of the kernel's TCP tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSocket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// The kernel's state number: 0x01 established, 0x0A listening.
    pub state: u8,
    pub inode: u64,
}

pub const ESTABLISHED: u8 = 0x01;
pub const LISTEN: u8 = 0x0A;

/// Every TCP socket of this host's network namespace, IPv4 and IPv6. A
/// table that cannot be read (no IPv6) adds nothing.
pub fn tcp_sockets() -> Vec<TcpSocket> {
    let mut all = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(t) = std::fs::read_to_string(table) {
            all.extend(parse_table(&t));
        }
    }
    all
}

/// The rows of one table; a row that does not parse is left out.
pub fn parse_table(text: &str) -> Vec<TcpSocket> {
    text.lines().skip(1).filter_map(parse_row).collect()
}

fn parse_row(l: &str) -> Option<TcpSocket> {
    // sl, local, remote, state, ..., inode at 9.
    let f: Vec<&str> = l.split_whitespace().collect();
    if f.len() <= 9 {
        return None;
    }
    Some(TcpSocket {
        local: parse_addr(f[1])?,
        remote: parse_addr(f[2])?,
        state: u8::from_str_radix(f[3], 16).ok()?,
        inode: f[9].parse().ok()?,
    })
}

/// Every listening TCP socket of this host's network namespace, asked of
/// the kernel over sock_diag ([`throng_engine::sockdiag`]) where it
/// answers, else read from /proc ([`proc_listening_sockets`]):
/// /proc/net/tcp makes the kernel walk the buckets of its connections'
/// hash as well, a few milliseconds of the load generator's CPU at its
/// start.
pub fn listening_sockets() -> Vec<TcpSocket> {
    let Some(all) = throng_engine::sockdiag::listeners() else {
        return proc_listening_sockets();
    };
    all.into_iter()
        .map(|(local, inode)| TcpSocket {
            local,
            remote: match local {
                SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
                SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
            },
            state: LISTEN,
            inode,
        })
        .collect()
}

/// The inodes of every listening TCP socket of this host's network
/// namespace ([`listening_sockets`]).
pub fn listening_inodes() -> BTreeSet<u64> {
    listening_sockets().iter().map(|s| s.inode).collect()
}

/// [`listening_sockets`] from /proc/net/tcp and tcp6. The kernel lists a
/// table's listening sockets before any other (it walks its hash of
/// listeners, then that of connections, where TIME_WAIT sockets are too),
/// and makes the text as it is read, so the reading stops at the first row
/// of another state: a round that opened a connection per request leaves
/// tens of thousands of TIME_WAIT rows, megabytes the sampler would
/// otherwise make the kernel print and parse on the client's CPU at every
/// reading.
pub(crate) fn proc_listening_sockets() -> Vec<TcpSocket> {
    use std::io::BufRead;
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(f) = std::fs::File::open(table) else {
            continue;
        };
        let rows = std::io::BufReader::new(f)
            .lines()
            .skip(1)
            .map_while(Result::ok);
        out.extend(listening_prefix(rows));
    }
    out
}

/// The listening rows a table starts with.
fn listening_prefix(rows: impl Iterator<Item = String>) -> Vec<TcpSocket> {
    rows.map_while(|l| parse_row(&l).filter(|s| s.state == LISTEN))
        .collect()
}

/// How many listening TCP sockets the processes of `tree` hold, each
/// counted once however many of them share it; `None` when the tree is
/// empty or one of its processes' descriptors cannot be read (another
/// user's, or a process gone meanwhile): a count that may have missed one
/// would read as a socket closed. The table is read before the
/// descriptors, so a socket made meanwhile is in a process looked at.
pub fn listeners_held(tree: &[i32]) -> Option<u32> {
    ListenerCount::read(tree, None).map(|c| c.held)
}

/// A count of the listening sockets a tree holds, and what it was read
/// from, so a sampler need not read every descriptor again to count them.
///
/// Reading every descriptor is a `readlink` each: a server holding 8,000
/// connections made that 25–35 ms a reading on the client's CPU, twice a
/// second. A tree's listeners change only when its processes do (a new
/// worker may open its own, with SO_REUSEPORT), when the namespace's
/// listening sockets do (one opened or closed), or when a process closes
/// its copy of one that another holds open. So the count is read again
/// only when the tree or the namespace's listeners changed, or when one of
/// the descriptors it found them at no longer names its socket (a few
/// `readlink`s). What this misses: a listener passed into the tree over a
/// unix socket from a process outside it, which no server of the lab does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerCount {
    /// The distinct listening sockets the tree holds.
    pub held: u32,
    tree: Vec<i32>,
    listening: BTreeSet<u64>,
    /// Where each socket held was seen: process, descriptor, inode.
    at: Vec<(i32, u32, u64)>,
    /// Whether this count read every descriptor (tests read it).
    pub(crate) scanned: bool,
}

impl ListenerCount {
    /// The count now: `last`'s when nothing it rests on changed, else read
    /// from every descriptor of the tree. `None` as [`listeners_held`].
    pub fn read(tree: &[i32], last: Option<&ListenerCount>) -> Option<ListenerCount> {
        if tree.is_empty() {
            return None;
        }
        let listening = listening_inodes();
        if let Some(l) = last {
            if l.tree == tree && l.listening == listening && l.at.iter().all(|&a| still(a)) {
                return Some(ListenerCount {
                    scanned: false,
                    ..l.clone()
                });
            }
        }
        let mut held = BTreeSet::new();
        let mut at = Vec::new();
        for &pid in tree {
            for (fd, inode) in socket_fds_of(pid)? {
                if listening.contains(&inode) && held.insert(inode) {
                    at.push((pid, fd, inode));
                }
            }
        }
        Some(ListenerCount {
            held: held.len() as u32,
            tree: tree.to_vec(),
            listening,
            at,
            scanned: true,
        })
    }
}

/// Whether descriptor `fd` of `pid` still names socket `inode`.
fn still((pid, fd, inode): (i32, u32, u64)) -> bool {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .ok()
        .and_then(|l| socket_inode(l.to_str()?))
        == Some(inode)
}

/// `socket:[12345]`: the inode of the socket a descriptor's link names.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse::<u64>()
        .ok()
}

/// `0100007F:1F90`: the address as the kernel keeps it in memory (32-bit
/// words, each printed as a number of this host's byte order), then the
/// port.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| {
        let w = ip.get(i * 8..i * 8 + 8)?;
        Some(u32::from_str_radix(w, 16).ok()?.to_ne_bytes())
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The processes of `tree` holding one of `inodes` open.
pub fn holders(tree: &[i32], inodes: &BTreeSet<u64>) -> Vec<i32> {
    tree.iter()
        .copied()
        .filter(|&pid| socket_inodes_of(pid).is_some_and(|held| !held.is_disjoint(inodes)))
        .collect()
}

/// The inodes of the sockets process `pid` holds; `None` when its
/// descriptors cannot be read.
fn socket_inodes_of(pid: i32) -> Option<BTreeSet<u64>> {
    Some(socket_fds_of(pid)?.into_iter().map(|(_, i)| i).collect())
}

/// The sockets process `pid` holds, each descriptor with its socket's
/// inode; `None` when its descriptors cannot be read.
fn socket_fds_of(pid: i32) -> Option<Vec<(u32, u64)>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| {
                let fd = e.file_name().to_str()?.parse::<u32>().ok()?;
                let link = std::fs::read_link(e.path()).ok()?;
                Some((fd, socket_inode(link.to_str()?)?))
            })
            .collect(),
    )
}

/// The processes holding a listening socket that takes connections to
/// `addr`, of all those whose descriptors can be read (another user's
/// cannot, unprivileged): empty when none is found.
pub fn listeners_of(addr: SocketAddr) -> Vec<i32> {
    let inodes: BTreeSet<u64> = listening_sockets()
        .iter()
        .filter(|s| takes(s.local, addr))
        .map(|s| s.inode)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut all: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    all.sort_unstable();
    holders(&all, &inodes)
}

/// Whether connections to `ip` stay on this machine: a loopback address,
/// or one bound on one of its interfaces (which a socket can be bound to
/// only then).
pub fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Who listens where requests to `addr` go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// Every listening socket that can take them is held by the tree.
    Server,
    /// One is held by none of the tree's processes, all of which could be
    /// looked into: another program's.
    Other,
    /// No listening socket was found, or a process of the tree could not
    /// be looked into: nothing can be said.
    Unknown,
}

/// Whether the listening sockets that take connections to `addr` belong
/// to the processes of `tree`. The tables are read before the tree's
/// descriptors, so a socket made meanwhile is in a process looked at.
pub fn who_listens(addr: SocketAddr, sockets: &[TcpSocket], tree: &[i32]) -> Listener {
    let inodes: BTreeSet<u64> = sockets
        .iter()
        .filter(|s| s.state == LISTEN && takes(s.local, addr))
        .map(|s| s.inode)
        .collect();
    if inodes.is_empty() {
        return Listener::Unknown;
    }
    let mut held = BTreeSet::new();
    let mut unread = 0;
    for &pid in tree {
        match socket_inodes_of(pid) {
            Some(of) => held.extend(of.intersection(&inodes).copied()),
            None => unread += 1,
        }
    }
    if held.len() == inodes.len() {
        Listener::Server
    } else if unread == 0 {
        Listener::Other
    } else {
        Listener::Unknown
    }
}

/// Whether a socket listening on `local` takes connections to `to`: same
/// port, and the same address or the wildcard of its family (an IPv6
/// wildcard takes IPv4 too, unless the socket is v6-only, which the table
/// does not say: counting it is the cautious side, since it then has to
/// be the server's).
fn takes(local: SocketAddr, to: SocketAddr) -> bool {
    if local.port() != to.port() {
        return false;
    }
    let to_ip = match to.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match local.ip() {
        IpAddr::V4(l) => l.is_unspecified() && to_ip.is_ipv4() || IpAddr::V4(l) == to_ip,
        IpAddr::V6(l) if l.is_unspecified() => true,
        IpAddr::V6(l) => match l.to_ipv4_mapped() {
            Some(m) => IpAddr::V4(m) == to_ip,
            None => IpAddr::V6(l) == to_ip,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

    #[test]
    fn the_kernels_answer_and_procs_table_name_the_same_listeners() {
        use std::os::fd::AsRawFd;
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let v6 = std::net::TcpListener::bind("[::1]:0").ok();
        let inode = |fd: i32| {
            // SAFETY: fstat into a zeroed stat of a descriptor we hold.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
            st.st_ino
        };
        // Read a moment apart in one namespace: the same listeners but for
        // those other tests opened or closed between.
        let asked = listening_sockets();
        let listed = proc_listening_sockets();
        for l in [Some(&v4), v6.as_ref()].into_iter().flatten() {
            let (addr, i) = (l.local_addr().unwrap(), inode(l.as_raw_fd()));
            for (how, found) in [("sock_diag", &asked), ("/proc", &listed)] {
                assert!(
                    found
                        .iter()
                        .any(|s| s.local == addr && s.inode == i && s.state == LISTEN),
                    "{addr} {i} not named by {how}: {found:?}"
                );
            }
        }
    }

    #[test]
    fn the_kernels_rows_are_read_with_their_addresses() {
        let table = format!(
            "{HEAD}   0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000    33        0 4242 1 0000000000000000 20 4 30 10 -1\n\
             1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 4243 1 0000000000000000 100 0 0 10 0\n\
             2: garbage\n"
        );
        let rows = parse_table(&table);
        assert_eq!(
            rows,
            [
                TcpSocket {
                    local: "127.0.0.1:8080".parse().unwrap(),
                    remote: "127.0.0.1:50000".parse().unwrap(),
                    state: ESTABLISHED,
                    inode: 4242,
                },
                TcpSocket {
                    local: "0.0.0.0:8080".parse().unwrap(),
                    remote: "0.0.0.0:0".parse().unwrap(),
                    state: LISTEN,
                    inode: 4243,
                },
            ]
        );
        let v6 = format!(
            "{HEAD}   0: 00000000000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0\n"
        );
        assert_eq!(
            parse_table(&v6)[0].local,
            "[::1]:443".parse::<SocketAddr>().unwrap()
        );
    }

    #[test]
    fn a_listener_takes_its_address_and_its_familys_wildcard() {
        let to: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        for (local, yes) in [
            ("127.0.0.1:8080", true),
            ("0.0.0.0:8080", true),
            ("[::]:8080", true),
            ("[::ffff:127.0.0.1]:8080", true),
            ("127.0.0.2:8080", false),
            ("127.0.0.1:8081", false),
            ("[::1]:8080", false),
        ] {
            assert_eq!(takes(local.parse().unwrap(), to), yes, "{local}");
        }
        let to6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert!(takes("[::]:8080".parse().unwrap(), to6));
        assert!(!takes("0.0.0.0:8080".parse().unwrap(), to6));
    }

    #[test]
    fn a_port_is_told_as_ours_or_another_programs() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let me = std::process::id() as i32;
        let sockets = tcp_sockets();
        assert_eq!(who_listens(addr, &sockets, &[me]), Listener::Server);
        // A child of ours holds nothing of it: the port is another's.
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let verdict = who_listens(addr, &sockets, &[child.id() as i32]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(verdict, Listener::Other);
        // A process that cannot be looked into (none has the largest pid
        // there can be) says nothing.
        assert_eq!(who_listens(addr, &sockets, &[i32::MAX]), Listener::Unknown);
        // Nothing listens there at all. (Not the live table once the
        // listener is dropped: another test may be given the port.)
        let elsewhere: Vec<TcpSocket> = sockets.into_iter().filter(|s| s.local != addr).collect();
        assert_eq!(who_listens(addr, &elsewhere, &[me]), Listener::Unknown);
        drop(listener);
    }

    #[test]
    fn the_holders_of_a_listener_are_found_among_all_processes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let me = std::process::id() as i32;
        // Another test spawning a process forks this one, and the fork
        // holds every descriptor until its exec closes them.
        let parent = |pid: i32| {
            let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            s[s.rfind(')')? + 1..]
                .split_whitespace()
                .nth(1)?
                .parse::<i32>()
                .ok()
        };
        let unforked = |v: Vec<i32>| -> Vec<i32> {
            v.into_iter().filter(|&p| parent(p) != Some(me)).collect()
        };
        assert_eq!(unforked(listeners_of(addr)), [me]);
        // The port's other addresses lead to it too, others' do not.
        let any: SocketAddr = format!("[::ffff:127.0.0.1]:{}", addr.port())
            .parse()
            .unwrap();
        assert_eq!(unforked(listeners_of(any)), [me]);
        assert!(
            listeners_of(SocketAddr::new("127.0.0.2".parse().unwrap(), addr.port())).is_empty()
        );
        drop(listener);
    }

    #[test]
    fn only_the_listening_rows_a_table_starts_with_are_read() {
        let rows = [
            "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 11 1 0 100 0 0 10 0",
            "   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 12 1 0 100 0 0 10 0",
            "   2: 0100007F:1F90 0100007F:C350 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0",
            "   3: 00000000:1F92 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 13 1 0 100 0 0 10 0",
        ];
        let read = listening_prefix(rows.iter().map(|r| r.to_string()));
        let read: Vec<(SocketAddr, u64)> = read.iter().map(|s| (s.local, s.inode)).collect();
        assert_eq!(
            read,
            [
                ("0.0.0.0:8080".parse().unwrap(), 11),
                ("127.0.0.1:8081".parse().unwrap(), 12)
            ]
        );
    }

    #[test]
    fn the_listeners_a_tree_holds_are_counted_once() {
        // A parent listening on two ports and a child sharing both, as an
        // Apache's parent and its children share theirs; it says when both
        // hold them, and ends by itself should this test die first.
        let script = "import os, socket, sys, time\n\
            a = socket.socket(); a.bind(('127.0.0.1', 0)); a.listen()\n\
            b = socket.socket(); b.bind(('127.0.0.1', 0)); b.listen()\n\
            pid = os.fork()\n\
            if pid == 0:\n    time.sleep(30); os._exit(0)\n\
            print(pid, flush=True)\n\
            time.sleep(30)\n";
        let mut p = crate::forker::Forker::run(script);
        let child = p.pid_line();
        let parent = p.pid();
        let both = listeners_held(&[parent, child]);
        let one = listeners_held(&[child]);
        let unreadable = listeners_held(&[parent, i32::MAX]);
        p.end(child);
        assert_eq!((both, one, unreadable), (Some(2), Some(2), None));
        assert_eq!(listeners_held(&[]), None);
    }

    #[test]
    fn a_count_of_listeners_is_read_again_only_when_what_it_rests_on_changed() {
        // A parent listening on one port, with a child sharing it; told to
        // go on, the parent listens on a second port, then closes its copy
        // of the first, which the child still holds (so the namespace's
        // listeners are unchanged by that close). Both end by themselves
        // should this test die first.
        let script = "import os, socket, sys, time\n\
            a = socket.socket(); a.bind(('127.0.0.1', 0)); a.listen()\n\
            pid = os.fork()\n\
            if pid == 0:\n    time.sleep(30); os._exit(0)\n\
            print(pid, flush=True)\n\
            sys.stdin.readline()\n\
            b = socket.socket(); b.bind(('127.0.0.1', 0)); b.listen()\n\
            print('two', flush=True)\n\
            sys.stdin.readline()\n\
            a.close()\n\
            print('closed', flush=True)\n\
            time.sleep(30)\n";
        let mut p = crate::forker::Forker::run(script);
        let child = p.pid_line();
        let parent = p.pid();
        let first = ListenerCount::read(&[parent], None).unwrap();
        // Other tests open and close listeners meanwhile, which is a change
        // of the namespace's: one of a few readings in a row reuses.
        let mut reused = None;
        for _ in 0..20 {
            let again = ListenerCount::read(&[parent], Some(&first)).unwrap();
            if !again.scanned {
                reused = Some(again);
                break;
            }
        }
        p.go_on();
        assert_eq!(p.line(), "two");
        let opened = ListenerCount::read(&[parent], Some(&first)).unwrap();
        p.go_on();
        assert_eq!(p.line(), "closed");
        let closed = ListenerCount::read(&[parent], Some(&opened)).unwrap();
        let both = ListenerCount::read(&[parent, child], Some(&closed)).unwrap();
        p.end(child);
        assert_eq!((first.held, first.scanned), (1, true));
        let reused = reused.expect("20 readings in a row all read every descriptor");
        assert_eq!(reused.held, 1);
        assert_eq!(
            (opened.held, opened.scanned),
            (2, true),
            "a listener opened"
        );
        assert_eq!(
            (closed.held, closed.scanned),
            (1, true),
            "a listener the parent closed, its child still holding it"
        );
        assert_eq!((both.held, both.scanned), (2, true), "the tree changed");
    }

    #[test]
    fn loopback_and_this_machines_addresses_are_local() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(is_local("127.3.2.1".parse().unwrap()));
        assert!(is_local("::1".parse().unwrap()));
        // TEST-NET-1 (RFC 5737) is never an interface's address.
        assert!(!is_local("192.0.2.1".parse().unwrap()));
    }
}
