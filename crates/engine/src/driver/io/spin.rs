//! A paced wait spun rather than slept, where sleeping costs more.
//!
//! A wait whose limit is a schedule's next instant (the open model's next
//! send, a session's next arrival) and which no answer ends sooner sleeps
//! on a timer: the kernel arms it, switches away, and the timer's
//! interrupt brings the thread back. On a virtual machine, arming the
//! timer is an exit to the hypervisor and its interrupt another; on this
//! project's machine a sleep cost the thread about 15 µs of CPU, more than
//! most of the waits between two sends at tens of thousands a second.
//! A wait known to be shorter than what a sleep costs is cheaper spun,
//! looking for answers as it goes, and ends at its instant rather than
//! when the timer's interrupt gets through (wrk2 spins the same way,
//! polling with no timeout whenever its next send is less than a
//! millisecond away, but whatever a sleep costs).
//!
//! What a sleep costs is the machine's: measured once per thread, on its
//! own CPU, before its first window, as the thread's CPU time over a few
//! short timed sleeps. On a machine where timers are cheap it is a few
//! µs or less, and so are the waits spun.

use std::io;

use io_uring::types::{SubmitArgs, Timespec};

use super::ring::Uring;
use crate::clock::{now_ns, thread_cpu};

/// Sleeps timed to learn what one costs; each waits `CALIBRATION_WAIT_NS`.
const CALIBRATION_SLEEPS: u32 = 8;
/// Long enough that the thread is asleep when the timer fires, short
/// enough that the calibration takes a few tenths of a millisecond of
/// each load thread's setup.
const CALIBRATION_WAIT_NS: u64 = 30_000;
/// However dear a sleep, no spin is longer: a thread that spins is busy,
/// and a machine whose sleeps cost more than this is better told so (its
/// client CPU) than hidden behind one.
pub(super) const SPIN_MAX_NS: u64 = 50_000;

/// `IORING_ENTER_GETEVENTS` (linux/io_uring.h): the enter runs the work
/// the kernel deferred to the thread, posting what completed.
const ENTER_GETEVENTS: u32 = 1;

impl Uring {
    /// What a timed sleep costs this thread's CPU, in ns, and so the
    /// longest paced wait to spin: the mean over `CALIBRATION_SLEEPS`
    /// sleeps of `CALIBRATION_WAIT_NS` with nothing to end them sooner,
    /// at most `SPIN_MAX_NS`. Run once per thread, on its own CPU, before
    /// anything is in flight.
    pub(crate) fn calibrate_spin(&mut self) {
        let t = Timespec::new().nsec(CALIBRATION_WAIT_NS as u32);
        let args = SubmitArgs::new().timespec(&t);
        let cpu0 = thread_cpu_ns();
        let mut slept = 0;
        for _ in 0..CALIBRATION_SLEEPS {
            let t0 = now_ns();
            // A completion ends the wait early (nothing is in flight, so
            // none should come): such a wait says nothing of a sleep.
            match self.ring.submitter().submit_with_args(1, &args) {
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => slept += 1,
                _ => {
                    if now_ns().saturating_sub(t0) >= CALIBRATION_WAIT_NS {
                        slept += 1;
                    }
                }
            }
        }
        let cpu = thread_cpu_ns().saturating_sub(cpu0);
        self.spin_ns = match slept {
            0 => 0,
            n => (cpu / n).min(SPIN_MAX_NS),
        };
    }

    /// A paced wait of `wait_ns` from `now` that sleeping would cost more
    /// than: submit what the turn queued, then look for completions until
    /// one has come or the wait's end has passed. Bounded by `wait_ns`,
    /// itself at most `SPIN_MAX_NS`.
    pub(super) fn spin(&mut self, now: u64, wait_ns: u64) -> io::Result<()> {
        let end = now.saturating_add(wait_ns);
        loop {
            if self.enter_for_events()? || now_ns() >= end {
                return Ok(());
            }
            std::hint::spin_loop();
        }
    }

    /// A closed-model wait for an answer, spun for up to `ns` before it
    /// sleeps (`LoadSpec::spin`): submit what the turn queued and take
    /// what already came, then watch for an answer until one comes or
    /// `ns` has passed. Whether one came; what was spun is left in
    /// `spun` for the loop's books.
    ///
    /// A thread asleep in the ring is woken by the CPU that delivers its
    /// answer: on one machine, the server's, inside the server's own
    /// send, and on a virtual machine that wake is an inter-processor
    /// interrupt the server's CPU pays for (docs/methodology.md,
    /// "Spinning for answers"). A thread that is not waiting in the
    /// kernel is not woken: the kernel defers the answer's work to it and
    /// sets a flag in the ring's shared memory, which the spin reads
    /// without a system call, entering only to take what the flag says
    /// is there. A ring made without that flag (an older kernel) is
    /// entered at each look instead.
    pub(super) fn spin_for_answer(&mut self, ns: u64) -> io::Result<bool> {
        // The turn's sends go first, and what already came is taken: an
        // answer there ends the wait before any spin.
        if self.enter_for_events()? {
            self.spun = Some((0, true));
            return Ok(true);
        }
        let start = now_ns();
        let end = start.saturating_add(ns);
        let mut looks: u32 = 0;
        // What was spun runs to the look that found an answer, not through
        // the enter that took it: that enter's work (the receive the
        // kernel deferred) is the load's, spun or slept.
        let (at, answered) = loop {
            std::hint::spin_loop();
            looks = looks.wrapping_add(1);
            if !self.taskrun_flag || self.ring.submission().taskrun() {
                let at = now_ns();
                if self.enter_for_events()? {
                    break (at, true);
                }
                if at >= end {
                    break (at, false);
                }
            } else if looks.is_multiple_of(8) {
                // The clock every eighth look: a look is a load from
                // memory, a reading of the clock several of them.
                let at = now_ns();
                if at >= end {
                    break (at, false);
                }
            }
        };
        self.spun = Some((at.saturating_sub(start), answered));
        Ok(answered)
    }

    /// Submit what is queued and run the work the kernel deferred to this
    /// thread, without waiting: whether a completion is now there.
    fn enter_for_events(&mut self) -> io::Result<bool> {
        let to_submit = self.ring.submission().len() as u32;
        // SAFETY: a plain enter without an argument: no signal mask, no
        // extended argument, nothing the kernel reads from us.
        unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(to_submit, 0, ENTER_GETEVENTS, None)?;
        }
        Ok(!self.ring.completion().is_empty())
    }
}

/// This thread's CPU time (user and system), ns, to the microsecond.
fn thread_cpu_ns() -> u64 {
    let (user, sys) = thread_cpu();
    ((user + sys) * 1e9).round() as u64
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::driver::io::ring::{decode, OP_ALARM};

    fn ring() -> Option<Uring> {
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        match Uring::new(4, 1, &[to], &[]) {
            Ok(u) => Some(u),
            Err(e) => {
                println!("skipped: this kernel gives no ring ({e})");
                None
            }
        }
    }

    /// Whether an alarm's completion was left on the ring.
    fn alarms(u: &mut Uring) -> usize {
        u.reap();
        u.cqes
            .drain(..)
            .filter(|c| decode(c.user_data()).0 == OP_ALARM)
            .count()
    }

    #[test]
    fn a_sleep_is_measured_on_the_threads_cpu_and_leaves_nothing_behind() {
        let Some(mut u) = ring() else { return };
        u.calibrate_spin();
        // Any sleep costs a system call and two switches at least; no
        // machine's exceeds the cap once measured.
        assert!(
            u.spin_ns > 0 && u.spin_ns <= SPIN_MAX_NS,
            "{} ns",
            u.spin_ns
        );
        u.reap();
        assert_eq!(u.cqes.len(), 0, "the timed sleeps post nothing");
        assert_eq!(u.alarm.armed(), None);
    }

    /// A paced wait of `limit` with nothing to end it sooner, spun when
    /// sleeping costs `spin_ns` or more: it lasts to its limit, well
    /// within the test's bound, and leaves no alarm armed or fired.
    fn waits_to_its_limit_without_the_alarm(spin_ns: u64, limit: u64) {
        let Some(mut u) = ring() else { return };
        u.spin_ns = spin_ns;
        let t0 = now_ns();
        u.enter(t0, limit, 0, true).unwrap();
        let took = now_ns() - t0;
        assert!(took >= limit && took < 500_000_000, "{took} ns");
        assert_eq!((u.alarm.armed(), alarms(&mut u)), (None, 0));
    }

    #[test]
    fn a_paced_wait_shorter_than_a_sleep_is_spun_to_its_limit_and_arms_nothing() {
        waits_to_its_limit_without_the_alarm(SPIN_MAX_NS, 30_000);
    }

    #[test]
    fn a_spun_wait_ends_at_the_first_completion() {
        let Some(mut u) = ring() else { return };
        // A spin as long as the test allows: only the completion ends it
        // before the limit.
        u.spin_ns = 2_000_000_000;
        u.push(io_uring::opcode::Nop::new().build().user_data(0))
            .unwrap();
        let t0 = now_ns();
        u.enter(t0, 1_000_000_000, 0, true).unwrap();
        let took = now_ns() - t0;
        assert!(took < 500_000_000, "{took} ns");
        u.reap();
        assert_eq!(u.cqes.len(), 1, "the no-op's completion");
    }

    /// A closed-model wait with nothing in flight: it spins its length,
    /// then sleeps until the ring's alarm ends it at the wait's limit.
    #[test]
    fn a_wait_for_an_answer_spins_its_length_then_sleeps_to_its_limit() {
        let Some(mut u) = ring() else { return };
        let ms = 1_000_000;
        u.answer_spin_ns = 2 * ms;
        let t0 = now_ns();
        u.enter(t0, 20 * ms, 0, false).unwrap();
        let took = now_ns() - t0;
        assert!(took >= 20 * ms && took < 500 * ms, "{took} ns");
        let (spun, answered) = u.spun.take().expect("the wait spun");
        assert!(!answered);
        assert!(spun >= 2 * ms && spun < 20 * ms, "spun {spun} ns");
        assert_eq!(alarms(&mut u), 1, "the alarm ended the sleep");
    }

    /// A completion the kernel defers to the thread while it spins (here
    /// a timeout's, as an answer's receive would be) is seen from the
    /// ring's flag and taken without a sleep, long before the spin's end
    /// and the wait's limit.
    #[test]
    fn a_completion_that_comes_while_a_wait_spins_ends_it() {
        let Some(mut u) = ring() else { return };
        let ms = 1_000_000;
        u.answer_spin_ns = 300 * ms;
        // Read by the kernel as the enter submits it.
        let due = Timespec::new().nsec(3 * ms as u32);
        u.push(io_uring::opcode::Timeout::new(&due).build().user_data(0))
            .unwrap();
        let t0 = now_ns();
        u.enter(t0, 400 * ms, 0, false).unwrap();
        let took = now_ns() - t0;
        assert!(took >= 3 * ms && took < 250 * ms, "{took} ns");
        let (spun, answered) = u.spun.take().expect("the wait spun");
        assert!(answered);
        assert!(spun >= 2 * ms && spun < 250 * ms, "spun {spun} ns");
        u.reap();
        assert!(
            u.cqes.iter().any(|c| c.user_data() == 0),
            "the timeout's completion"
        );
    }

    #[test]
    fn a_paced_wait_longer_than_a_sleep_sleeps_to_its_own_limit_without_the_alarm() {
        waits_to_its_limit_without_the_alarm(0, 3_000_000);
    }
}
