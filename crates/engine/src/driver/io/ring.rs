//! A thread's io_uring ring and what it owns: the table of registered
//! files its connections' sockets sit in, the ring of buffers it provides
//! the kernel for receives, each connection's send in flight, and the one
//! enter per turn that submits what the turn queued and waits.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::VecDeque;
use std::io;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::os::fd::{OwnedFd, RawFd};

use io_uring::types::{CancelBuilder, Fixed, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::clock::{now_ns, Lead};
use crate::driver::WRITEV_MAX;

use super::alarm::Alarm;
use super::{nap, socket};

/// One buffer of the provided ring: room for a read's header, its stamp
/// and its data.
const BUF_SIZE: usize = 16 * 1024;
/// Where each buffer starts after the one before: its size and five cache
/// lines more. Buffers a power of two apart would start in one set of
/// each cache (every 16 KiB maps to the same set of a 64-set first-level
/// cache, and to one of four groups of a 1,024-set second level), so the
/// heads of the answers the kernel copied in one turn would evict one
/// another before the turn reads them. Five lines, an odd count, spread
/// them over every set; a keep-alive answer's head is about five lines.
const BUF_STRIDE: usize = BUF_SIZE + 5 * 64;
const MIN_BUFS: usize = 64;
const MAX_BUFS: usize = 512;
pub(super) const BGID: u16 = 0;
/// Room for the `SCM_TIMESTAMPNS` control message of a receive.
const CONTROL_LEN: usize = 64;

pub(super) const OP_CONNECT: u64 = 1;
pub(super) const OP_RECV: u64 = 2;
pub(super) const OP_SEND: u64 = 3;
/// A quiet send (`SendSlot::quiet`): it completes only when it fails or
/// falls short.
pub(super) const OP_SEND_QUIET: u64 = 4;
/// The ring's timer (alarm.rs).
pub(super) const OP_ALARM: u64 = 5;

/// The longest request sent quietly. A keep-alive connection's next
/// request is queued once its last was answered, whose answer acknowledged
/// every byte of it: the socket's write queue is empty, and the kernel
/// takes a request this short whole into one buffer as the send is
/// submitted (it is under half the least send buffer a socket can have).
/// A longer one, an upload, can be answered before the server has read it
/// all (a 413), while the send still waits for room: it keeps its
/// completion, which says when the connection may send again.
pub(super) const QUIET_MAX: usize = 2048;

pub(super) fn user_data(op: u64, i: usize, epoch: u32) -> u64 {
    (u64::from(epoch) << 32) | ((i as u64) << 3) | op
}

pub(super) fn decode(ud: u64) -> (u64, usize, u32) {
    (
        ud & 7,
        ((ud & 0xffff_ffff) >> 3) as usize,
        (ud >> 32) as u32,
    )
}

/// Set in a test to have the ring make no sockets of its own, as a kernel
/// before 6.7 would not.
pub(crate) const NO_DIRECT_ENV: &str = "THRONG_URING_NO_DIRECT";

/// Set in a test to have every ring refused, as a kernel that has
/// io_uring disabled would.
pub(crate) const REFUSE_ENV: &str = "THRONG_URING_REFUSE";

/// How long the end of a run waits for the completions of its last sends:
/// those on a socket with room complete as they are submitted, and a
/// cancelled one at once; this only bounds a kernel that is slow to.
pub(super) const LAST_SENDS_WAIT_NS: u64 = 5_000_000;

/// A connection's send in flight.
///
/// A connection's only request, short enough (`QUIET_MAX`), is sent
/// quietly (`IOSQE_CQE_SKIP_SUCCESS`): a send that goes out whole posts no
/// completion, one fewer per keep-alive response, and its bytes are
/// counted as it is queued; a completion comes only when it failed or fell
/// short, and takes back what did not go out. Its bytes are the prepared
/// request's, which outlive the run, so nothing of the send can be
/// overwritten while the kernel may still read it.
#[derive(Clone, Copy, Default)]
pub(super) struct SendSlot {
    /// A send that completes is in flight: no other may be queued.
    pub(super) busy: bool,
    /// Bytes of the send in flight.
    pub(super) len: usize,
    /// The last quiet send, until it is known to have fallen short.
    pub(super) quiet: Option<Quiet>,
}

/// A quiet send, counted whole as it was queued: until a failure or the
/// end's cancel says otherwise, its bytes went out.
#[derive(Clone, Copy)]
pub(super) struct Quiet {
    /// The connection's epoch when it was queued: its name on the ring.
    pub(super) epoch: u32,
    pub(super) len: u16,
    /// Counted in the measured phase, not the warmup.
    pub(super) measured: bool,
}

/// What a run's last sends wrote, and what its quiet sends, counted whole
/// as they were queued, did not.
#[derive(Default)]
pub(super) struct LastSends {
    pub(super) written: u64,
    /// Bytes not sent, by phase: the warmup's, then the measured phase's.
    pub(super) unsent: [u64; 2],
}

pub(crate) struct Uring {
    pub(super) ring: ManuallyDrop<IoUring>,
    /// The provided buffers, and the ring that hands them to the kernel.
    bufs: *mut u8,
    bufs_len: usize,
    entries: *mut types::BufRingEntry,
    entries_layout: Layout,
    nbufs: u16,
    tail: u16,
    /// What a multishot recvmsg is told of the room for a name and control.
    pub(super) recv_msg: Box<libc::msghdr>,
    pub(super) sends: Box<[SendSlot]>,
    /// Pipelined sends: `per` vectors a connection for the kernel to read
    /// its requests from, and the message that points at them. A
    /// connection with one request at a time sends from the request's
    /// bytes and needs neither, which keeps a ring's memory per
    /// connection near epoll's.
    pub(super) iovs: Box<[libc::iovec]>,
    pub(super) msgs: Box<[libc::msghdr]>,
    pub(super) per: usize,
    /// Where each target's connections connect, and the source
    /// addresses they bind to, for the run's whole life.
    pub(super) addrs: Box<[(libc::sockaddr_storage, libc::socklen_t)]>,
    pub(super) sources: Box<[(libc::sockaddr_storage, libc::socklen_t)]>,
    /// The ring makes each connection's socket in the table itself.
    pub(super) direct: bool,
    /// Without `direct`: the descriptor each slot is set to, and those
    /// opened this turn, closed once what puts them into the table is
    /// submitted (the table keeps the socket).
    pub(super) fds: Box<[RawFd]>,
    pub(super) opened: Vec<OwnedFd>,
    /// Completions taken from the ring, not yet handled.
    pub(super) cqes: VecDeque<cqueue::Entry>,
    /// The last turn had completions: the load is flowing.
    pub(super) flowing: bool,
    /// How many answers a nap waits for, and the count the last enter
    /// asked for when it was a nap that reached its bound first.
    pub(super) naps: nap::NapCount,
    short: Option<usize>,
    /// Receives completed since the ring was made.
    pub(super) recvs: u64,
    /// Sends queued since the last enter that complete (not quiet ones):
    /// their completions come with it, and a nap's count is of
    /// completions beyond them.
    pub(super) sends_queued: usize,
    /// What ends a wait that no answer ends: one timeout kept on the
    /// ring, not one armed by each wait that sleeps.
    pub(super) alarm: Alarm,
    /// The wall clock's lead on the monotonic one, for the turns' receive
    /// stamps.
    pub(super) lead: Lead,
    /// The longest paced wait spun rather than slept: what a sleep costs
    /// the thread (spin.rs); 0, none spun, until a clocked thread measures it.
    pub(crate) spin_ns: u64,
    /// How late a timed sleep of the thread ends: first the median of
    /// those the same measure took, then learnt from the paced sleeps
    /// that ran to their limits (spin.rs). A paced wait that sleeps,
    /// sleeps that much less and spins the rest. 0 until measured.
    pub(crate) wake_late_ns: u64,
    /// The open model's sleeps to a send's instant are not ended by
    /// answers: an answer's time is the kernel's receive stamp, whenever
    /// the thread takes it, and no send waits on it before the instant
    /// (a connection's next request is due connections × interval
    /// later), as long as the sleep is short (`PAST_ANSWERS_MAX_NS`).
    /// Taken at the instant, with the send, the answers cost the
    /// thread one wake a send rather than two, and the server's CPU no
    /// wake of the thread at all: the kernel queues an answer's work for
    /// a thread that waits for more than it has, and wakes nobody. Users
    /// (their think time starts at the answer) and ticks (which wait for
    /// the answers awaited) leave it off.
    pub(crate) paced_sleeps_past_answers: bool,
    /// The longest a wait for an answer spins before it sleeps
    /// (`LoadSpec::spin`), 0 for none; and what the last wait spun: its
    /// time, and whether an answer ended it (spin.rs).
    pub(crate) answer_spin_ns: u64,
    pub(super) spun: Option<(u64, bool)>,
    /// The kernel flags deferred work for this thread in the ring's
    /// shared flags (`IORING_SETUP_TASKRUN_FLAG`), so a spin can watch
    /// memory rather than enter to look.
    pub(super) taskrun_flag: bool,
}

impl Uring {
    /// A ring for `conns` connections of up to `depth` requests in
    /// flight each, to the `targets`' addresses, from `sources` in turn
    /// when there are any.
    pub(crate) fn new(
        conns: usize,
        depth: usize,
        targets: &[SocketAddr],
        sources: &[std::net::IpAddr],
    ) -> io::Result<Self> {
        if std::env::var_os(REFUSE_ENV).is_some() {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        let sq = (conns * 4).next_power_of_two().clamp(64, 4096) as u32;
        let cq = (sq * 4).min(65536);
        // Task work (receives completed by the network stack) runs in the
        // one enter per turn, not whenever the thread is interrupted.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_submit_all()
            .setup_cqsize(cq)
            .build(sq)
            .or_else(|_| {
                IoUring::builder()
                    .setup_coop_taskrun()
                    .setup_submit_all()
                    .setup_cqsize(cq)
                    .build(sq)
            })?;
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        for op in [
            opcode::Connect::CODE,
            opcode::Send::CODE,
            opcode::SendMsg::CODE,
            opcode::RecvMsgMulti::CODE,
            opcode::AsyncCancel2::CODE,
            opcode::Close::CODE,
            opcode::FilesUpdate::CODE,
            opcode::Timeout::CODE,
        ] {
            if !probe.is_supported(op) {
                return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
            }
        }
        ring.submitter().register_files_sparse(conns as u32)?;
        let mut ring = ring;
        // Only the first form of the ring asks for the flag, and only it
        // is single-issuer.
        let taskrun_flag = ring.params().is_setup_single_issuer();
        let direct = std::env::var_os(NO_DIRECT_ENV).is_none()
            && (sources.is_empty() || probe.is_supported(opcode::Bind::CODE))
            && probe.is_supported(opcode::Socket::CODE)
            && socket::makes_sockets(&mut ring);

        // Buffers are held only from a receive's completion until the
        // turn handles it, so the pool follows the receives one turn can
        // see rather than the connections; a turn that finds it empty
        // receives again on the next (ENOBUFS, below).
        let per = depth.clamp(1, WRITEV_MAX);
        let nbufs = conns.next_power_of_two().clamp(MIN_BUFS, MAX_BUFS);
        let page = 4096;
        let bufs_len = nbufs * BUF_STRIDE;
        // Mapped rather than allocated zeroed: an allocator clears (and so
        // makes resident) every page, where a mapping's pages cost memory
        // only once a receive writes into them, mostly the first of each
        // buffer for small responses.
        // SAFETY: an anonymous private mapping takes no descriptor and
        // aliases nothing; the result is checked.
        let bufs = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bufs_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if bufs == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let bufs = bufs as *mut u8;
        let entries_layout =
            Layout::from_size_align(nbufs * std::mem::size_of::<types::BufRingEntry>(), page)
                .expect("layout");
        // SAFETY: the layout has a non-zero size.
        let entries = unsafe { alloc_zeroed(entries_layout) as *mut types::BufRingEntry };
        if entries.is_null() {
            // SAFETY: mapped just above with this length.
            unsafe { libc::munmap(bufs.cast(), bufs_len) };
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let mut u = Uring {
            ring: ManuallyDrop::new(ring),
            bufs,
            bufs_len,
            entries,
            entries_layout,
            nbufs: nbufs as u16,
            tail: 0,
            recv_msg: Box::new(msghdr_for(CONTROL_LEN)),
            sends: vec![SendSlot::default(); conns].into_boxed_slice(),
            iovs: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                };
                if per > 1 { conns * per } else { 0 }
            ]
            .into_boxed_slice(),
            // SAFETY: an all-zero msghdr is valid.
            msgs: (0..if per > 1 { conns } else { 0 })
                .map(|_| unsafe { std::mem::zeroed() })
                .collect(),
            per,
            addrs: targets.iter().map(|a| socket::sockaddr(*a)).collect(),
            sources: sources
                .iter()
                .map(|ip| socket::sockaddr(SocketAddr::new(*ip, 0)))
                .collect(),
            direct,
            fds: vec![-1; if direct { 0 } else { conns }].into_boxed_slice(),
            opened: Vec::new(),
            cqes: VecDeque::with_capacity(cq as usize),
            flowing: false,
            naps: nap::NapCount::new(),
            short: None,
            recvs: 0,
            sends_queued: 0,
            alarm: Alarm::new(),
            lead: Lead::default(),
            spin_ns: 0,
            wake_late_ns: 0,
            paced_sleeps_past_answers: false,
            answer_spin_ns: 0,
            spun: None,
            taskrun_flag,
        };
        // SAFETY: `entries` is page-aligned, holds `nbufs` entries, and
        // lives until the ring is dropped (see Drop).
        unsafe {
            u.ring
                .submitter()
                .register_buf_ring_with_flags(u.entries as u64, u.nbufs, BGID, 0)?;
        }
        for bid in 0..u.nbufs {
            u.give_back(bid);
        }
        // One lookup less per enter, where the kernel has it.
        let _ = u.ring.submitter().register_ring_fd();
        Ok(u)
    }

    /// Hand buffer `bid` (back) to the kernel.
    pub(super) fn give_back(&mut self, bid: u16) {
        let mask = self.nbufs - 1;
        // SAFETY: the index is within the ring's `nbufs` entries, and the
        // buffer within the allocation.
        unsafe {
            let e = &mut *self.entries.add((self.tail & mask) as usize);
            e.set_addr(self.bufs.add(bid as usize * BUF_STRIDE) as u64);
            e.set_len(BUF_SIZE as u32);
            e.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
            let tail =
                types::BufRingEntry::tail(self.entries) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }

    /// Buffer `bid`'s first `len` bytes.
    ///
    /// # Safety
    /// The buffer must be one the kernel completed and not yet given back.
    pub(super) unsafe fn buffer<'b>(&self, bid: u16, len: usize) -> &'b [u8] {
        std::slice::from_raw_parts(self.bufs.add(bid as usize * BUF_STRIDE), len.min(BUF_SIZE))
    }

    pub(super) fn push(&mut self, sqe: squeue::Entry) -> io::Result<()> {
        self.push_all(&[sqe])
    }

    /// Queue `sqes` together (a link must not be split by a submit).
    pub(super) fn push_all(&mut self, sqes: &[squeue::Entry]) -> io::Result<()> {
        // SAFETY: every entry queued points at memory that outlives its
        // operation: the request bytes, the connection's send slot, the
        // ring's own tables.
        unsafe {
            if self.ring.submission().push_multiple(sqes).is_ok() {
                return Ok(());
            }
            // Full: send what is queued to make room.
            self.ring.submit()?;
            self.ring
                .submission()
                .push_multiple(sqes)
                .map_err(|_| io::Error::from(io::ErrorKind::WouldBlock))
        }
    }

    /// Take what has completed into `cqes`.
    pub(super) fn reap(&mut self) {
        let mut cq = self.ring.completion();
        cq.sync();
        let before = self.cqes.len();
        self.cqes.extend(&mut cq);
        let answers = self
            .cqes
            .range(before..)
            .filter(|c| decode(c.user_data()).0 == OP_RECV)
            .count();
        self.recvs += answers as u64;
        self.naps.looked(answers, self.short.take());
    }

    /// Submit what the turn queued and wait, from `now`, until a
    /// completion comes or `wait_ns` has passed. Napping (`answers` > 1),
    /// the wait is for `answers` completions beyond those of the turn's
    /// own sends, for at most `NAP_BOUND_NS` (see nap.rs). A wait for one
    /// completion is limited by the ring's alarm (alarm.rs), armed only
    /// when the one armed would not end the wait in time, unless `paced`:
    /// its limit is a schedule's next instant, which the next wait moves
    /// on from, and it carries that limit itself, or is spun (spin.rs).
    /// True when it napped.
    pub(super) fn enter(
        &mut self,
        now: u64,
        wait_ns: u64,
        answers: usize,
        paced: bool,
    ) -> io::Result<bool> {
        let sends = std::mem::take(&mut self.sends_queued);
        let napping = answers > 1 && self.cqes.is_empty() && wait_ns > 0;
        let bounded = napping && wait_ns > nap::NAP_BOUND_NS;
        let want = if napping { sends + answers } else { 1 };
        let res = if !self.cqes.is_empty() || wait_ns == 0 {
            self.ring.submit_and_wait(0).map(drop)
        } else {
            // A nap's count is met by answers alone: a timeout that fired
            // before the nap began (its completion not taken yet) would
            // not end it, so a nap carries its own bound. So does a wait
            // whose limit moves on with every wait, the next instant of a
            // schedule (`paced`). The kernel arms the enter's own limit
            // only if the wait sleeps, and cancels it if an answer comes
            // first; a timeout queued on the ring is armed at once and
            // fires at its instant, the thread asleep or not. In the open
            // model, whose waits end by the next send's instant, that was
            // two timers in five responses, each an exit to the
            // hypervisor to arm and an interrupt to fire
            // (docs/performance.md). Any other wait keeps the alarm, even
            // one that submits work: a keep-alive send is quiet, brings no
            // completion, and the wait after it sleeps, where a limit of
            // its own would be armed and cancelled each time.
            if paced && !napping {
                // Spun, or slept to its lateness and spun to its instant
                // (spin.rs).
                self.paced_wait(now, wait_ns)
            } else if napping {
                let bound = wait_ns.clamp(1, nap::NAP_BOUND_NS);
                let t = Timespec::new()
                    .sec(bound / 1_000_000_000)
                    .nsec((bound % 1_000_000_000) as u32);
                let args = SubmitArgs::new().timespec(&t);
                self.ring
                    .submitter()
                    .submit_with_args(want, &args)
                    .map(drop)
            } else {
                // Any one completion ends this wait, the alarm's too,
                // whether it fires during the wait or fired before it
                // (its completion is then posted as the wait begins).
                if let Some((sqe, generation)) = self.alarm.by(now + wait_ns) {
                    let sqe = sqe.user_data(user_data(OP_ALARM, 0, generation));
                    if let Err(e) = self.push(sqe) {
                        // Not queued: none is armed for a later wait.
                        self.alarm.rang(generation);
                        return Err(e);
                    }
                }
                let spin = self.answer_spin_ns.min(wait_ns);
                if spin > 0 {
                    match self.spin_for_answer(spin) {
                        Ok(true) => Ok(()),
                        Ok(false) => self.ring.submit_and_wait(1).map(drop),
                        Err(e) => Err(e),
                    }
                } else {
                    self.ring.submit_and_wait(1).map(drop)
                }
            }
        };
        self.opened.clear();
        // The enter returns what it submitted, not that its wait timed
        // out, and the queue's length cannot tell either: a connection's
        // receives are one arrival to the kernel's count, but each is a
        // completion once the thread takes them. The clock tells. (A
        // nap bounded by the turn's own deadline is not judged: that
        // deadline can be a moment away.)
        if bounded {
            let reached = now_ns().saturating_sub(now) >= nap::NAP_BOUND_NS * 15 / 16;
            self.short = reached.then_some(answers);
        }
        match res {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(napping)
            }
            r => r.map(|_| napping),
        }
    }

    /// Hand the kernel what the turn queued, without waiting.
    pub(crate) fn submit(&mut self) {
        let _ = self.enter(0, 0, 0, false);
    }

    /// The run is over: the bytes its last sends put on the wire. A send
    /// counts when its completion is taken, and an ending loop takes no
    /// more: the sends of its last turn, submitted as it ended, were in no
    /// count, one request short of what the server read. Sends still held
    /// by a full socket are cancelled, so that their completions say how
    /// much went out; the wait for them is bounded by `wait_ns`. A quiet
    /// send was counted as it was queued: each is cancelled by its own
    /// name, which brings exactly one completion, the send's own if it was
    /// still waiting for room (what it did not send), or the cancel's
    /// finding nothing.
    pub(super) fn last_sends(&mut self, wait_ns: u64) -> LastSends {
        let mut expected = 0;
        for i in 0..self.sends.len() {
            let slot = &mut self.sends[i];
            let (busy, quiet) = (std::mem::take(&mut slot.busy), slot.quiet);
            let mut sqes = [opcode::Nop::new().build(), opcode::Nop::new().build()];
            let mut n = 0;
            if busy {
                sqes[n] = opcode::AsyncCancel2::new(CancelBuilder::fd(Fixed(i as u32)).all())
                    .build()
                    .flags(squeue::Flags::SKIP_SUCCESS)
                    .user_data(0);
                n += 1;
            }
            if let Some(q) = quiet {
                let name = user_data(OP_SEND_QUIET, i, q.epoch);
                sqes[n] = opcode::AsyncCancel2::new(CancelBuilder::user_data(name))
                    .build()
                    .flags(squeue::Flags::SKIP_SUCCESS)
                    .user_data(0);
                n += 1;
            }
            if n == 0 {
                continue;
            }
            if self.push_all(&sqes[..n]).is_err() {
                break;
            }
            expected += n;
        }
        if expected > 0 {
            // A fired alarm ends a wait whatever count it asked for, and
            // its completion is none of these: wait again for the rest.
            let end = now_ns() + wait_ns;
            let mut got = 0;
            loop {
                let left = end.saturating_sub(now_ns());
                let t = Timespec::new().nsec(left.min(999_999_999) as u32);
                let args = SubmitArgs::new().timespec(&t);
                let _ = self
                    .ring
                    .submitter()
                    .submit_with_args(expected - got, &args);
                let mut cq = self.ring.completion();
                cq.sync();
                for c in &mut cq {
                    got += usize::from(decode(c.user_data()).0 != OP_ALARM);
                    self.cqes.push_back(c);
                }
                drop(cq);
                if got >= expected || left == 0 {
                    break;
                }
            }
        }
        let mut cq = self.ring.completion();
        cq.sync();
        self.cqes.extend(&mut cq);
        drop(cq);
        let mut last = LastSends::default();
        for c in std::mem::take(&mut self.cqes) {
            let (op, i, epoch) = decode(c.user_data());
            match op {
                OP_SEND if c.result() > 0 => last.written += c.result() as u64,
                OP_SEND_QUIET => {
                    if let Some(short) = self.quiet_short(i, epoch, c.result()) {
                        last.unsent[short.0 as usize] += short.1;
                    }
                }
                _ => {}
            }
        }
        last
    }

    /// A completion of connection `i`'s quiet send of `epoch` came with
    /// `res`: what it did not send, and whether that was counted in the
    /// measured phase; None for a send not known here (counted already).
    pub(super) fn quiet_short(&mut self, i: usize, epoch: u32, res: i32) -> Option<(bool, u64)> {
        self.sends.get_mut(i)?.quiet_short(epoch, res)
    }
}

impl SendSlot {
    /// See [`Uring::quiet_short`]: a send completes at most once, so the
    /// slot forgets it.
    fn quiet_short(&mut self, epoch: u32, res: i32) -> Option<(bool, u64)> {
        let q = self.quiet.filter(|q| q.epoch == epoch)?;
        self.quiet = None;
        let sent = res.max(0) as u64;
        Some((q.measured, (q.len as u64).saturating_sub(sent)))
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // Nothing may write into the buffers once they are freed: cancel
        // what is pending, close the ring, then free them.
        let _ = self
            .ring
            .submitter()
            .register_sync_cancel(None, CancelBuilder::any());
        // SAFETY: the ring is not used after this.
        unsafe { ManuallyDrop::drop(&mut self.ring) };
        // SAFETY: mapped and allocated in `new` with this length and layout.
        unsafe {
            libc::munmap(self.bufs.cast(), self.bufs_len);
            dealloc(self.entries as *mut u8, self.entries_layout);
        }
    }
}

fn msghdr_for(control: usize) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is valid.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_controllen = control as _;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(epoch: u32, len: u16, measured: bool) -> SendSlot {
        SendSlot {
            quiet: Some(Quiet {
                epoch,
                len,
                measured,
            }),
            ..SendSlot::default()
        }
    }

    #[test]
    fn consecutive_buffers_start_in_different_cache_sets() {
        // A first-level cache of 64 sets of 64-byte lines, and a second of
        // 1,024: the heads of any 64 buffers in a row (the answers of one
        // turn) fall in 64 different sets of the first, and of 1,024 in a
        // row in 1,024 of the second.
        for sets in [64usize, 1024] {
            let mut seen = std::collections::HashSet::new();
            for b in 0..sets {
                seen.insert(b * BUF_STRIDE / 64 % sets);
            }
            assert_eq!(seen.len(), sets, "{sets} sets");
        }
    }

    #[test]
    fn a_quiet_send_that_fails_takes_back_what_it_did_not_send_once() {
        // Failed before a byte went (a reset peer): all 150, in its phase.
        let mut s = quiet(7, 150, true);
        assert_eq!(s.quiet_short(7, -libc::EPIPE), Some((true, 150)));
        assert_eq!(s.quiet_short(7, -libc::EPIPE), None, "taken back once");
        // Cut short after 100 bytes (cancelled while waiting for room).
        let mut s = quiet(7, 150, false);
        assert_eq!(s.quiet_short(7, 100), Some((false, 50)));
        // The end's cancel found it still waiting, nothing sent.
        let mut s = quiet(7, 150, true);
        assert_eq!(s.quiet_short(7, -libc::ECANCELED), Some((true, 150)));
        // A completion of the slot's connection before it was reopened
        // names another epoch: the slot's own send is not its.
        let mut s = quiet(8, 150, true);
        assert_eq!(s.quiet_short(7, -libc::EPIPE), None);
        assert!(s.quiet.is_some());
        // A slot that sent nothing quietly takes nothing back.
        assert_eq!(SendSlot::default().quiet_short(0, -libc::EPIPE), None);
    }

    #[test]
    fn a_ring_makes_its_sockets_itself_where_the_kernel_can() {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut v = release.trim().split(['.', '-']).map(|x| x.parse::<u32>());
        let version = (v.next(), v.next());
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let u = match Uring::new(4, 1, &[to], &[]) {
            Ok(u) => u,
            Err(e) => {
                println!("skipped: this kernel gives no ring ({e})");
                return;
            }
        };
        match version {
            // Told not to, as the fallback's tests do.
            _ if std::env::var_os(NO_DIRECT_ENV).is_some() => assert!(!u.direct),
            (Some(Ok(major)), Some(Ok(minor))) if (major, minor) >= (6, 7) => {
                assert!(u.direct, "kernel {}", release.trim());
            }
            _ => println!("kernel {}: direct sockets {}", release.trim(), u.direct),
        }
        // The probe's completions are taken: none is left for the run.
        let mut u = u;
        let _ = u.ring.submit_and_wait(0);
        u.reap();
        assert_eq!(u.cqes.len(), 0);
    }

    /// Waits with nothing to answer them, each ended by the ring's alarm:
    /// at its own limit when none is armed or the armed one is later, and
    /// never past it.
    #[test]
    fn the_alarm_ends_every_wait_by_its_limit_and_is_armed_again_once_it_fired() {
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut u = match Uring::new(4, 1, &[to], &[]) {
            Ok(u) => u,
            Err(e) => {
                println!("skipped: this kernel gives no ring ({e})");
                return;
            }
        };
        let ms = 1_000_000;
        let wait = |u: &mut Uring, limit: u64| {
            let t0 = now_ns();
            u.enter(t0, limit, 0, false).unwrap();
            let took = now_ns() - t0;
            u.reap();
            let alarms: Vec<u32> = u
                .cqes
                .drain(..)
                .filter(|c| decode(c.user_data()).0 == OP_ALARM)
                .map(|c| decode(c.user_data()).2)
                .collect();
            for g in &alarms {
                u.alarm.rang(*g);
            }
            (took, alarms.len())
        };
        // Nothing armed: the wait arms one for its limit and it fires.
        let (took, fired) = wait(&mut u, 3 * ms);
        assert!(took >= 3 * ms && took < 500 * ms, "{took} ns");
        assert_eq!((fired, u.alarm.armed()), (1, None));
        // A fired alarm is armed again by the next wait.
        let (took, fired) = wait(&mut u, 2 * ms);
        assert!(took >= 2 * ms && took < 500 * ms, "{took} ns");
        assert_eq!(fired, 1);
        // An alarm 10 s away does not hold a wait that must end in 2 ms:
        // a sooner one is queued, and the later one stays armed beside it.
        let far = now_ns() + 10_000 * ms;
        let (sqe, generation) = u.alarm.by(far).unwrap();
        u.push(sqe.user_data(user_data(OP_ALARM, 0, generation)))
            .unwrap();
        u.submit();
        let (took, fired) = wait(&mut u, 2 * ms);
        assert!(took >= 2 * ms && took < 500 * ms, "{took} ns");
        assert_eq!((fired, u.alarm.armed()), (1, None));
    }

    /// A nap for answers that will not come ends at its own bound even
    /// when the ring's alarm fired before it began, its completion not
    /// taken: a wait for a count is not ended by a timeout that fired
    /// before it. Run on a thread of its own, so that a nap that never
    /// ends fails the test rather than holding it.
    #[test]
    fn a_nap_ends_by_its_own_bound_after_the_alarm_fired_unseen() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
            let Ok(mut u) = Uring::new(4, 1, &[to], &[]) else {
                let _ = tx.send(None);
                return;
            };
            let ms = 1_000_000;
            let at = now_ns() + ms;
            let (sqe, generation) = u.alarm.by(at).unwrap();
            u.push(sqe.user_data(user_data(OP_ALARM, 0, generation)))
                .unwrap();
            u.submit();
            // The alarm falls due while nothing waits; its completion is
            // not taken.
            while now_ns() < at + 2 * ms {
                std::hint::spin_loop();
            }
            let t0 = now_ns();
            u.enter(t0, 50 * ms, 2, false).unwrap();
            let _ = tx.send(Some(now_ns() - t0));
        });
        match rx.recv_timeout(std::time::Duration::from_secs(10)) {
            Ok(Some(took)) => {
                let bound = nap::NAP_BOUND_NS;
                assert!(took >= bound && took < 40 * bound, "{took} ns");
            }
            Ok(None) => println!("skipped: this kernel gives no ring"),
            Err(_) => panic!("the nap did not end within 10 s"),
        }
    }
}
