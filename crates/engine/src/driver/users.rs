//! Users who think (`LoadSpec::users`): a thread's user slots, each owning
//! `conns_per_user` of its connections, walking their sessions page by
//! page. A page's request goes out on the user's first connection; once it
//! is answered, the burst is spread over the user's connections, one
//! request each at a time, as a browser fetches embedded objects; once the
//! whole page is answered, the user thinks, then takes the next page. A
//! session ends with its last page, or fails, once, when any of its
//! requests fails (the requests still in flight are awaited, and nothing
//! more is sent). Its connections are then closed, as a user leaving.
//!
//! Think times and arrivals are kept in a heap and woken by the thread's
//! timerfd, so a think ends within microseconds of its time rather than
//! epoll's milliseconds.

use super::*;
use crate::users::{Arrival, Spacing, Think, Users};
use throng_model::SessionCounts;

/// `want` of a connection with nothing to carry.
const NONE: u32 = u32::MAX;
/// `next_burst` while a page's first request is unanswered.
const MAIN: u32 = u32::MAX;

#[derive(Clone, Copy, Default)]
struct User {
    active: bool,
    measured: bool,
    failed: bool,
    script: u32,
    page: u32,
    next_burst: u32,
    outstanding: u32,
    /// Requests of the session answered as expected.
    answered: u32,
    started_ns: u64,
    /// When the last page was answered: the think time observed runs from
    /// here to the next page's send.
    think_from_ns: u64,
}

/// A thread's session figures, for one window.
pub(crate) struct SessionStats {
    /// `late_arrivals` are those taken more than `LATE_NS` after their
    /// time; `unfinished` are the measured sessions still under way when
    /// the window ended.
    pub counts: SessionCounts,
    /// Microseconds from a session's first send to its last answer.
    pub duration: Histogram<u64>,
    /// Microseconds from a page's last answer to the next page's send.
    pub think: Histogram<u64>,
    /// Users active at each whole second of the measured phase.
    pub active: Vec<u64>,
    pub active_max: u64,
    /// Measured sessions ended (completed or failed) by the requests of
    /// theirs answered as expected; the last slot holds that many or more.
    pub lengths: [u64; SESSION_LENGTHS],
}

/// Slots of a thread's session length histogram: httperf's session files
/// rarely pass a few dozen requests a session.
pub(crate) const SESSION_LENGTHS: usize = 64;

impl SessionStats {
    fn new() -> Self {
        SessionStats {
            counts: SessionCounts::default(),
            lengths: [0; SESSION_LENGTHS],
            duration: histogram(),
            think: histogram(),
            active: Vec::new(),
            active_max: 0,
        }
    }
}

/// A population that follows stages (`LoadSpec::users_ramp`): slot `u` of
/// thread `index` is the run's user `u · threads + index`, so each thread
/// holds its share of any target, and user `k` is active while the target
/// is above `k`.
struct Staged {
    threads: u64,
    index: u64,
    /// Slots below this were let in when the target reached them; a slot
    /// that left on a falling target lowers it, to be let in again.
    joined: usize,
    /// When the target next reaches slot `joined`; `u64::MAX`: not before
    /// the end.
    next_ns: u64,
}

impl Staged {
    /// The run's user number of slot `u`, counted from 1.
    fn rank(&self, u: usize) -> f64 {
        (u as u64 * self.threads + self.index + 1) as f64
    }

    /// Slots of this thread the target `v` holds.
    fn held(&self, v: f64, slots: usize) -> usize {
        // A hair over, so a target met exactly at its instant counts.
        let whole = (v + 1e-6).floor();
        if whole < (self.index + 1) as f64 {
            return 0;
        }
        let n = ((whole as u64 - self.index - 1) / self.threads + 1) as usize;
        n.min(slots)
    }
}

pub(crate) struct UserState {
    per_user: usize,
    staged: Option<Staged>,
    users: Vec<User>,
    /// Per connection: the target it carries next, or `NONE`.
    want: Vec<u32>,
    /// (due, user): thinks that end then.
    wakes: BinaryHeap<Reverse<(u64, usize)>>,
    /// Open model: the next arrival; `u64::MAX` without arrivals.
    next_arrival_ns: u64,
    /// Open model: mean nanoseconds between this thread's arrivals.
    gap_ns: f64,
    spacing: Spacing,
    free: Vec<usize>,
    next_script: usize,
    active: u64,
    /// Requests mode: measured sessions this thread starts.
    quota: Option<u64>,
    started_measured: u64,
    ended_measured: u64,
    pub(crate) stats: SessionStats,
}

impl UserState {
    /// `staged`: with stages of users, the threads the run's users are
    /// spread over.
    pub(crate) fn new(
        users: &Users,
        staged: Option<usize>,
        job: &Job,
        threads: usize,
        quota: Option<u64>,
    ) -> Self {
        let per_user = users.conns_per_user.max(1);
        let slots = job.conns / per_user;
        let staged = staged.map(|threads| Staged {
            threads: threads.max(1) as u64,
            index: job.index as u64,
            joined: 0,
            next_ns: u64::MAX,
        });
        let gap_ns = match users.arrival {
            Arrival::Open { per_sec, .. } => threads as f64 * 1e9 / per_sec,
            Arrival::Population => 0.0,
        };
        let spacing = match users.arrival {
            Arrival::Open { spacing, .. } => spacing,
            Arrival::Population => Spacing::Uniform,
        };
        UserState {
            per_user,
            staged,
            users: vec![User::default(); slots],
            want: vec![NONE; job.conns],
            wakes: BinaryHeap::with_capacity(slots),
            next_arrival_ns: u64::MAX,
            gap_ns,
            spacing,
            free: (0..slots).rev().collect(),
            // Threads start at different scripts, so a short run still
            // covers the file.
            next_script: job.index,
            active: 0,
            quota,
            started_measured: 0,
            ended_measured: 0,
            stats: SessionStats::new(),
        }
    }

    /// The next time clock-driven session work falls due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        let wake = self.wakes.peek().map(|Reverse((due, _))| *due);
        let staged = self.staged.as_ref().map_or(u64::MAX, |s| s.next_ns);
        let arrival = self.next_arrival_ns.min(staged);
        let arrival = (arrival != u64::MAX).then_some(arrival);
        match (wake, arrival) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Requests mode: every measured session this thread owes has ended.
    pub(crate) fn quota_done(&self) -> bool {
        self.quota.is_some_and(|q| self.ended_measured >= q)
    }

    /// Connection `i`'s request has ended, whatever comes of it.
    pub(crate) fn release(&mut self, i: usize) {
        self.want[i] = NONE;
    }

    /// The figures of the window just measured, replaced by empty ones.
    pub(crate) fn take_stats(&mut self) -> SessionStats {
        let mut s = std::mem::replace(&mut self.stats, SessionStats::new());
        s.counts.unfinished = self.users.iter().filter(|u| u.active && u.measured).count() as u64;
        s
    }
}

impl Worker<'_> {
    fn users_plan(&self) -> &Users {
        self.plan.spec.users.as_ref().expect("users mode")
    }

    fn staged(&self) -> bool {
        self.users.as_ref().is_some_and(|u| u.staged.is_some())
    }

    fn us(&mut self) -> &mut UserState {
        self.users.as_mut().expect("users mode")
    }

    /// At a window's start: the population starts its sessions, or the
    /// first arrival is scheduled, threads staggered by one gap each.
    pub(super) fn start_users(&mut self) {
        let now = self.now;
        let threads = self.plan.spec.threads.max(1) as f64;
        let index = self.job.index as f64;
        match self.users_plan().arrival {
            Arrival::Population if self.staged() => {
                self.us().free.clear();
                self.let_in();
            }
            Arrival::Population => {
                // Every slot is taken at once; one that cannot start a
                // session goes back on the free list.
                self.us().free.clear();
                let n = self.us().users.len();
                for u in 0..n {
                    self.start_session(u);
                }
            }
            Arrival::Open { .. } => {
                let us = self.us();
                us.next_arrival_ns = now + (us.gap_ns * index / threads) as u64;
            }
        }
    }

    /// A session request may go out: the window runs and, once a session
    /// has started, nothing else holds it back.
    fn users_may_send(&self) -> bool {
        !self.between_windows && self.window.end_ns.is_none_or(|end| self.now < end)
    }

    fn may_start_session(&self) -> bool {
        let us = self.users.as_ref().expect("users mode");
        if !self.users_may_send() {
            return false;
        }
        match us.quota {
            Some(q) => !self.measuring || us.started_measured < q,
            None => true,
        }
    }

    fn start_session(&mut self, u: usize) {
        if !self.may_start_session() {
            self.us().free.push(u);
            return;
        }
        let scripts = self.users_plan().scripts.len();
        let (now, measured) = (self.now, self.measuring);
        let us = self.us();
        let script = us.next_script % scripts;
        us.next_script = us.next_script.wrapping_add(1);
        us.active += 1;
        us.stats.active_max = us.stats.active_max.max(us.active);
        if measured {
            us.started_measured += 1;
            us.stats.counts.started += 1;
        }
        us.users[u] = User {
            active: true,
            measured,
            failed: false,
            script: script as u32,
            page: 0,
            next_burst: MAIN,
            outstanding: 0,
            answered: 0,
            started_ns: now,
            think_from_ns: 0,
        };
        self.start_page(u);
    }

    fn start_page(&mut self, u: usize) {
        let now = self.now;
        let user = self.us().users[u];
        if user.think_from_ns > 0 && user.measured {
            let thought = now.saturating_sub(user.think_from_ns) / 1000;
            self.us().stats.think.saturating_record(thought.max(1));
        }
        let request =
            self.users_plan().scripts[user.script as usize].pages[user.page as usize].request;
        let us = self.us();
        let first = u * us.per_user;
        us.users[u].next_burst = MAIN;
        us.users[u].outstanding = 1;
        us.want[first] = request;
        // After this batch of events: a session ending mid-read starts the
        // next one here.
        self.defer(first);
    }

    /// Closed model's `fill` for a user's connection: carry its request.
    pub(super) fn fill_user(&mut self, i: usize) {
        let want = self.users.as_ref().expect("users mode").want[i];
        if want != NONE && self.conns[i].len == 0 && self.users_may_send() {
            let u = i / self.us().per_user;
            let measured = self.us().users[u].measured;
            self.push_request(i, want, self.now, measured);
        }
        self.send(i);
    }

    /// A request of connection `i` ended: answered (`ok` unless it was a
    /// wrong status, size or body) or failed.
    pub(super) fn user_answered(&mut self, i: usize, ok: bool) {
        let us = self.us();
        us.want[i] = NONE;
        let u = i / us.per_user;
        let user = &mut us.users[u];
        if !user.active {
            return;
        }
        user.outstanding = user.outstanding.saturating_sub(1);
        if ok {
            user.answered += 1;
        } else {
            user.failed = true;
        }
        if user.failed {
            if user.outstanding == 0 {
                self.end_session(u);
            }
            return;
        }
        if user.next_burst == MAIN {
            user.next_burst = 0;
        }
        let (script, page) = (user.script as usize, user.page as usize);
        let burst_len = self.users_plan().scripts[script].pages[page].burst.len() as u32;
        // Each free connection of the user takes the next burst request.
        let per_user = self.us().per_user;
        for j in 0..per_user {
            let c = u * per_user + j;
            let us = self.users.as_mut().expect("users mode");
            let next = us.users[u].next_burst;
            if next >= burst_len {
                break;
            }
            if us.want[c] != NONE {
                continue;
            }
            let target = self.plan.spec.users.as_ref().expect("users mode").scripts[script].pages
                [page]
                .burst[next as usize];
            us.want[c] = target;
            us.users[u].next_burst += 1;
            us.users[u].outstanding += 1;
            // After this batch of events, as the closed model's next
            // requests are: `i` may be mid-read.
            self.defer(c);
        }
        let user = self.us().users[u];
        if user.outstanding == 0 && user.next_burst >= burst_len {
            self.page_done(u);
        }
    }

    fn page_done(&mut self, u: usize) {
        let user = self.us().users[u];
        let plan = self.users_plan();
        let pages = &plan.scripts[user.script as usize].pages;
        if user.page as usize + 1 >= pages.len() {
            self.end_session(u);
            return;
        }
        let think = match pages[user.page as usize].think {
            Some(t) => t,
            None => match plan.think {
                Think::Fixed(t) => t,
                Think::Uniform { low, high } => {
                    let span = high.saturating_sub(low).as_nanos() as u64;
                    let r = self.targets.next_random();
                    low + Duration::from_nanos(if span == 0 { 0 } else { r % (span + 1) })
                }
            },
        };
        let now = self.now;
        let us = self.us();
        us.users[u].page += 1;
        us.users[u].think_from_ns = now;
        us.wakes.push(Reverse((now + think.as_nanos() as u64, u)));
    }

    fn end_session(&mut self, u: usize) {
        let now = self.now;
        let per_user = self.us().per_user;
        let user = self.us().users[u];
        let us = self.us();
        us.users[u].active = false;
        us.active -= 1;
        if user.measured {
            us.ended_measured += 1;
            us.stats.lengths[(user.answered as usize).min(SESSION_LENGTHS - 1)] += 1;
            if user.failed {
                us.stats.counts.failed += 1;
            } else {
                us.stats.counts.completed += 1;
                let took = now.saturating_sub(user.started_ns) / 1000;
                us.stats.duration.saturating_record(took.max(1));
            }
        }
        for j in 0..per_user {
            let c = u * per_user + j;
            self.us().want[c] = NONE;
            if self.conns[c].state != State::Down && self.conns[c].len == 0 {
                self.shut(c);
            }
        }
        match self.users_plan().arrival {
            Arrival::Population if self.staged() => self.leave_or_stay(u),
            Arrival::Population => self.start_session(u),
            Arrival::Open { .. } => self.us().free.push(u),
        }
    }

    /// Seconds since the window started, where the stages are read.
    fn stage_time(&self) -> f64 {
        self.now.saturating_sub(self.window.start_ns) as f64 / 1e9
    }

    /// Stages of users: the slots the target has reached since the last
    /// call start their sessions, and the next reach is timed.
    fn let_in(&mut self) {
        let t = self.stage_time();
        // The plan outlives the worker's borrow.
        let plan = self.plan;
        let ramp = plan.spec.users_ramp.as_ref().expect("stages of users");
        let target = ramp.at(t);
        let slots = self.us().users.len();
        let st = self.us().staged.as_ref().expect("stages of users");
        let (from, to) = (st.joined, st.held(target, slots));
        // Bounded by the thread's slots; a slot still active (over a
        // falling target, its session not yet ended) simply stays.
        for u in from..to {
            if !self.us().users[u].active {
                self.start_session(u);
            }
        }
        let st = self.us().staged.as_mut().expect("stages of users");
        st.joined = st.joined.max(to);
        self.time_next_reach(t);
    }

    /// When the target next reaches the first slot not let in.
    fn time_next_reach(&mut self, t: f64) {
        let start = self.window.start_ns;
        let slots = self.us().users.len();
        let st = self.us().staged.as_ref().expect("stages of users");
        let (joined, level) = (st.joined, st.rank(st.joined) - 1e-6);
        // The plan outlives the worker's borrow.
        let plan = self.plan;
        let ramp = plan.spec.users_ramp.as_ref().expect("stages of users");
        let next = match joined >= slots {
            true => None,
            false => ramp.reaches(level, t),
        };
        let next = next.map_or(u64::MAX, |at| {
            start.saturating_add((at * 1e9).ceil() as u64)
        });
        self.us().staged.as_mut().expect("stages of users").next_ns = next;
    }

    /// Stages of users: a user whose session ended starts its next while
    /// the target still holds it, and leaves otherwise, as k6's ramping
    /// users finish their iteration before they go.
    fn leave_or_stay(&mut self, u: usize) {
        let t = self.stage_time();
        // The plan outlives the worker's borrow.
        let plan = self.plan;
        let ramp = plan.spec.users_ramp.as_ref().expect("stages of users");
        let target = ramp.at(t);
        let slots = self.us().users.len();
        let st = self.us().staged.as_mut().expect("stages of users");
        if u < st.held(target, slots) {
            self.start_session(u);
            return;
        }
        st.joined = st.joined.min(u);
        self.time_next_reach(t);
    }

    /// Thinks that have ended and arrivals that have come, in time order.
    pub(super) fn fire_users(&mut self) {
        let now = self.now;
        if self.us().staged.as_ref().is_some_and(|s| s.next_ns <= now) {
            self.let_in();
        }
        // Bounded: a stalled loop catches up at most a turn's worth of
        // users before it reads its sockets again.
        for _ in 0..4096 {
            let now = self.now;
            let us = self.us();
            let wake = us.wakes.peek().map(|Reverse((d, u))| (*d, *u));
            let arrival = us.next_arrival_ns;
            match wake {
                Some((due, u)) if due <= now && due <= arrival => {
                    us.wakes.pop();
                    if self.users_may_send() {
                        self.start_page(u);
                    } else {
                        // The window is over: the session stays unfinished.
                        self.us().users[u].think_from_ns = 0;
                    }
                }
                _ if arrival <= now => {
                    let gap = match us.spacing {
                        Spacing::Uniform => us.gap_ns,
                        Spacing::Exponential => {
                            let r = self.targets.next_random();
                            // (0, 1]: ln never sees 0.
                            let x = ((r >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                            -x.ln() * self.us().gap_ns
                        }
                    };
                    let us = self.us();
                    us.next_arrival_ns = arrival + gap.max(1.0) as u64;
                    if !self.may_start_session() {
                        continue;
                    }
                    // A thread that could not keep the arrivals' schedule
                    // (short of CPU) starts them in bunches: the server
                    // then sees another process than the one asked for.
                    if self.measuring && now.saturating_sub(arrival) > LATE_NS {
                        self.us().stats.counts.late_arrivals += 1;
                    }
                    match self.us().free.pop() {
                        Some(u) => self.start_session(u),
                        None => {
                            if self.measuring {
                                self.us().stats.counts.turned_away += 1;
                            }
                        }
                    }
                }
                _ => return,
            }
        }
    }

    /// Users active now, for each whole second of the measured phase
    /// passed since the last sample.
    pub(super) fn sample_users(&mut self) {
        if !self.measuring {
            return;
        }
        let sec = (self.now.saturating_sub(self.window.warmup_end_ns) / 1_000_000_000) as usize;
        let us = self.us();
        while us.stats.active.len() <= sec {
            // At most once per second: not a per-request allocation.
            let active = us.active;
            us.stats.active.push(active);
        }
    }
}
