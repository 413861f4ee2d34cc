//! The recipe profile a server ran with. The recipes say what each
//! profile changes; the model only names them, so the store, the report
//! and the study compare profiles as values and word them in one place.

use serde::{Deserialize, Serialize};

/// `defaults` is a recipe as written, `tuned` adds what the server's own
/// documentation recommends for static files. The serde names are the
/// stored ones, so earlier databases and JSON read back as they were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// What databases written before profiles hold.
    #[default]
    Defaults,
    Tuned,
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::Defaults, Profile::Tuned];

    /// The stored name, as in studies, results and the store's column.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Defaults => "defaults",
            Profile::Tuned => "tuned",
        }
    }

    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A profile equals its stored name, so code that reads results as text
/// (a query on the JSON, a check of an old database) keeps reading them.
impl PartialEq<&str> for Profile {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_keep_their_stored_names() {
        for p in Profile::ALL {
            assert_eq!(Profile::parse(p.name()), Some(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Profile>(&json).unwrap(), p);
        }
        assert_eq!(Profile::parse("fast"), None);
        assert_eq!(Profile::default(), Profile::Defaults);
    }
}
