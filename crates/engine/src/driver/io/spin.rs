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
use crate::clock::now_ns;

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
/// The longest paced sleep that answers do not end (`Uring::
/// paced_sleeps_past_answers`): shorter ones are mostly the wakes they
/// take, longer ones mostly sleep either way.
const PAST_ANSWERS_MAX_NS: u64 = 4 * SPIN_MAX_NS;
/// How far one paced sleep moves the lateness learnt (`learn_lateness`):
/// small beside a sleep's lateness (µs), so no one sleep decides it, and
/// large enough that a few hundred sleeps, a fraction of a second at
/// the rates where it matters, find it from the calibration's figure.
const LATE_STEP_NS: u64 = 1_000;

/// `IORING_ENTER_GETEVENTS` (linux/io_uring.h): the enter runs the work
/// the kernel deferred to the thread, posting what completed.
const ENTER_GETEVENTS: u32 = 1;

impl Uring {
    /// What a timed sleep costs this thread's CPU, in ns, and so the
    /// longest paced wait to spin: the median over `CALIBRATION_SLEEPS`
    /// sleeps of `CALIBRATION_WAIT_NS` with nothing to end them sooner,
    /// at most `SPIN_MAX_NS`. And how late such a sleep ends, the median
    /// of theirs, at most `SPIN_MAX_NS`: a longer paced wait sleeps that
    /// much less and spins the rest, so that its send leaves at its
    /// instant rather than when the timer's interrupt and the switch back
    /// are through (5-7 µs on this project's machine, a send's whole
    /// lateness at tens of thousands a second). Run once per thread, on
    /// its own CPU, before anything is in flight.
    pub(crate) fn calibrate_spin(&mut self) {
        let t = Timespec::new().nsec(CALIBRATION_WAIT_NS as u32);
        let args = SubmitArgs::new().timespec(&t);
        let mut cpu = [0u64; CALIBRATION_SLEEPS as usize];
        let mut late = [0u64; CALIBRATION_SLEEPS as usize];
        let mut slept = 0;
        for _ in 0..CALIBRATION_SLEEPS {
            let cpu0 = thread_cpu_ns();
            let t0 = now_ns();
            // A completion ends the wait early (nothing is in flight, so
            // none should come): such a wait says nothing of a sleep.
            let res = self.ring.submitter().submit_with_args(1, &args);
            let took = now_ns().saturating_sub(t0);
            let timed_out = matches!(&res, Err(e) if e.raw_os_error() == Some(libc::ETIME));
            if timed_out || took >= CALIBRATION_WAIT_NS {
                cpu[slept] = thread_cpu_ns().saturating_sub(cpu0);
                late[slept] = took.saturating_sub(CALIBRATION_WAIT_NS);
                slept += 1;
            }
        }
        // Medians: one sleep the host held, or an interrupt's work charged
        // to the thread, does not set the thread's spins for the run.
        let median = |v: &mut [u64]| {
            v.sort_unstable();
            v[v.len() / 2].min(SPIN_MAX_NS)
        };
        (self.spin_ns, self.wake_late_ns) = match slept {
            0 => (0, 0),
            n => (median(&mut cpu[..n]), median(&mut late[..n])),
        };
    }

    /// A wait for a schedule's next instant, `wait_ns` from `now`, with
    /// nothing to take yet. Shorter than a sleep's CPU and lateness
    /// together, it is spun; longer, it sleeps to its lateness before
    /// the instant and spins the rest, so that the send leaves on time.
    /// The sleep carries its own limit, armed by the kernel only if the
    /// thread sleeps (ring.rs says why not the alarm).
    pub(super) fn paced_wait(&mut self, now: u64, wait_ns: u64) -> io::Result<()> {
        let early = self.wake_late_ns;
        if wait_ns <= self.spin_ns.saturating_add(early) {
            if wait_ns > self.spin_ns {
                // Spun for the lateness alone: no sleep tells it.
                self.unlearn_lateness();
            }
            return self.spin(now, wait_ns);
        }
        let bound = wait_ns - early;
        let t = Timespec::new()
            .sec(bound / 1_000_000_000)
            .nsec((bound % 1_000_000_000) as u32);
        let args = SubmitArgs::new().timespec(&t);
        // Past answers: as many completions as the ring holds, which its
        // cap on a wait's count comes to anyway. Only a short sleep: the
        // answers' work, run by the thread as its timer wakes it, delays
        // its send by as much, which a long sleep's wake-up spared by it
        // does not repay (at 1,000 sends a second, waits of a
        // millisecond, sleeps past an answer ended 43 µs late at the
        // median against 26 µs for those woken by it).
        let want = if self.paced_sleeps_past_answers && wait_ns <= PAST_ANSWERS_MAX_NS {
            self.ring.params().cq_entries() as usize
        } else {
            1
        };
        match self.ring.submitter().submit_with_args(want, &args) {
            Err(e) if e.raw_os_error() != Some(libc::ETIME) => Err(e),
            _ => {
                // A sleep that ran to its limit teaches the next ones how
                // late it ended (one an answer ended says nothing of
                // that). With nothing come, the rest to the instant is
                // spun; with answers, the loop takes them first, and the
                // wait after is short enough to spin.
                let at = now_ns();
                let limit = now.saturating_add(bound);
                if at >= limit {
                    self.learn_lateness(at - limit);
                }
                let end = now.saturating_add(wait_ns);
                if at < end && self.ring.completion().is_empty() {
                    self.spin(at, end - at)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// A paced sleep ran to its limit and ended `late_ns` after it. How
    /// late a sleep ends depends on its length, not only on the machine:
    /// on a virtual machine a CPU idle for a millisecond is given back to
    /// the host, and waking it takes longer than one idle for the
    /// calibration's 30 µs (at 1,000 sends a second on this project's
    /// machine, sleeps ended 25 µs late against the 13 µs measured). So
    /// the figure follows the sleeps the schedule takes, to the lateness
    /// three in four of them stay within: a step of `LATE_STEP_NS`, three
    /// quarters of it up for a sleep that ended later, a quarter down for
    /// one that ended sooner. A step, not a share of the difference: a
    /// sleep the host held for a millisecond moves it as far as any other.
    /// At most `SPIN_MAX_NS`.
    fn learn_lateness(&mut self, late_ns: u64) {
        self.wake_late_ns = if late_ns > self.wake_late_ns {
            (self.wake_late_ns + LATE_STEP_NS * 3 / 4).min(SPIN_MAX_NS)
        } else {
            self.wake_late_ns.saturating_sub(LATE_STEP_NS / 4)
        };
    }

    /// A paced wait was spun whole because of the lateness alone (longer
    /// than a sleep's CPU, shorter than that and the lateness): down by
    /// the step a sleep that ended sooner takes. A figure that has grown
    /// past the schedule's gaps spins every wait, so no sleep would
    /// teach it again; without this it stayed there, and the thread
    /// spun all the time (at 20,000 sends a second, half of the rounds
    /// of one run, after a few slow sleeps).
    fn unlearn_lateness(&mut self) {
        self.wake_late_ns = self.wake_late_ns.saturating_sub(LATE_STEP_NS / 4);
    }

    /// A paced wait of `wait_ns` from `now` that sleeping would cost more
    /// than: submit what the turn queued and take what already came, then
    /// watch for an answer until one comes or the wait's end has passed.
    /// Bounded by `wait_ns`, itself at most `SPIN_MAX_NS`. What was spun
    /// is left in `spun`, as for a wait for an answer: the thread is busy
    /// by the clock's choice, not the load's work, and the verdicts judge
    /// its CPU less that time.
    fn spin(&mut self, now: u64, wait_ns: u64) -> io::Result<()> {
        let end = now.saturating_add(wait_ns);
        self.spin_until(|_| end).map(drop)
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
    /// "Spinning for answers").
    pub(super) fn spin_for_answer(&mut self, ns: u64) -> io::Result<bool> {
        self.spin_until(|start| start.saturating_add(ns))
    }

    /// Both spins: the turn's sends go first and what already came is
    /// taken (an answer there ends the wait before any spin), then the
    /// ring is watched until an answer or the end `end_of(start)` gives,
    /// `start` being when the watch began. Whether an answer ended it;
    /// what was spun is left in `spun` for the loop's books.
    fn spin_until(&mut self, end_of: impl FnOnce(u64) -> u64) -> io::Result<bool> {
        if self.enter_for_events()? {
            self.spun = Some((0, true));
            return Ok(true);
        }
        let start = now_ns();
        let (at, answered) = self.watch(end_of(start))?;
        self.spun = Some((at.saturating_sub(start), answered));
        Ok(answered)
    }

    /// Looks for an answer until one comes (`true`) or the clock passes
    /// `end`, and when it stopped. A thread that is not waiting in the
    /// kernel is not woken by an answer: the kernel defers the answer's
    /// work to it and sets a flag in the ring's shared memory, which this
    /// reads without a system call, entering only to take what the flag
    /// says is there. A ring made without that flag (an older kernel) is
    /// entered at each look instead. The time returned is that of the
    /// look that found the answer, not of the enter that took it: that
    /// enter's work (the receive the kernel deferred) is the load's,
    /// spun or slept. Bounded by `end`: the clock is read at least every
    /// eighth look.
    fn watch(&mut self, end: u64) -> io::Result<(u64, bool)> {
        let mut looks: u32 = 0;
        loop {
            std::hint::spin_loop();
            looks = looks.wrapping_add(1);
            if !self.taskrun_flag || self.ring.submission().taskrun() {
                let at = now_ns();
                if self.enter_for_events()? {
                    return Ok((at, true));
                }
                if at >= end {
                    return Ok((at, false));
                }
            } else if looks.is_multiple_of(8) {
                // The clock every eighth look: a look is a load from
                // memory, a reading of the clock several of them.
                let at = now_ns();
                if at >= end {
                    return Ok((at, false));
                }
            }
        }
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

/// This thread's CPU time (user and system), ns, as of now. Not from
/// `getrusage`: the kernel adds a running thread's time to what that
/// reports only when it switches or the tick comes, so a reading taken
/// while the thread runs leaves out what it ran since, and the first
/// sleep after it brings that in. A thread that set up its connections
/// and then slept eight times was measured at the cap that way, four
/// times what its sleeps cost. The thread's CPU clock counts up to the
/// moment it is read.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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
        // No timer ends a sleep before its limit, and reading the clock
        // after it takes time.
        assert!(
            u.wake_late_ns > 0 && u.wake_late_ns <= SPIN_MAX_NS,
            "{} ns late",
            u.wake_late_ns
        );
        u.reap();
        assert_eq!(u.cqes.len(), 0, "the timed sleeps post nothing");
        assert_eq!(u.alarm.armed(), None);
    }

    /// A paced wait of `limit` with nothing to end it sooner, spun when
    /// sleeping costs `spin_ns` or more, and woken `late_ns` early to spin
    /// the rest when it sleeps: it lasts to its limit, well within the
    /// test's bound, and leaves no alarm armed or fired. What it spun.
    fn waits_to_its_limit_without_the_alarm(
        spin_ns: u64,
        late_ns: u64,
        limit: u64,
    ) -> Option<(u64, bool)> {
        let mut u = ring()?;
        (u.spin_ns, u.wake_late_ns) = (spin_ns, late_ns);
        let t0 = now_ns();
        u.enter(t0, limit, 0, true).unwrap();
        let took = now_ns() - t0;
        assert!(took >= limit && took < 500_000_000, "{took} ns");
        assert_eq!((u.alarm.armed(), alarms(&mut u)), (None, 0));
        let spun = u.spun.take();
        if let Some((ns, _)) = spun {
            assert!(ns <= took, "spun {ns} ns of {took}");
        }
        spun
    }

    #[test]
    fn a_paced_wait_shorter_than_a_sleep_is_spun_to_its_limit_and_arms_nothing() {
        // A sleep priced at 10 ms (the cap is the calibration's, not the
        // wait's), so that a 5 ms wait is spun whole, long enough that a
        // busy machine's preemption does not hide it.
        let ms = 1_000_000;
        if let Some((spun, answered)) = waits_to_its_limit_without_the_alarm(10 * ms, 0, 5 * ms) {
            assert!(!answered);
            // All of it but the first look, which submits and takes
            // nothing here.
            assert!(spun >= 5 * ms / 2, "spun {spun} ns");
        } else {
            assert!(ring().is_none(), "the wait spun and said so");
        }
    }

    /// A wait longer than a sleep's price and lateness together sleeps,
    /// to its lateness before its limit, and spins the rest: with 20 ms
    /// of lateness assumed (a sleep here ends some µs late), about 20 ms
    /// of a 40 ms wait is spun, and the wait ends at its limit, not after.
    #[test]
    fn a_paced_sleep_wakes_its_lateness_early_and_spins_the_rest() {
        let ms = 1_000_000;
        if let Some((spun, answered)) = waits_to_its_limit_without_the_alarm(ms, 20 * ms, 40 * ms) {
            assert!(!answered);
            // Not the whole wait: it slept its first half (a busy
            // machine may stretch the spin's end, not its start).
            assert!(spun > 10 * ms && spun < 30 * ms, "spun {spun} ns");
        } else {
            assert!(ring().is_none(), "the wait spun and said so");
        }
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
        // The no-op completes as the first look submits it.
        assert_eq!(u.spun.take(), Some((0, true)));
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

    /// The open model's short sleep to an instant runs past an answer: a
    /// receive that completes while the thread sleeps (data written to a
    /// socket 40 µs in, the kernel deferring the receive's work to the
    /// thread as it does a server's answer) does not end a 150 µs wait,
    /// and is there to take when it ends. With the setting off, it ends
    /// the wait (`paced_sleeps_past_answers` false: checked to fail this
    /// test's first assertion).
    #[test]
    fn a_short_paced_sleep_runs_past_answers_to_its_instant() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let Some(mut u) = ring() else { return };
        (u.spin_ns, u.wake_late_ns) = (0, 0);
        u.paced_sleeps_past_answers = true;
        let (mut tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut buf = vec![0u8; 64];
        let recv = io_uring::opcode::Recv::new(
            io_uring::types::Fd(rx.as_raw_fd()),
            buf.as_mut_ptr(),
            buf.len() as u32,
        );
        u.push(recv.build().user_data(7)).unwrap();
        let limit = 150_000;
        assert!(limit <= PAST_ANSWERS_MAX_NS);
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let go = start.clone();
        let writer = std::thread::spawn(move || {
            go.wait();
            // The answer's arrival, 40 µs into the wait by the clock (a
            // busy wait: a sleep this short ends whenever its timer's
            // slack lets it).
            let at = now_ns() + 40_000;
            while now_ns() < at {
                std::hint::spin_loop();
            }
            tx.write_all(b"answer").unwrap();
            tx
        });
        start.wait();
        let t0 = now_ns();
        u.enter(t0, limit, 0, true).unwrap();
        let took = now_ns() - t0;
        let _tx = writer.join().unwrap();
        assert!(took >= limit && took < 500_000_000, "{took} ns");
        u.reap();
        let got = u.cqes.iter().find(|c| c.user_data() == 7);
        // The write may come after the wait on a busy machine; when it
        // came within it, its receive was waiting.
        if let Some(c) = got {
            assert_eq!(c.result(), 6);
        }
        drop(buf);
    }

    /// A scripted truth for what the sleeps teach: lateness spread evenly
    /// over 0-39 µs, three in four of them within 30 µs.
    #[test]
    fn the_lateness_learnt_is_what_three_sleeps_in_four_stay_within() {
        let Some(mut u) = ring() else { return };
        let us = 1_000;
        u.wake_late_ns = 13 * us;
        for round in 0..400 {
            for k in 0..40 {
                u.learn_lateness(((k * 7 + round) % 40) * us);
            }
        }
        let learnt = u.wake_late_ns;
        assert!((29 * us..=31 * us).contains(&learnt), "{learnt} ns");
        // One sleep the host held for a millisecond moves it a step, not
        // to the cap.
        u.learn_lateness(1_000 * us);
        assert_eq!(u.wake_late_ns, learnt + 750);
        // Sleeps that all end later take it to the cap and no further.
        for _ in 0..100 {
            u.learn_lateness(1_000 * us);
        }
        assert_eq!(u.wake_late_ns, SPIN_MAX_NS);
    }

    /// A lateness grown past the schedule's gaps would spin every wait
    /// and never be told otherwise: each wait it alone made a spin brings
    /// it down a step, until the waits sleep again.
    #[test]
    fn a_lateness_that_spins_every_wait_comes_down_until_they_sleep() {
        let Some(mut u) = ring() else { return };
        let us = 1_000;
        (u.spin_ns, u.wake_late_ns) = (10 * us, SPIN_MAX_NS);
        let wait = 40 * us;
        // 40 µs waits against a 10 µs sleep: spun whole while the figure
        // is 30 µs or more, each taking it down 0.25 µs, from 50 µs: 81.
        for k in 1..=81 {
            u.enter(now_ns(), wait, 0, true).unwrap();
            assert_eq!(u.wake_late_ns, SPIN_MAX_NS - k * 250, "wait {k}");
        }
        // The next sleeps, and learns from its own end, a step either way.
        u.enter(now_ns(), wait, 0, true).unwrap();
        let after = u.wake_late_ns;
        assert!(after == 29_750 - 250 || after == 29_750 + 750, "{after} ns");
    }

    #[test]
    fn a_paced_wait_longer_than_a_sleep_sleeps_to_its_own_limit_without_the_alarm() {
        let spun = waits_to_its_limit_without_the_alarm(0, 0, 3_000_000);
        assert_eq!(spun, None, "nothing spun");
    }
}
