//! What the servers' core charged for the three kinds of work a web
//! server's request is made of, measured at the start of each launch: a
//! stretch of plain code, a system call and a switch between two threads.
//!
//! A run of servers can drift with the machine under it (the hypervisor's
//! other guests, the caches, the clock). An event-loop server pays such a
//! drift about once a request, a server that switches threads three times
//! a request pays it three times, so the same drift moves the two apart.
//! These figures let a comparison of runs set the machine's own change
//! beside each server's.

use serde::{Deserialize, Serialize};

/// One reading of the servers' core, with nothing of the lab running on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorePrices {
    /// The launch of the group it was read before (0 for the first).
    pub launch: u32,
    /// The group's server cores and workload, as its steps name them.
    pub cores: u32,
    pub workload: String,
    /// The CPU it was read on: the first of the servers' CPUs.
    pub cpu: u32,
    pub unix_s: f64,
    /// Nanoseconds per pass of a fixed loop of integer work.
    pub loop_ns: f64,
    /// Nanoseconds per system call that does no work (`getppid`).
    pub syscall_ns: f64,
    /// Nanoseconds per switch between two threads of one process sharing
    /// the CPU, each waking the other through a pipe (half a round trip).
    pub switch_ns: f64,
}

/// Which of the three prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Price {
    Loop,
    Syscall,
    Switch,
}

impl Price {
    pub const ALL: [Price; 3] = [Price::Loop, Price::Syscall, Price::Switch];

    /// The price in `p`, in nanoseconds.
    pub fn of(self, p: &CorePrices) -> f64 {
        match self {
            Price::Loop => p.loop_ns,
            Price::Syscall => p.syscall_ns,
            Price::Switch => p.switch_ns,
        }
    }

    /// How a reader names it.
    pub fn label(self) -> &'static str {
        match self {
            Price::Loop => "a fixed stretch of code",
            Price::Syscall => "a system call",
            Price::Switch => "a context switch",
        }
    }
}
