//! Values as the command line gives them: the files its options name,
//! the paths it writes, and durations worded for an option.

use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The bytes of a file an option names (`--body-file`, `--urls`,
/// `--sessions`), which must be a regular file: checked before opening,
/// since opening a FIFO blocks and a device such as /dev/zero never ends.
pub fn read_file(option: &str, path: &std::path::Path) -> Result<Vec<u8>> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => bail!("{option} {}: not a regular file", path.display()),
        Err(e) => bail!("cannot read {option} {}: {e}", path.display()),
    }
    std::fs::read(path).with_context(|| format!("cannot read {option} {}", path.display()))
}

/// A text file an option names (`--urls`, `--sessions`), read as a
/// study's files are ([`throng_model::read_text_file`]).
pub fn read_text(option: &str, path: &std::path::Path) -> Result<String> {
    throng_model::read_text_file(path)
        .map_err(|e| anyhow::anyhow!("{option} {}: {e}", path.display()))
}

/// Write `bytes` to `path` whole or not at all: into a file beside it,
/// renamed over it once complete. A disk that fills part-way used to
/// leave a report cut short, or an empty chart, where an older whole one
/// had been. A path that is not a regular file (/dev/stdout, a FIFO) is
/// written as it is, since a rename would replace it; a link is followed,
/// so the file it names gets the report.
pub fn write_whole(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return std::fs::write(path, bytes),
        Ok(_) => std::fs::canonicalize(path)?,
        Err(_) => path.to_path_buf(),
    };
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let tmp = target.with_file_name(format!(".{name}.{}.part", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A path throng writes (a database, a report, a folder of pages): one
/// with a control character in it is refused rather than made, since a
/// name holding a line break is taken by a shell, a log or `ls` for two,
/// and the line saying what was written splits with it.
pub fn out_path(s: &str) -> Result<std::path::PathBuf, String> {
    if s.is_empty() {
        return Err("the path is empty".to_string());
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(format!(
            "{s:?} holds the control character {c:?}, which a file name should not"
        ));
    }
    Ok(std::path::PathBuf::from(s))
}

/// "10s", "250ms", "2m", "1h", "1.5s" or a plain number of seconds, as
/// the load's vocabulary reads them ([`throng_load::vocab::duration`]),
/// worded for an option.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    use throng_load::vocab::DurationError;
    let s = s.trim();
    throng_load::vocab::duration(s).map_err(|e| match e {
        DurationError::NotANumber => format!("`{s}` is not a duration (try 10s, 500ms, 2m)"),
        DurationError::UnknownUnit(unit) => {
            format!("`{s}`: unknown unit `{unit}` (use us, ms, s, m or h)")
        }
        // A Duration holds no 10^17 hours; beyond a year is a typo anyway.
        DurationError::TooLong => format!("`{s}` is longer than a year"),
    })
}
