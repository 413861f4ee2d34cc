//! Recipe profiles: `defaults` is a recipe as written (the packaged
//! defaults plus the settings every recipe equalises, such as no access
//! log), `tuned` adds what the server's own documentation recommends for
//! serving static files. A comparison of defaults says how servers do as
//! installed; one of tuned profiles answers "but did you tune it?".
//! A recipe's `[tls]` table changes its config the same way, to serve
//! HTTPS/1.1 instead of cleartext.

use anyhow::bail;

use crate::probe::Insert;
use crate::recipe::{Recipe, TLS_CERT, TLS_KEY};
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
        self.with_inserts(
            &settings.insert,
            &format!("profile {}", profile.name()),
            &format!("{} profile", profile.name()),
            &settings.notes,
        )
    }

    /// The recipe with `inserts` put in its config templates and `notes`
    /// added to its own after `label`; `what` names the table in errors.
    fn with_inserts(
        &self,
        inserts: &[Insert],
        what: &str,
        label: &str,
        notes: &str,
    ) -> anyhow::Result<Recipe> {
        let mut r = self.clone();
        for i in inserts {
            if !r
                .configs
                .iter_mut()
                .any(|c| i.put(&mut c.template, &i.text))
            {
                bail!(
                    "recipe {}: {what}: no config has {:?} to insert after",
                    self.name,
                    i.after
                );
            }
        }
        if !notes.is_empty() {
            r.notes = format!("{} {label}: {notes}", r.notes).trim().to_string();
        }
        Ok(r)
    }

    /// The recipe serving TLS on the address and port it would serve
    /// cleartext on: its `[tls]` inserts in its config templates and its
    /// notes. `Ok(None)` when it has no `[tls]` table: throng cannot run
    /// the server over TLS. The templates keep their placeholders, so this
    /// composes with [`Recipe::profiled`] and [`Recipe::for_workload`];
    /// a recipe already over TLS is returned as it is.
    pub fn over_tls(&self) -> anyhow::Result<Option<Recipe>> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        if tls.insert.is_empty() {
            bail!("recipe {}: [tls] has no insert", self.name);
        }
        if tls.insert.iter().all(|i| self.has_inserted(i)) {
            return Ok(Some(self.clone()));
        }
        let r = self.with_inserts(&tls.insert, "[tls]", "over TLS", &tls.notes)?;
        for file in [TLS_CERT, TLS_KEY] {
            if !r.configs.iter().any(|c| c.template.contains(file)) {
                bail!(
                    "recipe {}: [tls]: no config reads {file}, where the lab writes it",
                    self.name
                );
            }
        }
        Ok(Some(r))
    }

    /// Whether `i`'s text is already right after its anchor in a template.
    fn has_inserted(&self, i: &Insert) -> bool {
        let done = format!("{}{}", i.after, i.text);
        self.configs.iter().any(|c| c.template.contains(&done))
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

    /// Every rendered config of `r`, as one text.
    fn all_configs(r: &Recipe) -> String {
        r.render_configs(&test_context(true))
            .unwrap()
            .into_iter()
            .map(|(_, c)| c)
            .collect::<Vec<_>>()
            .join("")
    }

    #[test]
    fn caches_have_no_tls_and_every_other_builtin_serves_it_in_any_order() {
        let probe = ProbeValues {
            htpasswd: Path::new("/run/x/htpasswd"),
            throttle_kib_s: 64,
        };
        for r in Recipes::builtin().all() {
            if ["varnish", "squid", "trafficserver"].contains(&r.name.as_str()) {
                assert!(
                    r.tls.is_none() && r.over_tls().unwrap().is_none(),
                    "{}",
                    r.name
                );
                continue;
            }
            let table = r.tls.as_ref().unwrap_or_else(|| panic!("{}", r.name));
            assert!(!table.notes.is_empty(), "{}", r.name);
            let tls = r.over_tls().unwrap().unwrap();
            assert!(tls.notes.contains(" over TLS: "), "{}", r.name);
            // The certificate and key where the lab writes them.
            let conf = all_configs(&tls);
            for file in ["/tmp/run/nginx/tls-cert.pem", "/tmp/run/nginx/tls-key.pem"] {
                assert!(conf.contains(file), "{} lacks {file}:\n{conf}", r.name);
            }
            assert!(!all_configs(r).contains("tls-cert.pem"), "{}", r.name);
            // Applied once: a recipe already over TLS stays as it is.
            assert_eq!(tls.over_tls().unwrap().unwrap(), tls, "{}", r.name);
            for profile in Profile::ALL {
                let a = r.profiled(profile).unwrap().over_tls().unwrap().unwrap();
                let b = tls.profiled(profile).unwrap();
                assert_eq!(all_configs(&a), all_configs(&b), "{} {profile:?}", r.name);
                for kind in WorkloadKind::ALL {
                    if r.workload(kind).is_err() {
                        continue;
                    }
                    let c = a.for_workload(kind).unwrap();
                    let d = r
                        .for_workload(kind)
                        .unwrap()
                        .over_tls()
                        .unwrap()
                        .unwrap()
                        .profiled(profile)
                        .unwrap();
                    let (rc, rd) = (first_config(&c), first_config(&d));
                    assert_eq!(rc, rd, "{} {profile:?} {kind:?}", r.name);
                    // The probes still find their anchors in a TLS config.
                    r.probe.apply(&rc, &probe).unwrap();
                }
            }
        }
    }

    #[test]
    fn tls_configs_say_what_their_notes_say() {
        let recipes = Recipes::builtin();
        let conf =
            |name: &str| all_configs(&recipes.get(name).unwrap().over_tls().unwrap().unwrap());
        let wants: &[(&str, &[&str])] = &[
            (
                "nginx",
                &[
                    "        listen 127.0.0.1:8081 ssl;\n",
                    "        ssl_certificate /tmp/run/nginx/tls-cert.pem;\n",
                    "        ssl_certificate_key /tmp/run/nginx/tls-key.pem;\n",
                    "        ssl_protocols TLSv1.2 TLSv1.3;\n",
                    "        ssl_prefer_server_ciphers off;\n",
                ],
            ),
            (
                "lighttpd",
                &[
                    "server.modules += ( \"mod_openssl\" )\n",
                    "ssl.engine = \"enable\"\n",
                    "ssl.pemfile = \"/tmp/run/nginx/tls-cert.pem\"\n",
                    "ssl.privkey = \"/tmp/run/nginx/tls-key.pem\"\n",
                    "\"MinProtocol\" => \"TLSv1.2\", \"MaxProtocol\" => \"TLSv1.3\", \"Options\" => \"-ServerPreference\"",
                    "server.feature-flags = ( \"server.h2proto\" => \"disable\" )\n",
                ],
            ),
            (
                "h2o",
                &[
                    "  port: 8081\n  ssl:\n    certificate-file: /tmp/run/nginx/tls-cert.pem\n    key-file: /tmp/run/nginx/tls-key.pem\n",
                    "    minimum-version: TLSv1.2\n    maximum-version: TLSv1.3\n",
                    "    cipher-preference: client\n",
                ],
            ),
            (
                "caddy",
                &[
                    "\tservers {\n\t\tprotocols h1\n",
                    "\nhttps://127.0.0.1:8081 {\n\tbind 127.0.0.1\n\ttls /tmp/run/nginx/tls-cert.pem /tmp/run/nginx/tls-key.pem {\n\t\tprotocols tls1.2 tls1.3\n\t}\n",
                    "\tauto_https off\n",
                ],
            ),
        ];
        for (name, lines) in wants {
            let text = conf(name);
            for want in *lines {
                assert!(text.contains(want), "{name} lacks {want:?}:\n{text}");
            }
        }
        for mpm in ["prefork", "worker", "event"] {
            let text = conf(&format!("apache2-{mpm}"));
            for want in [
                "LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\n",
                "LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so\n",
                "Listen 127.0.0.1:8081 https\n",
                "Protocols http/1.1\n",
                "SSLEngine on\n",
                "SSLCertificateFile /tmp/run/nginx/tls-cert.pem\n",
                "SSLCertificateKeyFile /tmp/run/nginx/tls-key.pem\n",
                "SSLProtocol -all +TLSv1.2 +TLSv1.3\n",
                "SSLHonorCipherOrder off\n",
                "SSLSessionCache shmcb:/tmp/run/nginx/ssl_scache(512000)\n",
            ] {
                assert!(text.contains(want), "apache2-{mpm} lacks {want:?}");
            }
        }
        // h2o cannot be kept from offering h2, and says so.
        let h2o = recipes.get("h2o").unwrap().tls.as_ref().unwrap();
        assert!(h2o.notes.contains("offers h2 over ALPN"));
    }

    #[test]
    fn a_tls_table_that_cannot_apply_names_the_recipe_and_what_is_missing() {
        let base = "name = \"mine\"\nbinary = \"/x\"\nstart = [\"/x\"]\n[[configs]]\nfile = \"a.conf\"\ntemplate = \"listen 80\\n\"\n";
        let mine = Recipe::parse(base).unwrap();
        assert_eq!(mine.over_tls().unwrap(), None);
        let tls = format!(
            "{base}[tls]\nnotes = \"x\"\n[[tls.insert]]\nafter = \"listen 80\\n\"\ntext = \"cert {{{{rundir}}}}/tls-cert.pem\\nkey {{{{rundir}}}}/tls-key.pem\\n\"\n"
        );
        let r = Recipe::parse(&tls).unwrap().over_tls().unwrap().unwrap();
        assert_eq!(
            r.configs[0].template,
            "listen 80\ncert {{rundir}}/tls-cert.pem\nkey {{rundir}}/tls-key.pem\n"
        );
        assert_eq!(r.notes, "over TLS: x");
        // A recipe whose [tls] cannot apply fails when it loads.
        let e =
            Recipe::parse(&tls.replace("after = \"listen 80", "after = \"listen 81")).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "recipe mine: [tls]: no config has \"listen 81\\n\" to insert after"
        );
        let e = Recipe::parse(&tls.replace("tls-key.pem", "key.pem")).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "recipe mine: [tls]: no config reads {{rundir}}/tls-key.pem, where the lab writes it"
        );
        let e = Recipe::parse(&format!("{base}[tls]\nnotes = \"x\"\n")).unwrap_err();
        assert_eq!(format!("{e:#}"), "recipe mine: [tls] has no insert");
    }
}
