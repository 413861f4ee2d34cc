//! Names that become paths: a server's name in a study, a recipe's name,
//! a config file a recipe renders. Each is checked once, when the study or
//! recipe is read, so nothing a study says can point outside the run
//! directory (`../../etc`, `/root`) or into a command line.

/// Longest accepted name.
pub const MAX_NAME: usize = 64;

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{what} {name:?} is empty")]
    Empty { what: &'static str, name: String },
    #[error("{what} {name:?} is longer than {MAX_NAME} characters")]
    TooLong { what: &'static str, name: String },
    #[error(
        "{what} {name:?} must start with a lowercase letter or digit and hold only \
         lowercase letters, digits, '.', '_' and '-'"
    )]
    Chars { what: &'static str, name: String },
}

/// A name that becomes a directory or file name: `[a-z0-9][a-z0-9._-]*`,
/// at most [`MAX_NAME`] characters. `what` says what is named, for the
/// message ("server name", "config file").
pub fn check(what: &'static str, name: &str) -> Result<(), NameError> {
    let err = |f: fn(&'static str, String) -> NameError| Err(f(what, name.to_string()));
    if name.is_empty() {
        return err(|what, name| NameError::Empty { what, name });
    }
    if name.len() > MAX_NAME {
        return err(|what, name| NameError::TooLong { what, name });
    }
    let first_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let rest_ok = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if !(first_ok && rest_ok) {
        return err(|what, name| NameError::Chars { what, name });
    }
    Ok(())
}

/// A file name a recipe renders into a server's directory: like
/// [`check`], but upper case is allowed (`Caddyfile`).
pub fn check_file(name: &str) -> Result<(), NameError> {
    check("config file", &name.to_ascii_lowercase()).map_err(|e| match e {
        NameError::Empty { what, .. } => NameError::Empty {
            what,
            name: name.to_string(),
        },
        NameError::TooLong { what, .. } => NameError::TooLong {
            what,
            name: name.to_string(),
        },
        NameError::Chars { what, .. } => NameError::Chars {
            what,
            name: name.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_run_directory_are_refused() {
        for ok in ["nginx", "apache2-event", "h2o", "my_server.2", "0day"] {
            assert_eq!(check("server name", ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "..", "../../x", "/abs", "a/b", ".hidden", "-flag", "Nginx", "a b", "a\nb", "ünï",
            "x;rm",
        ] {
            assert!(check("server name", bad).is_err(), "{bad:?} accepted");
        }
        assert!(check("server name", &"a".repeat(MAX_NAME)).is_ok());
        assert_eq!(check_file("Caddyfile"), Ok(()));
        assert!(check_file("../Caddyfile").is_err());
        assert_eq!(
            check("server name", &"a".repeat(MAX_NAME + 1)),
            Err(NameError::TooLong {
                what: "server name",
                name: "a".repeat(MAX_NAME + 1)
            })
        );
        assert_eq!(
            check("server name", "../../x").unwrap_err().to_string(),
            "server name \"../../x\" must start with a lowercase letter or digit and hold only \
             lowercase letters, digits, '.', '_' and '-'"
        );
    }
}
