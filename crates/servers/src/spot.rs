//! Errors at a place in a TOML file (a recipe, a study), in one line:
//! `FILE:LINE:COLUMN: message`, as compilers write them, so that editors
//! jump to the spot. The toml crate's own report draws the line and a
//! caret over several lines, which a one-line refusal cannot hold.

use std::path::Path;

use serde::de::DeserializeOwned;

/// An error and where in the document it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Spot {
    /// 1-based line and column (in characters); `None` where the parser
    /// gave no place.
    pub at: Option<(usize, usize)>,
    pub message: String,
}

impl Spot {
    /// The place of byte `offset` of `text`.
    pub fn at_offset(text: &str, offset: usize, message: impl Into<String>) -> Spot {
        let before = text.get(..offset).unwrap_or(text);
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Spot {
            at: Some((
                before.matches('\n').count() + 1,
                before[line_start..].chars().count() + 1,
            )),
            message: message.into(),
        }
    }

    /// Without a file: the text came from elsewhere (a built-in, a
    /// coordinator's message).
    fn describe(&self) -> String {
        match self.at {
            Some((line, column)) => format!("line {line}, column {column}: {}", self.message),
            None => self.message.clone(),
        }
    }

    /// `FILE:LINE:COLUMN: message`.
    pub fn in_file(&self, path: &Path) -> String {
        match self.at {
            Some((line, column)) => {
                format!("{}:{line}:{column}: {}", path.display(), self.message)
            }
            None => format!("{}: {}", path.display(), self.message),
        }
    }
}

/// `text` read as TOML into `T`; an error is a [`Spot`] with the parser's
/// message on one line.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Spot> {
    toml::from_str(text).map_err(|e| {
        // The parser puts what it expected on lines of their own.
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        match e.span() {
            Some(span) => Spot::at_offset(text, span.start, message),
            None => Spot { at: None, message },
        }
    })
}

/// An error of reading `path`: a [`Spot`] as `FILE:LINE:COLUMN: message`,
/// anything else after `what` and the path ("recipe FILE: ...").
pub fn in_file(e: anyhow::Error, path: &Path, what: &str) -> anyhow::Error {
    match e.downcast_ref::<Spot>() {
        Some(spot) => anyhow::anyhow!("{}", spot.in_file(path)),
        None => e.context(format!("{what} {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        name: String,
        list: Option<Vec<u32>>,
    }

    #[test]
    fn a_syntax_error_is_one_line_with_its_line_and_column() {
        let e = from_str::<Doc>("name = \"x\"\nlist = [1, 2\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3, column 1: invalid array, expected `]`"
        );
        assert_eq!(
            e.in_file(Path::new("r/mine.toml")),
            "r/mine.toml:3:1: invalid array, expected `]`"
        );
        let e = from_str::<Doc>("name = \"x\"\n  typo = 1\n").unwrap_err();
        assert_eq!(
            e.in_file(Path::new("s.toml")),
            "s.toml:2:3: unknown field `typo`, expected `name` or `list`"
        );
    }

    #[test]
    fn columns_count_characters_and_other_errors_keep_their_context() {
        let spot = Spot::at_offset("a = \"é\"\nb = ü", 13, "here");
        assert_eq!(spot.at, Some((2, 5)));
        assert_eq!(Spot::at_offset("é = ü", 5, "here").at, Some((1, 5)));
        let e = in_file(
            anyhow::Error::new(Spot {
                at: None,
                message: "m".into(),
            }),
            Path::new("f.toml"),
            "recipe",
        );
        assert_eq!(e.to_string(), "f.toml: m");
        let e = in_file(anyhow::anyhow!("bad name"), Path::new("f.toml"), "recipe");
        assert_eq!(format!("{e:#}"), "recipe f.toml: bad name");
    }
}
