//! A thread's windows: the bounded event loop run from a window's start to
//! its end, and, for a session whose connections outlive their windows,
//! opening them, finding out what the server did to them while they sat
//! idle, and draining what is still in flight when a window ends.

use std::io;

use super::*;

/// Longest a session's drain waits for the responses in flight at a
/// window's end (or the timeout, if shorter): the next window, of this
/// server or another, is waiting.
const DRAIN_MAX_NS: u64 = 1_000_000_000;

/// What a window's loop saw, besides its counts.
struct Ending {
    cpu_user: f64,
    cpu_sys: f64,
    runqueue_wait: f64,
    in_flight_at_end: u64,
    end_ns: u64,
    interrupted: bool,
    fatal: Option<io::Error>,
}

impl ThreadResult {
    fn new(
        stats: Stats,
        e: Ending,
        established: u64,
        expect: Vec<Expect>,
        sessions: Option<SessionStats>,
        io_fallback: Option<String>,
    ) -> Self {
        ThreadResult {
            stats,
            cpu_user: e.cpu_user,
            cpu_sys: e.cpu_sys,
            runqueue_wait: e.runqueue_wait,
            established,
            in_flight_at_end: e.in_flight_at_end,
            end_ns: e.end_ns,
            interrupted: e.interrupted,
            fatal: e.fatal,
            expect,
            sessions,
            io_fallback,
        }
    }
}

impl Worker<'_> {
    /// Once per thread, before its first window.
    pub(crate) fn settle_thread(&mut self) {
        if let Some(cpu) = self.job.cpu {
            // Best effort: the caller validated the CPU against the
            // affinity mask, so failure here means the mask changed.
            let _ = crate::affinity::pin_current_thread(&[cpu]);
        }
        let paced = self.plan.interval_ns.is_some() || self.users.is_some();
        if self.plan.spec.naps() || paced {
            // Naps are tens of µs, and a schedule's sends are due at their
            // instants: the default 50 µs timer slack would stretch each
            // nap several times over, and let a timed sleep end that late
            // and its send with it.
            // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0) };
        }
        if let Some(u) = self.io.uring() {
            u.answer_spin_ns = self.plan.spec.spin_ns();
        }
        // A thread woken by a schedule learns, on its own CPU, which of its
        // waits cost less spun than slept (spin.rs).
        if paced {
            let past_answers =
                self.users.is_none() && self.plan.tick_ns == 0 && self.plan.interval_ns.is_some();
            if let Some(u) = self.io.uring() {
                u.paced_sleeps_past_answers = past_answers;
                u.calibrate_spin();
            }
        }
    }

    /// A whole run, on a thread already settled (`settle_thread`): one
    /// window, after which the connections are closed.
    pub(crate) fn run(mut self, window: Window) -> ThreadResult {
        let ending = self.measure(window);
        self.io_finish();
        let sessions = self.users.as_mut().map(|u| u.take_stats());
        ThreadResult::new(
            self.stats,
            ending,
            self.books.established,
            self.books.expect,
            sessions,
            self.io.fallback(),
        )
    }

    /// A session's window: measured into the thread's stats, which are
    /// handed over and replaced by `spare` (reset) for the drain and the
    /// next window; the connections stay open. Returns the figures and the
    /// instant the window ended, from which [`Worker::session_drain`] is
    /// bounded: the figures go to their reader before the drain, which
    /// counts in no window, so that they wait for none of it.
    pub(crate) fn session_window(&mut self, window: Window, spare: Stats) -> (ThreadResult, u64) {
        let ending = self.measure(window);
        let ended_ns = ending.end_ns;
        let stats = std::mem::replace(&mut self.stats, spare);
        let r = ThreadResult::new(
            stats,
            ending,
            self.books.established,
            self.books.expect.clone(),
            None,
            self.io.fallback(),
        );
        (r, ended_ns)
    }

    /// After [`Worker::session_window`]: the responses still in flight read
    /// (see `drain`).
    pub(crate) fn session_drain(&mut self, ended_ns: u64) -> Drain {
        self.drain(ended_ns)
    }

    /// A session's connections, opened before its first window: returns
    /// when each is open or has failed, within the timeout. What failed is
    /// opened again, and counted, in the first window; the handshakes made
    /// here belong to no window.
    pub(crate) fn open_all(&mut self) {
        self.open_each(true);
        self.stats.reset();
    }

    /// The open model's connections, opened before its window starts: a
    /// schedule counts from the window's start, so a connect or a TLS
    /// handshake made in it would hold the first sends back and charge the
    /// wait to their latency (50 connections against nginx on this
    /// project's 2-CPU machine: 417–620 of a 2,000-request run's sends over
    /// 1 ms late, 57–83 with the connections opened here). Unlike a session's, these handshakes belong to the
    /// run: counted with its warmup, or with what it measures when it has
    /// none, as they were when made in the window. What failed or is still
    /// connecting at the timeout is opened again, and counted again, in the
    /// window.
    pub(crate) fn open_ahead(&mut self) {
        let measuring = self.plan.spec.warmup.is_zero();
        self.open_each(measuring);
        for c in &mut self.conns {
            if matches!(c.state, State::Open) {
                c.connect_measured = measuring;
            }
        }
    }

    /// Every connection opened at once, until each is open or has failed
    /// (within the timeout, after which what is still connecting is
    /// shut), nothing sent on any; their connects are counted as measured
    /// when `measuring`, else as warmup.
    fn open_each(&mut self, measuring: bool) {
        self.between_windows = true;
        self.measuring = measuring;
        self.now = now_ns();
        let timeout = self.timeout_ns();
        self.window = Window {
            start_ns: self.now,
            // Connects ahead of a warmup stay the warmup's: the loop must
            // not cross into measuring while it makes them.
            warmup_end_ns: if measuring { self.now } else { u64::MAX },
            end_ns: Some(self.now + timeout),
            stop: Default::default(),
            running: None,
        };
        self.next_scan_ns = self.now + SCAN_NS.min(timeout);
        for i in 0..self.conns.len() {
            self.connect(i);
        }
        let _ = self.spin();
        for i in 0..self.conns.len() {
            if matches!(self.conns[i].state, State::Connecting | State::Handshaking) {
                self.shut(i);
            }
        }
    }

    /// Run one window to its end, its stop flag, or a fatal error.
    fn measure(&mut self, window: Window) -> Ending {
        self.window = window;
        self.between_windows = false;
        self.books.issued_measured = 0;
        self.books.done_measured = 0;
        self.books.cpu_mark = (thread_cpu(), thread_runqueue_wait());
        self.now = now_ns();
        self.measuring = self.now >= self.window.warmup_end_ns;
        self.next_scan_ns = self.now + SCAN_NS.min(self.timeout_ns());
        if let (true, Some(end)) = (self.plan.spec.timeline, self.window.end_ns) {
            let secs = end.saturating_sub(self.window.warmup_end_ns) / 1_000_000_000;
            // The timeline is empty here; this allocates only for a window
            // longer than any before.
            self.stats.timeline.reserve(secs as usize + 2);
        }
        if self.plan.interval_ns.is_some() {
            // Opened ahead (`open_ahead`), or connected now where that
            // failed; then every connection queued on the schedule.
            for i in 0..self.conns.len() {
                let first = (self.job.first_conn + i) as u64;
                self.conns[i].next_k = first;
                self.conns[i].next_intended_ns = match &self.plan.spec.ramp {
                    Some(r) => self.window.start_ns.saturating_add(r.due_ns(first)),
                    None => self.window.start_ns + first * self.plan.stagger_ns,
                };
                if !matches!(self.conns[i].state, State::Open) {
                    self.connect(i);
                }
                self.schedule(i);
            }
        } else if self.users.is_some() {
            self.start_users();
            self.send_deferred();
        } else {
            self.sweep();
            for i in 0..self.conns.len() {
                self.fill(i);
            }
        }
        let (end_ns, interrupted, fatal) = self.spin();
        self.tap_end();
        // A ring's sends queued in the last turn go out with the next
        // enter, which an ending loop never makes: made here, a request
        // counted as sent has reached the kernel, as on epoll.
        if let Some(u) = self.io.uring() {
            u.submit();
            // What a sleep cost the thread, and how late one ends as its
            // sleeps have taught it by now (spin.rs): 0 where unmeasured.
            (self.stats.sleep_cost_ns, self.stats.sleep_late_ns) = (u.spin_ns, u.wake_late_ns);
        }
        self.stats.unsent = self.unsent(end_ns);
        let (cpu_start, wait_start) = self.books.cpu_mark;
        let cpu_end = thread_cpu();
        let wait_end = thread_runqueue_wait();
        Ending {
            cpu_user: cpu_end.0 - cpu_start.0,
            cpu_sys: cpu_end.1 - cpu_start.1,
            runqueue_wait: (wait_end - wait_start).max(0.0),
            in_flight_at_end: self.measured_in_flight(),
            end_ns,
            interrupted,
            fatal,
        }
    }

    /// The measured phase's requests still unanswered: its `sent` is its
    /// answers, its failures and these, exactly. A count's warmup request
    /// that a slow server still holds when the count is answered is the
    /// warmup's (`phase_of`), as its answer would have been: counted here,
    /// the run showed more in flight than it sent.
    fn measured_in_flight(&self) -> u64 {
        self.conns
            .iter()
            .flat_map(|c| (0..c.len).map(|k| c.ring[c.slot(k)]))
            .filter(|f| self.phase_of(f))
            .count() as u64
    }

    /// Open model, for a duration: the requests whose intended times fell
    /// in the measured phase but were never sent, each connection having
    /// been busy with earlier ones (a server slower than the schedule, too
    /// few connections for the rate). A count's runs end only once every
    /// request was sent; one stopped early counts to where it stopped.
    fn unsent(&self, ended: u64) -> u64 {
        let (Some(interval), Some(end)) = (self.plan.interval_ns, self.window.end_ns) else {
            return 0;
        };
        // In ticks, a request is sent before the end when its tick starts
        // before it: counted on the even spacing, up to the first tick
        // that does not.
        let ticks = self.ticks();
        let end = ticks.bound(end.min(ended));
        if let Some(r) = &self.plan.spec.ramp {
            // Indexes below this fell due before the end; a connection's
            // are its own, one in every `connections`.
            let due = r.due_by(end.saturating_sub(self.window.start_ns) as f64 / 1e9);
            let due = (due - 1e-6).ceil().max(0.0) as u64;
            let step = self.plan.spec.connections as u64;
            return self
                .conns
                .iter()
                .map(|c| due.saturating_sub(c.next_k).div_ceil(step))
                .sum();
        }
        let from = ticks.bound(self.window.warmup_end_ns);
        let interval = interval.max(1);
        // Due at next, next + interval, …: how many of them before `t`.
        let due_before = |next: u64, t: u64| match t.checked_sub(next) {
            Some(d) if d > 0 => (d - 1) / interval + 1,
            _ => 0,
        };
        self.conns
            .iter()
            .map(|c| {
                let next = c.next_intended_ns;
                due_before(next, end).saturating_sub(due_before(next, from))
            })
            .sum()
    }

    /// Sessions: before a window writes anything, take what happened to
    /// its idle connections since the last one, mostly servers closing
    /// them (their keep-alive timeout), so that those are reopened rather
    /// than written to. A close that comes later still is caught by
    /// `stale`.
    fn sweep(&mut self) {
        let mut open = false;
        for c in &mut self.conns {
            if c.state == State::Open {
                c.stale = true;
                open = true;
            }
        }
        if !open {
            return;
        }
        self.io_sweep();
    }

    /// After a session's window: read the responses still in flight, which
    /// count in no window, until none is left, the drain's bound passes
    /// (from `ended_ns`, the window's end) or the stop flag is set. What is
    /// still unanswered then is closed, to be reopened by the next window;
    /// requests never written are dropped.
    fn drain(&mut self, ended_ns: u64) -> Drain {
        self.between_windows = true;
        self.measuring = true;
        self.window.end_ns = Some(ended_ns + self.timeout_ns().min(DRAIN_MAX_NS));
        // The window's last poll took events it never handled, and an edge
        // is reported once: look at every connection with something due.
        // (A ring keeps what completed until it is handled.)
        for i in 0..self.conns.len() {
            if self.conns[i].awaiting() {
                self.mark_ready(i);
            }
        }
        let _ = self.spin();
        let mut drain = Drain {
            responses: self.stats.measured.completed + self.stats.warmup.completed,
            abandoned: 0,
        };
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            if c.awaiting() || matches!(c.state, State::Connecting | State::Handshaking) {
                drain.abandoned += c.written as u64 + u64::from(c.write_off > 0);
                self.shut(i);
            } else {
                // Dropped unwritten, so they never counted against the
                // connection's limit: left counted, they could use it up
                // and leave the connection with nothing it may send.
                c.carried = c.carried.saturating_sub(c.len as u64);
                c.head = 0;
                c.len = 0;
            }
        }
        self.stats.reset();
        drain
    }

    /// Closed model by time: the warmup's requests still on the wire end
    /// in the measured phase, answered or failed there (`phase_of`), so
    /// they are its sent requests too, and a phase's `sent` is exactly its
    /// answers, its failures and what it leaves in flight. Moved, not
    /// copied: the two phases' `sent` still add up to what was issued.
    fn carry_into_measuring(&mut self) {
        if self.job.quota.is_some() || self.plan.interval_ns.is_some() || self.users.is_some() {
            return;
        }
        let mut carried = 0;
        for c in &mut self.conns {
            for k in 0..c.len {
                let slot = c.slot(k);
                c.ring[slot].measured = true;
            }
            carried += c.len as u64;
        }
        self.stats.warmup.sent -= carried;
        self.stats.measured.sent += carried;
    }

    /// Nothing to wait for between windows: no handshake under way, no
    /// request on the wire.
    fn settled(&self) -> bool {
        self.conns
            .iter()
            .all(|c| !matches!(c.state, State::Connecting | State::Handshaking) && !c.awaiting())
    }

    /// The event loop, until the window's end, its quota, the stop flag or
    /// a fatal error, or, between a session's windows, until nothing is
    /// left to wait for. Returns when the measured phase ended, whether the
    /// stop flag ended it, and the fatal error.
    fn spin(&mut self) -> Ended {
        let rate = self.plan.interval_ns.is_some();
        loop {
            // A pass that follows a ring's turn starts at the time the turn
            // ended, read a few hundred nanoseconds ago: at one answer a
            // turn, a reading here would be one of three a response.
            if !std::mem::take(&mut self.turn_timed) {
                self.now = now_ns();
            }
            if !self.measuring && self.now >= self.window.warmup_end_ns {
                self.measuring = true;
                self.books.cpu_mark = (thread_cpu(), thread_runqueue_wait());
                self.carry_into_measuring();
                // Requests mode: connections idle because warmup ended mid-way
                // get their first measured request now.
                if !rate {
                    for i in 0..self.conns.len() {
                        self.fill(i);
                    }
                }
            }
            self.tap_turn();
            if let Some(end) = self.window.end_ns {
                if self.now >= end {
                    return (end, false, None);
                }
            }
            if let Some(quota) = self.job.quota {
                if self.measuring && self.books.done_measured >= quota {
                    return (self.now, false, None);
                }
            }
            if self.users.as_ref().is_some_and(|u| u.quota_done()) {
                return (self.now, false, None);
            }
            if self.between_windows && self.settled() {
                return (self.now, false, None);
            }
            // After the run's own ends: a stop that comes when the run is
            // over anyway interrupts nothing.
            if self.window.stop.load(Ordering::Relaxed) {
                return (self.now, true, None);
            }
            if rate {
                self.fire_due();
            }
            if self.users.is_some() {
                self.fire_users();
                self.send_deferred();
                self.sample_users();
            }
            if self.now >= self.next_scan_ns {
                let due = self.scan_timeouts();
                // Requests issued after this scan fall due a timeout from
                // now at the earliest: the next scan sees them before.
                self.next_scan_ns = due.min(self.now + SCAN_NS.min(self.timeout_ns()));
            }

            let mut wake = self.next_scan_ns;
            if let Some(end) = self.window.end_ns {
                wake = wake.min(end);
            }
            if !self.measuring {
                wake = wake.min(self.window.warmup_end_ns);
            }
            let due = self.next_clock_due();
            if let Some(ended) = self.io_step(wake, due) {
                return ended;
            }
            self.send_deferred();
        }
    }

    pub(super) fn timeout_ns(&self) -> u64 {
        self.plan.spec.timeout.as_nanos() as u64
    }

    /// Fail what has waited longer than the timeout; return when the first
    /// of the others falls due.
    pub(super) fn scan_timeouts(&mut self) -> u64 {
        let timeout = self.timeout_ns();
        let mut due = u64::MAX;
        for i in 0..self.conns.len() {
            // Bounded: each pass that goes round again has ended one of the
            // connection's requests.
            loop {
                let c = &self.conns[i];
                let (since, kind) = match c.state {
                    State::Connecting => (c.connect_start_ns, ErrorKind::ConnectTimeout),
                    State::Handshaking => (c.proto.handshake_start_ns(), ErrorKind::Tls),
                    State::Open if c.len > 0 => (c.front().issued_ns, ErrorKind::Timeout),
                    _ => break,
                };
                if self.now.saturating_sub(since) <= timeout {
                    due = due.min(since + timeout + 1);
                    break;
                }
                if kind == ErrorKind::Timeout
                    && (self.h2_time_out_stream(i) || self.h2_time_out_unopened(i))
                {
                    continue;
                }
                self.fail(i, kind);
                break;
            }
        }
        due
    }
}
