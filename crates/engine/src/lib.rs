//! throng's load engine.
//!
//! Layers, from the bottom: [`http1`] is a sans-IO HTTP/1.x response parser
//! (bytes in, responses out) that knows nothing of sockets; [`exchange`]
//! holds a connection's bytes against the requests written on it; `driver` owns
//! sockets and an edge-triggered mio loop per thread and feeds the parser;
//! [`run`] spreads a [`LoadSpec`] over threads and merges what each thread
//! counted; a [`Session`] does the same in windows, keeping its connections
//! open between them. Nothing here prints or reads options: callers hand in a
//! validated spec and get a [`LoadResult`] back.

pub mod affinity;
mod clock;
mod driver;
pub mod exchange;
// Shared by the fuzz example and the property test; not an API.
mod fnv;
#[doc(hidden)]
pub mod fuzz;
#[doc(hidden)]
pub mod fuzz_h2;
pub mod h2;
pub mod h3;
pub mod http1;
pub mod probe;
mod quic;
pub mod ramp;
pub mod request;
pub mod result;
mod run;
pub mod running;
mod rx;
mod session;
pub mod sockdiag;
pub mod spec;
mod spec_check;
mod spec_h3;
pub mod tap;
mod tick;
pub mod tls;
pub mod users;
pub mod wire;

pub use result::{Drain, ErrorKind, LoadModel, LoadResult, Warning};
pub use run::{max_connections, proportional, run, run_tapped, Control, EngineError};
pub use session::Session;
pub use spec::{
    Congestion, ExpectStatus, HttpSpec, HttpVersion, IoBackend, LoadSpec, Order, SpecError, Stop,
    Target, UringGap, DEFAULT_NAP_DIVISOR, DEFAULT_NAP_DIVISOR_H3, MAX_SPIN, MAX_TICK, MIN_SPIN,
    MIN_TICK, NAP_DIVISORS,
};
