//! `throng runs`, and `throng load --save`: a load kept in the results
//! database as a run of one step, so that `throng report` and `throng
//! compare` read it as they read a lab run.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use throng_engine::LoadSpec;
use throng_load::saved::SavedLoad;
pub use throng_load::saved::{Outcome, Spread};
use throng_model::{HostRecord, RunRecord};
use throng_remote::protocol::PathFacts;
use throng_remote::{FleetRun, Place};
use throng_store::{StepCounts, Store};

/// The database `throng lab` and `throng report` use when none is named.
const DEFAULT_DB: &str = "throng.db";

/// Longest command line `throng runs` shows in its table; the JSON has it
/// whole.
const COMMAND_WIDTH: usize = 60;

#[derive(clap::Args)]
pub struct RunsArgs {
    /// Results database written by `throng lab` or `throng load --save`.
    #[arg(long, default_value = DEFAULT_DB, value_parser = crate::args::out_path)]
    pub db: PathBuf,
    /// Print the runs as a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: RunsArgs) -> Result<u8> {
    // Opening creates the file, and a listing must not leave a database
    // behind where none was meant to be.
    if !args.db.exists() {
        anyhow::bail!(
            "no results database at {}: store a run with `throng lab STUDY` or \
             `throng load URL --save`, or pass --db",
            args.db.display()
        );
    }
    let store = crate::cmd_report::existing(&args.db)?;
    let mut runs = store.list_runs()?;
    runs.reverse();
    let counts = store.step_counts()?;
    let rows: Vec<Row> = runs
        .iter()
        .map(|r| Row::of(r, counts.get(&r.id).copied().unwrap_or_default()))
        .collect();
    // Written, not printed: a reader that stops early (`| head`) ends the
    // command with an error instead of a panic.
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(0);
    }
    if rows.is_empty() {
        writeln!(out, "no run in {} yet", args.db.display())?;
        return Ok(0);
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header([
        "id", "study", "when", "complete", "steps", "valid", "suspect", "failed",
    ]);
    for r in &rows {
        let study = match &r.command {
            Some(c) => shorten(&display_command(c), COMMAND_WIDTH),
            None => r.study.clone(),
        };
        table.add_row([
            r.id.to_string(),
            study,
            r.when.clone(),
            if r.complete { "yes" } else { "no" }.to_string(),
            r.steps.to_string(),
            r.valid.to_string(),
            r.suspect.to_string(),
            r.failed.to_string(),
        ]);
    }
    writeln!(out, "{table}")?;
    Ok(0)
}

/// One run as listed.
#[derive(serde::Serialize)]
struct Row {
    id: i64,
    study: String,
    /// The command line of a `throng load --save` run, as typed.
    command: Option<String>,
    started_unix_s: f64,
    /// Local time, to the minute.
    when: String,
    finished_unix_s: Option<f64>,
    complete: bool,
    steps: u64,
    valid: u64,
    suspect: u64,
    failed: u64,
}

impl Row {
    fn of(r: &RunRecord, c: StepCounts) -> Row {
        Row {
            id: r.id,
            study: r.study.clone(),
            command: r.load_command().map(str::to_string),
            started_unix_s: r.started_unix_s,
            when: local_time(r.started_unix_s),
            finished_unix_s: r.finished_unix_s,
            complete: r.complete,
            steps: c.steps,
            valid: c.valid,
            suspect: c.suspect,
            failed: c.failed,
        }
    }
}

/// The command with its program named as on a PATH: the directory it was
/// started from says nothing in a list.
fn display_command(c: &str) -> String {
    match c.split_once(' ') {
        Some((prog, rest)) => {
            let name = prog.rsplit('/').next().unwrap_or(prog);
            format!("{name} {rest}")
        }
        None => c.to_string(),
    }
}

fn shorten(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// "2026-11-24 01:20" in this machine's time zone (TZ, else
/// /etc/localtime); UTC when the time cannot be converted.
fn local_time(unix_s: f64) -> String {
    // POSIX leaves it to tzset, not localtime_r, to read TZ; the libc
    // crate does not declare it.
    extern "C" {
        fn tzset();
    }
    let t = unix_s.floor() as libc::time_t;
    // SAFETY: `tm` is a plain C struct for which all zeroes is a valid
    // value; localtime_r writes only into it and reads only `t`; tzset
    // takes nothing.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tzset();
        (!libc::localtime_r(&t, &mut tm).is_null()).then_some(tm)
    };
    match tm {
        Some(tm) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            i64::from(tm.tm_year) + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min
        ),
        None => crate::fmt::utc(unix_s),
    }
}

/// Where `throng load` stores its run, if it does: `--db` alone asks for
/// saving as much as `--save` does.
pub fn save_path(db: Option<&PathBuf>, save: bool) -> Option<PathBuf> {
    match (db, save) {
        (Some(db), _) => Some(db.clone()),
        (None, true) => Some(PathBuf::from(DEFAULT_DB)),
        (None, false) => None,
    }
}

/// The client hosts of `throng load --hosts`, with the clock offsets and
/// paths to the target measured before the load.
pub fn spread(run: &FleetRun, paths: &[(Place, PathFacts)], topology: &str) -> Spread {
    let hosts = run
        .hosts
        .iter()
        .map(|h| {
            let path = paths.iter().find(|(p, _)| *p == h.place).map(|(_, f)| f);
            HostRecord {
                host: h.place.to_string(),
                role: throng_model::HostRole::Client,
                clock_offset_ms: h.offset.offset_ns as f64 / 1e6,
                clock_uncertainty_ms: h.offset.uncertainty_ns as f64 / 1e6,
                rtt_ms: path.and_then(|p| p.rtt_min_us).map(|us| us / 1e3),
                mtu: path.and_then(|p| p.path_mtu.or(p.mtu)),
                interface: path.and_then(|p| p.interface.clone()),
                link_mbps: path.and_then(|p| p.speed_mbps),
                loopback: path.is_some_and(|p| p.loopback),
                ..HostRecord::default()
            }
        })
        .collect();
    Spread {
        topology: topology.to_string(),
        hosts,
        all_local: run.hosts.iter().all(|h| h.place.is_local()),
    }
}

/// Refuses, before a load runs, a database `save` could not write: in a
/// folder that does not exist, a folder itself, or a file that is not one.
/// A database is created only where none is.
pub fn check_db(db: Option<&std::path::Path>) -> Result<()> {
    let Some(db) = db else {
        return Ok(());
    };
    if db.exists() {
        // SQLite takes an empty file for a new database (/dev/full is
        // empty too, and no file).
        if db.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
            // /proc and /sys show their files as empty too, and refuse
            // what is written to them only once the load has run.
            use nix::sys::statfs::{statfs, PROC_SUPER_MAGIC, SYSFS_MAGIC};
            if statfs(db)
                .is_ok_and(|f| [PROC_SUPER_MAGIC, SYSFS_MAGIC].contains(&f.filesystem_type()))
            {
                anyhow::bail!(
                    "--db {}: a file of the kernel's, not one a database can be kept in",
                    db.display()
                );
            }
            return Ok(());
        }
        crate::cmd_report::existing(db).map(drop)
    } else {
        let dir = db
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            anyhow::bail!(
                "--db {}: the folder {} does not exist",
                db.display(),
                dir.display()
            );
        }
        // A folder the database cannot be made in (/proc, a read-only
        // mount) was found out only after the load had run.
        if nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_err() {
            anyhow::bail!(
                "--db {}: the folder {} cannot be written",
                db.display(),
                dir.display()
            );
        }
        Ok(())
    }
}

/// Stores the load as a run of one step when `--save` or `--db` asks for
/// it; does nothing otherwise. Called once the summary is printed, so a
/// database that cannot be written loses no figure.
/// `db`: where to store the run, from [`save_path`]; `None` stores nothing.
pub fn save(
    db: Option<PathBuf>,
    spec: &LoadSpec,
    outcome: Outcome,
    spread: Option<Spread>,
) -> Result<()> {
    let Some(db) = db else {
        return Ok(());
    };
    let load = SavedLoad {
        spec,
        outcome,
        spread,
        command: command_line(std::env::args_os()),
    };
    let complete = load.complete();
    let mut store = Store::open(&db)?;
    let id = throng_load::saved::save(&mut store, load)?;
    eprintln!(
        "saved as run {id} in {}{}",
        db.display(),
        if complete { "" } else { ", incomplete" }
    );
    Ok(())
}

/// The command line as a shell would take it back.
fn command_line(args: impl Iterator<Item = std::ffi::OsString>) -> String {
    args.map(|a| shell_quote(&redacted(&a.to_string_lossy())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word of a command line to be stored, its secrets replaced by `***`:
/// a URL's password, and the value of an `Authorization` or
/// `Proxy-Authorization` header. A results database is shared and its
/// articles published; a run stored with them is run again by giving
/// them anew.
fn redacted(word: &str) -> String {
    if word.starts_with("http://") || word.starts_with("https://") {
        if let Ok(mut u) = url::Url::parse(word) {
            if u.password().is_some() && u.set_password(Some("***")).is_ok() {
                return u.to_string();
            }
        }
        return word.to_string();
    }
    let (flag, header) = match word.strip_prefix("--header=") {
        Some(h) => ("--header=", h),
        None => match word.strip_prefix("-H") {
            Some(h) => ("-H", h),
            None => ("", word),
        },
    };
    match header.split_once(':') {
        Some((name, _))
            if name.trim().eq_ignore_ascii_case("authorization")
                || name.trim().eq_ignore_ascii_case("proxy-authorization") =>
        {
            format!("{flag}{name}: ***")
        }
        _ => word.to_string(),
    }
}

/// One word for a POSIX shell: as it is when nothing in it is special,
/// else in single quotes; control characters (a --body with a newline) in
/// $'…' so the command stays on one line.
fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    if s.chars().any(char::is_control) {
        let mut o = String::from("$'");
        for c in s.chars() {
            match c {
                '\\' => o.push_str("\\\\"),
                '\'' => o.push_str("\\'"),
                '\n' => o.push_str("\\n"),
                '\t' => o.push_str("\\t"),
                '\r' => o.push_str("\\r"),
                c if c.is_control() => o.push_str(&format!("\\x{:02x}", c as u32)),
                c => o.push(c),
            }
        }
        o.push('\'');
        return o;
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_a_shell_would_split_them() {
        assert_eq!(
            shell_quote("http://127.0.0.1:8080/a?b"),
            "'http://127.0.0.1:8080/a?b'"
        );
        assert_eq!(shell_quote("-n"), "-n");
        assert_eq!(shell_quote("/tmp/x.db"), "/tmp/x.db");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("X-Note: it's"), r"'X-Note: it'\''s'");
        assert_eq!(shell_quote("a\nb'c"), r"$'a\nb\'c'");
        let line = command_line(
            ["throng", "load", "http://h/", "-H", "A: b"]
                .into_iter()
                .map(Into::into),
        );
        assert_eq!(line, "throng load http://h/ -H 'A: b'");
        let line = command_line(
            [
                "throng",
                "load",
                "http://u:secret@h/",
                "-H",
                "authorization: Bearer x",
                "-HProxy-Authorization:Basic y",
                "--header=Authorization: z",
                "-H",
                "X-Authorization-Note: kept",
            ]
            .into_iter()
            .map(Into::into),
        );
        assert_eq!(
            line,
            "throng load 'http://u:***@h/' -H 'authorization: ***' \
             '-HProxy-Authorization: ***' '--header=Authorization: ***' \
             -H 'X-Authorization-Note: kept'"
        );
    }

    #[test]
    fn long_commands_are_cut_and_their_program_named_plainly() {
        assert_eq!(
            display_command("/usr/local/bin/throng load http://h/ -n 5"),
            "throng load http://h/ -n 5"
        );
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 6), "abcde…");
    }
}
