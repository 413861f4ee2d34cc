//! Where a part of a study runs: this machine, or a host reached over ssh.
//!
//! A host's name reaches a command line (ssh's destination, a transport
//! template), so it is checked here, once, before anything runs: letters,
//! digits, dots and dashes, never a leading dash that ssh would read as an
//! option, or a bracketed IPv6 address.

use std::fmt;

/// This machine or a remote host.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// An agent started on this machine, as a child process.
    Local,
    Ssh {
        user: Option<String>,
        host: String,
        port: Option<u16>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    #[error("{0:?} is not a host: write ssh://[user@]host[:port] or local")]
    Form(String),
    #[error("{0:?} is not a host name or address")]
    Host(String),
    #[error("{0:?} is not a user name")]
    User(String),
    #[error("{0:?} is not a port")]
    Port(String),
    #[error("{0} is listed twice: each host runs one agent, which uses all of its CPUs")]
    Twice(String),
}

impl Place {
    pub fn parse(raw: &str) -> Result<Place, PlaceError> {
        let s = raw.trim();
        if s == "local" || s == "localhost" {
            return Ok(Place::Local);
        }
        let rest = s
            .strip_prefix("ssh://")
            .ok_or_else(|| PlaceError::Form(raw.to_string()))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        if let Some(u) = user {
            let ok = !u.is_empty()
                && u.len() <= 64
                && !u.starts_with('-')
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            if !ok {
                return Err(PlaceError::User(u.to_string()));
            }
        }
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (addr, after) = v6
                .split_once(']')
                .ok_or_else(|| PlaceError::Host(hostport.to_string()))?;
            if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
                return Err(PlaceError::Host(hostport.to_string()));
            }
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| PlaceError::Host(hostport.to_string()))?,
                ),
            };
            (addr.to_string(), port)
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        if !host.contains(':') {
            let ok = !host.is_empty()
                && host.len() <= 253
                && host.starts_with(|c: char| c.is_ascii_alphanumeric())
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if !ok {
                return Err(PlaceError::Host(host));
            }
        }
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(PlaceError::Port(p.to_string())),
            },
        };
        Ok(Place::Ssh {
            user: user.map(str::to_string),
            host,
            port,
        })
    }

    /// Several places, comma-separated. A host named twice is refused
    /// rather than merged: the user asked for two shares of the load from
    /// it, and one agent would silently take both.
    pub fn parse_list(raw: &str) -> Result<Vec<Place>, PlaceError> {
        let mut out: Vec<Place> = Vec::new();
        for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let p = Place::parse(part)?;
            if out.contains(&p) {
                return Err(PlaceError::Twice(p.to_string()));
            }
            out.push(p);
        }
        Ok(out)
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Place::Local)
    }

    /// The host part alone, for templates and network probes.
    pub fn host(&self) -> &str {
        match self {
            Place::Local => "localhost",
            Place::Ssh { host, .. } => host,
        }
    }

    /// ssh's destination argument: `user@host` or `host`.
    pub fn destination(&self) -> String {
        match self {
            Place::Local => "localhost".to_string(),
            Place::Ssh {
                user: Some(u),
                host,
                ..
            } => format!("{u}@{host}"),
            Place::Ssh { host, .. } => host.clone(),
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Local => f.write_str("local"),
            Place::Ssh { user, host, port } => {
                f.write_str("ssh://")?;
                if let Some(u) = user {
                    write!(f, "{u}@")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]")?;
                } else {
                    f.write_str(host)?;
                }
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_and_print_back() {
        for s in [
            "ssh://a",
            "ssh://bench@198.18.0.11",
            "ssh://bench@198.18.0.11:2222",
            "ssh://[fd00::1]:22",
            "ssh://web-1.example.org",
            "local",
        ] {
            assert_eq!(Place::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(
            Place::parse("ssh://u@h:22").unwrap(),
            Place::Ssh {
                user: Some("u".into()),
                host: "h".into(),
                port: Some(22)
            }
        );
    }

    #[test]
    fn names_that_could_become_options_or_commands_are_refused() {
        for s in [
            "ssh://-oProxyCommand=x",
            "ssh://a;b",
            "ssh://a b",
            "ssh://$(id)",
            "ssh://-l@h",
            "ssh://a:0",
            "ssh://a:99999",
            "ssh://",
            "http://a",
            "a",
            "ssh://[zz]",
        ] {
            assert!(Place::parse(s).is_err(), "{s} was accepted");
        }
    }

    #[test]
    fn a_list_keeps_its_order_and_refuses_a_host_named_twice() {
        let l = Place::parse_list("ssh://b, ssh://a,").unwrap();
        assert_eq!(
            l.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["ssh://b", "ssh://a"]
        );
        for twice in [
            "ssh://b, ssh://a,ssh://b",
            "local,localhost",
            "ssh://u@h:22,ssh://u@h:22/",
        ] {
            assert!(
                matches!(Place::parse_list(twice), Err(PlaceError::Twice(_))),
                "{twice} was accepted"
            );
        }
    }
}
