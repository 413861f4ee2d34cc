//! A play written as data: what each answer is and how it goes out, for
//! the servers whose only oddity is when or how they answer.

use std::time::Duration;

use super::conn::Conn;

/// How a connection answers its requests, one answer per request.
#[derive(Clone, Debug)]
pub struct Script {
    answer: Vec<u8>,
    delay: Duration,
    close_after: Option<u64>,
    drip: Option<(usize, Duration)>,
    batch: usize,
}

impl Script {
    /// `answer` to every request at once, the connection kept open.
    pub fn answering(answer: Vec<u8>) -> Script {
        Script {
            answer,
            delay: Duration::ZERO,
            close_after: None,
            drip: None,
            batch: 1,
        }
    }

    /// Each answer goes out `delay` after its request was read: a slow
    /// server, one request at a time.
    pub fn delay(mut self, delay: Duration) -> Script {
        self.delay = delay;
        self
    }

    /// The connection is closed once `n` answers have gone out on it, as a
    /// server's limit of requests per connection does.
    pub fn close_after(mut self, n: u64) -> Script {
        self.close_after = Some(n);
        self
    }

    /// Each answer goes out `step` bytes at a time, `pause` apart: partial
    /// writes, each its own segment.
    pub fn drip(mut self, step: usize, pause: Duration) -> Script {
        self.drip = Some((step, pause));
        self
    }

    /// Answers wait until `n` requests are read, then go out together in
    /// one write: a pipelining client's batches, answered as batches.
    pub fn batch(mut self, n: usize) -> Script {
        self.batch = n.max(1);
        self
    }

    /// Plays the script on one connection.
    pub fn play(&self, mut c: Conn) {
        let mut sent = 0u64;
        loop {
            let mut due = 0;
            while due < self.batch {
                if !c.request() {
                    return;
                }
                due += 1;
            }
            if !self.delay.is_zero() && !c.pause(self.delay) {
                return;
            }
            let out = self.answer.repeat(due);
            let went = match self.drip {
                Some((step, pause)) => c.drip(&out, step, pause),
                None => c.send(&out),
            };
            if !went {
                return;
            }
            sent += due as u64;
            if self.close_after.is_some_and(|n| sent >= n) {
                return;
            }
        }
    }
}
