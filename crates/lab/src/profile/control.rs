//! perf's control pipe (`--control=fd:CTL,ACK`): a command written, its
//! acknowledgement awaited; and perf's exit awaited within a bound.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::process::Child;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long perf may take to enable or disable its events.
pub const SETUP_WITHIN: Duration = Duration::from_secs(10);

/// Why a command went unacknowledged.
pub enum Unacknowledged {
    /// perf answered something else.
    Answered(String),
    TimedOut,
    /// perf closed the pipe: it ended.
    Gone,
}

impl std::fmt::Display for Unacknowledged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unacknowledged::Answered(a) => write!(f, "answered {a:?}"),
            Unacknowledged::TimedOut => write!(f, "no acknowledgement within {SETUP_WITHIN:?}"),
            Unacknowledged::Gone => write!(f, "ended before acknowledging"),
        }
    }
}

/// Sends perf a control command and waits for its acknowledgement. perf
/// ends each acknowledgement with a NUL, which the next line may start
/// with or stand alone on.
pub fn ask(commands: &mut File, acks: &Receiver<String>, what: &str) -> Result<(), Unacknowledged> {
    if writeln!(commands, "{what}").is_err() {
        return Err(Unacknowledged::Gone);
    }
    let deadline = Instant::now() + SETUP_WITHIN;
    let bare = |l: &str| {
        l.trim_matches(|c: char| c == '\0' || c.is_whitespace())
            .to_string()
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match acks.recv_timeout(left) {
            Ok(line) if bare(&line).is_empty() => continue,
            Ok(line) if bare(&line) == "ack" => return Ok(()),
            Ok(line) => return Err(Unacknowledged::Answered(line)),
            Err(RecvTimeoutError::Timeout) => return Err(Unacknowledged::TimedOut),
            Err(RecvTimeoutError::Disconnected) => return Err(Unacknowledged::Gone),
        }
    }
}

/// [`ask`], its failure in words.
pub fn acknowledged(
    commands: &mut File,
    acks: &Receiver<String>,
    what: &str,
) -> Result<(), String> {
    ask(commands, acks, what).map_err(|e| format!("{what:?}: {e}"))
}

/// perf's acknowledgements, line by line, read on a thread of their own.
pub fn acks(file: File) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(file).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub fn wait_within(
    child: &mut Child,
    within: Duration,
) -> Result<std::process::ExitStatus, String> {
    let deadline = Instant::now() + within;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Ok(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => return Err(format!("perf did not end within {within:?}")),
            Err(e) => return Err(format!("cannot wait for perf: {e}")),
        }
    }
}
