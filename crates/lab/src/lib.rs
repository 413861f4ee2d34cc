//! throng lab: studies run against real servers.
//!
//! A [`Study`] (TOML) names servers, workloads, core counts and levels;
//! [`run_study`] probes each server's features, then sweeps each group
//! (cores × workload) through an [`Executor`]: the real one starts servers
//! with `throng-servers` and loads them with the engine, a test's scripted
//! one stands in for both. Results go to the store as they are measured.
//! The lab never prints and never installs signal handlers: it reports
//! through an [`Observer`] and stops when its [`Interrupt`] is triggered.

pub mod apart;
pub mod calibration;
pub mod certs;
pub mod executor;
pub mod features;
pub mod futex;
pub mod group;
pub mod h3;
pub mod interrupt;
pub mod launch_prior;
mod live;
pub mod maxusers;
pub mod observer;
pub mod pairs;
pub mod precision;
pub mod privilege;
pub mod profile;
pub mod reruns;
pub mod round;
pub mod run;
pub mod spec;
pub mod spread;
pub mod study;
pub mod sweep;
pub mod workload;

pub use executor::{Executor, Local, Started};
pub use interrupt::Interrupt;
pub use observer::{Event, Observer, Quiet};
pub use round::{Measured, RoundError, RoundKind, ServerId};
pub use run::{run_study, run_study_with, LabOptions, Outcome};
pub use study::Study;
pub use throng_servers::{Recipe, Recipes};
pub use throng_store::Store;
