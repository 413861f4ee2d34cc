//! A load as users state it, between the front ends that take it and the
//! engine that runs it: the words of durations, headers, URL lists and
//! session files read one way for `throng load` and a study's `[load]`
//! tables (`vocab`, `target`, `sessions`); the engine's result turned into
//! the summary every output and database holds (`record`) and judged
//! (`verdict`); and a load kept as a run (`saved`). It links neither the
//! lab nor the servers nor other hosts, so `throng load` needs none of
//! them.

pub mod hdr_log;
pub mod junit;
pub mod live;
pub mod metrics;
pub mod record;
pub mod remote_write;
pub mod saved;
pub mod sessions;
pub mod shape;
pub mod target;
pub mod thresholds;
pub mod verdict;
pub mod vocab;
