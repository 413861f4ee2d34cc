//! The io_uring backend on the driver's loop: the same `Worker`, requests,
//! responses, timeouts and counts as with epoll, only the syscalls differ.
//! The ring itself (its table, buffers and enter) is ring.rs.
//!
//! Each thread has one ring. A connection's socket sits in the ring's
//! table of registered files, at the connection's own index, so no
//! operation looks its descriptor up; its connect, sends and close are
//! queued on the ring as the loop goes, and submitted together by the one
//! `io_uring_enter` that also waits for the next completions, once per
//! loop turn. A connection receives through a multishot `recvmsg` armed
//! once per connection: the kernel fills buffers the thread provided (one
//! buffer ring per thread) as data arrives, each with the `SO_TIMESTAMPNS`
//! stamp of its last segment, so a response still ends when its last byte
//! reached the socket (see rx.rs), not when the loop got round to it.
//!
//! Where the kernel can (6.7 and later: sockets' `setsockopt` as a ring
//! command), a connection's socket is made in its table slot by the ring
//! itself, its options set and its connect issued in one linked chain,
//! and closed there: no descriptor ever exists in the process, so
//! `socket()`, the table update and `close()` cost no syscalls of their
//! own. A load of new connections pays those once per request. Elsewhere
//! the socket is opened as on epoll and put into the table, and its
//! descriptor closed once the table holds it.
//!
//! A completion names its connection, what it was, and the connection's
//! `epoch` when it was queued: one for a connection closed since is
//! ignored (its buffer given back), as a close cancels what is still
//! pending on the socket before taking it out of the table.
//!
//! Sends: at most one per connection in flight, of every request queued
//! and not yet written (up to `WRITEV_MAX`), from the prepared request
//! bytes, which outlive the run; `MSG_WAITALL` has the kernel send all of
//! it before completing, or fail. A request counts as written once its
//! send is queued, as it would once a write() took it: nothing can take it
//! back after that, and the server may answer as soon as the turn ends.
//! A connection's only request, if short, is sent quietly (see
//! `SendSlot`): it completes only if it fails, so a keep-alive response
//! costs one completion, its receive's.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use io_uring::types::{CancelBuilder, Fixed};
use io_uring::{cqueue, opcode, squeue, types};

use crate::clock::realtime_ns;
use crate::driver::*;

use super::ring::{
    decode, user_data, Quiet, BGID, LAST_SENDS_WAIT_NS, OP_ALARM, OP_CONNECT, OP_RECV, OP_SEND,
    OP_SEND_QUIET, QUIET_MAX,
};
use super::socket;

/// Completions handled between two readings of the clock in a turn, when
/// none of them needed one: what bounds the turn by its time when its
/// receives read none. Handling one takes a microsecond or less, so a
/// turn overruns its time by a few tens of microseconds at most.
const READ_EVERY: u32 = 32;

impl Worker<'_> {
    /// Queue connection `i`'s connect to `addr`.
    pub(crate) fn uring_connect(&mut self, i: usize, addr: SocketAddr) {
        let from = self.next_source_index();
        let direct = self.io.uring_ref().is_some_and(|u| u.direct);
        if !direct {
            self.uring_connect_opened(i, addr, from);
            return;
        }
        let epoch = self.conns[i].epoch;
        let target = self.conns[i].target_of_connect as usize;
        let (reset, nodelay) = (self.plan.spec.linger_zero, !self.dial.one_write);
        let Some(u) = self.io.uring() else {
            return;
        };
        let setup = socket::RingSetup {
            slot: i as u32,
            to: &u.addrs[target],
            from: from.map(|k| &u.sources[k]),
            reset,
            nodelay,
        };
        let (chain, n) = setup.chain(user_data(OP_CONNECT, i, epoch));
        self.uring_queue_connect(i, &chain[..n]);
    }

    /// Queue what opens connection `i`'s socket and connects it; from now
    /// on the slot holds a socket (`State` is not `Down`) until `shut`.
    fn uring_queue_connect(&mut self, i: usize, sqes: &[squeue::Entry]) {
        let Some(u) = self.io.uring() else {
            return;
        };
        u.sends[i].busy = false;
        let queued = u.push_all(sqes);
        self.conns[i].state = State::Connecting;
        if let Err(e) = queued {
            self.fail(i, classify_connect(&e));
        }
    }

    /// Queue connection `i`'s connect to `addr` on a socket opened as on
    /// epoll and put into the table.
    fn uring_connect_opened(&mut self, i: usize, addr: SocketAddr, from: Option<usize>) {
        let from = from.map(|k| self.plan.spec.sources[k]);
        let opened = socket::open(addr, from, self.plan.spec.linger_zero, 0).and_then(|s| {
            // As on epoll: one request in one write has nothing for Nagle
            // to hold back.
            if !self.dial.one_write {
                socket::nodelay(s.as_raw_fd())?;
            }
            rx::enable_stamps(s.as_raw_fd());
            Ok(s)
        });
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => {
                self.fail(i, classify_connect(&e));
                return;
            }
        };
        let epoch = self.conns[i].epoch;
        let target = self.conns[i].target_of_connect as usize;
        let Some(u) = self.io.uring() else {
            return;
        };
        u.fds[i] = fd.as_raw_fd();
        let update = opcode::FilesUpdate::new(&u.fds[i], 1)
            .offset(i as i32)
            .build()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
            .user_data(0);
        let (sa, len) = &u.addrs[target];
        let connect = opcode::Connect::new(Fixed(i as u32), sa as *const _ as *const _, *len)
            .build()
            .user_data(user_data(OP_CONNECT, i, epoch));
        // Open until the update is submitted, so no number is reused
        // before; the table's reference keeps the socket after.
        u.opened.push(fd);
        self.uring_queue_connect(i, &[update, connect]);
    }

    /// Queue a send of what connection `i` has not written, unless one is
    /// in flight (its completion sends the rest).
    pub(crate) fn uring_flush(&mut self, i: usize) {
        let c = &self.conns[i];
        if c.written >= c.len || c.peer_closed || c.state != State::Open {
            return;
        }
        let (head, written, write_off, pending, epoch) =
            (c.head, c.written, c.write_off, c.len - c.written, c.epoch);
        let alone = c.len == 1 && written == 0 && write_off == 0;
        let measuring = self.measuring;
        let Some(u) = self.io.uring() else {
            return;
        };
        let slot = &mut u.sends[i];
        if slot.busy {
            return;
        }
        let n = pending.min(u.per);
        let ring = &self.conns[i].ring;
        let req_at = |k: usize| {
            let f = &ring[wrap(head + written + k, ring.len())];
            let req = self.plan.requests.get(f.target, f.last);
            if k == 0 {
                &req[write_off..]
            } else {
                req
            }
        };
        let flags = libc::MSG_WAITALL | libc::MSG_NOSIGNAL;
        let (sqe, total) = if n == 1 {
            // The prepared request lives as long as the run.
            let req = req_at(0);
            let sqe = opcode::Send::new(Fixed(i as u32), req.as_ptr(), req.len() as u32)
                .flags(flags)
                .build();
            (sqe, req.len())
        } else {
            let iov = &mut u.iovs[i * u.per..(i + 1) * u.per];
            let mut total = 0;
            for (k, v) in iov.iter_mut().enumerate().take(n) {
                let req = req_at(k);
                total += req.len();
                *v = libc::iovec {
                    iov_base: req.as_ptr() as *mut libc::c_void,
                    iov_len: req.len(),
                };
            }
            let msg = &mut u.msgs[i];
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = n as _;
            let sqe = opcode::SendMsg::new(Fixed(i as u32), msg)
                .flags(flags as u32)
                .build();
            (sqe, total)
        };
        let quiet = alone && n == 1 && total <= QUIET_MAX;
        let slot = &mut u.sends[i];
        let sqe = if quiet {
            slot.quiet = Some(Quiet {
                epoch,
                len: total as u16,
                measured: measuring,
            });
            sqe.flags(squeue::Flags::SKIP_SUCCESS)
                .user_data(user_data(OP_SEND_QUIET, i, epoch))
        } else {
            slot.busy = true;
            slot.len = total;
            sqe.user_data(user_data(OP_SEND, i, epoch))
        };
        if let Err(e) = u.push(sqe) {
            if quiet {
                u.sends[i].quiet = None;
            }
            self.fail(i, classify_io(&e, ErrorKind::Write));
            return;
        }
        if quiet {
            self.counters(measuring).bytes_written += total as u64;
        } else {
            u.sends_queued += 1;
        }
        // Handed to the kernel, which sends it all or fails the
        // connection: on the wire from now on, as a write() would have it.
        self.wrote(i, total);
    }

    /// Whether connection `i` has a send in flight on the ring: the ring
    /// counts a request written once its send is submitted, so only this
    /// tells that the kernel has not yet taken all of it.
    pub(crate) fn uring_sending(&self, i: usize) -> bool {
        self.io.uring_ref().is_some_and(|u| u.sends[i].busy)
    }

    /// Connection `i` is closed: cancel what is pending on its socket and
    /// close it in the table (the last reference: the socket's close).
    pub(crate) fn uring_shut(&mut self, i: usize) {
        // A connection that is down holds no socket: its connect was never
        // queued, or it was closed already.
        if self.conns[i].state == State::Down {
            return;
        }
        let Some(u) = self.io.uring() else {
            return;
        };
        u.sends[i].busy = false;
        let cancel = opcode::AsyncCancel2::new(CancelBuilder::fd(Fixed(i as u32)).all())
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(0);
        let close = opcode::Close::new(Fixed(i as u32))
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(0);
        // A failure to queue leaves the socket in the table until the slot
        // is reused or the ring closed: nothing more can be done.
        let _ = u.push_all(&[cancel, close]);
    }

    fn arm_recv(&mut self, i: usize) {
        let epoch = self.conns[i].epoch;
        let Some(u) = self.io.uring() else {
            return;
        };
        let sqe = opcode::RecvMsgMulti::new(Fixed(i as u32), &*u.recv_msg, BGID)
            .build()
            .user_data(user_data(OP_RECV, i, epoch));
        if let Err(e) = u.push(sqe) {
            self.fail(i, classify_io(&e, ErrorKind::Read));
        }
    }

    /// Handle what has completed, until the turn's time is up.
    /// `lead`: the wall clock's on the monotonic one (`look`).
    fn uring_turn(&mut self, wake: u64, lead: u64) {
        let mut end = (self.now + TURN_NS).min(wake);
        if let Some(due) = self.next_clock_due() {
            end = end.min(due);
        }
        self.turn_end_ns = end;
        let Some(u) = self.io.uring() else {
            return;
        };
        u.reap();
        u.flowing = !u.cqes.is_empty();
        // `now` was read as the look ended (`uring_step`, `uring_sweep`).
        // Bounded by the completions reaped above (nothing adds to them
        // during the turn) and by the turn's time. The clock is read as a
        // completion needs it rather than before each: a receive's time is
        // its stamp (`arrival_led`), and a send that went out whole needs
        // none; the requests the answers let go are timed after the turn,
        // as they go out (`send_deferred`). So that the turn's time still
        // bounds it, the clock is read every `READ_EVERY` completions
        // besides.
        let mut unread = 0;
        while self.now < self.turn_end_ns {
            let Some(cqe) = self.io.uring().and_then(|u| u.cqes.pop_front()) else {
                break;
            };
            let (op, res) = (decode(cqe.user_data()).0, cqe.result());
            unread += 1;
            if unread == READ_EVERY || op != OP_RECV && !(op == OP_SEND && res > 0) {
                self.now = now_ns();
                unread = 0;
            }
            self.uring_complete(cqe, lead);
        }
        // What the turn queued goes out after it, at this time: the
        // requests issued next, and the holds they end, are timed from it.
        self.now = now_ns();
    }

    fn uring_complete(&mut self, cqe: cqueue::Entry, lead: u64) {
        let (op, i, epoch) = decode(cqe.user_data());
        let res = cqe.result();
        let live = op != 0
            && i < self.conns.len()
            && self.conns[i].epoch == epoch
            && self.conns[i].state != State::Down;
        match op {
            OP_CONNECT if live && self.conns[i].state == State::Connecting => {
                if res < 0 {
                    self.fail(i, classify_connect(&io::Error::from_raw_os_error(-res)));
                } else {
                    self.arm_recv(i);
                    self.on_connected(i);
                }
            }
            OP_SEND if live => {
                let len = self.io.uring().map_or(0, |u| {
                    u.sends[i].busy = false;
                    u.sends[i].len
                });
                if res > 0 {
                    let measuring = self.measuring;
                    self.counters(measuring).bytes_written += res as u64;
                }
                if res < 0 {
                    let e = io::Error::from_raw_os_error(-res);
                    self.fail(i, classify_io(&e, ErrorKind::Write));
                } else if (res as usize) < len {
                    // MSG_WAITALL sends it all unless the connection failed.
                    self.now = now_ns();
                    self.fail(i, ErrorKind::Write);
                } else {
                    self.uring_flush(i);
                }
            }
            // The send of a connection shut since (its request timed out,
            // the window ended) was cut short, but what it had put on the
            // wire reached the server all the same.
            OP_SEND if res > 0 => {
                let measuring = self.measuring;
                self.counters(measuring).bytes_written += res as u64;
            }
            // A quiet send failed or fell short: what it did not send was
            // counted as it was queued.
            OP_SEND_QUIET => {
                let short = self.io.uring().and_then(|u| u.quiet_short(i, epoch, res));
                if let Some((measured, unsent)) = short {
                    let c = self.counters(measured);
                    c.bytes_written = c.bytes_written.saturating_sub(unsent);
                }
                if live {
                    let kind = if res < 0 {
                        classify_io(&io::Error::from_raw_os_error(-res), ErrorKind::Write)
                    } else {
                        ErrorKind::Write
                    };
                    self.fail(i, kind);
                }
            }
            OP_ALARM => {
                if let Some(u) = self.io.uring() {
                    u.alarm.rang(epoch);
                }
            }
            OP_RECV => {
                let bid = cqueue::buffer_select(cqe.flags());
                if live {
                    self.uring_received(i, res, bid, cqueue::more(cqe.flags()), lead);
                }
                if let (Some(bid), Some(u)) = (bid, self.io.uring()) {
                    u.give_back(bid);
                }
            }
            _ => {}
        }
    }

    fn uring_received(&mut self, i: usize, res: i32, bid: Option<u16>, more: bool, lead: u64) {
        if res < 0 {
            // What fails the connection is timed (its life, if it ends).
            self.now = now_ns();
            if res == -libc::ENOBUFS {
                // Every buffer was taken: receive again once some are back.
                self.arm_recv(i);
            } else {
                let e = io::Error::from_raw_os_error(-res);
                self.fail(i, classify_io(&e, ErrorKind::Read));
            }
            return;
        }
        let Some(bid) = bid else {
            return;
        };
        let Some(u) = self.io.uring_ref() else {
            return;
        };
        // SAFETY: the kernel completed this buffer; it is given back only
        // after this function returns, and nothing else writes to it.
        let buf = unsafe { u.buffer(bid, res as usize) };
        let Ok(out) = types::RecvMsgOut::parse(buf, &u.recv_msg) else {
            self.now = now_ns();
            self.fail(i, ErrorKind::Read);
            return;
        };
        let data = out.payload_data();
        if data.is_empty() {
            // A FIN carries no stamp: see `read` (epoll.rs).
            self.now = now_ns();
            let at = self.now;
            self.on_eof(i, at);
            return;
        }
        let stamp = rx::stamp_in(out.control_data());
        let epoch = self.conns[i].epoch;
        self.conns[i].stale = false;
        let arrived = self.arrival_led(stamp, lead);
        let measuring = self.read_phase(i);
        self.counters(measuring).bytes_read += data.len() as u64;
        if measuring {
            self.tick_timeline(0, 0, data.len() as u64);
        }
        let open = self.input(i, data, epoch, arrived);
        if open && !more && self.conns[i].epoch == epoch {
            self.arm_recv(i);
        }
    }

    /// A whole run's end, on the ring: count what its last sends wrote.
    /// Only there: between a session's windows the drain takes them.
    pub(crate) fn uring_count_last_sends(&mut self) {
        let Some(u) = self.io.uring() else {
            return;
        };
        let last = u.last_sends(LAST_SENDS_WAIT_NS);
        let measuring = self.measuring;
        self.counters(measuring).bytes_written += last.written;
        for (measured, unsent) in [(false, last.unsent[0]), (true, last.unsent[1])] {
            let c = self.counters(measured);
            c.bytes_written = c.bytes_written.saturating_sub(unsent);
        }
    }

    /// One look of the loop on the ring: submit what the turn queued and
    /// wait (or nap) until `wake`, or the clock's work `due`, then handle
    /// what completed. Returns how the window ended, if it did.
    pub(crate) fn uring_step(&mut self, wake: u64, due: Option<u64>) -> Option<Ended> {
        let paced = due.is_some_and(|d| d < wake);
        let wake_at = due.map_or(wake, |d| d.min(wake));
        if let Err(e) = self.uring_wait(wake_at, paced) {
            return Some((now_ns(), false, Some(e)));
        }
        // The ring paces no looks (its naps are counts), so `Pace` is the
        // epoll loop's alone.
        let lead = self.look();
        if let Some(end) = self.window.end_ns {
            if self.now >= end {
                return Some((end, false, None));
            }
        }
        self.uring_turn(wake, lead);
        // The turn ended reading the clock; the loop's next pass begins
        // with that reading (`spin`).
        self.turn_timed = true;
        None
    }

    /// Sessions: take what completed while the connections sat idle.
    pub(crate) fn uring_sweep(&mut self) {
        if let Some(u) = self.io.uring() {
            u.submit();
        }
        let lead = self.look();
        let wake = self.next_scan_ns;
        self.uring_turn(wake, lead);
    }

    /// The time as a look ends, and the wall clock's lead on the monotonic
    /// one: what turns the turn's receive stamps into the monotonic clock's
    /// time, taken once a turn rather than once a receive (`arrival_led`),
    /// and read from the clocks once a millisecond at most (`Lead`).
    fn look(&mut self) -> u64 {
        self.now = now_ns();
        let now = self.now;
        match self.io.uring() {
            Some(u) => u.lead.at(now),
            None => realtime_ns().saturating_sub(now),
        }
    }
}
