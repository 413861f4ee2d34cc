//! Session files users bring: httperf's `--wsesslog` files and siege's URL
//! files, read into one parsed form ([`SessionFile`]) and compiled into the
//! engine's [`Target`]s and [`Script`]s.
//!
//! The engine sees only request indexes, so the parsed form keeps requests
//! as written and [`compile`] leaves the mapping of a target string to an
//! address to its caller, who knows which server a relative path is meant
//! for.
//!
//! A session file may come from anyone, so parsing is total: any text gives
//! either a session file or one error naming its line, and what a file can
//! make us allocate is bounded (variable expansion and bodies read from
//! disk share [`MAX_BYTES`]; [`compile`] caps requests).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use throng_engine::users::{Page, Script};
use throng_engine::Target;

/// Most distinct requests one file may compile to: each becomes a target
/// whose request bytes the engine keeps for the whole run.
pub const MAX_DISTINCT: usize = 100_000;
/// Most request entries (pages and burst requests) over all sessions.
pub const MAX_ENTRIES: usize = 1_000_000;
/// Most bytes siege variable expansion and `<file` bodies may produce
/// together: a few lines of `B=$(A)$(A)` double in size each line.
pub const MAX_BYTES: usize = 256 << 20;

/// Whitespace that separates fields. Only space and tab: both formats are
/// line-based and neither tool treats other characters as blanks.
const WS: [char; 2] = [' ', '\t'];

/// Methods a siege URL line may name.
const SIEGE_METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"];

/// A session file, parsed but not yet tied to any server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    pub format: Format,
    /// Never empty, nor is any session in it.
    pub sessions: Vec<Vec<FilePage>>,
}

/// Neither format has a header, so the first line that says something
/// decides: a siege file's first such line is a URL (`http://`, `https://`)
/// or a `NAME=value` variable, a wsesslog file's is a path (`/...`). A
/// wsesslog whose first page is an absolute URL thus reads as siege (and
/// fails with a hint), and a siege file that starts with a path reads as
/// wsesslog, which gives the same sessions unless it has blank lines or
/// request bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// httperf `--wsesslog`: blank lines separate sessions, indented lines
    /// are a page's burst.
    Wsesslog,
    /// siege `-f`: one session, a page per URL.
    Siege,
}

/// One request as the file wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileRequest {
    /// Upper-case.
    pub method: String,
    /// `/path?query` or `http://host:port/path`, after variable expansion.
    pub target: String,
    pub body: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePage {
    pub request: FileRequest,
    pub burst: Vec<FileRequest>,
    /// `None`: the plan's think time decides.
    pub think: Option<Duration>,
}

/// Why a session file was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct SessionFileError {
    /// 1-based.
    pub line: usize,
    pub reason: String,
}

impl SessionFileError {
    /// `FILE:LINE: reason`, as compilers write it, so editors jump there.
    pub fn in_file(&self, file: impl std::fmt::Display) -> String {
        format!("{file}:{}: {}", self.line, self.reason)
    }
}

fn fail<T>(line: usize, reason: impl Into<String>) -> Result<T, SessionFileError> {
    Err(SessionFileError {
        line,
        reason: reason.into(),
    })
}

/// Parses `text` in whichever format it is in (see [`Format`] for how that
/// is told). `base_dir` resolves siege's relative `<file` bodies, so that a
/// file's bodies are found next to it whatever the current directory;
/// `None`: the current directory.
pub fn parse(text: &str, base_dir: Option<&Path>) -> Result<SessionFile, SessionFileError> {
    parse_within(text, base_dir, MAX_BYTES, false)
}

/// [`parse`], every request a path: a study loads each server at its own
/// address, so a URL is refused at its line.
pub fn parse_paths(text: &str, base_dir: Option<&Path>) -> Result<SessionFile, SessionFileError> {
    parse_within(text, base_dir, MAX_BYTES, true)
}

fn parse_within(
    text: &str,
    base_dir: Option<&Path>,
    max_bytes: usize,
    paths_only: bool,
) -> Result<SessionFile, SessionFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = detect(text);
    let lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let sessions = match format {
        Format::Wsesslog => parse_wsesslog(lines, paths_only)?,
        Format::Siege => parse_siege(lines, base_dir, max_bytes, paths_only)?,
    };
    if sessions.is_empty() {
        return fail(text.lines().count().max(1), "the file has no request");
    }
    Ok(SessionFile { format, sessions })
}

fn detect(text: &str) -> Format {
    for line in text.lines() {
        let t = line.trim_matches(WS);
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        return if is_url(t) || variable(t).is_some() {
            Format::Siege
        } else {
            Format::Wsesslog
        };
    }
    Format::Wsesslog
}

fn has_prefix_ci(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

fn is_url(s: &str) -> bool {
    has_prefix_ci(s, "http://") || has_prefix_ci(s, "https://")
}

/// Quotes user text in a message, short and with control characters
/// escaped, so a hostile line cannot flood or garble the terminal.
fn show(s: &str) -> String {
    const MAX: usize = 40;
    let mut out = String::from("`");
    for c in s.chars().take(MAX) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if s.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out.push('`');
    out
}

/// Splits at the first space or tab; the second part keeps it.
fn split_ws(s: &str) -> (&str, &str) {
    match s.find(WS) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    }
}

fn check_target(target: &str, line: usize, paths_only: bool) -> Result<(), SessionFileError> {
    if target.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return fail(
            line,
            format!("{} contains a space or control character", show(target)),
        );
    }
    if target.starts_with('/') {
        return Ok(());
    }
    if is_url(target) && paths_only {
        return fail(
            line,
            format!(
                "{}: a study loads each server at its own address, so give paths, not URLs",
                show(target)
            ),
        );
    }
    if is_url(target) {
        let after = &target[target.find("//").map_or(0, |i| i + 2)..];
        if after.is_empty() || after.starts_with(['/', '?', '#']) {
            return fail(line, format!("URL {} has no host", show(target)));
        }
        // Checked here, where the line is known: a URL that fails later
        // is refused with no line to find it by.
        let authority = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let port = match host.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((_, rest)) => rest,
                None => {
                    return fail(
                        line,
                        format!("URL {} has no ] after its IPv6 host", show(target)),
                    )
                }
            },
            None => host.find(':').map_or("", |i| &host[i..]),
        };
        let port = port.strip_prefix(':').unwrap_or(port);
        // An empty port is the scheme's, as in `http://host:/`; `+1` would
        // parse as a number, so digits are checked first.
        let digits = port.bytes().all(|b| b.is_ascii_digit());
        let valid = digits && matches!(port.parse::<u32>(), Ok(1..=65535));
        if !port.is_empty() && !valid {
            return fail(
                line,
                format!(
                    "URL {} has port {}: give 1 to 65535 after the host",
                    show(target),
                    show(port)
                ),
            );
        }
        return Ok(());
    }
    fail(
        line,
        format!(
            "expected a path starting with / or an http:// or https:// URL, found {}",
            show(target)
        ),
    )
}

// ---- httperf --wsesslog ----

fn parse_wsesslog<'a>(
    lines: impl Iterator<Item = (usize, &'a str)>,
    paths_only: bool,
) -> Result<Vec<Vec<FilePage>>, SessionFileError> {
    let mut sessions = Vec::new();
    let mut current: Vec<FilePage> = Vec::new();
    for (n, line) in lines {
        let body = line.trim_matches(WS);
        if body.is_empty() {
            if !current.is_empty() {
                sessions.push(std::mem::take(&mut current));
            }
            continue;
        }
        if body.starts_with('#') {
            continue;
        }
        let (request, think) = wsesslog_line(body, n, paths_only)?;
        if line.starts_with(WS) {
            if think.is_some() {
                // httperf pauses once per burst, after the page and its
                // burst, so a burst request's own think time means nothing.
                return fail(n, "think= belongs on the page line, not on a burst request");
            }
            match current.last_mut() {
                Some(page) => page.burst.push(request),
                None => {
                    return fail(
                        n,
                        "burst request (indented) with no page before it in this session",
                    )
                }
            }
        } else {
            current.push(FilePage {
                request,
                burst: Vec::new(),
                think,
            });
        }
    }
    if !current.is_empty() {
        sessions.push(current);
    }
    Ok(sessions)
}

/// `URI [attr=value ...]`, without surrounding blanks.
fn wsesslog_line(
    body: &str,
    n: usize,
    paths_only: bool,
) -> Result<(FileRequest, Option<Duration>), SessionFileError> {
    let (target, mut rest) = split_ws(body);
    check_target(target, n, paths_only)?;
    let mut method: Option<String> = None;
    let mut contents: Option<Vec<u8>> = None;
    let mut think: Option<Duration> = None;
    loop {
        rest = rest.trim_start_matches(WS);
        if rest.is_empty() {
            break;
        }
        let key_end = rest.find(['=', ' ', '\t']).unwrap_or(rest.len());
        let key = &rest[..key_end];
        if !rest[key_end..].starts_with('=') {
            let hint = if SIEGE_METHODS.iter().any(|m| m.eq_ignore_ascii_case(key)) {
                " (a siege file must start with a URL or a NAME=value line)"
            } else {
                ""
            };
            return fail(
                n,
                format!("expected attribute=value, found {}{hint}", show(key)),
            );
        }
        let seen = match key {
            "method" => method.is_some(),
            "contents" => contents.is_some(),
            "think" => think.is_some(),
            _ => return fail(n, format!("unknown attribute {}", show(key))),
        };
        if seen {
            return fail(n, format!("{key}= given twice"));
        }
        let (value, after) = attribute_value(&rest[key_end + 1..], n)?;
        rest = after;
        match key {
            "method" => {
                if value.is_empty() || !value.chars().all(|c| c.is_ascii_alphabetic()) {
                    return fail(
                        n,
                        format!("method {} is not a word of letters", show(&value)),
                    );
                }
                method = Some(value.to_ascii_uppercase());
            }
            "contents" => contents = Some(value.into_bytes()),
            _ => think = Some(think_time(&value, n)?),
        }
    }
    let request = FileRequest {
        // httperf sends contents with whatever method is named, GET by default.
        method: method.unwrap_or_else(|| "GET".to_string()),
        target: target.to_string(),
        body: contents,
    };
    Ok((request, think))
}

/// A value, quoted or not, with httperf's backslash escapes; and the text
/// after it.
fn attribute_value(s: &str, n: usize) -> Result<(String, &str), SessionFileError> {
    let quote = s.chars().next().filter(|c| matches!(c, '\'' | '"'));
    let start = quote.map_or(0, char::len_utf8);
    let mut out = String::new();
    let mut chars = s[start..].char_indices().map(|(i, c)| (i + start, c));
    while let Some((i, c)) = chars.next() {
        if Some(c) == quote {
            let after = &s[i + c.len_utf8()..];
            if !(after.is_empty() || after.starts_with(WS)) {
                return fail(
                    n,
                    format!("text right after a closing quote: {}", show(after)),
                );
            }
            return Ok((out, after));
        }
        match c {
            ' ' | '\t' if quote.is_none() => return Ok((out, &s[i..])),
            '\\' => out.push(match chars.next() {
                Some((_, 'n')) => '\n',
                Some((_, 'r')) => '\r',
                Some((_, 't')) => '\t',
                Some((_, e @ ('\\' | '"' | '\''))) => e,
                Some((_, e)) => {
                    return fail(n, format!("unknown escape {}", show(&format!("\\{e}"))))
                }
                None => return fail(n, "backslash at the end of the line"),
            }),
            _ => out.push(c),
        }
    }
    match quote {
        Some(q) => fail(n, format!("no closing {q} on this line")),
        None => Ok((out, "")),
    }
}

fn think_time(value: &str, n: usize) -> Result<Duration, SessionFileError> {
    let secs: f64 = match value.parse() {
        Ok(s) => s,
        Err(_) => {
            return fail(
                n,
                format!("think time {} is not a number of seconds", show(value)),
            )
        }
    };
    // A day at most, as every time of a study: 1e18 s held a session's
    // user until the run's deadline.
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return fail(
            n,
            format!("think time {} must be from 0 to 86400 seconds", show(value)),
        );
    }
    if secs == 0.0 {
        return Ok(Duration::ZERO);
    }
    Duration::try_from_secs_f64(secs)
        .or_else(|_| fail(n, format!("think time {} is too long", show(value))))
}

// ---- siege URL files ----

fn parse_siege<'a>(
    lines: impl Iterator<Item = (usize, &'a str)>,
    base_dir: Option<&Path>,
    max_bytes: usize,
    paths_only: bool,
) -> Result<Vec<Vec<FilePage>>, SessionFileError> {
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut budget = Budget {
        left: max_bytes,
        limit: max_bytes,
    };
    let mut pages = Vec::new();
    for (n, line) in lines {
        let t = line.trim_matches(WS);
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = variable(t) {
            let value = expand(value.trim_matches(WS), &vars, n, &mut budget)?;
            vars.insert(name.to_string(), value);
            continue;
        }
        // Not `t`: POST data is taken as written, trailing blanks too.
        let expanded = expand(line.trim_start_matches(WS), &vars, n, &mut budget)?;
        pages.push(FilePage {
            request: siege_request(&expanded, n, base_dir, &mut budget, paths_only)?,
            burst: Vec::new(),
            think: None,
        });
    }
    Ok(if pages.is_empty() {
        Vec::new()
    } else {
        vec![pages]
    })
}

/// What variable expansion and `<file` bodies may still produce.
struct Budget {
    left: usize,
    limit: usize,
}

impl Budget {
    fn take(&mut self, bytes: usize, n: usize) -> Result<(), SessionFileError> {
        if bytes > self.left {
            return self.exceeded(n);
        }
        self.left -= bytes;
        Ok(())
    }

    fn exceeded<T>(&self, n: usize) -> Result<T, SessionFileError> {
        fail(
            n,
            format!(
                "more than {} MiB after expanding variables and reading files",
                self.limit >> 20
            ),
        )
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `NAME=value` (blanks allowed around `=`). A URL's `?a=b` never matches,
/// as what comes before its `=` holds `:` or `/`.
fn variable(t: &str) -> Option<(&str, &str)> {
    let (name, value) = t.split_once('=')?;
    let name = name.trim_end_matches(WS);
    is_name(name).then_some((name, value))
}

/// Expands `$(NAME)` and `${NAME}`; any other `$` stays as it is.
fn expand(
    s: &str,
    vars: &HashMap<String, String>,
    n: usize,
    budget: &mut Budget,
) -> Result<String, SessionFileError> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let close = match after.chars().next() {
            Some('(') => ')',
            Some('{') => '}',
            _ => {
                out.push('$');
                rest = after;
                continue;
            }
        };
        let inner = &after[1..];
        let Some(end) = inner.find(close) else {
            return fail(n, format!("no closing {close} after {}", show(&rest[i..])));
        };
        let name = &inner[..end];
        if !is_name(name) {
            return fail(n, format!("bad variable name {}", show(name)));
        }
        let Some(value) = vars.get(name) else {
            return fail(n, format!("undefined variable {name}"));
        };
        if out.len() + value.len() > budget.left {
            return budget.exceeded(n);
        }
        out.push_str(value);
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    budget.take(out.len(), n)?;
    Ok(out)
}

/// `URL [METHOD [data | <file]]`, leading blanks gone.
fn siege_request(
    line: &str,
    n: usize,
    base_dir: Option<&Path>,
    budget: &mut Budget,
    paths_only: bool,
) -> Result<FileRequest, SessionFileError> {
    let (target, rest) = split_ws(line);
    check_target(target, n, paths_only)?;
    let rest = rest.trim_start_matches(WS);
    let mut request = FileRequest {
        method: "GET".to_string(),
        target: target.to_string(),
        body: None,
    };
    if rest.trim_end_matches(WS).is_empty() {
        return Ok(request);
    }
    let (word, after) = split_ws(rest);
    let Some(method) = SIEGE_METHODS.iter().find(|m| m.eq_ignore_ascii_case(word)) else {
        let hint = if word.contains('=') {
            " (a wsesslog file must start with a path, not a URL)"
        } else {
            ""
        };
        return fail(
            n,
            format!(
                "expected a method ({}) after the URL, found {}{hint}",
                SIEGE_METHODS.join(", "),
                show(word)
            ),
        );
    };
    request.method = method.to_string();
    // `after` is empty or starts with one blank, a single byte.
    let data = after.get(1..).unwrap_or("");
    if data.is_empty() {
        return Ok(request);
    }
    request.body = Some(match data.strip_prefix('<') {
        Some(file) => read_body(file.trim_matches(WS), n, base_dir, budget)?,
        None => data.as_bytes().to_vec(),
    });
    Ok(request)
}

fn read_body(
    name: &str,
    n: usize,
    base_dir: Option<&Path>,
    budget: &mut Budget,
) -> Result<Vec<u8>, SessionFileError> {
    if name.is_empty() {
        return fail(n, "no file named after <");
    }
    let path = match base_dir {
        Some(dir) => dir.join(name),
        None => Path::new(name).to_path_buf(),
    };
    let shown = show(&path.display().to_string());
    // Checked before opening: opening a FIFO would block, and a device
    // such as /dev/zero never ends.
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return fail(n, format!("body file {shown} is not a regular file")),
        Err(e) => return fail(n, format!("cannot read body file {shown}: {e}")),
    }
    let mut body = Vec::new();
    let read = std::fs::File::open(&path)
        .and_then(|f| f.take(budget.left as u64 + 1).read_to_end(&mut body));
    if let Err(e) = read {
        return fail(n, format!("cannot read body file {shown}: {e}"));
    }
    budget.take(body.len(), n)?;
    Ok(body)
}

// ---- compiling ----

/// Turns a parsed file into targets and scripts. Requests equal in method,
/// target and body share one target, so a page every session fetches is
/// serialised once and reported as one URL. `resolve` only decides where a
/// request goes (address, `Host`, path, URL); its method and body are set
/// here, the method only when it is not GET so that a plain page follows
/// the spec's method as other targets do.
pub fn compile(
    file: &SessionFile,
    resolve: impl FnMut(&FileRequest) -> Result<Target, String>,
) -> Result<(Vec<Target>, Vec<Script>), String> {
    compile_capped(file, resolve, MAX_DISTINCT, MAX_ENTRIES)
}

fn compile_capped(
    file: &SessionFile,
    mut resolve: impl FnMut(&FileRequest) -> Result<Target, String>,
    max_distinct: usize,
    max_entries: usize,
) -> Result<(Vec<Target>, Vec<Script>), String> {
    let mut interner = Interner {
        index: HashMap::new(),
        targets: Vec::new(),
        max_distinct,
    };
    let mut entries = 0usize;
    let mut scripts = Vec::with_capacity(file.sessions.len());
    for session in &file.sessions {
        let mut pages = Vec::with_capacity(session.len());
        for page in session {
            entries = entries.saturating_add(1 + page.burst.len());
            if entries > max_entries {
                return Err(format!(
                    "the sessions hold more than {max_entries} requests"
                ));
            }
            let request = interner.id(&page.request, &mut resolve)?;
            let burst = page
                .burst
                .iter()
                .map(|r| interner.id(r, &mut resolve))
                .collect::<Result<_, _>>()?;
            pages.push(Page {
                request,
                burst,
                think: page.think,
            });
        }
        scripts.push(Script { pages });
    }
    Ok((interner.targets, scripts))
}

struct Interner<'a> {
    index: HashMap<&'a FileRequest, u32>,
    targets: Vec<Target>,
    max_distinct: usize,
}

impl<'a> Interner<'a> {
    fn id(
        &mut self,
        r: &'a FileRequest,
        resolve: &mut impl FnMut(&FileRequest) -> Result<Target, String>,
    ) -> Result<u32, String> {
        if let Some(&i) = self.index.get(r) {
            return Ok(i);
        }
        if self.targets.len() >= self.max_distinct {
            return Err(format!(
                "the sessions make more than {} distinct requests",
                self.max_distinct
            ));
        }
        let mut target = resolve(r).map_err(|e| format!("{} {}: {e}", r.method, r.target))?;
        target.method = (r.method != "GET").then(|| r.method.clone());
        target.body = r.body.clone();
        let i = self.targets.len() as u32;
        self.targets.push(target);
        self.index.insert(r, i);
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, target: &str, body: Option<&[u8]>) -> FileRequest {
        FileRequest {
            method: method.to_string(),
            target: target.to_string(),
            body: body.map(<[u8]>::to_vec),
        }
    }

    fn get(target: &str) -> FileRequest {
        req("GET", target, None)
    }

    fn page(request: FileRequest, burst: Vec<FileRequest>, think: Option<f64>) -> FilePage {
        FilePage {
            request,
            burst,
            think: think.map(Duration::from_secs_f64),
        }
    }

    fn error(text: &str) -> SessionFileError {
        parse(text, None).expect_err(text)
    }

    fn resolver(r: &FileRequest) -> Result<Target, String> {
        Ok(Target::new(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:8080".to_string(),
            r.target.clone(),
            format!("http://127.0.0.1:8080{}", r.target),
        ))
    }

    #[test]
    fn wsesslog_two_sessions() {
        let text = "# two users, in httperf's style\n\
                    /index.html think=2.0\n\
                    \t/style.css\n\
                    \t/logo.png\n\
                    /foo.php method=POST contents='a=1 b' think=1.5\n\
                    \n\
                    \n\
                    # the second\n\
                    /bar.html\n\
                    \x20 /b.js method=head\n\
                    /cart method=delete contents=x think=0\n";
        let file = parse(text, None).unwrap();
        assert_eq!(file.format, Format::Wsesslog);
        assert_eq!(
            file.sessions,
            vec![
                vec![
                    page(
                        get("/index.html"),
                        vec![get("/style.css"), get("/logo.png")],
                        Some(2.0)
                    ),
                    page(req("POST", "/foo.php", Some(b"a=1 b")), vec![], Some(1.5)),
                ],
                vec![
                    page(get("/bar.html"), vec![req("HEAD", "/b.js", None)], None),
                    page(req("DELETE", "/cart", Some(b"x")), vec![], Some(0.0)),
                ],
            ]
        );
    }

    #[test]
    fn wsesslog_contents_escapes_and_defaults() {
        let text = r#"/a contents="x\ty\n\"q\" \\ \'s\r"
/b contents='it''s'
/c contents=plain\n
http://example.com:81/d?x=1 contents=""
"#;
        // 'it''s' is a quoted value followed by text, which is refused.
        let err = parse(text, None).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        let text = text.replace("/b contents='it''s'\n", "/b contents='it\\'s'\n");
        let file = parse(&text, None).unwrap();
        let pages = &file.sessions[0];
        assert_eq!(
            pages[0].request,
            req("GET", "/a", Some(b"x\ty\n\"q\" \\ 's\r"))
        );
        assert_eq!(pages[1].request.body.as_deref(), Some(&b"it's"[..]));
        assert_eq!(pages[2].request.body.as_deref(), Some(&b"plain\n"[..]));
        assert_eq!(
            pages[3].request,
            req("GET", "http://example.com:81/d?x=1", Some(b""))
        );
        assert!(pages.iter().all(|p| p.think.is_none()));
    }

    #[test]
    fn wsesslog_errors_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("\t/img.png\n/index.html\n", 1, "no page before it"),
            ("/a\n\n  /b\n", 3, "no page before it"),
            ("/a\n\t/b think=1\n", 2, "page line"),
            ("/a\n/b color=red\n", 2, "unknown attribute `color`"),
            ("/a\n# c\n/b think=abc\n", 3, "not a number"),
            ("/a think=-1\n", 1, "from 0 to 86400 seconds"),
            ("/a think=inf\n", 1, "from 0 to 86400 seconds"),
            ("/a think=NaN\n", 1, "from 0 to 86400 seconds"),
            ("/a think=1e300\n", 1, "from 0 to 86400 seconds"),
            ("/a think=1e18\n", 1, "from 0 to 86400 seconds"),
            ("/a\n/b method=G3T\n", 2, "method `G3T`"),
            ("/a method=\n", 1, "method"),
            ("/a method=GET method=POST\n", 1, "twice"),
            ("/a contents='x\n", 1, "no closing '"),
            ("/a contents=\"\\q\"\n", 1, "unknown escape `\\q`"),
            ("/a contents=x\\\n", 1, "backslash"),
            ("/a POST\n", 1, "siege"),
            ("/a\nindex.html\n", 2, "expected a path"),
            ("/a\x01b\n", 1, "control"),
            ("# nothing\n\n", 2, "no request"),
            ("", 1, "no request"),
        ];
        for &(text, line, reason) in cases {
            let err = error(text);
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(err.reason.contains(reason), "{text:?}: {err}");
            assert_eq!(err.to_string(), format!("line {line}: {}", err.reason));
        }
    }

    #[test]
    fn siege_variables_and_bodies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("order.json"), b"{\"n\": 1}\n").unwrap();
        let abs = dir.path().join("abs.bin");
        std::fs::write(&abs, [0u8, 1, 2]).unwrap();
        let text = String::from(
            "# siege urls\n\
             U=al ice\n\
             HOST=http://127.0.0.1:8080\n\
             API = ${HOST}/api\n\
             \n\
             $(HOST)/index.html\n\
             ${API}/login POST user=$(U)&pw=a b \n\
             $(API)/order post <order.json\n",
        ) + &format!(
            "/upload PUT < {}\n\
             http://h/$5/x DELETE\n\
             http://h/ OPTIONS\n",
            abs.display()
        );
        let file = parse(&text, Some(dir.path())).unwrap();
        assert_eq!(file.format, Format::Siege);
        assert_eq!(file.sessions.len(), 1);
        let want = vec![
            get("http://127.0.0.1:8080/index.html"),
            req(
                "POST",
                "http://127.0.0.1:8080/api/login",
                Some(b"user=al ice&pw=a b "),
            ),
            req(
                "POST",
                "http://127.0.0.1:8080/api/order",
                Some(b"{\"n\": 1}\n"),
            ),
            req("PUT", "/upload", Some(&[0, 1, 2])),
            req("DELETE", "http://h/$5/x", None),
            req("OPTIONS", "http://h/", None),
        ];
        let got: Vec<FileRequest> = file.sessions[0].iter().map(|p| p.request.clone()).collect();
        assert_eq!(got, want);
        assert!(file.sessions[0]
            .iter()
            .all(|p| p.burst.is_empty() && p.think.is_none()));

        let err = parse("http://h/a POST <missing.txt\n", Some(dir.path())).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("missing.txt"), "{err}");
        let err = parse("http://h/a POST <.\n", Some(dir.path())).unwrap_err();
        assert!(err.reason.contains("not a regular file"), "{err}");
    }

    #[test]
    fn siege_errors_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("A=1\n# c\n$(B)/x\n", 3, "undefined variable B"),
            ("A=$(A)\n", 1, "undefined variable A"),
            ("A=1\nhttp://h/$(A\n", 2, "no closing )"),
            ("A=1\nhttp://h/${A B}\n", 2, "bad variable name"),
            ("http://h/\nhttp://h/ FETCH x\n", 2, "found `FETCH`"),
            ("http://h/ think=2\n", 1, "wsesslog"),
            ("http://h/\nexample.com/\n", 2, "expected a path"),
            ("http:///x\n", 1, "no host"),
            ("http://h/ POST <\n", 1, "no file"),
            ("A=x\n", 1, "no request"),
        ];
        for &(text, line, reason) in cases {
            let err = error(text);
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(err.reason.contains(reason), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_url_with_a_bad_port_is_refused_at_its_line() {
        let refused = |text: &str| parse(text, None).unwrap_err();
        for (text, line, reason) in [
            (
                "http://127.0.0.1:8080/\nhttp://127.0.0.1:99999/index.html\n",
                2,
                "URL `http://127.0.0.1:99999/index.html` has port `99999`: give 1 to 65535 \
                 after the host",
            ),
            (
                "H=http://u:p@host:80x\n$(H)/a POST a=1\n",
                2,
                "URL `http://u:p@host:80x/a` has port `80x`: give 1 to 65535 after the host",
            ),
            (
                "http://[::1]:0/\n",
                1,
                "URL `http://[::1]:0/` has port `0`: give 1 to 65535 after the host",
            ),
            (
                "http://[::1/\n",
                1,
                "URL `http://[::1/` has no ] after its IPv6 host",
            ),
        ] {
            let e = refused(text);
            assert_eq!((e.line, e.reason.as_str()), (line, reason), "{text:?}");
        }
        assert_eq!(
            refused("http://h:99999/\n").in_file("urls.txt"),
            "urls.txt:1: URL `http://h:99999/` has port `99999`: give 1 to 65535 after the host"
        );
        for ok in [
            "http://h/",
            "http://h:8080/a",
            "http://h:/a",
            "https://[::1]:443/",
            "http://u@h:1?x",
        ] {
            assert!(parse(ok, None).is_ok(), "{ok}");
        }
        // A study's file names paths only, each URL refused at its line.
        let e = parse_paths("/a\n/b\nhttp://h/c\n", None).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(parse_paths("/a\n\t/b\n", None).is_ok());
    }

    #[test]
    fn siege_expansion_is_bounded() {
        // Each line doubles the last: 2^40 bytes unless stopped.
        let mut text = String::from("V0=0123456789abcdef\n");
        for i in 1..=40 {
            text.push_str(&format!("V{i}=$(V{})$(V{})\n", i - 1, i - 1));
        }
        let err = parse_within(&text, None, 1 << 20, false).unwrap_err();
        assert!(err.reason.contains("more than 1 MiB"), "{err}");
        assert_eq!(err.line, 17, "{err}");
    }

    #[test]
    fn siege_with_only_paths_reads_as_wsesslog_alike() {
        let file = parse("/a\n/b\n", None).unwrap();
        assert_eq!(file.format, Format::Wsesslog);
        assert_eq!(
            file.sessions,
            vec![vec![
                page(get("/a"), vec![], None),
                page(get("/b"), vec![], None)
            ]]
        );
    }

    #[test]
    fn compile_dedups_requests() {
        let text = "http://h/a\n\
                    http://h/b\n\
                    http://h/a\n\
                    http://h/a POST x=1\n\
                    http://h/a POST x=1\n\
                    http://h/a POST x=2\n";
        let file = parse(text, None).unwrap();
        let (targets, scripts) = compile(&file, resolver).unwrap();
        assert_eq!(targets.len(), 4);
        let ids: Vec<u32> = scripts[0].pages.iter().map(|p| p.request).collect();
        assert_eq!(ids, vec![0, 1, 0, 2, 2, 3]);
        assert_eq!(targets[0].method, None);
        assert_eq!(targets[0].body, None);
        assert_eq!(targets[0].path, "http://h/a");
        assert_eq!(targets[2].method.as_deref(), Some("POST"));
        assert_eq!(targets[2].body.as_deref(), Some(&b"x=1"[..]));
        assert_eq!(targets[3].body.as_deref(), Some(&b"x=2"[..]));
    }

    #[test]
    fn compile_wsesslog_bursts_and_think() {
        let text = "/i think=2\n\t/s.css\n\t/i\n\n/i\n\t/s.css\n";
        let file = parse(text, None).unwrap();
        let (targets, scripts) = compile(&file, resolver).unwrap();
        assert_eq!(
            targets.iter().map(|t| t.path.as_str()).collect::<Vec<_>>(),
            ["/i", "/s.css"]
        );
        assert_eq!(
            scripts,
            vec![
                Script {
                    pages: vec![Page {
                        request: 0,
                        burst: vec![1, 0],
                        think: Some(Duration::from_secs(2)),
                    }],
                },
                Script {
                    pages: vec![Page {
                        request: 0,
                        burst: vec![1],
                        think: None,
                    }],
                },
            ]
        );
    }

    #[test]
    fn compile_caps_and_resolver_errors() {
        let file = parse("/a\n/b\n/c\n\n/a\t\n\t/b\n", None).unwrap();
        let err = compile_capped(&file, resolver, 2, 100).unwrap_err();
        assert!(err.contains("more than 2 distinct"), "{err}");
        let err = compile_capped(&file, resolver, 100, 4).unwrap_err();
        assert!(err.contains("more than 4 requests"), "{err}");
        assert!(compile_capped(&file, resolver, 3, 5).is_ok());
        let err = compile(&file, |r| {
            if r.target == "/b" {
                Err("no such host".to_string())
            } else {
                resolver(r)
            }
        })
        .unwrap_err();
        assert_eq!(err, "GET /b: no such host");
    }

    /// Deterministic mutations of valid files and of noise: parsing must
    /// never panic, and what it returns must hold together.
    #[test]
    fn garbage_never_panics() {
        let seeds = [
            "/index.html think=2.0\n\t/a.gif\n\t/b.gif\n/foo.php method=POST contents='a=1 b' think=1.5\n\n/x\n",
            "# c\nHOST=http://h:1\n$(HOST)/a POST x=${HOST}\n/b PUT data\nhttp://h/c\n",
            "/a contents=\"\\n\\t\\\\\\\"\" method=get\n",
        ];
        let pieces: [&str; 24] = [
            "$(",
            "${",
            ")",
            "}",
            "$",
            "'",
            "\"",
            "\\",
            "\t",
            " ",
            "\n",
            "\r\n",
            "=",
            "#",
            "/",
            "http://",
            "<",
            "POST ",
            "think=",
            "contents=",
            "method=",
            "é",
            "\u{feff}",
            "\0",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |below: usize| -> usize {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % below.max(1)
        };
        let (mut parsed, mut refused) = (0, 0);
        for round in 0..20_000 {
            let mut bytes: Vec<u8> = if round % 10 == 0 {
                (0..next(200)).map(|_| next(256) as u8).collect()
            } else {
                seeds[next(seeds.len())].as_bytes().to_vec()
            };
            for _ in 0..1 + next(4) {
                let at = next(bytes.len() + 1);
                match next(4) {
                    0 => {
                        let p = pieces[next(pieces.len())].as_bytes();
                        bytes.splice(at..at, p.iter().copied());
                    }
                    1 => {
                        let end = (at + next(6)).min(bytes.len());
                        bytes.drain(at..end);
                    }
                    2 => bytes.insert(at, next(256) as u8),
                    _ => {
                        let end = (at + next(12)).min(bytes.len());
                        let copy = bytes[at..end].to_vec();
                        let to = next(bytes.len() + 1);
                        bytes.splice(to..to, copy);
                    }
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            match parse(&text, None) {
                Ok(file) => {
                    parsed += 1;
                    assert!(
                        !file.sessions.is_empty() && file.sessions.iter().all(|s| !s.is_empty())
                    );
                    let (targets, scripts) = compile(&file, resolver).unwrap();
                    for s in &scripts {
                        for p in &s.pages {
                            assert!(std::iter::once(&p.request)
                                .chain(&p.burst)
                                .all(|&i| (i as usize) < targets.len()));
                        }
                    }
                }
                Err(e) => {
                    refused += 1;
                    assert!(
                        e.line >= 1 && e.line <= text.lines().count().max(1),
                        "{text:?}: {e}"
                    );
                }
            }
        }
        // Both paths must have been exercised for the loop to mean much.
        assert!(
            parsed > 1000 && refused > 1000,
            "{parsed} parsed, {refused} refused"
        );
    }
}
