//! Users who think: sessions of pages, each page a request and a burst of
//! requests fetched after it in parallel (as a browser fetches a page's
//! images and scripts), with think time between pages. httperf's
//! `--wsesslog` and siege's URL files are parsed into these at the edge;
//! the engine only sees request indexes into the spec's targets.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One page of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// Index into the spec's targets: fetched first, alone.
    pub request: u32,
    /// Fetched once `request` is answered, in parallel over the user's
    /// connections.
    pub burst: Vec<u32>,
    /// Pause after the page (and its burst) before the next page; `None`:
    /// the plan's [`Think`].
    pub think: Option<Duration>,
}

/// One session: what one user does from arrival to leaving.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Script {
    pub pages: Vec<Page>,
}

/// Think time for pages whose script sets none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Think {
    Fixed(Duration),
    /// Uniformly drawn between the two, per page.
    Uniform {
        low: Duration,
        high: Duration,
    },
}

/// Spacing of open-model arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Spacing {
    /// A Poisson process, as httperf's `--period=e`.
    Exponential,
    /// Evenly spaced, as httperf's default fixed period.
    Uniform,
}

/// How users come.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Arrival {
    /// A fixed population: the spec's connections divided by
    /// `conns_per_user` users, each starting its next session as soon as
    /// its last one ends.
    Population,
    /// New users per second over all threads, whether or not earlier ones
    /// have left; at most `connections / conns_per_user` are active at
    /// once, and an arrival that finds no room is counted as turned away.
    Open { per_sec: f64, spacing: Spacing },
}

/// Sessions instead of a stream of requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Users {
    /// Started in turn, each user taking the next.
    pub scripts: Vec<Script>,
    pub arrival: Arrival,
    /// Connections each user may hold at once for a burst (browsers use 6).
    pub conns_per_user: usize,
    pub think: Think,
}

/// A session plan the engine cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UsersError {
    #[error("no session to run")]
    NoScripts,
    #[error("session {0} has no request")]
    EmptyScript(usize),
    #[error("session {session} names request {request}, which is not a target")]
    UnknownRequest { session: usize, request: u32 },
    #[error("connections per user must be at least 1")]
    NoConnsPerUser,
    #[error("{connections} connections leave no room for a user of {per_user} connections")]
    NoRoom { connections: usize, per_user: usize },
    #[error("arrival rate {0} is not a positive number of users per second")]
    ArrivalRate(f64),
    #[error("a think time range must not end before it starts")]
    ThinkRange,
    /// A HEAD response has no body whatever its headers say, which the
    /// parser must know per connection, and a user's connections carry
    /// any of a session's requests.
    #[error("a session cannot send HEAD")]
    Head,
    #[error("sessions cannot be combined with {0}")]
    Combined(&'static str),
    #[error("{0}")]
    Stages(&'static str),
}

impl Users {
    /// Users the spec's connections hold at once.
    pub fn slots(&self, connections: usize) -> usize {
        connections / self.conns_per_user.max(1)
    }

    pub(crate) fn validate(&self, targets: usize, connections: usize) -> Result<(), UsersError> {
        if self.scripts.is_empty() {
            return Err(UsersError::NoScripts);
        }
        if self.conns_per_user == 0 {
            return Err(UsersError::NoConnsPerUser);
        }
        if self.slots(connections) == 0 {
            return Err(UsersError::NoRoom {
                connections,
                per_user: self.conns_per_user,
            });
        }
        for (n, s) in self.scripts.iter().enumerate() {
            if s.pages.is_empty() {
                return Err(UsersError::EmptyScript(n));
            }
            for p in &s.pages {
                if let Some(&bad) = std::iter::once(&p.request)
                    .chain(&p.burst)
                    .find(|&&r| r as usize >= targets)
                {
                    return Err(UsersError::UnknownRequest {
                        session: n,
                        request: bad,
                    });
                }
            }
        }
        if let Arrival::Open { per_sec, .. } = self.arrival {
            if !(per_sec.is_finite() && per_sec > 0.0) {
                return Err(UsersError::ArrivalRate(per_sec));
            }
        }
        if let Think::Uniform { low, high } = self.think {
            if high < low {
                return Err(UsersError::ThinkRange);
            }
        }
        Ok(())
    }

    /// Requests one run of script `n` makes.
    pub fn requests_in(&self, n: usize) -> u64 {
        self.scripts[n]
            .pages
            .iter()
            .map(|p| 1 + p.burst.len() as u64)
            .sum()
    }
}
