//! A study's users who think: `sessions = "file"` in `[load]` or a
//! `[workload.NAME]` table, with `think`, `think_random`,
//! `users_per_sec`, `arrival` and `conns_per_user`, the names and meanings
//! of `throng load`'s options. The file is read and checked once, here.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use throng_engine::users::{Arrival, Spacing, Think};

use throng_load::sessions::SessionFile;

use super::tables::{parse_duration, then_key, Tables};
use crate::spec::UserShape;

/// Session logs that ship with throng, for the built-in studies: named
/// `builtin:NAME` in a study.
const BUILTIN_FILES: &[(&str, &str)] = &[
    (
        "site-visits",
        include_str!("../../studies/site-visits.wsesslog"),
    ),
    (
        "one-request",
        include_str!("../../studies/one-request.wsesslog"),
    ),
];

/// Browsers open up to six connections per host for a page's objects.
const CONNS_PER_USER: usize = 6;

/// The table keys that only mean something with `sessions`.
const USER_KEYS: &[&str] = &[
    "think",
    "think_random",
    "users_per_sec",
    "arrival",
    "conns_per_user",
];

/// A workload's users, or `None` without `sessions`; every key that does
/// not apply is an error naming it. `base` is the study file's folder.
pub(super) fn user_shape(t: &Tables, base: &Path) -> anyhow::Result<Option<UserShape>> {
    let Some((name, key)) = t.get("sessions", |x| &x.sessions) else {
        let set = [
            t.get("think", |x| &x.think).map(|(_, k)| k),
            t.get("think_random", |x| &x.think_random).map(|(_, k)| k),
            t.get("users_per_sec", |x| &x.users_per_sec).map(|(_, k)| k),
            t.get("arrival", |x| &x.arrival).map(|(_, k)| k),
            t.get("conns_per_user", |x| &x.conns_per_user)
                .map(|(_, k)| k),
        ];
        if let Some(k) = set.into_iter().flatten().next() {
            bail!(
                "{k}: applies to users who think only; give a session file with `sessions` \
                 (keys of its kind: {})",
                USER_KEYS.join(", ")
            );
        }
        return Ok(None);
    };
    let file = read(name, base, &key)?;
    for (other, what) in [
        (t.get("method", |x| &x.method).map(|(_, k)| k), "method"),
        (t.get("body", |x| &x.body).map(|(_, k)| k), "body"),
    ] {
        if let Some(k) = other {
            bail!(
                "{} with {key}: the session file gives each request its {what}; leave {} out",
                then_key(&key, &k),
                then_key(&key, &k)
            );
        }
    }
    if let Some((&p, pk)) = t.get("pipeline", |x| &x.pipeline).filter(|(&p, _)| p > 1) {
        bail!(
            "{} = {p} with {key}: a user sends a page's requests over its own connections, \
             one at a time each",
            then_key(&key, &pk)
        );
    }
    if let Some((_, rk)) = t.get("rate", |x| &x.rate) {
        bail!(
            "{} with {key}: users arrive at `users_per_sec`, and each sends its session's \
             requests when its pages call for them; leave `rate` out",
            then_key(&key, &rk)
        );
    }
    let think = match (
        t.get("think", |x| &x.think),
        t.get("think_random", |x| &x.think_random),
    ) {
        (Some((_, a)), Some((_, b))) => {
            bail!("{a} with {}: give one of them", then_key(&a, &b))
        }
        (Some((text, k)), None) => {
            Think::Fixed(parse_duration(text).map_err(|e| anyhow!("{k}: {e}"))?)
        }
        (None, Some((text, k))) => {
            let (low, high) = text
                .split_once('-')
                .ok_or_else(|| anyhow!("{k} = {text:?}: give a range such as \"0.5s-2s\""))?;
            let low = parse_duration(low).map_err(|e| anyhow!("{k}: {e}"))?;
            let high = parse_duration(high).map_err(|e| anyhow!("{k}: {e}"))?;
            if high < low {
                bail!("{k} = {text:?} ends before it starts");
            }
            Think::Uniform { low, high }
        }
        (None, None) => Think::Fixed(Duration::ZERO),
    };
    let arrival = match t.get("users_per_sec", |x| &x.users_per_sec) {
        Some((&per_sec, k)) => {
            if !(per_sec.is_finite() && per_sec > 0.0) {
                bail!("{k} = {per_sec}: give a positive number of users per second");
            }
            let spacing = match t.get("arrival", |x| &x.arrival) {
                None => Spacing::Exponential,
                Some((a, ak)) => throng_load::vocab::spacing(a)
                    .ok_or_else(|| anyhow!("{ak} = {a:?}: give \"exponential\" or \"uniform\""))?,
            };
            Arrival::Open { per_sec, spacing }
        }
        None => {
            if let Some((_, ak)) = t.get("arrival", |x| &x.arrival) {
                bail!(
                    "{ak}: spaces users arriving at `users_per_sec`; without it the level's \
                     users each start a session as their last one ends"
                );
            }
            Arrival::Population
        }
    };
    let conns_per_user = match t.get("conns_per_user", |x| &x.conns_per_user) {
        Some((&0, k)) => bail!("{k} = 0: a user needs a connection"),
        Some((&n, _)) => n,
        None => CONNS_PER_USER,
    };
    Ok(Some(UserShape {
        file: Arc::new(file),
        think,
        arrival,
        conns_per_user,
    }))
}

/// A session file by path (relative to the study's folder) or a built-in
/// one; its requests must be paths, since each server is loaded at its
/// own address. Errors name `key`, and a line of the file as `FILE:LINE`.
fn read(name: &str, base: &Path, key: &str) -> anyhow::Result<SessionFile> {
    let (text, dir) = match name.strip_prefix("builtin:") {
        Some(b) => {
            let (_, text) = BUILTIN_FILES.iter().find(|(n, _)| *n == b).ok_or_else(|| {
                let names: Vec<String> = BUILTIN_FILES
                    .iter()
                    .map(|(n, _)| format!("builtin:{n}"))
                    .collect();
                anyhow!(
                    "{key} = {name:?}: no built-in session file of that name (there is {})",
                    names.join(", ")
                )
            })?;
            (text.to_string(), None)
        }
        None => {
            let path = base.join(name);
            let text = throng_model::read_text_file(&path)
                .map_err(|e| anyhow!("{key} = {name:?}: {}: {e}", path.display()))?;
            (text, path.parent().map(Path::to_path_buf))
        }
    };
    throng_load::sessions::parse_paths(&text, dir.as_deref())
        .map_err(|e| anyhow!("{key}: {}", e.in_file(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::Study;
    use crate::Recipes;

    fn study(dir: &Path, rest: &str) -> anyhow::Result<Study> {
        std::fs::write(
            dir.join("visits.log"),
            "/site/page000.html think=0.5\n\t/site/css/style00.css\n/site/page001.html\n",
        )
        .unwrap();
        Study::parse_at(
            &format!(
                "name='x'\nservers=['nginx']\nworkloads=['site']\ncores=[1]\n\
                 concurrency=[5]\nfeatures=false\n{rest}"
            ),
            &Recipes::builtin(),
            dir,
        )
    }

    fn err(dir: &Path, rest: &str) -> String {
        format!("{:#}", study(dir, rest).unwrap_err())
    }

    #[test]
    fn every_user_key_parses_into_the_workload_shape() {
        let dir = tempfile::tempdir().unwrap();
        let s = study(
            dir.path(),
            "[load]\nsessions = 'visits.log'\nthink_random = '0.2s-1s'\nusers_per_sec = 20.0\n\
             arrival = 'uniform'\nconns_per_user = 4\ntimeout = '2s'\nkeep_alive = true\n\
             requests_per_connection = 10\nheaders = ['X-Test: 1']\n",
        )
        .unwrap();
        let u = s.loads[0].shape.users.as_ref().unwrap();
        assert_eq!(u.conns_per_user, 4);
        assert_eq!(
            u.think,
            Think::Uniform {
                low: Duration::from_millis(200),
                high: Duration::from_secs(1)
            }
        );
        assert_eq!(
            u.arrival,
            Arrival::Open {
                per_sec: 20.0,
                spacing: Spacing::Uniform
            }
        );
        assert_eq!(u.file.sessions.len(), 1);
        assert_eq!(u.file.sessions[0].len(), 2);
        // Against a server: two requests, one script of two pages; the
        // level's 5 users hold 4 connections each.
        let load = crate::spec::RoundLoad {
            concurrency: 5,
            seconds: 1.0,
            requests: None,
            warmup_s: 0.0,
            timeout: Duration::from_secs(2),
            random_order: false,
            naps: true,
            nap_divisor: throng_engine::DEFAULT_NAP_DIVISOR,
            spin: None,
            tick: None,
            rate: None,
            seed: 1,
            client_cpus: vec![1],
            shape: s.loads[0].shape.clone(),
        };
        let spec = crate::spec::load_spec(
            crate::spec::targets("127.0.0.1:8080".parse().unwrap(), &["/".into()]),
            &load,
        );
        assert_eq!(spec.connections, 20);
        assert_eq!(spec.targets.len(), 3);
        assert_eq!(
            spec.targets[1].url,
            "http://127.0.0.1:8080/site/css/style00.css"
        );
        assert_eq!(spec.validate(), Ok(()));
        // A workload's own table overrides [load].
        let s = study(
            dir.path(),
            "[load]\nsessions = 'visits.log'\n[workload.site]\nthink = '1s'\nconns_per_user = 2\n",
        )
        .unwrap();
        let u = s.loads[0].shape.users.as_ref().unwrap();
        assert_eq!(
            (u.conns_per_user, u.think),
            (2, Think::Fixed(Duration::from_secs(1)))
        );
        assert_eq!(u.arrival, Arrival::Population);
    }

    #[test]
    fn keys_that_do_not_apply_are_errors_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (rest, want) in [
            (
                "[load]\nthink = '1s'\n",
                "[load] think: applies to users who think only",
            ),
            (
                "[workload.site]\nconns_per_user = 2\n",
                "[workload.site] conns_per_user: applies to users who think only",
            ),
            (
                "[load]\nsessions = 'visits.log'\nmethod = 'POST'\n",
                "method with [load] sessions: the session file gives each request its method",
            ),
            (
                "[load]\nsessions = 'visits.log'\npipeline = 4\n",
                "pipeline = 4 with [load] sessions",
            ),
            (
                "[load]\nsessions = 'visits.log'\nrate = [100]\n",
                "leave `rate` out",
            ),
            (
                "[load]\nsessions = 'visits.log'\nthink = '1s'\nthink_random = '1s-2s'\n",
                "give one of them",
            ),
            (
                "[load]\nsessions = 'visits.log'\narrival = 'uniform'\n",
                "[load] arrival: spaces users arriving at `users_per_sec`",
            ),
            (
                "[load]\nsessions = 'visits.log'\nusers_per_sec = 0.0\n",
                "give a positive number of users per second",
            ),
            (
                "[load]\nsessions = 'missing.log'\n",
                "No such file or directory",
            ),
            (
                "[load]\nsessions = 'builtin:nope'\n",
                "no built-in session file",
            ),
            (
                "[load]\nsessions = 'visits.log'\nthink_random = '2s-1s'\n",
                "ends before it starts",
            ),
        ] {
            let e = err(d, rest);
            assert!(e.contains(want), "{rest:?}: {e}");
        }
    }

    #[test]
    fn a_session_file_is_refused_at_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A URL names an address, which a study gives each server itself:
        // refused at its line, port past 65535 or not.
        std::fs::write(
            d.join("urls.log"),
            "# siege\n/index.html\nhttp://127.0.0.1:99999/a\n",
        )
        .unwrap();
        assert_eq!(
            err(d, "[load]\nsessions = 'urls.log'\n"),
            "[load] sessions: urls.log:3: `http://127.0.0.1:99999/a`: a study loads each server \
             at its own address, so give paths, not URLs"
        );
        std::fs::write(d.join("bad.log"), "/a\n\t/b think=1\n").unwrap();
        assert_eq!(
            err(d, "[workload.site]\nsessions = 'bad.log'\n"),
            "[workload.site] sessions: bad.log:2: think= belongs on the page line, not on a \
             burst request"
        );
        assert_eq!(
            err(d, "[load]\nsessions = 'gone.log'\n"),
            format!(
                "[load] sessions = \"gone.log\": {}: No such file or directory (os error 2)",
                d.join("gone.log").display()
            )
        );
    }

    #[test]
    fn the_built_in_session_file_parses_into_pages_with_bursts() {
        let f = read("builtin:site-visits", Path::new("."), "sessions").unwrap();
        assert!(f.sessions.len() >= 3);
        assert!(f
            .sessions
            .iter()
            .flatten()
            .any(|p| !p.burst.is_empty() && p.think.is_some()));
        assert!(read("builtin:nope", Path::new("."), "sessions").is_err());
    }
}
