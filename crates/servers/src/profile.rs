//! Recipe profiles: `defaults` is a recipe as written (the packaged
//! defaults plus the settings every recipe equalises, such as no access
//! log), `tuned` adds what the server's own documentation recommends for
//! serving static files. A comparison of defaults says how servers do as
//! installed; one of tuned profiles answers "but did you tune it?".

use anyhow::bail;

use crate::recipe::Recipe;
pub use crate::rules::{Profile, ProfileSettings, Profiles};

impl Recipe {
    /// The recipe with `profile`'s changes in its config templates and its
    /// notes; the templates keep their placeholders, so this composes with
    /// [`Recipe::for_workload`] in either order.
    pub fn profiled(&self, profile: Profile) -> anyhow::Result<Recipe> {
        let settings = match profile {
            Profile::Defaults => return Ok(self.clone()),
            Profile::Tuned => self.profiles.tuned.as_ref(),
        };
        let Some(settings) = settings else {
            bail!(
                "recipe {}: no [profiles.{}] section",
                self.name,
                profile.name()
            );
        };
        let mut r = self.clone();
        for i in &settings.insert {
            if !r
                .configs
                .iter_mut()
                .any(|c| i.put(&mut c.template, &i.text))
            {
                bail!(
                    "recipe {}: profile {}: no config has {:?} to insert after",
                    self.name,
                    profile.name(),
                    i.after
                );
            }
        }
        if !settings.notes.is_empty() {
            r.notes = format!("{} {} profile: {}", r.notes, profile.name(), settings.notes)
                .trim()
                .to_string();
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use throng_model::WorkloadKind;

    use super::*;
    use crate::probe::ProbeValues;
    use crate::recipe::{test_context, Recipes};

    fn first_config(r: &Recipe) -> String {
        r.render_configs(&test_context(true)).unwrap()[0].1.clone()
    }

    #[test]
    fn profiles_keep_their_names() {
        for p in Profile::ALL {
            assert_eq!(Profile::parse(p.name()), Some(p));
        }
        assert_eq!(Profile::parse("fast"), None);
    }

    #[test]
    fn every_builtin_tuned_profile_applies_for_every_workload() {
        let probe = ProbeValues {
            htpasswd: Path::new("/run/x/htpasswd"),
            throttle_kib_s: 64,
        };
        for r in Recipes::builtin().all() {
            let settings = r.profiles.tuned.as_ref().unwrap();
            assert!(!settings.notes.is_empty(), "{}", r.name);
            let tuned = r.profiled(Profile::Tuned).unwrap();
            assert!(tuned.notes.contains("tuned profile: "), "{}", r.name);
            assert_eq!(r.profiled(Profile::Defaults).unwrap(), *r);
            for kind in WorkloadKind::ALL {
                if r.workload(kind).is_err() {
                    continue;
                }
                // Either order gives the same configs.
                let a = tuned.for_workload(kind).unwrap();
                let b = r
                    .for_workload(kind)
                    .unwrap()
                    .profiled(Profile::Tuned)
                    .unwrap();
                let (ra, rb) = (first_config(&a), first_config(&b));
                assert_eq!(ra, rb, "{} {kind:?}", r.name);
                // The probes still find their anchors in a tuned config.
                r.probe.apply(&ra, &probe).unwrap();
            }
        }
    }

    #[test]
    fn tuned_profiles_change_what_their_notes_say() {
        let recipes = Recipes::builtin();
        let conf = |name: &str, p: Profile| {
            let r = recipes.get(name).unwrap().profiled(p).unwrap();
            r.render_configs(&test_context(true))
                .unwrap()
                .into_iter()
                .map(|(_, c)| c)
                .collect::<Vec<_>>()
                .join("")
        };
        let nginx = conf("nginx", Profile::Tuned);
        for want in [
            "    sendfile on;\n",
            "    tcp_nopush on;\n",
            "    open_file_cache max=1000 inactive=60s;\n",
        ] {
            assert!(nginx.contains(want), "nginx tuned lacks {want}");
        }
        let plain = conf("nginx", Profile::Defaults);
        assert!(!plain.contains("open_file_cache") && !plain.contains("sendfile on;"));
        let tuned_lines = [
            ("lighttpd", "server.stat-cache-engine = \"inotify\"\n"),
            ("apache2-event", "EnableSendfile On\n"),
            (
                "apache2-prefork",
                "    Options None\n    Options FollowSymLinks\n",
            ),
            ("varnish", "    set beresp.ttl = 1h;\n"),
            ("squid", "client_db off\n"),
            (
                "trafficserver",
                "CONFIG proxy.config.cache.ram_cache_cutoff INT 33554432\n",
            ),
        ];
        for (name, line) in tuned_lines {
            assert!(conf(name, Profile::Tuned).contains(line), "{name}");
            assert!(!conf(name, Profile::Defaults).contains(line), "{name}");
        }
        // Servers whose documentation recommends nothing beyond their
        // defaults keep them, and say so.
        for name in ["h2o", "caddy"] {
            assert_eq!(conf(name, Profile::Tuned), conf(name, Profile::Defaults));
            let r = recipes.get(name).unwrap();
            assert!(r
                .profiles
                .tuned
                .as_ref()
                .unwrap()
                .notes
                .starts_with("nothing to change"));
        }
    }

    #[test]
    fn a_missing_anchor_or_section_names_the_recipe_profile_and_anchor() {
        let base = "name = \"mine\"\nbinary = \"/x\"\nstart = [\"/x\"]\n[[configs]]\nfile = \"a.conf\"\ntemplate = \"one\\n\"\n[[configs]]\nfile = \"b.conf\"\ntemplate = \"two\\n\"\n";
        let mine = Recipe::parse(base).unwrap();
        let e = mine.profiled(Profile::Tuned).unwrap_err();
        assert_eq!(format!("{e:#}"), "recipe mine: no [profiles.tuned] section");
        // An insert goes into the first template that has its anchor.
        let tuned = format!(
            "{base}[profiles.tuned]\nnotes = \"x\"\n[[profiles.tuned.insert]]\nafter = \"two\\n\"\ntext = \"three\\n\"\n"
        );
        let r = Recipe::parse(&tuned)
            .unwrap()
            .profiled(Profile::Tuned)
            .unwrap();
        assert_eq!(r.configs[0].template, "one\n");
        assert_eq!(r.configs[1].template, "two\nthree\n");
        // A recipe whose tuned profile cannot apply fails when it loads.
        let e = Recipe::parse(&tuned.replace("after = \"two", "after = \"four")).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "recipe mine: profile tuned: no config has \"four\\n\" to insert after"
        );
        assert!(Recipe::parse(&format!("{base}[profiles.defaults]\nnotes = \"x\"\n")).is_err());
    }
}
