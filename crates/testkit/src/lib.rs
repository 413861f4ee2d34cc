//! What throng's integration tests share, so that each suite states its
//! case and not its plumbing: a scripted HTTP/1.1 server for what real
//! servers will not do on demand (`http`), waits bounded by a deadline
//! (`wait`), a self-signed certificate (`cert`), sockets in the states a
//! test needs of the kernel's tables (`tcp`), and builders of the stored
//! documents that report and trust tests feed on (`model`).
//!
//! A dev-dependency only, linking nothing of the workspace but the model,
//! so any crate's tests can use it without a cycle.

pub mod cert;
pub mod http;
pub mod model;
pub mod tcp;
pub mod wait;

pub use wait::wait_until;
