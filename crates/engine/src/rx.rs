//! Reads that carry the kernel's receive time.
//!
//! A response's latency ends when its last byte reached the client's socket,
//! not when the client got round to reading it. With `SO_TIMESTAMPNS` the
//! kernel stamps every incoming segment as it is received, and `recvmsg`
//! hands back the stamp of the last segment it consumed. The client's own
//! scheduling delays (a busy thread, a nap to batch wake-ups) then stay out
//! of the latency it reports.
//!
//! What a stamp is, and so how the driver uses it: the receive time of the
//! last *stamped* segment the read consumed, on CLOCK_REALTIME. It is later
//! than the loop's last look at its own clock whenever data kept arriving
//! after the loop woke up (a response streamed while it was read, a thread
//! that lost its CPU), so it must never be bounded by a clock reading taken
//! before the read; and it is brought onto the monotonic clock through the
//! two clocks read together right after the read, not through an offset
//! kept from earlier. Segments received before stamping was on carry no
//! stamp, so a read's stamp can belong to an earlier segment than its last:
//! a response never ends before the read that brought its first byte.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;

/// Ask the kernel to stamp what this socket receives. A refusal only costs
/// accuracy: reads then fall back to the time the client read them. So does
/// the kernel's lag in turning stamping on: the first socket to ask flips a
/// static key from a work queue, and segments received before that carry no
/// stamp.
pub(crate) fn enable_stamps(fd: RawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a valid c_int for the length given; `fd` is an open socket.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const _ as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// Room for one `SCM_TIMESTAMPNS` control message, u64-aligned as cmsghdr needs.
const CMSG_WORDS: usize = 8;

/// Read into `buf`. Returns the bytes read and, when the kernel gave one, the
/// CLOCK_REALTIME nanosecond at which the last segment read was received.
pub(crate) fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut control = [0u64; CMSG_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = size_of::<[u64; CMSG_WORDS]>() as _;
    // SAFETY: `msg` describes `buf` and `control`, both valid and writable.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the kernel filled `msg_controllen` bytes of `control` with
    // well-formed control messages; the CMSG_* walk stays inside them.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// The stamp among control messages laid out as `recvmsg` leaves them
/// (what a multishot receive of io_uring puts before the data).
pub(crate) fn stamp_in(control: &[u8]) -> Option<u64> {
    let hdr = size_of::<libc::cmsghdr>();
    let align = size_of::<usize>();
    let mut at = 0;
    let mut stamp = None;
    while at + hdr <= control.len() {
        // SAFETY: `hdr` bytes from `at` are within `control`; read unaligned.
        let c: libc::cmsghdr =
            unsafe { std::ptr::read_unaligned(control.as_ptr().add(at) as *const _) };
        let len = c.cmsg_len as usize;
        if len < hdr || at + len > control.len() {
            break;
        }
        if c.cmsg_level == libc::SOL_SOCKET
            && c.cmsg_type == libc::SCM_TIMESTAMPNS
            && len >= hdr + size_of::<libc::timespec>()
        {
            // SAFETY: the timespec lies within this message, checked above.
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(control.as_ptr().add(at + hdr) as *const _) };
            stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
        at += len.div_ceil(align) * align;
    }
    stamp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::realtime_ns;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_read_carries_the_time_its_data_arrived() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert!(enable_stamps(client.as_raw_fd()));
        let mut buf = [0u8; 64];
        // Stamping starts once the kernel's work queue has flipped its
        // switch (see `enable_stamps`): wait for a stamped byte first.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            server.write_all(b".").unwrap();
            let mut stamped = false;
            while !stamped {
                match recv_stamped(client.as_raw_fd(), &mut buf) {
                    Ok((_, stamp)) => stamped = stamp.is_some(),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            if stamped {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no receive stamp in 5 s"
            );
            std::thread::yield_now();
        }
        let before = realtime_ns();
        server.write_all(b"hello").unwrap();
        let after = realtime_ns();
        // The data is already queued on loopback: the stamp must lie between
        // the write and now, however late the read is.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (n, stamp) = recv_stamped(client.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        let stamp = stamp.expect("kernel receive stamp");
        assert!(
            stamp >= before && stamp <= after,
            "{before} <= {stamp} <= {after}"
        );
    }

    #[test]
    fn a_stamp_is_found_among_control_messages_as_recvmsg_lays_them_out() {
        // What a multishot receive puts before its data: the control
        // messages as recvmsg would fill msg_control, here a stranger
        // first, then the stamp.
        let hdr = size_of::<libc::cmsghdr>();
        let ts = size_of::<libc::timespec>();
        let mut words = [0u64; 16];
        // SAFETY: the words are plain bytes, u64-aligned as cmsghdr needs.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, size_of::<[u64; 16]>())
        };
        let put = |buf: &mut [u8], at: usize, level: i32, kind: i32, data: &[u8]| {
            let c = libc::cmsghdr {
                cmsg_len: (hdr + data.len()) as _,
                cmsg_level: level,
                cmsg_type: kind,
            };
            // SAFETY: `at + hdr + data.len()` is within `buf`.
            unsafe { std::ptr::write_unaligned(buf.as_mut_ptr().add(at) as *mut _, c) };
            buf[at + hdr..at + hdr + data.len()].copy_from_slice(data);
            at + (hdr + data.len()).div_ceil(8) * 8
        };
        let at = put(buf, 0, libc::IPPROTO_IP, libc::IP_TOS, &[0; 4]);
        let stamp = libc::timespec {
            tv_sec: 1_700_000_000,
            tv_nsec: 123_456_789,
        };
        // SAFETY: a timespec is plain bytes.
        let bytes = unsafe { std::slice::from_raw_parts(&stamp as *const _ as *const u8, ts) };
        let end = put(buf, at, libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, bytes);
        assert_eq!(stamp_in(&buf[..end]), Some(1_700_000_000_123_456_789));
        assert_eq!(stamp_in(&buf[..at]), None);
        assert_eq!(stamp_in(&[]), None);
        // Cut short: no stamp rather than a read past the end.
        assert_eq!(stamp_in(&buf[..end - 4]), None);
    }

    #[test]
    fn nothing_to_read_is_would_block() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _server = listener.accept().unwrap();
        let mut buf = [0u8; 8];
        let e = recv_stamped(client.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
