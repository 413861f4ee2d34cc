//! A recipe's `[probe]` section: how the feature probes configure this
//! server (basic auth on `/protected/`, a bandwidth limit on `/throttle/`,
//! compression of `/gz.txt`) and how its rendered config says whether it
//! uses sendfile. The settings are the server's own syntax, so they live
//! with the recipe that knows it, and are checked when the recipe loads.

use std::path::Path;

use anyhow::bail;
use serde::{Deserialize, Serialize};
use throng_model::FeatureStatus;

/// Text inserted right after the first occurrence of `after` in a config
/// (the probes' go into the first config file, a profile's into the first
/// that has the anchor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Insert {
    pub after: String,
    pub text: String,
}

impl Insert {
    /// Puts `text` (this insert's text, filled in or not) right after the
    /// first `after` of `config`; `false` when `config` has no `after`.
    pub fn put(&self, config: &mut String, text: &str) -> bool {
        match config.find(&self.after) {
            Some(at) => {
                config.insert_str(at + self.after.len(), text);
                true
            }
            None => false,
        }
    }
}

/// One answer of the sendfile rule: the status and what was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub status: FeatureStatus,
    pub evidence: String,
}

/// How the rendered config tells sendfile: a whole line (white space
/// folded, case ignored) or a text anywhere, and the answer either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendfileRule {
    #[serde(default)]
    pub line: Option<String>,
    #[serde(default)]
    pub contains: Option<String>,
    pub present: Answer,
    pub absent: Answer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSettings {
    /// Insertions into the first config file, in order. Texts may use
    /// `{{htpasswd}}` (the password file) and `{{throttle_kib_s}}`.
    #[serde(default)]
    pub insert: Vec<Insert>,
    /// Appended to the first config file; same placeholders.
    #[serde(default)]
    pub append: String,
    /// `false` for servers with no per-connection bandwidth limit at all.
    #[serde(default = "yes")]
    pub bandwidth_limit: bool,
    #[serde(default)]
    pub sendfile: Option<SendfileRule>,
}

fn yes() -> bool {
    true
}

/// No settings: the probes can configure nothing, and nothing is known to
/// be missing (a server is assumed to have a bandwidth limit until its
/// recipe says it has none).
impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings {
            insert: Vec::new(),
            append: String::new(),
            bandwidth_limit: true,
            sendfile: None,
        }
    }
}

/// The values a probe text may name.
pub struct ProbeValues<'a> {
    pub htpasswd: &'a Path,
    pub throttle_kib_s: u64,
}

impl ProbeSettings {
    /// Whether the probes can configure auth, throttling and gzip here.
    pub fn configures(&self) -> bool {
        !self.insert.is_empty() || !self.append.is_empty()
    }

    /// Checked when the recipe loads: placeholders known, sendfile rule
    /// with exactly one way to look.
    pub fn check(&self) -> anyhow::Result<()> {
        let probe = ProbeValues {
            htpasswd: Path::new("/x"),
            throttle_kib_s: 1,
        };
        for text in self.insert.iter().map(|i| &i.text).chain([&self.append]) {
            fill(text, &probe)?;
        }
        if let Some(s) = &self.sendfile {
            if s.line.is_some() == s.contains.is_some() {
                bail!("[probe.sendfile] needs exactly one of `line` and `contains`");
            }
        }
        Ok(())
    }

    /// `config` with the probe settings added.
    pub fn apply(&self, config: &str, v: &ProbeValues) -> anyhow::Result<String> {
        let mut c = config.to_string();
        for i in &self.insert {
            if !i.put(&mut c, &fill(&i.text, v)?) {
                bail!(
                    "the config has no {:?} to add probe settings after",
                    i.after
                );
            }
        }
        c.push_str(&fill(&self.append, v)?);
        Ok(c)
    }

    /// What the rendered config says of sendfile; `None` without a rule.
    pub fn sendfile(&self, config: &str) -> Option<&Answer> {
        let rule = self.sendfile.as_ref()?;
        let fold = |s: &str| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase()
        };
        let present = match (&rule.line, &rule.contains) {
            (Some(line), _) => {
                let want = fold(line);
                config.lines().any(|l| fold(l) == want)
            }
            (None, Some(text)) => config.contains(text.as_str()),
            (None, None) => false,
        };
        Some(if present { &rule.present } else { &rule.absent })
    }
}

fn fill(text: &str, v: &ProbeValues) -> anyhow::Result<String> {
    crate::template::substitute(text, |k| match k {
        "htpasswd" => Some(v.htpasswd.display().to_string()),
        "throttle_kib_s" => Some(v.throttle_kib_s.to_string()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> ProbeSettings {
        toml::from_str(
            r#"
append = "auth {{htpasswd}}\n"
[[insert]]
after = "modules = ( "
text = "\"mod_auth\", "
[[insert]]
after = "index;\n"
text = "limit {{throttle_kib_s}}k;\n"
[sendfile]
line = "sendfile on;"
present = { status = "yes", evidence = "config: sendfile on" }
absent = { status = "no", evidence = "config: no `sendfile on`" }
"#,
        )
        .unwrap()
    }

    #[test]
    fn settings_are_inserted_and_appended_with_their_values() {
        let s = settings();
        s.check().unwrap();
        let v = ProbeValues {
            htpasswd: Path::new("/run/x/htpasswd"),
            throttle_kib_s: 128,
        };
        assert_eq!(
            s.apply("modules = ( \"a\" )\nindex;\n", &v).unwrap(),
            "modules = ( \"mod_auth\", \"a\" )\nindex;\nlimit 128k;\nauth /run/x/htpasswd\n"
        );
        assert!(s.apply("no anchor here\n", &v).is_err());
        assert!(s.configures());
        assert!(!ProbeSettings::default().configures());
        // Absent from a recipe and built in code, the settings agree.
        let empty: ProbeSettings = toml::from_str("").unwrap();
        assert_eq!(empty, ProbeSettings::default());
        assert!(empty.bandwidth_limit);
    }

    #[test]
    fn sendfile_is_read_from_the_rendered_config() {
        let s = settings();
        assert_eq!(
            s.sendfile("  SendFile   ON;\n").unwrap().status,
            FeatureStatus::Yes
        );
        assert_eq!(
            s.sendfile("sendfile off;\n").unwrap().status,
            FeatureStatus::No
        );
        assert!(ProbeSettings::default().sendfile("x").is_none());
    }

    #[test]
    fn bad_settings_fail_when_the_recipe_loads() {
        let mut s = settings();
        s.append = "{{nope}}".into();
        assert!(s.check().is_err());
        let mut s = settings();
        s.sendfile.as_mut().unwrap().contains = Some("x".into());
        assert!(s.check().is_err());
    }
}
