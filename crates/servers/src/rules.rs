//! The recipe sections other modules act on, as plain data checked when a
//! recipe loads: its parity rules (how its config sets each setting that
//! changes results, read by the parity module) and its profiles (applied
//! by the profile module). Kept apart so that the recipe can hold them
//! without depending on what is done with them.

use std::collections::BTreeMap;

use anyhow::bail;
use serde::{Deserialize, Serialize};
use throng_model::Setting;

use crate::probe::Insert;

/// The settings a server's config decides, which every built-in recipe
/// declares; the rest of [`Setting::ALL`] is the lab's.
pub const CONFIG_SETTINGS: [Setting; 11] = [
    Setting::AccessLog,
    Setting::Sendfile,
    Setting::OpenFileCache,
    Setting::KeepAliveTimeout,
    Setting::KeepAliveRequests,
    Setting::Gzip,
    Setting::Etag,
    Setting::LastModified,
    Setting::TcpNodelay,
    Setting::TcpNopush,
    Setting::ListenBacklog,
];

/// How a recipe's rendered config sets one setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParityRule {
    /// The text a config line starts with (after its indentation) when it
    /// sets this; the value is the rest of the line up to `;`. Also found
    /// after a space inside a line, as a directive's parameter or a
    /// command's argument (`backlog=`, `timeout_idle=`), whose value then
    /// ends at the next space. `None` when the server has no such setting.
    #[serde(default)]
    pub after: Option<String>,
    /// The value whenever the line is there, for directives whose presence
    /// is the setting (a module's option that turns it on).
    #[serde(default)]
    pub value: Option<String>,
    /// What the server does when no line sets it.
    pub default: String,
    /// One line: where that default is documented.
    pub doc: String,
    /// What the server does is the number it is given plus this: Apache's
    /// `MaxKeepAliveRequests` and lighttpd's
    /// `server.max-keep-alive-requests` count the requests after a
    /// connection's first, so 1024 serves 1,025 where nginx's
    /// `keepalive_requests 1024` serves 1,024. The parity table shows what
    /// is done, so equal numbers mean equal behaviour.
    #[serde(default)]
    pub plus: i64,
    /// One line: why the server's number is off by `plus` (required with
    /// it).
    #[serde(default)]
    pub plus_doc: Option<String>,
}

impl ParityRule {
    /// `value` as the server acts on it: a number moved by `plus`; any
    /// other value ("unlimited", "on") as it is.
    pub fn acted(&self, value: &str) -> String {
        match value.parse::<i64>() {
            Ok(n) if self.plus != 0 => (n + self.plus).to_string(),
            _ => value.to_string(),
        }
    }
}

/// Checked when a recipe loads: every table names a setting its config
/// decides.
pub fn check(rules: &BTreeMap<String, ParityRule>) -> anyhow::Result<()> {
    for (name, rule) in rules {
        match Setting::parse(name) {
            Some(s) if CONFIG_SETTINGS.contains(&s) => {}
            Some(_) => bail!("[parity.{name}]: the lab sets {name}, not the config"),
            None => bail!("[parity.{name}]: no such setting"),
        }
        if rule.plus != 0 && rule.plus_doc.as_deref().is_none_or(str::is_empty) {
            bail!(
                "[parity.{name}]: plus = {} needs a plus_doc saying why",
                rule.plus
            );
        }
    }
    Ok(())
}

/// One profile's changes to a recipe.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSettings {
    /// What it changes and where the server documents it; stored with the
    /// results like the recipe's notes.
    pub notes: String,
    /// Insertions into the config templates, each into the first template
    /// that has its anchor; empty when the documentation recommends
    /// nothing beyond the defaults.
    #[serde(default)]
    pub insert: Vec<Insert>,
}

/// A recipe's `[profiles]` section. `defaults` has no table: it is the
/// recipe itself.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profiles {
    #[serde(default)]
    pub tuned: Option<ProfileSettings>,
}
