//! A study's `[load]` and `[workload.NAME]` tables as written, a key
//! looked up in the one that sets it, and the study's words for a time:
//! what the workload's load (`load.rs`) and its users (`users.rs`) both
//! read.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use throng_load::vocab::DurationError;

use super::ListOrRange;

/// A `[load]` or `[workload.NAME]` table: `throng load`'s options, under
/// the same names. Unset keys fall through to `[load]`, then to the
/// engine's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadTable {
    /// `false`: a new connection per request (`throng load --close`).
    pub keep_alive: Option<bool>,
    pub pipeline: Option<usize>,
    /// Concurrent streams per connection over HTTP/2 (`throng load
    /// --streams`): servers measured over `h2` and `h2c` only.
    pub streams: Option<usize>,
    /// "250ms", "3s", "1.5s", "2m".
    pub timeout: Option<String>,
    /// "Name: value" each.
    pub headers: Option<Vec<String>>,
    pub method: Option<String>,
    pub body: Option<String>,
    /// Requests a level completes in all, over `rounds.min` rounds.
    pub requests: Option<u64>,
    /// Offered requests per second, one level each (the open model, as
    /// `throng load --rate`), over the workload's one concurrency.
    #[serde(default, deserialize_with = "super::values::some_rate")]
    pub rate: Option<ListOrRange>,
    /// With `rate`: the schedule kept in ticks of this length ("1ms",
    /// "100us"), as `throng load --tick`.
    pub tick: Option<String>,
    /// The levels of one workload; only in a `[workload.NAME]` table.
    #[serde(default, deserialize_with = "super::values::some_concurrency")]
    pub concurrency: Option<ListOrRange>,
    pub requests_per_connection: Option<u64>,
    /// "random" or "sequential": how a round walks the workload's URLs.
    pub order: Option<String>,
    /// A folder of the user's own to serve; only in a `[workload.NAME]`
    /// table, which it makes a workload of its own.
    pub docroot: Option<String>,
    /// The URL list of a `docroot`: one path a line.
    pub urls: Option<String>,
    /// A session file (httperf's `--wsesslog` or siege's URL file), or
    /// `builtin:NAME`: the level is then users who think.
    pub sessions: Option<String>,
    /// "1s": think time after pages whose session line gives none.
    pub think: Option<String>,
    /// "0.5s-2s": think time drawn from a range instead.
    pub think_random: Option<String>,
    /// Users arriving per second (an open model of users).
    pub users_per_sec: Option<f64>,
    /// "exponential" or "uniform" spacing of arrivals.
    pub arrival: Option<String>,
    /// Connections a user opens at most for a page's burst.
    pub conns_per_user: Option<usize>,
}

/// A time a study gives ("250ms", "3s", "1.5s", "2m", or a number of
/// seconds), read as `throng load --timeout` reads it and held, as every
/// time of a study (limits.rs), to a day: a longer one is a typo, and ran
/// a study whose every round was empty.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let too_long = || format!("{s:?}: longer than a day, the most a study's time may be");
    match throng_load::vocab::duration(s) {
        Ok(d) if d.as_secs_f64() <= 86_400.0 => Ok(d),
        Ok(_) | Err(DurationError::TooLong) => Err(too_long()),
        Err(DurationError::NotANumber) => Err(format!(
            "{s:?} is not a duration (try \"3s\", \"250ms\", \"2m\")"
        )),
        Err(DurationError::UnknownUnit(u)) => {
            Err(format!("{s:?}: unknown unit {u:?} (use ms, s, m or h)"))
        }
    }
}

/// A workload's table over `[load]`: each key from the first that sets
/// it, named as the study wrote it.
pub(super) struct Tables<'a> {
    pub(super) workload: &'a str,
    pub(super) base: &'a LoadTable,
    pub(super) own: Option<&'a LoadTable>,
}

impl<'a> Tables<'a> {
    /// `key`'s value and `[workload.NAME] key` or `[load] key`.
    pub(super) fn get<T>(
        &self,
        key: &str,
        field: impl Fn(&'a LoadTable) -> &'a Option<T>,
    ) -> Option<(&'a T, String)> {
        if let Some(v) = self.own.and_then(|t| field(t).as_ref()) {
            return Some((v, format!("[workload.{}] {key}", self.workload)));
        }
        field(self.base)
            .as_ref()
            .map(|v| (v, format!("[load] {key}")))
    }
}

/// Key `b` in a message that already named key `a`: without its table
/// when it is the same.
pub(super) fn then_key(a: &str, b: &str) -> String {
    match (a.split_once(' '), b.split_once(' ')) {
        (Some((ta, _)), Some((tb, kb))) if ta == tb => kb.to_string(),
        _ => b.to_string(),
    }
}
