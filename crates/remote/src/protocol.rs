//! What a coordinating throng and an agent say to each other: one JSON
//! object per line, in both directions, over the transport's stdio.
//!
//! The agent speaks first, a banner naming the protocol it speaks, so the
//! coordinator can tell a live agent from the bootstrap script's answer
//! (`throng-missing ARCH`) or from a shell's message on a host whose
//! login prints one. Every request carries an id the reply repeats.
//! The version is bumped whenever a message changes shape; an agent and
//! a coordinator of different versions refuse each other by name.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use throng_engine::{LoadResult, LoadSpec};
use throng_model::Environment;

pub const PROTOCOL: u32 = 4;

/// The first line an agent writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Banner {
    pub throng_agent: u32,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub id: u64,
    #[serde(flatten)]
    pub body: T,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// What the host is: its environment, CPUs and build.
    Hello,
    /// The agent's wall clock on receipt and on reply (Unix ns), for one
    /// four-timestamp exchange.
    Clock,
    /// Run a load spec, starting at `start_unix_ns` on the agent's own clock.
    Load {
        spec: Box<LoadSpec>,
        /// Use as many threads as the host's own CPUs, pinned to them,
        /// rather than the spec's count.
        auto_threads: bool,
        start_unix_ns: u64,
    },
    /// Open a closed-model load's connections (`spec`, for a duration)
    /// and keep them, idle, for the windows that follow; `key` names them.
    /// A study keeps a level's connections so that its short slices
    /// measure serving, not connecting.
    Open {
        key: String,
        spec: Box<LoadSpec>,
        auto_threads: bool,
    },
    /// One window over the connections `key` holds: `warmup_s` of
    /// uncounted load, then `seconds` counted, from `start_unix_ns` on the
    /// agent's own clock. Replies as a load does.
    Window {
        key: String,
        warmup_s: f64,
        seconds: f64,
        start_unix_ns: u64,
    },
    /// A level's slices, sent once: each a window over the connections its
    /// key holds, at its own start on the agent's own clock, run in order.
    /// One `Slice` reply per slice as it ends (a failed slice's says why,
    /// and the next still runs on time), then `PlanEnded`. A `Stop` ends
    /// the slice under way (its reply has what it measured) and the plan.
    Plan { slices: Vec<PlanSlice> },
    /// Run no slice of the plan under way after slice `after`; the one
    /// running ends on time, its figures sent as usual.
    Cut { after: u32 },
    /// Close the connections `key` holds.
    Shut { key: String },
    /// Stop the running load early; it still replies with what it measured.
    Stop,
    /// Round trip, MTU and link of the path from this host to `addr`.
    Path { addr: SocketAddr, samples: u32 },
    /// Which of these programs the host lacks.
    Have { programs: Vec<String> },
    /// `throng doctor`'s checks on this host, for a client holding
    /// `connections` connections.
    Doctor { connections: u64 },
    /// A request for the agent's extension (the lab's server-host side):
    /// its shape is the extension's own.
    Ext { body: serde_json::Value },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Hello(Box<HostFacts>),
    Clock {
        t1: u64,
        t2: u64,
    },
    /// A load's result, and the host's ephemeral ports as it ended
    /// (ports are the client's own, so each host reads its own).
    Load {
        result: Box<LoadResult>,
        #[serde(default)]
        ports: throng_trust::PortUse,
        /// The TCP segments this host sent and sent again over the load
        /// (/proc/net/snmp); absent where they could not be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tcp: Option<throng_model::TcpSegments>,
    },
    /// The connections of an `Open` are open, or failed and will be
    /// opened again, and counted, in the first window.
    Opened,
    /// The connections of a `Shut` are closed (or none were held).
    Shut,
    /// One slice of a `Plan`, as it ended: its load's result and the
    /// host's ports, or why it failed.
    Slice {
        index: u32,
        #[serde(default)]
        result: Option<Box<LoadResult>>,
        #[serde(default)]
        ports: throng_trust::PortUse,
        /// The TCP segments this host sent, and sent again, over the slice.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tcp: Option<throng_model::TcpSegments>,
        #[serde(default)]
        error: Option<String>,
        /// When the slice ended here and when its figures were ready to
        /// send, on this host's clock.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stamps: Option<SliceStamps>,
    },
    /// A `Plan` is over: `ran` of its slices ran, and the host is free.
    PlanEnded {
        ran: u32,
    },
    /// A `Cut` is noted.
    Cut,
    Stopping,
    Path(PathFacts),
    Have {
        missing: Vec<String>,
    },
    Doctor {
        findings: Vec<throng_model::Finding>,
    },
    /// The extension's answer.
    Ext {
        body: serde_json::Value,
    },
    /// The request failed on the host; the message is the agent's.
    Failed {
        message: String,
    },
}

/// A slice's end and its figures' readiness on the agent's clock (Unix
/// ns): with the plan's end and the reply's arrival they say where the
/// time between a slice's end and its figures in hand went.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct SliceStamps {
    pub ended_unix_ns: u64,
    pub ready_unix_ns: u64,
    /// How long the slice's start waited past its instant for drains: the
    /// slice before it reading what was still in flight, as every slice
    /// does at home, and the lateness drains gave that slice's start,
    /// which its end carried. Lateness that is the last servers' answers,
    /// not the host's pace.
    #[serde(default)]
    pub waited_ns: u64,
}

/// One slice of a [`Request::Plan`], its start on the agent's clock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanSlice {
    pub key: String,
    pub start_unix_ns: u64,
    pub warmup_s: f64,
    pub seconds: f64,
}

/// One host as its agent sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostFacts {
    pub arch: String,
    /// Identity of the agent's binary (see `binary::Binary::id`).
    pub build: String,
    pub environment: Environment,
    /// CPUs the agent may run on.
    pub cpus: Vec<usize>,
}

/// The network path from a client host to the server host.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PathFacts {
    pub target: String,
    /// TCP connect times (one round trip each), microseconds: the least and
    /// the median of the samples.
    pub rtt_min_us: Option<f64>,
    pub rtt_median_us: Option<f64>,
    pub samples: u32,
    /// Interface the route leaves by, and its MTU.
    pub interface: Option<String>,
    pub mtu: Option<u32>,
    /// What the kernel knows of the path's MTU (IP_MTU on a connected
    /// socket): at most the interface's.
    pub path_mtu: Option<u32>,
    /// Link speed from /sys, megabits per second, where the driver says.
    pub speed_mbps: Option<u64>,
    /// Traffic stays on this machine's loopback: client and server share a box.
    pub loopback: bool,
    /// Why the round trip could not be measured.
    pub error: Option<String>,
}
