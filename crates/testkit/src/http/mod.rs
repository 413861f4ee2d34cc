//! A scripted HTTP/1.1 server on loopback, for what real servers will not
//! do on demand: resets, stalls, late or partial answers, malformed or
//! truncated responses, interim responses, closes after so many answers, a
//! listener that stops accepting, keep-alive timeouts on cue.
//!
//! A test hands it a play for one connection (a closure over a [`Conn`],
//! or a [`Script`] of answers); a thread per accepted connection runs it.
//! What the server saw is counted in a [`Tally`] a test can wait on.
//! Dropping the server stops everything: blocked reads wake every few
//! milliseconds to look at the stop flag, and every thread is joined, so
//! no test leaves a thread or a socket behind.

mod answers;
mod conn;
mod script;
mod server;
mod tally;

pub use answers::{answer, chunked, ok, OK};
pub use conn::{Conn, Request};
pub use script::Script;
pub use server::{Options, Server};
pub use tally::Tally;
