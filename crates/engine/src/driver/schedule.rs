//! When a connection's next request goes out: in the open model, at its
//! intended time, from a heap of the connections waiting for theirs; in
//! the closed model, once the batch of events that answered it is done.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::*;

pub(crate) struct Schedule {
    /// Open model: (intended time, connection), earliest first.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// Connections whose next request waits for the end of the event batch.
    deferred: Vec<usize>,
    /// In ticks: answers still awaited of the requests sent, which a wait
    /// waits for (nap.rs), and the requests ended (answered or failed)
    /// when that was last counted.
    pub(crate) awaited: u64,
    pub(crate) completed_mark: u64,
}

impl Schedule {
    pub(crate) fn new(conns: usize) -> Self {
        Schedule {
            heap: BinaryHeap::with_capacity(conns),
            deferred: Vec::with_capacity(conns),
            awaited: 0,
            completed_mark: 0,
        }
    }

    /// Open model: when the earliest send falls due.
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((due, _))| *due)
    }
}

impl Worker<'_> {
    /// In ticks: the answers still awaited of the requests sent, brought
    /// up to date with the requests ended (answered or failed) since last
    /// counted. A connection carries one request at a time, so at most
    /// one each. A count that is off (an error that ended no request)
    /// makes a wait last to the tick at worst, which costs the schedule
    /// nothing.
    pub(super) fn tick_awaited(&mut self) -> u64 {
        let (m, w) = (&self.stats.measured, &self.stats.warmup);
        let ended = m.completed + w.completed + m.errors_total() + w.errors_total();
        let s = &mut self.schedule;
        s.awaited = s
            .awaited
            .saturating_sub(ended.saturating_sub(s.completed_mark));
        s.completed_mark = ended;
        s.awaited.min(self.conns.len() as u64)
    }

    /// In ticks: whether a connection waiting for an answer has its next
    /// send already due (more of a tick's requests than it carries at
    /// once), so that its answer is worth a wake. O(connections), taken
    /// only when a nap is in question.
    pub(super) fn tick_owed(&self, now: u64) -> bool {
        let ticks = self.ticks();
        self.conns
            .iter()
            .any(|c| c.awaiting() && ticks.send_at(c.next_intended_ns) <= now)
    }

    /// Closed model: connection `i` sends its next request after this
    /// batch of events (`send_deferred`).
    pub(super) fn defer(&mut self, i: usize) {
        if !self.conns[i].deferred {
            self.conns[i].deferred = true;
            self.schedule.deferred.push(i);
        }
    }

    /// Connection `i` has room for its next requests: on the open model's
    /// schedule, or with this batch's others in the closed model.
    #[inline]
    pub(super) fn go_on(&mut self, i: usize) {
        if self.plan.interval_ns.is_some() {
            self.schedule(i);
        } else {
            self.defer(i);
        }
    }

    /// Closed model: the next requests of the connections answered in this
    /// batch go out together after it, as wrk's do, rather than one by one
    /// between reads. The server then finds several requests per wake-up
    /// instead of being woken for each, and a pipelined connection answered
    /// several times in one read tops up with one writev.
    pub(super) fn send_deferred(&mut self) {
        let mut list = std::mem::take(&mut self.schedule.deferred);
        for &i in &list {
            self.conns[i].deferred = false;
            self.fill(i);
        }
        list.clear();
        self.schedule.deferred = list;
    }

    /// Open model: queue an idle connection for its next intended send.
    pub(super) fn schedule(&mut self, i: usize) {
        let depth = self.depth_of(i);
        let c = &mut self.conns[i];
        if c.in_heap || c.len >= depth {
            return;
        }
        c.in_heap = true;
        let spaced = c.next_intended_ns;
        let at = self.ticks().send_at(spaced);
        self.schedule.heap.push(Reverse((at, i)));
    }

    /// The window's ticks, if the schedule is kept in them.
    #[inline]
    pub(super) fn ticks(&self) -> crate::tick::Ticks {
        crate::tick::Ticks {
            start: self.window.start_ns,
            ns: self.plan.tick_ns,
            end: self.window.end_ns.unwrap_or(u64::MAX),
        }
    }

    /// Open model: send every request whose intended time has come. A
    /// connection still busy when its time comes sends as soon as it is
    /// free, and that lateness is charged to the request's latency. In
    /// ticks, the intended time is the tick's start (tick.rs), while the
    /// connection's even spacing goes on from its own instant.
    pub(super) fn fire_due(&mut self) {
        let interval = self.plan.interval_ns.unwrap_or(0);
        while let Some(&Reverse((due, i))) = self.schedule.heap.peek() {
            if due > self.now {
                break;
            }
            self.schedule.heap.pop();
            self.conns[i].in_heap = false;
            if !self.can_issue() {
                continue;
            }
            let spaced = self.conns[i].next_intended_ns;
            self.conns[i].next_intended_ns = match &self.plan.spec.ramp {
                Some(r) => {
                    let c = &mut self.conns[i];
                    c.next_k += self.plan.spec.connections as u64;
                    let at = r.due_ns(c.next_k);
                    self.window.start_ns.saturating_add(at)
                }
                None => spaced + interval,
            };
            // From the connection's own spacing, not the heap's key: one
            // queued before its window set that spacing (an HTTP/2
            // connection given its server's settings) holds an older key.
            let intended = self.ticks().send_at(spaced);
            self.issue(i, intended);
            if self.plan.tick_ns > 0 {
                self.schedule.awaited += 1;
            }
            self.send(i);
            // A connection that may carry more (HTTP/2 streams, a
            // pipeline) takes its next send on time too, not once this one
            // is answered: one at a time, 8 streams did the work of one
            // and the schedule's lag was charged to the server.
            self.schedule(i);
        }
    }
}
