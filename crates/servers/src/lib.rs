//! Servers under test: recipes (data) with their `defaults` and `tuned`
//! profiles, the run directory and the user servers run as, one launcher
//! that starts a recipe (with its backend or helper) and returns a running
//! server with its port, readiness and stop, the sampling of its process
//! tree, the count of its syscalls over a window, the parity of the
//! settings it ran with, and the loopback requests used to check it. The
//! lab decides what to start and when; this crate knows how.

pub mod cgroup;
#[cfg(test)]
mod forker;
pub mod futex;
pub mod helper;
pub mod launch;
pub mod loopback;
pub mod names;
pub mod parity;
pub mod prices;
pub mod probe;
pub mod process;
pub mod profile;
pub mod recipe;
pub mod rules;
pub mod rundir;
pub mod sockets;
pub mod spot;
pub mod syscalls;
pub mod template;
pub mod usage;

pub use launch::{start, Running, Site, Start, StartFailure};
pub use parity::{log_bytes, parity, LabSettings};
pub use process::RunAs;
pub use profile::Profile;
pub use recipe::{max_connections_for, Recipe, Recipes};
pub use rundir::RunDir;
pub use spot::Spot;
