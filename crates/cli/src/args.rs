//! Values as the command line gives them: durations and URLs, checked
//! once into what the engine takes.

use std::net::ToSocketAddrs;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use throng_engine::Target;

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

/// The longest duration an option takes: a year.
const MAX_SECONDS: f64 = 365.0 * 86_400.0;

/// "10s", "250ms", "2m", "1h", "1.5s" or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (try 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "`{s}`: unknown unit `{unit}` (use us, ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{s}` is not a duration"));
    }
    // A Duration holds no 10^17 hours; beyond a year is a typo anyway.
    if secs > MAX_SECONDS {
        return Err(format!("`{s}` is longer than a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// An `http://` URL resolved to an address, as the engine wants it.
/// Credentials in it are left out of the target, whose URL is shown and
/// stored: [`url_credentials`] reads them.
pub fn parse_target(raw: &str) -> Result<Target> {
    // The URL parser drops tabs and newlines and escapes control
    // characters without a word: what was typed is not what would be sent.
    if let Some(c) = raw.chars().find(|c| c.is_control() || c.is_whitespace()) {
        bail!("{raw:?} is not a URL: it holds {c:?}, which a request line cannot carry");
    }
    let mut url = url::Url::parse(raw).map_err(|e| anyhow::anyhow!("`{raw}` is not a URL: {e}"))?;
    // A password never reaches an output or a database; the user name
    // stays, to say whose they were.
    let _ = url.set_password(None);
    match url.scheme() {
        "http" | "https" => {}
        s => bail!("`{raw}`: unsupported scheme `{s}` (give http:// or https://)"),
    }
    let host = url
        .host_str()
        .with_context(|| format!("`{raw}` has no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    // Port 0 asks the kernel for any port when binding; no server listens
    // on it, and the refusal would come later, as a failed connection.
    if port == 0 {
        bail!("`{raw}` is not a URL: port 0 is no server's port");
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addr = (bare, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host `{host}`"))?
        .next()
        .with_context(|| format!("host `{host}` has no address"))?;
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok(Target {
        addr,
        host_header,
        path,
        url: url.to_string(),
        method: None,
        body: None,
        expect_body: None,
    })
}

/// The `Authorization` value for credentials written in a URL
/// (`http://user:pass@host/`), as curl and browsers send them: Basic, the
/// percent-decoded `user:pass` in base64 (RFC 7617). `None` without a
/// user name.
pub fn url_credentials(raw: &str) -> Result<Option<String>> {
    use base64::Engine as _;
    let url = url::Url::parse(raw).map_err(|e| anyhow::anyhow!("`{raw}` is not a URL: {e}"))?;
    if url.username().is_empty() {
        return Ok(None);
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or("")));
    Ok(Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )))
}

/// The `Authorization` value of the URLs' credentials, if any. Every
/// request carries the same header fields, so one set of credentials
/// serves them all, and URLs that carry different ones are refused.
pub fn one_authorization(
    credentials: impl IntoIterator<Item = Option<String>>,
) -> anyhow::Result<Option<String>> {
    let mut authorization: Option<String> = None;
    for c in credentials.into_iter().flatten() {
        match &authorization {
            Some(a) if *a != c => anyhow::bail!(
                "the URLs carry different credentials, and every request carries the same \
                 header fields: give one Authorization with -H"
            ),
            _ => authorization = Some(c),
        }
    }
    Ok(authorization)
}

/// Sends `authorization`, unless an Authorization given with -H, the
/// user's word over the URL's, is already there.
pub fn add_authorization(spec: &mut throng_engine::LoadSpec, authorization: Option<String>) {
    if let Some(value) = authorization {
        if !spec
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        {
            spec.headers.push(("Authorization".to_string(), value));
        }
    }
}
