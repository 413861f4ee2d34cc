//! The QUIC loop's UDP socket, with the kernel's segmentation offloads
//! where it has them: on send (GSO, `UDP_SEGMENT`), one call hands the
//! kernel several datagrams of one size laid end to end, which it cuts
//! apart below the socket layer; on receive (GRO, `UDP_GRO`), one call
//! returns several datagrams of one sender laid end to end, with their
//! size beside them. A busy QUIC client otherwise pays a system call and
//! a pass through the socket layer per 1,200-byte datagram, which is what
//! a TCP client never pays per segment. Linux 4.18 (GSO) and 5.0 (GRO);
//! the load's flag turns both off. Every receive also carries the kernel's
//! time of arrival (`SO_TIMESTAMPNS`), so that what a datagram completes
//! ends when it came, not when the loop got round to it (crate::rx).

use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Most datagrams one GSO send may carry (the kernel's UDP_MAX_SEGMENTS).
pub(super) const MAX_SEGMENTS: usize = 64;
/// Largest UDP payload a receive may return, coalesced or not.
pub(super) const MAX_RECEIVE: usize = 64 * 1024;

pub(super) struct Udp {
    sock: UdpSocket,
    /// The kernel took `UDP_SEGMENT`: sends may carry several datagrams.
    gso: bool,
    /// The kernel took `UDP_GRO`: receives may return several.
    gro: bool,
}

/// A receive's arrival, on CLOCK_REALTIME as the kernel stamps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Stamp(pub Option<u64>);

impl Stamp {
    /// On the monotonic clock, through `clocks` (monotonic, realtime)
    /// read together after the receive: never later than that reading,
    /// and the reading itself when the kernel gave no stamp.
    pub(super) fn mono(self, clocks: (u64, u64)) -> u64 {
        let (mono, real) = clocks;
        match self.0 {
            Some(s) => mono.saturating_sub(real.saturating_sub(s)),
            None => mono,
        }
    }
}

/// One receive: where it came from, and the size of each datagram in it
/// (all but the last), which is the whole when it holds one.
pub(super) struct Received {
    pub from: SocketAddr,
    pub len: usize,
    pub stride: usize,
    /// With GRO, one stamp for all the datagrams coalesced.
    pub stamp: Stamp,
}

fn set_int(fd: i32, level: i32, name: i32, value: libc::c_int) -> bool {
    // SAFETY: a valid socket and a c_int option value, for the call's length.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

fn get_int(fd: i32, level: i32, name: i32) -> bool {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid socket, and a c_int the kernel writes into.
    unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        ) == 0
    }
}

/// `addr` as the kernel takes it.
fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all zeros is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// What the kernel wrote into `storage`, if it is an address of ours.
fn from_sockaddr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin: &libc::sockaddr_in =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                sin.sin_addr.s_addr.to_ne_bytes().into(),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6: &libc::sockaddr_in6 =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                sin6.sin6_addr.s6_addr.into(),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Room for the control messages of a receive (GRO's c_int and the
/// stamp's timespec) or a send (GSO's u16), aligned as cmsghdr wants.
#[repr(C)]
union Control {
    _align: libc::cmsghdr,
    buf: [u8; 128],
}

impl Udp {
    /// `sock` with the offloads turned on where the kernel has them and
    /// `offload` asks for them.
    pub(super) fn new(sock: UdpSocket, offload: bool) -> Udp {
        let fd = sock.as_raw_fd();
        // The option is per send; reading it says the kernel knows it.
        let gso = offload && get_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT);
        let gro = offload && set_int(fd, libc::SOL_UDP, libc::UDP_GRO, 1);
        // A refusal costs only accuracy: receives then end when read.
        crate::rx::enable_stamps(fd);
        Udp { sock, gso, gro }
    }

    pub(super) fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    pub(super) fn gso(&self) -> bool {
        self.gso
    }

    pub(super) fn gro(&self) -> bool {
        self.gro
    }

    /// Datagrams one send may carry.
    pub(super) fn max_segments(&self) -> usize {
        if self.gso {
            MAX_SEGMENTS
        } else {
            1
        }
    }

    /// Sends `buf` to `to`: one datagram, or with `segment` (GSO) several
    /// of that size, the last perhaps shorter. A send the kernel refuses
    /// as a whole with GSO (a device without checksum offload: EIO) turns
    /// GSO off and goes again datagram by datagram. Returns the calls made.
    pub(super) fn send(&mut self, buf: &[u8], to: SocketAddr, segment: Option<usize>) -> u64 {
        let one_by_one = |sock: &UdpSocket, size: usize| {
            let mut calls = 0;
            for d in buf.chunks(size) {
                let _ = sock.send_to(d, to);
                calls += 1;
            }
            calls
        };
        match segment.filter(|&s| s > 0 && s < buf.len()) {
            None => {
                let _ = self.sock.send_to(buf, to);
                1
            }
            Some(size) if !self.gso => one_by_one(&self.sock, size),
            Some(size) => match self.send_segments(buf, to, size) {
                Ok(()) => 1,
                // The device cannot take it (no checksum offload) or the
                // kernel refuses the size: datagram by datagram from now.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) => {
                    self.gso = false;
                    1 + one_by_one(&self.sock, size)
                }
                // Datagrams the kernel has no room for are lost as on a
                // network, and QUIC's recovery sends them again.
                Err(_) => 1,
            },
        }
    }

    fn send_segments(&self, buf: &[u8], to: SocketAddr, size: usize) -> io::Result<()> {
        let (mut addr, addr_len) = sockaddr(&to);
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut control = Control { buf: [0; 128] };
        // SAFETY: msghdr is plain data; all zeros is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = addr_len;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        // SAFETY: CMSG_SPACE of a u16 fits the 128 bytes of `control`, and
        // the header the kernel's macros find there is ours to write.
        unsafe {
            msg.msg_control = control.buf.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(size_of::<u16>() as u32) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_UDP;
            (*cmsg).cmsg_type = libc::UDP_SEGMENT;
            (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), size as u16);
        }
        // SAFETY: every pointer in `msg` is valid for the call.
        let n = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, 0) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Receives what is waiting, up to `BATCH` receives in one call
    /// (recvmmsg), into `batch`'s buffers; the count, and each one's
    /// sender, length and stride in `batch.got`. Fewer than `BATCH` means
    /// the socket's queue was emptied, so the caller need not ask again
    /// only to hear EAGAIN: one call a wake where recvmsg took one a
    /// datagram and one more.
    pub(super) fn receive_many(&self, batch: &mut Batch) -> io::Result<usize> {
        for m in batch.msgs.iter_mut() {
            // The kernel wrote these back on the last call.
            m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_hdr.msg_controllen = size_of::<Control>() as _;
            m.msg_hdr.msg_flags = 0;
            m.msg_len = 0;
        }
        // SAFETY: every header points into `batch`'s own buffers, fixed at
        // its making (their heap blocks never move); the kernel writes at
        // most each iovec's length into its buffer.
        let n = unsafe {
            libc::recvmmsg(
                self.sock.as_raw_fd(),
                batch.msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        batch.got.clear();
        for i in 0..n {
            let m = &batch.msgs[i];
            let len = m.msg_len as usize;
            let from = from_sockaddr(&batch.addrs[i]).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "an address of no family")
            })?;
            let (stride, stamp) = controls_of(&m.msg_hdr, len);
            batch.got.push(Received {
                from,
                len,
                stride,
                stamp,
            });
        }
        Ok(n)
    }
}

/// The size of each datagram a receive of `len` bytes holds: the GRO
/// control message's, else the whole (at least 1, so that an empty
/// datagram splits into none); and the receive's stamp.
fn controls_of(msg: &libc::msghdr, len: usize) -> (usize, Stamp) {
    let mut stride = len.max(1);
    let mut stamp = None;
    // SAFETY: the control buffer is the kernel's, walked with its macros
    // within `msg_controllen`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
                let s = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                if s > 0 {
                    stride = s as usize;
                }
            } else if (*cmsg).cmsg_level == libc::SOL_SOCKET
                && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    (stride, Stamp(stamp))
}

/// Receives one recvmmsg call can take.
pub(super) const BATCH: usize = 16;

/// The buffers and headers of a batched receive, made once per thread
/// (`BATCH` × 64 KB) and reused: each header points into the batch's own
/// heap blocks, which stay put when the batch moves.
pub(super) struct Batch {
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    /// Written by the kernel through `msgs` only: kept for their pointers.
    _controls: Vec<Control>,
    _iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    /// What the last call received, in order.
    pub got: Vec<Received>,
}

impl Batch {
    pub(super) fn new() -> Batch {
        let mut bufs = vec![0u8; BATCH * MAX_RECEIVE];
        // SAFETY: sockaddr_storage is plain data; all zeros is a valid value.
        let mut addrs: Vec<libc::sockaddr_storage> =
            (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
        let mut controls: Vec<Control> = (0..BATCH).map(|_| Control { buf: [0; 128] }).collect();
        let mut iovs: Vec<libc::iovec> = bufs
            .chunks_mut(MAX_RECEIVE)
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let msgs = (0..BATCH)
            .map(|i| {
                // SAFETY: mmsghdr is plain data; all zeros is a valid value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_name = std::ptr::addr_of_mut!(addrs[i]).cast();
                m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                m.msg_hdr.msg_iov = std::ptr::addr_of_mut!(iovs[i]);
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = std::ptr::addr_of_mut!(controls[i]).cast();
                m.msg_hdr.msg_controllen = size_of::<Control>() as _;
                m
            })
            .collect();
        Batch {
            bufs,
            addrs,
            _controls: controls,
            _iovs: iovs,
            msgs,
            got: Vec::with_capacity(BATCH),
        }
    }

    /// The bytes of the `i`th receive of the last call.
    pub(super) fn bytes(&self, i: usize) -> &[u8] {
        let at = i * MAX_RECEIVE;
        &self.bufs[at..at + self.got[i].len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(offload: bool) -> (Udp, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        (Udp::new(a, offload), b)
    }

    #[test]
    fn a_segmented_send_arrives_as_its_datagrams() {
        let (mut udp, b) = pair(true);
        if !udp.gso() {
            eprintln!("skipped: this kernel takes no UDP_SEGMENT");
            return;
        }
        // Three datagrams of 1,200 bytes and a last of 500, in one call.
        let buf: Vec<u8> = (0..4100u32).map(|i| (i % 251) as u8).collect();
        let to = b.local_addr().unwrap();
        assert_eq!(udp.send(&buf, to, Some(1200)), 1);
        let mut got = Vec::new();
        let mut d = [0u8; 2048];
        for _ in 0..4 {
            let (n, from) = b.recv_from(&mut d).unwrap();
            assert_eq!(from, udp.socket().local_addr().unwrap());
            got.push(d[..n].to_vec());
        }
        let sizes: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![1200, 1200, 1200, 500]);
        assert_eq!(got.concat(), buf);
    }

    #[test]
    fn without_offload_every_datagram_is_a_call_of_its_own() {
        let (mut udp, b) = pair(false);
        assert!(!udp.gso() && !udp.gro());
        assert_eq!(udp.max_segments(), 1);
        let buf = vec![7u8; 3000];
        let to = b.local_addr().unwrap();
        assert_eq!(udp.send(&buf, to, Some(1000)), 3);
        let mut d = [0u8; 2048];
        for _ in 0..3 {
            assert_eq!(b.recv_from(&mut d).unwrap().0, 1000);
        }
    }

    #[test]
    fn a_receive_says_where_from_and_each_datagram_s_size() {
        let (udp, b) = pair(true);
        let to = udp.socket().local_addr().unwrap();
        for _ in 0..3 {
            b.send_to(&[1u8; 1000], to).unwrap();
        }
        let mut batch = Batch::new();
        let mut datagrams = 0;
        let mut bytes = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while bytes < 3000 && std::time::Instant::now() < deadline {
            let n = match udp.receive_many(&mut batch) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            };
            for i in 0..n {
                let r = &batch.got[i];
                assert_eq!(r.from, b.local_addr().unwrap());
                // With GRO the three may come as one of stride 1,000.
                assert_eq!(r.stride, 1000);
                assert!(batch.bytes(i).iter().all(|&x| x == 1));
                datagrams += r.len.div_ceil(r.stride);
                bytes += r.len;
            }
        }
        assert_eq!((datagrams, bytes), (3, 3000));
    }

    #[test]
    fn one_call_takes_a_batch_and_a_short_batch_means_the_queue_is_empty() {
        let (udp, b) = pair(false);
        let to = udp.socket().local_addr().unwrap();
        // Twenty datagrams of distinct sizes, all queued before the first
        // call: a loopback send is in the receiver's queue on return.
        for k in 0..20u8 {
            b.send_to(&vec![k; 100 + usize::from(k)], to).unwrap();
        }
        let mut batch = Batch::new();
        assert_eq!(udp.receive_many(&mut batch).unwrap(), BATCH);
        let sizes: Vec<usize> = batch.got.iter().map(|r| r.len).collect();
        assert_eq!(sizes, (100..116).collect::<Vec<_>>());
        assert!(batch.bytes(15).iter().all(|&x| x == 15));
        assert_eq!(udp.receive_many(&mut batch).unwrap(), 4);
        assert_eq!(batch.bytes(3), vec![19u8; 119].as_slice());
        let e = udp.receive_many(&mut batch).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn a_receive_read_late_carries_the_time_its_datagram_came() {
        use crate::clock::{now_ns, realtime_ns};
        let (udp, b) = pair(true);
        let to = udp.socket().local_addr().unwrap();
        let mut batch = Batch::new();
        // Until the kernel has flipped its switch (crate::rx::enable_stamps)
        // a datagram comes unstamped, and the kernel stamps it when read:
        // a late read tells the two apart.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "no arrival stamp in 5 s"
            );
            let before = realtime_ns();
            b.send_to(&[9u8; 300], to).unwrap();
            let after = realtime_ns();
            // Queued on loopback on return: read 20 ms late.
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(udp.receive_many(&mut batch).unwrap(), 1);
            let clocks = (now_ns(), realtime_ns());
            let r = &batch.got[0];
            assert_eq!(r.len, 300);
            let stamp = r.stamp.0.expect("a receive stamp");
            if stamp > after {
                continue;
            }
            assert!(before <= stamp, "{before} <= {stamp}");
            // On the monotonic clock: at least the 20 ms before the read.
            let mono = r.stamp.mono(clocks);
            assert!(clocks.0 - mono >= 20_000_000, "{} ns", clocks.0 - mono);
            return;
        }
    }

    #[test]
    fn a_stamp_moves_to_the_monotonic_clock_and_never_past_its_reading() {
        let clocks = (5_000, 1_000_000);
        assert_eq!(Stamp(Some(999_000)).mono(clocks), 4_000);
        assert_eq!(Stamp(None).mono(clocks), 5_000);
        // A stamp past the reading (clocks stepped): the reading.
        assert_eq!(Stamp(Some(1_000_100)).mono(clocks), 5_000);
        // Older than the monotonic clock's start: its start.
        assert_eq!(Stamp(Some(10)).mono(clocks), 0);
    }
}
