//! URLs as a user gives them — one on the command line, a list of them in
//! a file, the credentials written in them — checked once into the
//! engine's [`Target`]s and the `Authorization` they carry.

use std::net::ToSocketAddrs;

use thiserror::Error;
use throng_engine::{LoadSpec, Target};

/// Why a text is not a URL the engine can load. The text is the one the
/// user gave, so these read the same wherever they are printed.
#[derive(Debug, Error)]
pub enum TargetError {
    /// The URL parser drops tabs and newlines and escapes control
    /// characters without a word: what was typed is not what would be
    /// sent.
    #[error("{raw:?} is not a URL: it holds {c:?}, which a request line cannot carry")]
    Unsendable { raw: String, c: char },
    #[error("`{raw}` is not a URL: {why}")]
    NotAUrl { raw: String, why: url::ParseError },
    #[error("`{raw}`: unsupported scheme `{scheme}` (give http:// or https://)")]
    Scheme { raw: String, scheme: String },
    #[error("`{0}` has no host")]
    NoHost(String),
    /// Port 0 asks the kernel for any port when binding; no server listens
    /// on it, and the refusal would come later, as a failed connection.
    #[error("`{0}` is not a URL: port 0 is no server's port")]
    PortZero(String),
    #[error("cannot resolve host `{host}`: {why}")]
    Resolve { host: String, why: std::io::Error },
    #[error("host `{0}` has no address")]
    NoAddress(String),
}

/// An `http://` URL resolved to an address, as the engine wants it.
/// Credentials in it are left out of the target, whose URL is shown and
/// stored: [`url_credentials`] reads them.
pub fn parse_target(raw: &str) -> Result<Target, TargetError> {
    if let Some(c) = raw.chars().find(|c| c.is_control() || c.is_whitespace()) {
        return Err(TargetError::Unsendable {
            raw: raw.to_string(),
            c,
        });
    }
    let mut url = parse_url(raw)?;
    // A password never reaches an output or a database; the user name
    // stays, to say whose they were.
    let _ = url.set_password(None);
    match url.scheme() {
        "http" | "https" => {}
        s => {
            return Err(TargetError::Scheme {
                raw: raw.to_string(),
                scheme: s.to_string(),
            })
        }
    }
    let host = url
        .host_str()
        .ok_or_else(|| TargetError::NoHost(raw.to_string()))?;
    let port = url.port_or_known_default().unwrap_or(80);
    if port == 0 {
        return Err(TargetError::PortZero(raw.to_string()));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addr = (bare, port)
        .to_socket_addrs()
        .map_err(|why| TargetError::Resolve {
            host: host.to_string(),
            why,
        })?
        .next()
        .ok_or_else(|| TargetError::NoAddress(host.to_string()))?;
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

fn parse_url(raw: &str) -> Result<url::Url, TargetError> {
    url::Url::parse(raw).map_err(|why| TargetError::NotAUrl {
        raw: raw.to_string(),
        why,
    })
}

/// The `Authorization` value for credentials written in a URL
/// (`http://user:pass@host/`), as curl and browsers send them: Basic, the
/// percent-decoded `user:pass` in base64 (RFC 7617). `None` without a
/// user name.
pub fn url_credentials(raw: &str) -> Result<Option<String>, TargetError> {
    use base64::Engine as _;
    let url = parse_url(raw)?;
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

/// URLs that carry different credentials: every request carries the same
/// header fields, so one set serves them all.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "the URLs carry different credentials, and every request carries the same header fields: \
     give one Authorization with -H"
)]
pub struct MixedCredentials;

/// The `Authorization` value of the URLs' credentials, if any.
pub fn one_authorization(
    credentials: impl IntoIterator<Item = Option<String>>,
) -> Result<Option<String>, MixedCredentials> {
    let mut authorization: Option<String> = None;
    for c in credentials.into_iter().flatten() {
        match &authorization {
            Some(a) if *a != c => return Err(MixedCredentials),
            _ => authorization = Some(c),
        }
    }
    Ok(authorization)
}

/// Sends `authorization`, unless an Authorization given as a header, the
/// user's word over the URL's, is already there.
pub fn add_authorization(spec: &mut LoadSpec, authorization: Option<String>) {
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

/// What is wrong with one line of a URL list.
#[derive(Debug, Error)]
pub enum UrlLineError {
    /// Joined to the base, a path's tabs and line breaks would be dropped
    /// and its NUL escaped: what is listed would not be what is sent. (A
    /// space is sent as %20, as a browser sends it.)
    #[error("{line:?} holds {c:?}, which a request line cannot carry")]
    Unsendable { line: String, c: char },
    #[error("`{0}` is a path, so a base URL must be given as well")]
    NoBase(String),
    #[error("bad path `{line}`: {why}")]
    BadPath { line: String, why: url::ParseError },
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// Why a URL list was refused: a line (from 1) and what is wrong with it,
/// or no URL in it at all.
#[derive(Debug, Error)]
pub enum UrlListError {
    #[error("{line}: {why}")]
    Line { line: usize, why: UrlLineError },
    #[error("lists no URL")]
    Empty,
    #[error(transparent)]
    Base(TargetError),
}

/// The URLs of a list, one a line (`#` comments, blank lines skipped),
/// each with the `Authorization` value of the credentials written in it;
/// paths are joined to `base`.
pub fn url_list(
    text: &str,
    base: Option<&str>,
) -> Result<Vec<(Target, Option<String>)>, UrlListError> {
    // A byte-order mark (editors on Windows write one) was taken as part
    // of the first path, requested as /%EF%BB%BF/...
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let base = base
        .map(parse_url)
        .transpose()
        .map_err(UrlListError::Base)?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |why| UrlListError::Line { line: n + 1, why };
        out.push(list_line(line, base.as_ref()).map_err(at)?);
    }
    if out.is_empty() {
        return Err(UrlListError::Empty);
    }
    Ok(out)
}

fn list_line(
    line: &str,
    base: Option<&url::Url>,
) -> Result<(Target, Option<String>), UrlLineError> {
    if let Some(c) = line.chars().find(|c| c.is_control()) {
        return Err(UrlLineError::Unsendable {
            line: line.to_string(),
            c,
        });
    }
    let full = if line.starts_with("http://") || line.starts_with("https://") {
        line.to_string()
    } else {
        let b = base.ok_or_else(|| UrlLineError::NoBase(line.to_string()))?;
        b.join(line)
            .map_err(|why| UrlLineError::BadPath {
                line: line.to_string(),
                why,
            })?
            .to_string()
    };
    Ok((parse_target(&full)?, url_credentials(&full)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_join_paths_to_their_base_and_name_the_line_at_fault() {
        let list = "\u{feff}# a comment\n/a\n\nhttp://u:p@127.0.0.1:9/b\n";
        let got = url_list(list, Some("http://127.0.0.1:8080/")).unwrap();
        let urls: Vec<&str> = got.iter().map(|(t, _)| t.url.as_str()).collect();
        assert_eq!(urls, ["http://127.0.0.1:8080/a", "http://u@127.0.0.1:9/b"]);
        assert_eq!(got[1].1.as_deref(), Some("Basic dTpw"));
        assert_eq!(
            url_list("/a\n/b\rc\n", Some("http://127.0.0.1/"))
                .unwrap_err()
                .to_string(),
            "2: \"/b\\rc\" holds '\\r', which a request line cannot carry"
        );
        assert_eq!(
            url_list("/a\n", None).unwrap_err().to_string(),
            "1: `/a` is a path, so a base URL must be given as well"
        );
        assert!(matches!(
            url_list("# none\n", None),
            Err(UrlListError::Empty)
        ));
    }

    #[test]
    fn one_set_of_credentials_serves_every_url() {
        let a = Some("Basic YQ==".to_string());
        assert_eq!(one_authorization([a.clone(), None, a.clone()]), Ok(a));
        assert_eq!(
            one_authorization([Some("x".into()), Some("y".into())]),
            Err(MixedCredentials)
        );
    }
}
