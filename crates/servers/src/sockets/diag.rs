//! Listening TCP sockets asked of the kernel over netlink (sock_diag,
//! `SOCK_DIAG_BY_FAMILY` with only the LISTEN state asked for). Reading
//! /proc/net/tcp to its first row of another state still makes the kernel
//! step from the listeners' hash into the connections' and scan its
//! buckets for the first socket (`established_get_first`), a fifth of the
//! sampler's time beside a keep-alive load; a dump that asks for
//! listeners alone is answered from the listeners' hash only. The
//! structures are the kernel's ABI (linux/inet_diag.h, linux/netlink.h).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_SOCK_DIAG: i32 = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const TCP_LISTEN: u32 = 10;
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
/// Answers read at most, a bound on the loop: a host with more listening
/// sockets than fit is read from /proc instead.
const MAX_READS: usize = 64;

/// Every listening TCP socket (IPv4 and IPv6) of this process's network
/// namespace: the address it listens on and its inode; `None` where the
/// kernel does not answer (no sock_diag, a namespace that refuses it), so
/// the caller reads /proc.
pub fn listeners() -> Option<Vec<(SocketAddr, u64)>> {
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
    let mut out = Vec::new();
    for (seq, family) in [(1u32, libc::AF_INET), (2, libc::AF_INET6)] {
        ask(&fd, seq, family as u8)?;
        read_answers(&fd, seq, &mut out)?;
    }
    Some(out)
}

/// One dump request: the listeners of `family`.
fn ask(fd: &OwnedFd, seq: u32, family: u8) -> Option<()> {
    let mut msg = [0u8; HEADER + REQUEST];
    msg[0..4].copy_from_slice(&((HEADER + REQUEST) as u32).to_ne_bytes());
    msg[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    msg[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    msg[8..12].copy_from_slice(&seq.to_ne_bytes());
    msg[HEADER] = family;
    msg[HEADER + 1] = libc::IPPROTO_TCP as u8;
    msg[HEADER + 4..HEADER + 8].copy_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
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
/// each listener into `out`.
fn read_answers(fd: &OwnedFd, seq: u32, out: &mut Vec<(SocketAddr, u64)>) -> Option<()> {
    let mut buf = vec![0u8; 32 * 1024];
    for _ in 0..MAX_READS {
        // SAFETY: buf outlives the call and the length is its own.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        if parse(&buf[..n as usize], seq, out)? {
            return Some(());
        }
    }
    None
}

/// The messages of one datagram: `Some(true)` once the dump is done,
/// `None` on an error or a malformed message.
fn parse(mut data: &[u8], seq: u32, out: &mut Vec<(SocketAddr, u64)>) -> Option<bool> {
    let u32_at = |d: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(d.get(at..at + 4)?.try_into().ok()?))
    };
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
                SOCK_DIAG_BY_FAMILY => {
                    let m = &data[HEADER..len];
                    let inode = u64::from(u32_at(m, INODE_AT)?);
                    out.push((local_of(m)?, inode));
                }
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

    #[test]
    fn the_kernel_names_our_listeners_as_proc_does_and_not_our_connections() {
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let v6 = std::net::TcpListener::bind("[::1]:0").ok();
        // A connection is not a listener, whichever way it is read.
        let conn = std::net::TcpStream::connect(v4.local_addr().unwrap()).unwrap();
        let (accepted, _) = v4.accept().unwrap();
        let inode = |fd: i32| {
            // SAFETY: fstat into a zeroed stat of a descriptor we hold.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
            st.st_ino
        };
        let mine: Vec<u64> = [Some(&v4), v6.as_ref()]
            .into_iter()
            .flatten()
            .map(|l| inode(l.as_raw_fd()))
            .collect();
        // Each listener under the address it was bound to.
        let asked = listeners().expect("sock_diag answers on this kernel");
        let addrs: Vec<SocketAddr> = [Some(&v4), v6.as_ref()]
            .into_iter()
            .flatten()
            .map(|l| l.local_addr().unwrap())
            .collect();
        for (addr, i) in addrs.iter().zip(&mine) {
            assert!(
                asked.contains(&(*addr, *i)),
                "{addr} {i} not among {asked:?}"
            );
        }
        for fd in [conn.as_raw_fd(), accepted.as_raw_fd()] {
            let named = asked.iter().any(|&(_, i)| i == inode(fd));
            assert!(!named, "a connection was named");
        }
        // What /proc lists, read in the same namespace a moment apart: the
        // same listeners but for those other tests opened or closed between.
        let listed = crate::sockets::proc_listening_sockets();
        for (addr, i) in addrs.iter().zip(&mine) {
            assert!(
                listed.iter().any(|s| s.local == *addr && s.inode == *i),
                "{addr} {i} not among {listed:?}"
            );
        }
    }

    #[test]
    fn a_malformed_or_failed_answer_is_no_answer() {
        let mut out = Vec::new();
        // A header that claims more bytes than came.
        let mut short = [0u8; HEADER];
        short[0..4].copy_from_slice(&100u32.to_ne_bytes());
        assert_eq!(parse(&short, 1, &mut out), None);
        // An error for our request.
        let mut err = [0u8; HEADER + 4];
        err[0..4].copy_from_slice(&((HEADER + 4) as u32).to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[8..12].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(parse(&err, 7, &mut out), None);
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
        assert_eq!(parse(&two, 3, &mut out), Some(true));
        assert_eq!(out, vec![("127.0.0.9:8080".parse().unwrap(), 4242)]);
        // A message of no family this reads is malformed.
        two[HEADER] = 0;
        assert_eq!(parse(&two, 3, &mut Vec::new()), None);
    }
}
