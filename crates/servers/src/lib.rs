//! Servers under test: recipes (data), the run directory and the user
//! servers run as, one launcher that starts a recipe (with its backend or
//! helper) and returns a running server with its port, readiness and stop,
//! the sampling of its process tree, and the loopback requests used to
//! check it. The lab decides what to start and when; this crate knows how.

pub mod helper;
pub mod launch;
pub mod loopback;
pub mod names;
pub mod probe;
pub mod process;
pub mod recipe;
pub mod rundir;
pub mod template;
pub mod usage;

pub use launch::{start, Running, Site, Start, StartFailure};
pub use process::RunAs;
pub use recipe::{Recipe, Recipes};
pub use rundir::RunDir;
