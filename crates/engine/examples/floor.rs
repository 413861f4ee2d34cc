//! The least a keep-alive HTTP/1.1 client can spend on a response, to
//! hold a load generator's cost against:
//!
//!     cargo run --release -p throng-engine --example floor -- ADDR PATH CONNS SECS [WANT] [stamped]
//!
//! `CONNS` keep-alive connections to `ADDR` each send one fixed request
//! and take its answer, over and over, for `SECS` seconds. Nothing is
//! parsed but the first answer (for its length), nothing is timed or
//! counted but bytes and answers: every further answer is taken to be as
//! long as the first. The I/O is what a client cannot do without: one
//! send per request and one multishot receive per connection, into
//! provided buffers, all on one io_uring entered once per turn, which
//! waits for `WANT` completions (default 1) to batch them as a nap would.
//! `stamped` receives as throng does, with `recvmsg` and each read's
//! kernel receive stamp (`SO_TIMESTAMPNS`): what the stamps cost the
//! kernel, apart from what throng does with them.
//! Prints the answers, their rate and the process's CPU (user+sys) per
//! answer; `bench/vs-peers.sh`'s `hold` mode runs it beside wrk and
//! throng.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use io_uring::types::{self, BufRingEntry, Fixed};
use io_uring::{cqueue, opcode, IoUring};

const BUF: usize = 4096;
const NBUFS: u16 = 256;
const SEND: u64 = 1 << 32;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: floor ADDR PATH CONNS SECS [WANT] [stamped]");
        return ExitCode::from(2);
    }
    let stamped = match args.get(5).map(String::as_str) {
        None => false,
        Some("stamped") => true,
        Some(other) => {
            eprintln!("floor: {other}: the sixth argument can only be `stamped`");
            return ExitCode::from(2);
        }
    };
    let parsed = (
        args[0].parse::<SocketAddr>(),
        args[2].parse::<usize>(),
        args[3].parse::<u64>(),
        args.get(4).map_or(Ok(1), |w| w.parse::<usize>()),
    );
    let (Ok(addr), Ok(conns), Ok(secs), Ok(want)) = parsed else {
        eprintln!("floor: ADDR is host:port, CONNS, SECS and WANT are whole numbers");
        return ExitCode::from(2);
    };
    let load = Load {
        addr,
        conns: conns.max(1),
        secs,
        want: want.clamp(1, conns.max(1)),
        stamped,
    };
    match run(&load, &args[1]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The length of the server's answer to `req`, from one exchange.
fn answer_len(addr: SocketAddr, req: &[u8]) -> std::io::Result<usize> {
    let mut s = TcpStream::connect(addr)?;
    s.write_all(req)?;
    let mut got = Vec::new();
    let mut buf = [0u8; BUF];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other("the server closed before answering"));
        }
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        let body = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .ok_or_else(|| std::io::Error::other("the answer has no Content-Length"))?;
        let total = end + 4 + body;
        if got.len() >= total {
            return Ok(total);
        }
    }
}

fn cpu_us() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    us(u.ru_utime) + us(u.ru_stime)
}

/// What to load and how.
struct Load {
    addr: SocketAddr,
    conns: usize,
    secs: u64,
    want: usize,
    stamped: bool,
}

fn run(load: &Load, path: &str) -> std::io::Result<()> {
    let &Load {
        addr,
        conns,
        secs,
        want,
        stamped,
    } = load;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let len = answer_len(addr, &req)?;
    let on: libc::c_int = 1;
    let streams = (0..conns)
        .map(|_| {
            let s = TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            if !stamped {
                return Ok(s);
            }
            // SAFETY: `on` is a c_int of the length given; the socket is open.
            let set = unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_TIMESTAMPNS,
                    &on as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if set != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(s)
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let fds: Vec<i32> = streams.iter().map(|s| s.as_raw_fd()).collect();
    let entries = (conns * 2).next_power_of_two().max(8) as u32;
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(entries * 4)
        .build(entries)?;
    ring.submitter().register_files(&fds)?;

    // One buffer ring, handed to the kernel once and given back as read.
    let bufs = vec![0u8; BUF * NBUFS as usize];
    let layout = std::alloc::Layout::from_size_align(NBUFS as usize * 16, 4096).unwrap();
    // SAFETY: the layout has a non-zero size; the block lives to the end of
    // the run (freed below, after the ring).
    let ring_entries = unsafe { std::alloc::alloc_zeroed(layout) } as *mut BufRingEntry;
    // SAFETY: page-aligned, NBUFS entries, alive while the ring is.
    unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(ring_entries as u64, NBUFS, 0, 0)?
    };
    let mut tail: u16 = 0;
    let mut give_back = |bid: u16| {
        // SAFETY: bid < NBUFS, so the entry and the buffer are in bounds.
        unsafe {
            let e = &mut *ring_entries.add((tail % NBUFS) as usize);
            e.set_addr(bufs.as_ptr().add(bid as usize * BUF) as u64);
            e.set_len(BUF as u32);
            e.set_bid(bid);
            tail = tail.wrapping_add(1);
            let t = BufRingEntry::tail(ring_entries) as *const std::sync::atomic::AtomicU16;
            (*t).store(tail, std::sync::atomic::Ordering::Release);
        }
    };
    for bid in 0..NBUFS {
        give_back(bid);
    }

    let send = |i: usize| {
        opcode::Send::new(Fixed(i as u32), req.as_ptr(), req.len() as u32)
            .build()
            .flags(io_uring::squeue::Flags::SKIP_SUCCESS)
            .user_data(SEND | i as u64)
    };
    // Stamped: room for the stamp's control message, as throng asks.
    // SAFETY: an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_controllen = 64;
    let recv = |i: usize| {
        if stamped {
            opcode::RecvMsgMulti::new(Fixed(i as u32), &msg, 0)
                .build()
                .user_data(i as u64)
        } else {
            opcode::RecvMulti::new(Fixed(i as u32), 0)
                .build()
                .user_data(i as u64)
        }
    };
    // Bytes of the current answer each connection has.
    let mut have = vec![0usize; conns];
    for i in 0..conns {
        // SAFETY: the request outlives the run.
        unsafe { ring.submission().push_multiple(&[recv(i), send(i)]) }
            .map_err(|_| std::io::Error::other("submission queue full"))?;
    }
    let start = Instant::now();
    let cpu0 = cpu_us();
    let end = start + Duration::from_secs(secs);
    let mut answers: u64 = 0;
    let mut pending = Vec::with_capacity(conns * 2);
    while Instant::now() < end {
        ring.submit_and_wait(want)?;
        pending.clear();
        pending.extend(
            ring.completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for &(ud, res, flags) in &pending {
            if ud & SEND != 0 || res < 0 {
                return Err(std::io::Error::other(format!(
                    "connection {}: {}",
                    ud & 0xffff_ffff,
                    std::io::Error::from_raw_os_error(-res.min(0))
                )));
            }
            let i = ud as usize;
            let mut got = res as usize;
            if let Some(bid) = cqueue::buffer_select(flags) {
                if stamped {
                    let read = &bufs[bid as usize * BUF..][..got.min(BUF)];
                    got = types::RecvMsgOut::parse(read, &msg)
                        .map_or(0, |out| out.payload_data().len());
                }
                give_back(bid);
            }
            if got == 0 {
                return Err(std::io::Error::other("the server closed a connection"));
            }
            have[i] += got;
            while have[i] >= len {
                have[i] -= len;
                answers += 1;
                // SAFETY: the request outlives the run.
                unsafe { ring.submission().push(&send(i)) }
                    .map_err(|_| std::io::Error::other("submission queue full"))?;
            }
            if !cqueue::more(flags) {
                // SAFETY: as above.
                unsafe { ring.submission().push(&recv(i)) }
                    .map_err(|_| std::io::Error::other("submission queue full"))?;
            }
        }
    }
    let cpu = cpu_us() - cpu0;
    let wall = start.elapsed().as_secs_f64();
    println!(
        "answers {answers} rate {:.0}/s cpu_us_per_answer {:.2}",
        answers as f64 / wall,
        cpu / answers.max(1) as f64
    );
    drop(ring);
    // SAFETY: allocated above with this layout; the ring that used it is gone.
    unsafe { std::alloc::dealloc(ring_entries as *mut u8, layout) };
    drop(streams);
    Ok(())
}
