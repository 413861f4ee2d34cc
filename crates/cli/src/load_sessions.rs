//! `throng load --sessions FILE`: users who think. The options that shape
//! them, the file read into the engine's sessions, and the lines the
//! summary gains.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use throng_engine::users::{Arrival, Spacing, Think, Users, UsersError};
use throng_engine::LoadSpec;
use throng_model::Summary;

use throng_load::target::{parse_target, url_credentials};

use crate::args::parse_duration;
use crate::fmt::{human_count, human_us};

/// Browsers open up to six connections per host for a page's objects.
pub const CONNS_PER_USER: usize = 6;
/// Users an open arrival may keep active at once when -c is not given.
pub const OPEN_USERS: usize = 1000;

#[derive(clap::Args, Debug, Default)]
pub struct SessionArgs {
    /// Users walk the sessions of FILE instead of connections sending
    /// requests back to back: an httperf --wsesslog file (a page per
    /// line, think=, method=, contents=; indented lines are the page's
    /// burst, fetched in parallel; a blank line ends a session) or a siege
    /// URL file (one session of one page per URL). -c is then users, -n
    /// sessions; paths are taken relative to the URL.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "rate", "pipeline", "method", "body", "body_file"])]
    pub sessions: Option<PathBuf>,
    /// Think time after each page whose session line sets none [default: 0s].
    #[arg(long, value_parser = parse_duration, requires = "sessions")]
    pub think: Option<Duration>,
    /// Think time drawn uniformly from a range, e.g. 0.5s-2s, for pages
    /// whose session line sets none.
    #[arg(long, value_name = "LOW-HIGH", value_parser = parse_range, requires = "sessions", conflicts_with = "think")]
    pub think_random: Option<(Duration, Duration)>,
    /// Users arrive at this rate (an open model, as httperf's --rate with
    /// sessions), however many are still busy; -c caps how many are active
    /// at once [default: 1000] and an arrival finding none free is counted
    /// as turned away. Without it, -c users each start their next session
    /// as soon as the last one ends.
    #[arg(long, value_name = "R", requires = "sessions")]
    pub users_per_sec: Option<f64>,
    /// Spacing of arrivals: exponential (a Poisson process, httperf's
    /// --period=e) or uniform (a fixed gap) [default: exponential].
    #[arg(long, value_enum, requires = "users_per_sec")]
    pub arrival: Option<ArrivalArg>,
    /// Connections each user opens at most, for a page's burst [default: 6,
    /// as browsers].
    #[arg(long, value_name = "N", requires = "sessions")]
    pub conns_per_user: Option<usize>,
    /// Users ramped over stages LENGTH:USERS, comma-separated, as k6's
    /// ramping users: each a linear ramp from the users before it (none at
    /// first) to USERS over LENGTH (0s: at once), such as
    /// 10s:50,30s:50,10s:0. A user joins the instant the ramp reaches it
    /// and, on the way down, leaves when its session ends. The run lasts
    /// the stages' length; --timeline shows target and active users. Not
    /// with --hosts yet: users are spread over hosts as a fixed number.
    #[arg(long, value_name = "STAGES", requires = "sessions",
          conflicts_with_all = ["users_per_sec", "connections", "duration", "requests", "warmup", "hosts"])]
    pub users_stages: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ArrivalArg {
    Exponential,
    Uniform,
}

/// "0.5s-2s", "500ms-1s".
fn parse_range(s: &str) -> Result<(Duration, Duration), String> {
    use throng_load::vocab::RangeError;
    throng_load::vocab::duration_range(s).map_err(|e| match e {
        RangeError::NotARange => format!("`{s}` is not a range (try 0.5s-2s)"),
        // Worded as the end alone would be.
        RangeError::End(end, _) => parse_duration(&end)
            .err()
            .unwrap_or_else(|| format!("`{end}` is not a duration")),
        RangeError::Backwards => format!("`{s}` ends before it starts"),
    })
}

/// Gives `spec` the users of `--sessions` (targets included), or leaves it
/// alone without the option. `connections` is -c as given.
pub fn apply(
    a: &SessionArgs,
    base: Option<&str>,
    connections: Option<usize>,
    spec: &mut LoadSpec,
) -> Result<()> {
    let Some(file) = &a.sessions else {
        return Ok(());
    };
    let text = crate::args::read_text("--sessions", file)?;
    let dir = file.parent();
    let parsed = throng_load::sessions::parse(&text, dir)
        .map_err(|e| anyhow::anyhow!(e.in_file(file.display())))?;
    let base = base.map(url::Url::parse).transpose()?;
    // Credentials written in the file's URLs (or the base's) were dropped
    // without a word; they are sent as the command line's are.
    let mut credentials = Vec::new();
    let (targets, scripts) = throng_load::sessions::compile(&parsed, |r| {
        let full = if r.target.starts_with("http://") || r.target.starts_with("https://") {
            r.target.clone()
        } else {
            let b = base.as_ref().ok_or_else(|| {
                format!(
                    "`{}` is a path, so give the URL it is relative to",
                    r.target
                )
            })?;
            b.join(&r.target)
                .map_err(|e| format!("bad path `{}`: {e}", r.target))?
                .to_string()
        };
        credentials.push(url_credentials(&full).map_err(|e| format!("{e:#}"))?);
        parse_target(&full).map_err(|e| format!("{e:#}"))
    })
    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let authorization = throng_load::target::one_authorization(credentials)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    throng_load::target::add_authorization(spec, authorization);
    let per_user = a.conns_per_user.unwrap_or(CONNS_PER_USER);
    let arrival = match a.users_per_sec {
        Some(per_sec) => Arrival::Open {
            per_sec,
            spacing: match a.arrival.unwrap_or(ArrivalArg::Exponential) {
                ArrivalArg::Exponential => Spacing::Exponential,
                ArrivalArg::Uniform => Spacing::Uniform,
            },
        },
        None => Arrival::Population,
    };
    let ramp = a
        .users_stages
        .as_deref()
        .map(|text| {
            throng_load::shape::users_stages(text)
                .map_err(|e| anyhow::anyhow!("--users-stages {text:?}: {e}"))
        })
        .transpose()?;
    let users = match &ramp {
        // The peak is whole and bounded by the stages' check.
        Some(r) => r.peak() as usize,
        None => connections.unwrap_or(match arrival {
            Arrival::Open { .. } => OPEN_USERS,
            Arrival::Population => spec.connections,
        }),
    };
    if let Some(r) = ramp {
        spec.stop = throng_engine::Stop::Duration(r.length());
        // Each second shows its target users beside those active.
        spec.timeline = true;
        spec.users_ramp = Some(r);
    }
    spec.targets = targets;
    spec.connections = users.saturating_mul(per_user.max(1));
    spec.users = Some(Users {
        scripts,
        arrival,
        conns_per_user: per_user,
        think: match (a.think, a.think_random) {
            (_, Some((low, high))) => Think::Uniform { low, high },
            (Some(t), None) => Think::Fixed(t),
            (None, None) => Think::Fixed(Duration::ZERO),
        },
    });
    Ok(())
}

/// A session plan the engine refused, in the words of the options.
pub fn users_error(e: &UsersError) -> String {
    match e {
        UsersError::NoScripts => "the --sessions file has no session".into(),
        UsersError::EmptyScript(n) => format!("session {} of --sessions has no request", n + 1),
        UsersError::UnknownRequest { session, .. } => {
            format!(
                "session {} of --sessions names an unknown request",
                session + 1
            )
        }
        UsersError::NoConnsPerUser => "--conns-per-user must be at least 1".into(),
        UsersError::NoRoom { .. } => "-c must be at least 1 user".into(),
        UsersError::ArrivalRate(_) => {
            "--users-per-sec must be a positive number of users per second".into()
        }
        UsersError::ThinkRange => "--think-random must not end before it starts".into(),
        UsersError::Head => {
            "a --sessions request cannot be HEAD: its connections carry the other requests too"
                .into()
        }
        UsersError::Combined(what) => format!("--sessions cannot be combined with {what}"),
        UsersError::Stages(why) => format!("--users-stages: {why}"),
    }
}

/// The first line of the summary, for users.
pub fn headline(spec: &LoadSpec, users: &Users, s: &Summary) -> String {
    let what = if spec.targets.len() == 1 {
        spec.targets[0].url.clone()
    } else {
        format!("{} URLs", spec.targets.len())
    };
    let slots = users.slots(spec.connections);
    let who = match users.arrival {
        Arrival::Population if spec.users_ramp.is_some() => format!(
            "users in stages, up to {slots}, each starting a session as one ends while the \
             stages hold it"
        ),
        Arrival::Population => format!("{slots} users, each starting a session as one ends"),
        Arrival::Open { per_sec, spacing } => format!(
            "{per_sec} users/s arriving ({}), at most {slots} at once",
            match spacing {
                Spacing::Exponential => "exponential gaps",
                Spacing::Uniform => "evenly spaced",
            }
        ),
    };
    format!(
        "throng load {what}: {} session{} of users who think; {who}, up to {} connection{} each, {} thread{}",
        users.scripts.len(),
        if users.scripts.len() == 1 { "" } else { "s" },
        users.conns_per_user,
        if users.conns_per_user == 1 { "" } else { "s" },
        s.threads,
        if s.threads == 1 { "" } else { "s" },
    )
}

/// The sessions' lines of the summary.
pub fn lines(s: &Summary) -> String {
    use std::fmt::Write;
    let Some(x) = &s.sessions else {
        return String::new();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "  sessions     {} started, {} completed ({:.1}/s), {} failed, {} unfinished{}",
        human_count(x.counts.started),
        human_count(x.counts.completed),
        x.sessions_per_sec,
        human_count(x.counts.failed),
        human_count(x.counts.unfinished),
        if x.arrival_per_sec.is_some() {
            format!(
                ", {} turned away, {} started late",
                human_count(x.counts.turned_away),
                human_count(x.counts.late_arrivals)
            )
        } else {
            String::new()
        }
    );
    if x.duration_us.count > 0 {
        let d = &x.duration_us;
        let _ = writeln!(
            o,
            "  session time p50 {} p90 {} p99 {} max {}",
            human_us(d.p50 as f64),
            human_us(d.p90 as f64),
            human_us(d.p99 as f64),
            human_us(d.max as f64)
        );
    }
    if x.think_us.count > 0 {
        let t = &x.think_us;
        let _ = writeln!(
            o,
            "  think        {} observed: mean {} p50 {} max {}",
            human_count(t.count),
            human_us(t.mean),
            human_us(t.p50 as f64),
            human_us(t.max as f64)
        );
    }
    let _ = writeln!(
        o,
        "  users        {} active at most, of {}",
        x.active_max, x.users
    );
    o
}
