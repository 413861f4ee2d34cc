//! Opening a connection's socket with the fewest syscalls the load needs
//! (none of its own where the ring makes it: `RingSetup`),
//! and the two choices a benchmark of new connections may make: which
//! local address each connection comes from, and whether it closes with
//! a reset.
//!
//! One address pair has about 28,000 ephemeral ports (the kernel's
//! default range), and with TIME_WAIT holding each for a minute a load of
//! new connections runs out of them: spread over several source
//! addresses it does not. `IP_BIND_ADDRESS_NO_PORT` lets `bind()` take the
//! address alone and leaves the port to `connect()`, which can then reuse
//! a port toward another destination, as it does without a bind.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use io_uring::types::{DestinationSlot, Fixed};
use io_uring::{opcode, squeue, IoUring};
use mio::net::TcpStream;

/// A non-blocking connect to `to`, from `from` (any port) when given,
/// with `SO_LINGER` 0 when `reset`: closing it then sends a reset and
/// leaves no TIME_WAIT on either end.
pub(crate) fn connect(to: SocketAddr, from: Option<IpAddr>, reset: bool) -> io::Result<TcpStream> {
    if from.is_none() && !reset {
        return TcpStream::connect(to);
    }
    let owned = open(to, from, reset, libc::SOCK_NONBLOCK)?;
    let (storage, len) = sockaddr(to);
    // SAFETY: storage holds a sockaddr of `len` bytes for the socket's
    // family.
    if unsafe { libc::connect(owned.as_raw_fd(), (&raw const storage).cast(), len) } < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(TcpStream::from_std(std::net::TcpStream::from(owned)))
}

/// A TCP socket for a connection to `to`, bound to `from` (any port) when
/// given, with `SO_LINGER` 0 when `reset`; `flags` are added to its type
/// (`SOCK_NONBLOCK` for epoll; io_uring's connect wants none).
pub(crate) fn open(
    to: SocketAddr,
    from: Option<IpAddr>,
    reset: bool,
    flags: i32,
) -> io::Result<OwnedFd> {
    let family = if to.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: socket() takes plain integers and returns a new descriptor
    // or -1.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | flags, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a descriptor just returned by socket() and owned by
    // nothing else; OwnedFd closes it on every early return.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    if reset {
        linger_zero(fd)?;
    }
    if let Some(ip) = from {
        setsockopt(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, &1i32)?;
        let (storage, len) = sockaddr(SocketAddr::new(ip, 0));
        // SAFETY: storage holds a sockaddr of `len` bytes for the socket's
        // family.
        if unsafe { libc::bind(fd, (&raw const storage).cast(), len) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(owned)
}

/// What the options a connection's chain sets point at: they must
/// outlive the submission, and are the same for every connection.
static ON: libc::c_int = 1;
static LINGER_ZERO: libc::linger = libc::linger {
    l_onoff: 1,
    l_linger: 0,
};

/// Whether this kernel makes a socket in a table slot and sets its
/// options from the ring: tried once on slot 0 (free until the run's
/// first connect), as a probe of opcodes cannot tell a socket's ring
/// commands (6.7) from older ones.
pub(crate) fn makes_sockets(ring: &mut IoUring) -> bool {
    let link = squeue::Flags::IO_LINK;
    let sqes = [
        opcode::Socket::new(libc::AF_INET, libc::SOCK_STREAM, 0)
            .file_index(DestinationSlot::try_from_slot_target(0).ok())
            .build()
            .flags(link)
            .user_data(1),
        opcode::SetSockOpt::new(
            Fixed(0),
            libc::SOL_SOCKET as u32,
            libc::SO_TIMESTAMPNS as u32,
            (&raw const ON).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
        .build()
        .flags(link)
        .user_data(2),
        opcode::Close::new(Fixed(0)).build().user_data(3),
    ];
    // SAFETY: the option's value is a static.
    if unsafe { ring.submission().push_multiple(&sqes) }.is_err() {
        return false;
    }
    if ring.submit_and_wait(sqes.len()).is_err() {
        return false;
    }
    let mut cq = ring.completion();
    cq.sync();
    let results: Vec<i32> = cq.map(|c| c.result()).collect();
    results.len() == sqes.len() && results.iter().all(|r| *r >= 0)
}

/// A connection's socket as the ring makes it in table slot `slot`: its
/// options, its source and its connect, in one linked chain.
pub(crate) struct RingSetup<'a> {
    pub(crate) slot: u32,
    pub(crate) to: &'a (libc::sockaddr_storage, libc::socklen_t),
    pub(crate) from: Option<&'a (libc::sockaddr_storage, libc::socklen_t)>,
    pub(crate) reset: bool,
    pub(crate) nodelay: bool,
}

impl RingSetup<'_> {
    /// The chain's first `n` entries: socket, options, bind, connect.
    /// Every step must succeed for the connect to go out, and one that
    /// fails says why under the connect's own `user_data` (a step
    /// cancelled behind it then names an older epoch, ignored); stamps
    /// and NODELAY, as on epoll, only cost accuracy or a delay when
    /// refused, so the chain goes on past them. The addresses must
    /// outlive the submission.
    pub(crate) fn chain(&self, user_data: u64) -> ([squeue::Entry; 7], usize) {
        let must = squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS;
        let may = squeue::Flags::IO_HARDLINK | squeue::Flags::SKIP_SUCCESS;
        let fd = Fixed(self.slot);
        let opt = |level: i32, name: i32, value: *const libc::c_void, len: usize| {
            opcode::SetSockOpt::new(fd, level as u32, name as u32, value, len as u32).build()
        };
        let int = std::mem::size_of::<libc::c_int>();
        let on = (&raw const ON).cast();
        let mut chain: [squeue::Entry; 7] = std::array::from_fn(|_| opcode::Nop::new().build());
        let mut n = 0;
        let mut add = |e: squeue::Entry| {
            chain[n] = e;
            n += 1;
        };
        let (to, to_len) = self.to;
        add(
            opcode::Socket::new(libc::c_int::from(to.ss_family), libc::SOCK_STREAM, 0)
                .file_index(DestinationSlot::try_from_slot_target(self.slot).ok())
                .build()
                .flags(must)
                .user_data(user_data),
        );
        add(opt(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, on, int)
            .flags(may)
            .user_data(0));
        if self.nodelay {
            add(opt(libc::IPPROTO_TCP, libc::TCP_NODELAY, on, int)
                .flags(may)
                .user_data(0));
        }
        if self.reset {
            let l = (&raw const LINGER_ZERO).cast();
            let size = std::mem::size_of::<libc::linger>();
            add(opt(libc::SOL_SOCKET, libc::SO_LINGER, l, size)
                .flags(must)
                .user_data(user_data));
        }
        if let Some((src, src_len)) = self.from {
            add(
                opt(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, on, int)
                    .flags(must)
                    .user_data(user_data),
            );
            add(
                opcode::Bind::new(fd, (src as *const libc::sockaddr_storage).cast(), *src_len)
                    .build()
                    .flags(must)
                    .user_data(user_data),
            );
        }
        add(
            opcode::Connect::new(fd, (to as *const libc::sockaddr_storage).cast(), *to_len)
                .build()
                .user_data(user_data),
        );
        (chain, n)
    }
}

/// `TCP_NODELAY` on `fd`.
pub(crate) fn nodelay(fd: i32) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &1i32)
}

/// `SO_LINGER` 0 on `fd`: its close sends a reset.
pub(crate) fn linger_zero(fd: i32) -> io::Result<()> {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, &l)
}

fn setsockopt<T>(fd: i32, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: value points to a T of the size given, which is what the
    // option reads.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_address_is_the_connections_and_a_reset_leaves_no_time_wait() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let c = connect(to, Some("127.0.0.3".parse().unwrap()), true).unwrap();
        let (_peer, from) = l.accept().unwrap();
        assert_eq!(from.ip(), "127.0.0.3".parse::<IpAddr>().unwrap());
        // A source of the other family cannot be bound.
        assert!(connect(to, Some("::1".parse().unwrap()), false).is_err());
        drop(c);
    }
}
