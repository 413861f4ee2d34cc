//! Reading what the servers' core charges for plain code, a system call
//! and a context switch (see `throng_model::CorePrices` for why). Each is
//! timed many times over a short fixed count and the lower quartile kept:
//! a timing a neighbour preempted is long, and with timings of a fraction
//! of a millisecond, most are not preempted even on a busy machine, so
//! the reading is what the work costs when it runs. Every count is fixed,
//! so a reading ends in some tens of milliseconds on an idle core and in a
//! bounded multiple of that on a busy one.

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write};
use std::time::Instant;

/// Passes of the integer loop per timing (tens of microseconds).
const LOOP_PASSES: u64 = 20_000;
/// System calls per timing (a fraction of a millisecond).
const SYSCALLS: u32 = 2_000;
/// Round trips between the two threads per timing.
const ROUND_TRIPS: u32 = 200;
/// Timings of each kind; the lower quartile is kept.
const TIMINGS: usize = 21;
/// The kept timing's place among them, from the fastest.
const KEPT: usize = TIMINGS / 4;

/// One reading, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub loop_ns: f64,
    pub syscall_ns: f64,
    pub switch_ns: f64,
}

/// Reads the prices on `cpu`, from threads pinned to it. The caller's own
/// thread stays where it was.
pub fn read(cpu: usize) -> std::io::Result<Reading> {
    std::thread::scope(|s| {
        s.spawn(move || -> std::io::Result<Reading> {
            throng_engine::affinity::pin_current_thread(&[cpu])?;
            let loop_ns = quartile(|| {
                let t = Instant::now();
                black_box(spin(black_box(LOOP_PASSES)));
                t.elapsed().as_nanos() as f64 / LOOP_PASSES as f64
            });
            let syscall_ns = quartile(|| {
                let t = Instant::now();
                for _ in 0..SYSCALLS {
                    // The raw call: a libc may answer getppid from a cache.
                    // SAFETY: getppid takes no arguments and cannot fail.
                    black_box(unsafe { libc::syscall(libc::SYS_getppid) });
                }
                t.elapsed().as_nanos() as f64 / SYSCALLS as f64
            });
            let switch_ns = switches(cpu)?;
            Ok(Reading {
                loop_ns,
                syscall_ns,
                switch_ns,
            })
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the reading thread panicked")))
    })
}

/// Integer work the compiler cannot fold away (xorshift).
fn spin(passes: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..passes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

fn quartile(mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..TIMINGS).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    v[KEPT]
}

/// Half a round trip between this thread and a partner pinned to the same
/// CPU, each blocking in `read` on a pipe until the other writes: each
/// trip is two switches, with the pipe calls that cause them.
fn switches(cpu: usize) -> std::io::Result<f64> {
    let (to_partner_r, to_partner_w) = pipe()?;
    let (to_me_r, to_me_w) = pipe()?;
    let trips = ROUND_TRIPS * TIMINGS as u32;
    std::thread::scope(|s| {
        let partner = s.spawn(move || -> std::io::Result<()> {
            throng_engine::affinity::pin_current_thread(&[cpu])?;
            let (mut r, mut w) = (to_partner_r, to_me_w);
            let mut b = [0u8; 1];
            for _ in 0..trips {
                r.read_exact(&mut b)?;
                w.write_all(&b)?;
            }
            Ok(())
        });
        let (mut r, mut w) = (to_me_r, to_partner_w);
        let mut b = [0u8; 1];
        let mut timings = Vec::with_capacity(TIMINGS);
        let mut mine = Ok(());
        for _ in 0..TIMINGS {
            let t = Instant::now();
            for _ in 0..ROUND_TRIPS {
                if let Err(e) = w.write_all(&b).and_then(|_| r.read_exact(&mut b)) {
                    mine = Err(e);
                    break;
                }
            }
            if mine.is_err() {
                break;
            }
            timings.push(t.elapsed().as_nanos() as f64 / (2 * ROUND_TRIPS) as f64);
        }
        // Ends the partner's reads if this side stopped early.
        drop(w);
        let theirs = partner
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the partner thread panicked")));
        mine?;
        theirs?;
        timings.sort_by(f64::total_cmp);
        Ok(timings[KEPT])
    })
}

fn pipe() -> std::io::Result<(File, File)> {
    let (r, w) = nix::unistd::pipe().map_err(std::io::Error::from)?;
    Ok((File::from(r), File::from(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_timing_is_the_lower_quartile() {
        // 21 timings, 1 to 21 in a shuffled order: the sixth fastest.
        let mut v = (0..21).map(|i| f64::from((i * 8) % 21 + 1));
        assert_eq!(quartile(|| v.next().unwrap()), 6.0);
    }
}
