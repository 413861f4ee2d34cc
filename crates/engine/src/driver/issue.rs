//! Issuing requests: which target the next request carries (the requests
//! taken back first, then the spec's order), how many one connection may
//! carry, and the closed model's refill of a connection's places.

use std::collections::VecDeque;

use super::*;

/// The queue of targets the thread's next requests carry.
pub(crate) struct Targets {
    rng: u64,
    seq: usize,
    /// The targets of requests taken back unanswered (a server that closed
    /// or sent a GOAWAY with them in flight), which the next requests
    /// issued carry before the order goes on: given the order's next
    /// targets instead, the targets in flight at each close were served
    /// less often than asked. At most every place of every connection, so
    /// allocated once.
    taken_back: VecDeque<u32>,
}

impl Targets {
    /// `seq`: where the order starts; `places`: every request the thread
    /// can have in flight at once.
    pub(crate) fn new(rng: u64, seq: usize, places: usize) -> Self {
        Targets {
            rng,
            seq,
            taken_back: VecDeque::with_capacity(places),
        }
    }

    /// xorshift64*: cheap, and seeded per thread for repeatable runs.
    pub(crate) fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The target of the next request, of `n` in `order`.
    pub(crate) fn pick(&mut self, n: usize, order: Order) -> u32 {
        if let Some(t) = self.taken_back.pop_front() {
            return t;
        }
        if n == 1 {
            return 0;
        }
        let i = match order {
            Order::Sequential => {
                let i = self.seq;
                self.seq = if i + 1 == n { 0 } else { i + 1 };
                i
            }
            Order::Random => (self.next_random() >> 33) as usize % n,
        };
        i as u32
    }

    /// A request for `target` was taken back unanswered: the next issue
    /// carries it again.
    pub(crate) fn take_back(&mut self, target: u32) {
        self.taken_back.push_back(target);
    }
}

impl Worker<'_> {
    /// The stop flag is not read here: the loop reads it once per
    /// iteration and leaves before anything else is issued.
    pub(super) fn can_issue(&self) -> bool {
        match self.job.quota {
            Some(q) => !self.measuring || self.books.issued_measured < q,
            None => !self.between_windows && self.window.end_ns.is_none_or(|end| self.now < end),
        }
    }

    pub(super) fn issue(&mut self, i: usize, intended_ns: u64) {
        let target = self
            .targets
            .pick(self.plan.requests.targets(), self.plan.spec.order);
        // The open model's requests belong to the phase their schedule put
        // them in: sends the warmup owed and a stall delayed past its end
        // are the warmup's, or a measured window would count more requests
        // than its rate offered and hide a server that fell behind.
        let measured = if self.plan.interval_ns.is_some() && self.job.quota.is_none() {
            self.measuring && intended_ns >= self.window.warmup_end_ns
        } else {
            self.measuring
        };
        if measured && self.job.quota.is_some() {
            self.books.issued_measured += 1;
        }
        self.push_request(i, target, intended_ns, measured);
    }

    /// Put request `target` on connection `i`'s ring, counted as sent in
    /// its phase.
    pub(super) fn push_request(&mut self, i: usize, target: u32, intended_ns: u64, measured: bool) {
        self.counters(measured).sent += 1;
        let now = self.now;
        let limit = self.dial.limit;
        let c = &mut self.conns[i];
        c.carried += 1;
        c.push(InFlight {
            target,
            issued_ns: now,
            intended_ns,
            measured,
            last: c.carried >= limit,
            stream: 0,
        });
        if self.plan.interval_ns.is_some() {
            let late = now.saturating_sub(intended_ns);
            if measured {
                self.stats.lateness.saturating_record((late / 1000).max(1));
                if late > LATE_NS {
                    self.stats.late_sends += 1;
                }
            }
        }
    }

    /// Closed model: keep the connection's pipeline full while there is
    /// work and the connection may carry more; once its last request is
    /// issued, the next ones wait for the connection that replaces it.
    pub(super) fn fill(&mut self, i: usize) {
        if self.users.is_some() {
            self.fill_user(i);
            return;
        }
        let depth = self.depth_of(i);
        // A pipelined HTTP/1.1 connection is refilled once half its depth
        // has been answered, in one write, rather than a request per
        // response: the server then reads a batch and answers it in a
        // burst the client takes in one read, where topping up each answer
        // settles into a write, a read and a server wake-up per response.
        let c = &self.conns[i];
        if depth > 1 && !c.proto.h2_on() && c.state == State::Open && c.len > depth / 2 {
            self.send(i);
            return;
        }
        let before = self.conns[i].len;
        while self.conns[i].len < depth
            && self.conns[i].carried < self.dial.limit
            && self.can_issue()
        {
            let now = self.now;
            self.issue(i, now);
        }
        self.hold_ends(i, self.conns[i].len - before);
        self.send(i);
    }
}
