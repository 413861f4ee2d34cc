//! TCP sockets of one state asked of the kernel over netlink (sock_diag,
//! `SOCK_DIAG_BY_FAMILY` with only that state asked for), rather than read
//! from /proc/net/tcp, which prints every socket of the namespace.
//!
//! - **Listeners** (the server sampler, the server's finding): reading
//!   /proc/net/tcp to its first row of another state still makes the
//!   kernel step from the listeners' hash into the connections' and scan
//!   its buckets for the first socket (`established_get_first`), a fifth
//!   of the sampler's time beside a keep-alive load; a dump that asks for
//!   listeners alone is answered from the listeners' hash only.
//! - **TIME_WAIT ports** (whether connect() runs short of ports): the
//!   table of a client that held thousands of connections took 30 ms of
//!   its CPU to print at a run's end, and 30–64 ms of a client host's
//!   after a slice apart. The kernel filters the dump by the local port
//!   (a bytecode of two port comparisons, as `ss` sends for `sport >= lo
//!   and sport <= hi`), so only the sockets that hold a port of the range
//!   come back.
//!
//! The structures are the kernel's ABI (linux/inet_diag.h,
//! linux/netlink.h). Shared by the server side (listeners) and the trust
//! side (ports), which do not depend on each other.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_SOCK_DIAG: i32 = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const TCP_LISTEN: u32 = 10;
const TCP_TIME_WAIT: u32 = 6;
/// The request's attribute that carries a filter (`INET_DIAG_REQ_BYTECODE`),
/// and the filter's comparisons of the local port (`INET_DIAG_BC_S_GE`,
/// `INET_DIAG_BC_S_LE`).
const REQ_BYTECODE: u16 = 1;
const BC_S_GE: u8 = 2;
const BC_S_LE: u8 = 3;
/// Two comparisons of a port, each an op and the port's op (4 bytes each).
const FILTER: usize = 16;
/// nlmsghdr: length, type, flags, sequence, port id.
const HEADER: usize = 16;
/// inet_diag_req_v2: family, protocol, extensions, pad, states, then an
/// inet_diag_sockid of 48 bytes.
const REQUEST: usize = 8 + 48;
/// Where an inet_diag_msg keeps its socket's inode: after family, state,
/// timer and retransmits (4), the sockid (48), expires, receive and send
/// queues and uid (16).
const INODE_AT: usize = 4 + 48 + 16;
/// The sockid's source port (network byte order) and source address (16
/// bytes, an IPv4 one in the first 4), after the message's first 4 bytes.
const PORT_AT: usize = 4;
const ADDR_AT: usize = 8;
/// Answers read at most, a bound on the loop: a host with more sockets of
/// the state asked than fit (about 370 a read) is read from /proc instead.
const MAX_READS: usize = 1024;

/// Every listening TCP socket (IPv4 and IPv6) of this process's network
/// namespace: the address it listens on and its inode; `None` where the
/// kernel does not answer (no sock_diag, a namespace that refuses it), so
/// the caller reads /proc.
pub fn listeners() -> Option<Vec<(SocketAddr, u64)>> {
    let mut out = Vec::new();
    dump(1 << TCP_LISTEN, None, &mut |m| {
        out.push((local_of(m)?, u64::from(u32_at(m, INODE_AT)?)));
        Some(())
    })?;
    Some(out)
}

/// The local ports in `lo..=hi` that TIME_WAIT sockets of this network
/// namespace hold (IPv4 and IPv6; a port is one port for both); `None`
/// where the kernel does not answer, so the caller reads /proc.
pub fn time_wait_ports(lo: u16, hi: u16) -> Option<BTreeSet<u16>> {
    let mut out = BTreeSet::new();
    dump(1 << TCP_TIME_WAIT, Some((lo, hi)), &mut |m| {
        let port = local_of(m)?.port();
        // The kernel filtered by port already; a kernel that ignored the
        // filter is filtered here.
        if (lo..=hi).contains(&port) {
            out.insert(port);
        }
        Some(())
    })?;
    Some(out)
}

/// Dumps the sockets of `states` (a mask of TCP states), of local ports
/// in the range when one is given, both families, each message to `each`.
fn dump(
    states: u32,
    ports: Option<(u16, u16)>,
    each: &mut dyn FnMut(&[u8]) -> Option<()>,
) -> Option<()> {
    // SAFETY: a plain socket call; the descriptor is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd was just made and is not owned elsewhere.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    for (seq, family) in [(1u32, libc::AF_INET), (2, libc::AF_INET6)] {
        let msg = request(seq, family as u8, states, ports);
        send(&fd, &msg)?;
        read_answers(&fd, seq, each)?;
    }
    Some(())
}

/// One dump request: the sockets of `states` of `family`, of local ports
/// in `ports` when given.
fn request(seq: u32, family: u8, states: u32, ports: Option<(u16, u16)>) -> Vec<u8> {
    let attr = if ports.is_some() { 4 + FILTER } else { 0 };
    let mut msg = vec![0u8; HEADER + REQUEST + attr];
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    msg[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    msg[8..12].copy_from_slice(&seq.to_ne_bytes());
    msg[HEADER] = family;
    msg[HEADER + 1] = libc::IPPROTO_TCP as u8;
    msg[HEADER + 4..HEADER + 8].copy_from_slice(&states.to_ne_bytes());
    if let Some((lo, hi)) = ports {
        let at = HEADER + REQUEST;
        msg[at..at + 2].copy_from_slice(&((4 + FILTER) as u16).to_ne_bytes());
        msg[at + 2..at + 4].copy_from_slice(&REQ_BYTECODE.to_ne_bytes());
        msg[at + 4..].copy_from_slice(&port_filter(lo, hi));
    }
    msg
}

/// `sport >= lo and sport <= hi` in the kernel's filter code: each op is
/// (code, offset to jump to when it holds, offset when it does not) and
/// the port in the next op's last field; running off the end exactly
/// accepts the socket, a jump past it (4 beyond) rejects it.
fn port_filter(lo: u16, hi: u16) -> [u8; FILTER] {
    let op = |code: u8, yes: u8, no: u16| {
        let mut b = [0u8; 4];
        b[0] = code;
        b[1] = yes;
        b[2..4].copy_from_slice(&no.to_ne_bytes());
        b
    };
    let mut f = [0u8; FILTER];
    f[0..4].copy_from_slice(&op(BC_S_GE, 8, FILTER as u16 + 4));
    f[4..8].copy_from_slice(&op(0, 0, lo));
    f[8..12].copy_from_slice(&op(BC_S_LE, 8, 8 + 4));
    f[12..16].copy_from_slice(&op(0, 0, hi));
    f
}

/// Sends one request to the kernel.
fn send(fd: &OwnedFd, msg: &[u8]) -> Option<()> {
    // SAFETY: an all-zero sockaddr_nl addressed to the kernel (pid 0).
    let mut to: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    to.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: msg and to outlive the call; the lengths are theirs.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&to as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    (sent == msg.len() as isize).then_some(())
}

/// Reads the answers to request `seq` until the kernel says it is done,
/// each socket's message to `each`.
fn read_answers(fd: &OwnedFd, seq: u32, each: &mut dyn FnMut(&[u8]) -> Option<()>) -> Option<()> {
    let mut buf = vec![0u8; 32 * 1024];
    for _ in 0..MAX_READS {
        // SAFETY: buf outlives the call and the length is its own.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        if parse(&buf[..n as usize], seq, each)? {
            return Some(());
        }
    }
    None
}

fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

/// The messages of one datagram: `Some(true)` once the dump is done,
/// `None` on an error or a malformed message.
fn parse(mut data: &[u8], seq: u32, each: &mut dyn FnMut(&[u8]) -> Option<()>) -> Option<bool> {
    while data.len() >= HEADER {
        let len = u32_at(data, 0)? as usize;
        let kind = u16::from_ne_bytes(data[4..6].try_into().ok()?);
        if len < HEADER || len > data.len() {
            return None;
        }
        if u32_at(data, 8)? == seq {
            match kind {
                NLMSG_DONE => return Some(true),
                NLMSG_ERROR => return None,
                SOCK_DIAG_BY_FAMILY => each(&data[HEADER..len])?,
                _ => {}
            }
        }
        // Messages are aligned to 4 bytes.
        let next = (len + 3) & !3;
        data = data.get(next..).unwrap_or(&[]);
    }
    Some(false)
}

/// The address an inet_diag_msg's socket is bound to, of its family.
fn local_of(m: &[u8]) -> Option<SocketAddr> {
    let port = u16::from_be_bytes(m.get(PORT_AT..PORT_AT + 2)?.try_into().ok()?);
    let ip = match i32::from(*m.first()?) {
        libc::AF_INET => {
            let b: [u8; 4] = m.get(ADDR_AT..ADDR_AT + 4)?.try_into().ok()?;
            IpAddr::V4(Ipv4Addr::from(b))
        }
        libc::AF_INET6 => {
            let b: [u8; 16] = m.get(ADDR_AT..ADDR_AT + 16)?.try_into().ok()?;
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn the_kernel_names_our_listeners_and_not_our_connections() {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let v6 = TcpListener::bind("[::1]:0").ok();
        // A connection is not a listener.
        let conn = TcpStream::connect(v4.local_addr().unwrap()).unwrap();
        let (accepted, _) = v4.accept().unwrap();
        let inode = |fd: i32| {
            // SAFETY: fstat into a zeroed stat of a descriptor we hold.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
            st.st_ino
        };
        let asked = listeners().expect("sock_diag answers on this kernel");
        // Each listener under the address it was bound to.
        for l in [Some(&v4), v6.as_ref()].into_iter().flatten() {
            let mine = (l.local_addr().unwrap(), inode(l.as_raw_fd()));
            assert!(asked.contains(&mine), "{mine:?} not among {asked:?}");
        }
        for fd in [conn.as_raw_fd(), accepted.as_raw_fd()] {
            let named = asked.iter().any(|&(_, i)| i == inode(fd));
            assert!(!named, "a connection was named");
        }
    }

    #[test]
    fn a_port_in_time_wait_is_named_within_its_range_and_only_there() {
        // The client closes first: its port is held in TIME_WAIT. Two such
        // ports, so that a filter the kernel ignored would show.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let ports: Vec<u16> = (0..2)
            .map(|_| throng_testkit::tcp::closed_by_its_client(&listener))
            .collect();
        let port = ports[0];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        throng_testkit::wait::poll_until(deadline, || {
            let now = time_wait_ports(1, u16::MAX)?;
            ports.iter().all(|p| now.contains(p)).then_some(())
        });
        // The kernel itself answers with the port asked for alone (other
        // tests' sockets may hold it too, toward other addresses), not
        // the other.
        let mut answered = Vec::new();
        dump(1 << TCP_TIME_WAIT, Some((port, port)), &mut |m| {
            answered.push(local_of(m)?.port());
            Some(())
        })
        .unwrap();
        let both = time_wait_ports(1, u16::MAX).unwrap();
        assert!(
            both.contains(&ports[0]) && both.contains(&ports[1]),
            "{both:?}"
        );
        assert!(
            !answered.is_empty() && answered.iter().all(|&p| p == port),
            "the kernel sent {answered:?} for port {port}"
        );
        let held = time_wait_ports(port, port).expect("sock_diag answers on this kernel");
        let around = time_wait_ports(port.saturating_sub(5), port.saturating_add(5)).unwrap();
        let below = time_wait_ports(1, port - 1).unwrap();
        // An ephemeral port may be the last one there is.
        let above = match port.checked_add(1) {
            Some(next) => time_wait_ports(next, u16::MAX).unwrap(),
            None => BTreeSet::new(),
        };
        assert_eq!(held, BTreeSet::from([port]));
        assert!(around.contains(&port), "{around:?}");
        assert!(around.iter().all(|p| p.abs_diff(port) <= 5), "{around:?}");
        assert!(!below.contains(&port) && !above.contains(&port));
    }

    #[test]
    fn the_port_filter_is_two_comparisons_that_reject_by_jumping_past_the_end() {
        let f = port_filter(32768, 60999);
        assert_eq!(f[0], BC_S_GE);
        assert_eq!((f[1], u16::from_ne_bytes([f[2], f[3]])), (8, 20));
        assert_eq!(u16::from_ne_bytes([f[6], f[7]]), 32768);
        assert_eq!(f[8], BC_S_LE);
        assert_eq!((f[9], u16::from_ne_bytes([f[10], f[11]])), (8, 12));
        assert_eq!(u16::from_ne_bytes([f[14], f[15]]), 60999);
        let r = request(5, libc::AF_INET as u8, 1 << TCP_TIME_WAIT, Some((1, 2)));
        assert_eq!(r.len(), HEADER + REQUEST + 4 + FILTER);
        assert_eq!(u32_at(&r, 0), Some(r.len() as u32));
        assert_eq!(u32_at(&r, HEADER + 4), Some(1 << 6));
        let plain = request(5, libc::AF_INET as u8, 1 << TCP_LISTEN, None);
        assert_eq!(plain.len(), HEADER + REQUEST);
    }

    #[test]
    fn a_malformed_or_failed_answer_is_no_answer() {
        let mut out = Vec::new();
        let mut each = |m: &[u8]| {
            out.push((local_of(m)?, u64::from(u32_at(m, INODE_AT)?)));
            Some(())
        };
        // A header that claims more bytes than came.
        let mut short = [0u8; HEADER];
        short[0..4].copy_from_slice(&100u32.to_ne_bytes());
        assert_eq!(parse(&short, 1, &mut each), None);
        // An error for our request.
        let mut err = [0u8; HEADER + 4];
        err[0..4].copy_from_slice(&((HEADER + 4) as u32).to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[8..12].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(parse(&err, 7, &mut each), None);
        // A listener's message then the end: its address and inode, and
        // done.
        let mut two = vec![0u8; HEADER + INODE_AT + 4 + 4 + HEADER];
        let first = HEADER + INODE_AT + 4 + 4;
        two[0..4].copy_from_slice(&(first as u32).to_ne_bytes());
        two[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        two[8..12].copy_from_slice(&3u32.to_ne_bytes());
        two[HEADER] = libc::AF_INET as u8;
        two[HEADER + PORT_AT..HEADER + PORT_AT + 2].copy_from_slice(&8080u16.to_be_bytes());
        two[HEADER + ADDR_AT..HEADER + ADDR_AT + 4].copy_from_slice(&[127, 0, 0, 9]);
        two[HEADER + INODE_AT..HEADER + INODE_AT + 4].copy_from_slice(&4242u32.to_ne_bytes());
        two[first..first + 4].copy_from_slice(&(HEADER as u32).to_ne_bytes());
        two[first + 4..first + 6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        two[first + 8..first + 12].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(parse(&two, 3, &mut each), Some(true));
        // A message of no family this reads is malformed.
        two[HEADER] = 0;
        assert_eq!(parse(&two, 3, &mut each), None);
        assert_eq!(out, vec![("127.0.0.9:8080".parse().unwrap(), 4242)]);
    }
}
