//! throng lab: real web servers started alike from recipes, pinned to
//! cores, verified, swept over concurrency with a precision loop, sampled
//! from /proc, and stored in SQLite.
//!
//! The crate never prints: [`lab::run_study`] reports through an
//! [`lab::Observer`], and the `throng` command decides how to show it.

pub mod dynamic;
pub mod features;
pub mod interrupt;
pub mod lab;
pub mod maxusers;
pub mod process;
pub mod recipe;
pub mod sample;
pub mod stats;
pub mod store;
pub mod study;
pub mod workload;

pub use interrupt::Interrupt;
pub use lab::{max_users, run_study, Event, LabOptions, Observer, Outcome, Quiet};
pub use recipe::{Recipe, Recipes};
pub use store::Store;
pub use study::Study;
