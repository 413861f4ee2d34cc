//! A study's `[load]` and `[workload.NAME]` tables: `throng load`'s
//! options under the same names, checked into each workload's load.

use std::time::Duration;

use anyhow::bail;

use super::tables::{parse_duration, then_key, Tables};
use super::StudyFile;
use crate::spec::RequestShape;
use crate::workload::WorkloadId;

/// One workload's load as the study runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadLoad {
    pub kind: WorkloadId,
    /// Its levels: its own table's, else the study's.
    pub concurrency: Vec<u32>,
    pub shape: RequestShape,
    /// `None`: the workload kind's own timeout.
    pub timeout: Option<Duration>,
    /// With `requests`: what each round of a level completes. `None`:
    /// timed rounds.
    pub round_requests: Option<u64>,
    /// With `requests`: how many rounds a level's requests are split into.
    pub counted_rounds: Option<u32>,
    /// With `requests`: why the level's requests are split into more
    /// rounds than the study's `rounds.min`, said before the run starts.
    pub split_note: Option<String>,
    /// The study's `order`, else the workload's own.
    pub random_order: bool,
    /// With `rate`: the offered rates, in increasing order, each a level
    /// over the one `concurrency`. Empty: the closed model.
    pub rates: Vec<f64>,
    /// With `rates`: the schedule kept in ticks of this length (tick.rs
    /// of the engine). `None`: each request at its own instant.
    pub tick: Option<Duration>,
}

/// One level of a workload's sweep: its connections and, in the open
/// model, the rate offered over them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub concurrency: u32,
    pub rate: Option<f64>,
}

impl Level {
    pub fn closed(concurrency: u32) -> Level {
        Level {
            concurrency,
            rate: None,
        }
    }
}

impl WorkloadLoad {
    /// Connections each unit of a level opens at most: a connection is
    /// one, a user who thinks up to its `conns_per_user`.
    pub fn conns_per_user(&self) -> u32 {
        self.shape
            .users
            .as_ref()
            .map_or(1, |u| u.conns_per_user as u32)
    }

    /// Its levels in the order the sweep runs them: each rate over the one
    /// concurrency, or each concurrency.
    pub fn levels(&self) -> Vec<Level> {
        if self.rates.is_empty() {
            return self.concurrency.iter().map(|&c| Level::closed(c)).collect();
        }
        self.concurrency
            .iter()
            .flat_map(|&c| {
                self.rates.iter().map(move |&r| Level {
                    concurrency: c,
                    rate: Some(r),
                })
            })
            .collect()
    }
}

/// The workload `name` of the study: its own site when its table gives a
/// `docroot`, else a built-in kind. The error follows the table's name
/// (`[workload.NAME]`), starting with its key when it names one.
pub(super) fn workload_id(f: &StudyFile, name: &str) -> anyhow::Result<WorkloadId> {
    let table = f.workload.get(name);
    if table.is_some_and(|t| t.docroot.is_some()) {
        if throng_model::WorkloadKind::parse(name).is_some() {
            bail!(
                " docroot: {name} is a built-in workload, stored under that name in every run; \
                 give your own site another name"
            );
        }
        throng_servers::names::check("workload name", name)
            .map_err(|e| anyhow::anyhow!(" docroot: {e}"))?;
        return Ok(WorkloadId::own(name));
    }
    if table.is_some_and(|t| t.urls.is_some()) {
        bail!(" urls: a URL list belongs to a site of your own; give its folder as `docroot`");
    }
    crate::workload::parse_kind(name)
        .map(WorkloadId::Builtin)
        .map_err(|e| anyhow::anyhow!(": {e}"))
}

/// Each listed workload's levels and requests, checked now: a study that
/// cannot run as written is refused before anything starts or is stored.
/// Also the load of a workload the study does not list: the engine's
/// defaults over the study's levels.
pub(super) fn resolve_loads(
    f: &StudyFile,
    workloads: &[WorkloadId],
    concurrency: &[u32],
    dir: &std::path::Path,
) -> anyhow::Result<(WorkloadLoad, Vec<WorkloadLoad>)> {
    if f.load.concurrency.is_some() {
        bail!(
            "[load] concurrency: the study's levels are the top-level `concurrency`; a \
             [workload.NAME] table gives one workload its own"
        );
    }
    for (key, what) in [(&f.load.docroot, "docroot"), (&f.load.urls, "urls")] {
        if key.is_some() {
            bail!(
                "[load] {what}: a site of your own is one workload; give it in a \
                 [workload.NAME] table"
            );
        }
    }
    for name in f.workload.keys() {
        let kind = workload_id(f, name).map_err(|e| anyhow::anyhow!("[workload.{name}]{e}"))?;
        if !workloads.contains(&kind) {
            let listed: Vec<&str> = workloads.iter().map(|k| k.name()).collect();
            bail!(
                "[workload.{name}]: {name} is not one of the study's workloads ({}); add it to \
                 `workloads` or remove the table",
                listed.join(", ")
            );
        }
    }
    let loads = workloads
        .iter()
        .map(|&kind| {
            let t = Tables {
                workload: kind.name(),
                base: &f.load,
                own: f.workload.get(kind.name()),
            };
            resolve_load(f, &t, kind, concurrency, dir)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if f.load.tick.is_some() && loads.iter().all(|l| l.rates.is_empty()) {
        bail!("[load] tick: a tick is a rate's schedule; give `rate` too, or leave it out");
    }
    let default = WorkloadLoad {
        kind: workloads[0],
        concurrency: concurrency.to_vec(),
        shape: RequestShape::default(),
        timeout: None,
        round_requests: None,
        counted_rounds: None,
        split_note: None,
        random_order: workloads[0].random_order(),
        rates: Vec::new(),
        tick: None,
    };
    Ok((default, loads))
}

/// A level's `requests` split into rounds: the study's `rounds.min`, or,
/// when those are too few for paired slices to bound a comparison, the
/// fewest more that divide the requests evenly and still give each of
/// `top` connections one; with a note saying so. The same requests in
/// all, in shorter rounds.
pub(super) fn counted_split(requests: u64, min: u32, top: u32) -> (u32, Option<String>) {
    let enough = crate::pairs::MIN_PAIRS as u32;
    if min >= enough {
        return (min, None);
    }
    let fits =
        |r: u32| requests.is_multiple_of(u64::from(r)) && requests / u64::from(r) >= u64::from(top);
    match (enough..=enough * 4).find(|&r| fits(r)) {
        Some(r) => (
            r,
            Some(format!(
                "{requests} requests a level as {r} rounds of {} rather than {min} of {}, so that \
                 the paired slices are enough to bound each comparison ({enough} or more)",
                requests / u64::from(r),
                requests / u64::from(min.max(1)),
            )),
        ),
        None => (min, None),
    }
}

/// One workload's load from its tables; every combination that would mean
/// nothing, or that the engine would refuse, is an error naming the key.
pub(super) fn resolve_load(
    f: &StudyFile,
    t: &Tables,
    kind: WorkloadId,
    study_levels: &[u32],
    dir: &std::path::Path,
) -> anyhow::Result<WorkloadLoad> {
    use anyhow::anyhow;
    let mut shape = RequestShape {
        users: super::users::user_shape(t, dir)?,
        ..RequestShape::default()
    };
    let keep_alive = t.get("keep_alive", |x| &x.keep_alive);
    if let Some((&k, _)) = &keep_alive {
        shape.keep_alive = k;
    }
    let pipeline = t.get("pipeline", |x| &x.pipeline);
    if let Some((&p, key)) = &pipeline {
        let most = throng_engine::spec::MAX_PIPELINE;
        if p == 0 || p > most {
            bail!("{key} = {p}: give a depth from 1 to {most}");
        }
        if let Some((false, ka)) = keep_alive.as_ref().map(|(k, ka)| (**k, ka)) {
            if p > 1 {
                bail!(
                    "{key} = {p} with {} = false: a connection closed after each request \
                     carries one, so there is nothing to pipeline",
                    then_key(key, ka)
                );
            }
        }
        shape.pipeline = p;
    }
    if let Some((&n, key)) = t.get("streams", |x| &x.streams) {
        let most = throng_engine::spec::MAX_STREAMS;
        if n == 0 || n > most {
            bail!("{key} = {n}: give 1 to {most} streams per connection");
        }
        if let Some((&p, pk)) = pipeline.as_ref().filter(|(&p, _)| p > 1) {
            bail!(
                "{key} = {n} with {pk} = {p}: HTTP/2 multiplexes streams and is never \
                 pipelined; leave one of them out"
            );
        }
        if shape.users.is_some() && n > 1 {
            bail!(
                "{key} = {n} with sessions: a user's connections carry one request at a time, \
                 as a browser's burst does; leave `streams` out"
            );
        }
        shape.streams = n;
    }
    if let Some((&n, key)) = t.get("requests_per_connection", |x| &x.requests_per_connection) {
        if n == 0 {
            bail!("{key} = 0: a connection carries at least one request");
        }
        if let Some((false, ka)) = keep_alive.as_ref().map(|(k, ka)| (**k, ka)) {
            bail!(
                "{key} = {n} with {} = false: a connection closed after each request carries \
                 one; leave one of them out",
                then_key(&key, ka)
            );
        }
        if let Some((&p, pk)) = pipeline.as_ref().filter(|(&p, _)| p as u64 > n) {
            bail!(
                "{pk} = {p} with {} = {n}: a connection would close with requests of its \
                 pipeline unanswered",
                then_key(pk, &key)
            );
        }
        shape.requests_per_connection = Some(n);
    }
    let timeout = match t.get("timeout", |x| &x.timeout) {
        None => None,
        Some((text, key)) => {
            let d = parse_duration(text).map_err(|e| anyhow!("{key}: {e}"))?;
            if d.is_zero() {
                bail!("{key} = {text:?}: give a time above 0");
            }
            Some(d)
        }
    };
    let method = t.get("method", |x| &x.method);
    if let Some((m, key)) = &method {
        let upper = m.to_ascii_uppercase();
        if upper.is_empty() || !upper.bytes().all(|b| b.is_ascii_alphabetic()) {
            bail!("{key} = {m:?} is not an HTTP method");
        }
        shape.method = upper;
    }
    if let Some((body, key)) = t.get("body", |x| &x.body) {
        if !throng_load::vocab::BODY_METHODS.contains(&shape.method.as_str()) {
            let asked = match &method {
                Some((_, mk)) => format!(" ({} = {:?})", then_key(&key, mk), shape.method),
                None => String::new(),
            };
            bail!(
                "{key}: a {} request carries no body{asked}; set method = \"POST\" (or \"PUT\", \
                 \"PATCH\") to send one",
                shape.method
            );
        }
        shape.body = Some(body.clone().into_bytes());
    }
    let headers = t.get("headers", |x| &x.headers);
    if let Some((list, key)) = &headers {
        for h in list.iter() {
            let (n, v) = throng_load::vocab::header(h)
                .map_err(|_| anyhow!("{key}: {h:?} must look like \"Name: value\""))?;
            if n.eq_ignore_ascii_case("connection") {
                bail!(
                    "{key}: {h:?}: say it with keep_alive (and requests_per_connection), by \
                     which the load engine opens and closes its connections"
                );
            }
            shape.headers.push((n, v));
        }
    }
    let concurrency = match t.own.and_then(|o| o.concurrency.as_ref()) {
        None => study_levels.to_vec(),
        Some(c) => {
            let key = format!("[workload.{}] concurrency", t.workload);
            let v = c.values(&key)?;
            if v.is_empty() || v.contains(&0) {
                bail!("{key}: give levels of 1 or more");
            }
            super::values::once(&key, &v, "level")?;
            v
        }
    };
    let rate = t.get("rate", |x| &x.rate);
    let rates = match &rate {
        None => Vec::new(),
        Some((r, key)) => {
            let v = r.values(key)?;
            if v.is_empty() || v.contains(&0) {
                bail!("{key}: give rates of 1 or more requests per second");
            }
            if v.windows(2).any(|w| w[0] >= w[1]) {
                bail!(
                    "{key}: give the rates in increasing order, each once: a server's sweep stops \
                     at the first rate it does not keep up with"
                );
            }
            if concurrency.len() != 1 {
                let ckey = match t.own.and_then(|o| o.concurrency.as_ref()) {
                    Some(_) => format!("[workload.{}] concurrency", t.workload),
                    None => "concurrency".to_string(),
                };
                let list: Vec<String> = concurrency.iter().map(u32::to_string).collect();
                bail!(
                    "{key}: a rate is offered over the workload's connections, so its \
                     concurrency must be exactly one value, and {ckey} gives {} ({}); set \
                     [workload.{}] concurrency = [N]",
                    concurrency.len(),
                    list.join(", "),
                    t.workload
                );
            }
            if let Some((&p, pk)) = pipeline.as_ref().filter(|(&p, _)| p > 1) {
                bail!(
                    "{key} with {} = {p}: a rate schedule sends each request at its own time, \
                     so there is nothing to pipeline; leave one of them out",
                    then_key(key, pk)
                );
            }
            if f.max_users {
                bail!(
                    "{key}: the max-users search steps concurrency up in the closed model; \
                     remove `rate` or `max_users = true`"
                );
            }
            v.into_iter().map(f64::from).collect()
        }
    };
    let tick = match t.get("tick", |x| &x.tick) {
        None => None,
        Some((text, key)) => {
            let own = t.own.is_some_and(|o| o.tick.is_some());
            if rate.is_none() && own {
                bail!("{key}: a tick is a rate's schedule; give `rate` too, or leave it out");
            }
            let d = parse_duration(text).map_err(|e| anyhow!("{key}: {e}"))?;
            let (min, max) = (throng_engine::MIN_TICK, throng_engine::MAX_TICK);
            if !(min..=max).contains(&d) {
                bail!("{key} = {text:?}: give from {min:?} to {max:?}");
            }
            // `[load] tick` is the schedule of the workloads with a rate;
            // one without is in the closed model, which has none.
            rate.is_some().then_some(d)
        }
    };
    let mut counted: Option<(u32, Option<String>)> = None;
    let round_requests = match t.get("requests", |x| &x.requests) {
        None => None,
        Some((&n, key)) => {
            if let Some((_, rk)) = &rate {
                bail!(
                    "{key} with {}: a rate level runs timed rounds at its rate; leave one of \
                     them out",
                    then_key(&key, rk)
                );
            }
            if f.max_users {
                bail!(
                    "{key}: the max-users search runs timed rounds; remove `requests` or \
                     `max_users = true`"
                );
            }
            if f.duet {
                bail!(
                    "{key}: a duet measures two servers over the same seconds, and a request \
                     count ends each round at its own time; remove `requests` or `duet = true`"
                );
            }
            if n == 0 {
                bail!("{key} = 0: give at least one request per round");
            }
            let min = u64::from(f.rounds.min);
            if n % min != 0 {
                bail!(
                    "{key} = {n} is not a multiple of rounds.min = {min}: each of a level's \
                     {min} rounds completes the same number of requests"
                );
            }
            if let Some(&c) = concurrency.iter().find(|&&c| u64::from(c) > n / min) {
                bail!(
                    "{key} = {n} makes rounds of {} requests (over rounds.min = {min}), \
                     fewer than concurrency {c}: some connections would never send one",
                    n / min
                );
            }
            let top = concurrency.iter().copied().max().unwrap_or(1);
            // A server measured alone has no pairs to form.
            let entries = f.servers.len()
                * f.profiles.as_ref().map_or(1, Vec::len)
                * f.protocols.as_ref().map_or(1, Vec::len);
            let (rounds, note) = if entries >= 2 {
                counted_split(n, f.rounds.min, top)
            } else {
                (f.rounds.min, None)
            };
            let per = n / u64::from(rounds);
            counted = Some((rounds, note.map(|n| format!("{}: {n}", kind.name()))));
            Some(per)
        }
    };
    let random_order = match t.get("order", |x| &x.order) {
        None => kind.random_order(),
        Some((o, key)) => match throng_load::vocab::order(o) {
            Some(order) => order == throng_engine::Order::Random,
            None => bail!("{key} = {o:?}: give \"random\" or \"sequential\""),
        },
    };
    let (counted_rounds, split_note) = match counted {
        Some((r, note)) => (Some(r), note),
        None => (None, None),
    };
    let load = WorkloadLoad {
        kind,
        random_order,
        concurrency,
        shape,
        timeout,
        round_requests,
        counted_rounds,
        split_note,
        rates,
        tick,
    };
    check_with_engine(&load, t, headers.as_ref().map(|(_, k)| k.as_str()))?;
    Ok(load)
}

/// The engine's own checks on every level's spec, so that nothing it
/// would refuse is left for a round to find; in the study's words.
pub(super) fn check_with_engine(
    w: &WorkloadLoad,
    t: &Tables,
    headers_key: Option<&str>,
) -> anyhow::Result<()> {
    use throng_engine::SpecError;
    let at = || match t.own {
        Some(_) => format!("[workload.{}]", t.workload),
        None => "[load]".to_string(),
    };
    for level in w.levels() {
        let c = level.concurrency;
        let load = crate::spec::RoundLoad {
            concurrency: c,
            rate: level.rate,
            seconds: 1.0,
            requests: w.round_requests,
            warmup_s: 0.0,
            timeout: w.timeout.unwrap_or_else(|| w.kind.request_timeout()),
            random_order: w.random_order,
            naps: true,
            nap_divisor: throng_engine::DEFAULT_NAP_DIVISOR,
            spin: None,
            tick: w.tick,
            seed: 0,
            client_cpus: Vec::new(),
            shape: w.shape.clone(),
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 80));
        let spec = crate::spec::load_spec(crate::spec::targets(addr, &["/".to_string()]), &load);
        match spec.validate() {
            Ok(()) => {}
            Err(SpecError::HeaderName(h)) => {
                bail!(
                    "{}: {h:?} has an invalid name",
                    headers_key.unwrap_or("headers")
                )
            }
            Err(SpecError::HeaderValue(h)) => {
                bail!(
                    "{}: {h:?} must be on one line, with no control character",
                    headers_key.unwrap_or("headers")
                )
            }
            Err(e) => bail!("{}: at concurrency {c}: {e}", at()),
        }
    }
    Ok(())
}
