//! Whether a benchmark can be believed.
//!
//! [`doctor`] checks the machine before a study (sysctls, limits, CPU
//! frequency, neighbours) and [`verdict`] judges each measurement after it
//! (client-bound, server-starved, errors, drift, delayed ACK, ports, noise,
//! a server whose shape changed, a link that set the pace, retransmits).
//! Both are pure functions over data read once ([`snapshot`] for the
//! machine, the engine's summary for a run), so every rule can be shown to
//! fire on crafted input.

mod delayed_ack;
mod denied;
pub mod doctor;
pub mod idle;
mod launches;
pub mod path;
mod saturation;
pub mod serving;
mod shape;
pub mod snapshot;
mod sweep;
mod sysfs;
pub mod verdict;

pub use doctor::{check, environment, Plan};
pub use snapshot::Snapshot;
pub use verdict::{
    opens_connections, round_verdict, step_verdict, sweep_verdicts, PortUse, RoundContext,
};
