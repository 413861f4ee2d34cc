//! A monotonic nanosecond clock that timerfd understands.
//!
//! `std::time::Instant` cannot be turned into the `timespec` that
//! `timerfd_settime` takes, and the open model arms timers at absolute
//! intended send times; so every timestamp on the hot path is CLOCK_MONOTONIC
//! in nanoseconds, read through the vDSO (no syscall).

#[inline]
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Wall-clock time, the clock of the kernel's receive stamps (`rx.rs`).
#[inline]
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks used here
    // always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The wall clock's lead on the monotonic one, which turns a kernel
/// receive stamp (wall clock) into the monotonic clock's time.
///
/// The two clocks are slewed alike, so the lead moves only when the wall
/// clock is stepped (by hand, by an NTP daemon's step, at a leap second).
/// It is read again once `LEAD_EVERY_NS` has passed since the last
/// reading, rather than at every look of a loop that looks tens of
/// thousands of times a second: a step then shifts the stamps of at most
/// that long, and a stamp it puts ahead of the present counts as arriving
/// then (`arrival_led`).
#[derive(Debug, Default)]
pub struct Lead {
    ns: u64,
    read_at: Option<u64>,
}

/// How long a reading of the lead is used for.
pub const LEAD_EVERY_NS: u64 = 1_000_000;

impl Lead {
    /// The lead at monotonic time `now`, read from the clocks when the
    /// last reading is `LEAD_EVERY_NS` old.
    #[inline]
    pub fn at(&mut self, now: u64) -> u64 {
        self.at_with(now, || realtime_ns().saturating_sub(now))
    }

    fn at_with(&mut self, now: u64, read: impl FnOnce() -> u64) -> u64 {
        match self.read_at {
            Some(at) if now.saturating_sub(at) < LEAD_EVERY_NS => self.ns,
            _ => {
                self.ns = read();
                self.read_at = Some(now);
                self.ns
            }
        }
    }
}

/// A non-blocking timerfd armed at absolute CLOCK_MONOTONIC times, giving
/// the event loop microsecond wake-ups that epoll_wait's millisecond timeout
/// cannot.
pub struct TimerFd {
    fd: std::os::fd::OwnedFd,
    armed_at: Option<u64>,
}

impl TimerFd {
    pub fn new() -> std::io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscall; the returned fd is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        Ok(TimerFd { fd, armed_at: None })
    }

    pub fn raw(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    pub fn armed_at(&self) -> Option<u64> {
        self.armed_at
    }

    /// Fire once at `at_ns` (absolute). Re-arming replaces the previous time.
    pub fn arm(&mut self, at_ns: u64) {
        // A zero it_value would disarm the timer; 1 ns is "already due".
        let at = at_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid fd and itimerspec; failure leaves the timer as it was,
        // which the loop tolerates (it also wakes on its periodic tick).
        unsafe {
            libc::timerfd_settime(
                self.raw(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        self.armed_at = Some(at_ns);
    }

    /// Consume the expiration count after a wake-up.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into an 8-byte buffer from our own fd.
        unsafe { libc::read(self.raw(), buf.as_mut_ptr().cast(), 8) };
        self.armed_at = None;
    }
}

/// Seconds the calling thread spent runnable but waiting for a CPU, from
/// /proc/thread-self/schedstat (its second field, in nanoseconds). A client
/// starved of CPU (a shared core, a cgroup quota) looks idle by its own CPU
/// time; this is where the starvation shows. Read twice per run, off the hot
/// path; 0 where the kernel does not keep schedstats.
pub fn thread_runqueue_wait() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// CPU time (user, sys) of the calling thread, in seconds.
pub fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_is_read_at_first_and_again_once_its_reading_is_old() {
        let mut lead = Lead::default();
        let reads = std::cell::Cell::new(0);
        let mut at = |now: u64, value: u64| {
            lead.at_with(now, || {
                reads.set(reads.get() + 1);
                value
            })
        };
        assert_eq!(at(5_000, 70), 70);
        // Within the period the first reading stands, whatever the clocks
        // would say now.
        assert_eq!(at(5_000 + LEAD_EVERY_NS - 1, 90), 70);
        // A period after it, the clocks are read again.
        assert_eq!(at(5_000 + LEAD_EVERY_NS, 90), 90);
        assert_eq!(at(5_000 + LEAD_EVERY_NS + 10, 30), 90);
        assert_eq!(reads.get(), 2);
    }

    #[test]
    fn the_lead_read_from_the_clocks_is_their_difference() {
        let mut lead = Lead::default();
        let now = now_ns();
        let l = lead.at(now);
        let direct = realtime_ns().saturating_sub(now_ns());
        // The two readings are a few µs apart at most.
        assert!(l.abs_diff(direct) < 1_000_000, "{l} against {direct}");
    }
}
