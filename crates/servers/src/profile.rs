//! Recipe profiles: `defaults` is a recipe as written (the packaged
//! defaults plus the settings every recipe equalises, such as no access
//! log), `tuned` adds what the server's own documentation recommends for
//! serving static files. A comparison of defaults says how servers do as
//! installed; one of tuned profiles answers "but did you tune it?".
//! A recipe's `[tls]`, `[h2]`, `[h2c]` and `[h3]` tables change its config
//! the same way, to serve HTTPS/1.1, HTTP/2 over TLS, HTTP/2 over
//! cleartext or HTTP/3 instead of cleartext HTTP/1.1.

use anyhow::bail;

use crate::probe::Insert;
use crate::recipe::{ProtocolTable, Recipe, TLS_CERT, TLS_KEY};
pub use crate::rules::{ProfileSettings, Profiles};
pub use throng_model::Profile;

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
    /// a recipe already over TLS, or over h2 on top of it, is returned as
    /// it is.
    pub fn over_tls(&self) -> anyhow::Result<Option<Recipe>> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        // An [h2] insert may edit a line of [tls]'s (Apache's Protocols,
        // Caddy's protocols), which then no longer reads as inserted.
        if self.is_over(self.h2.as_ref()) {
            return Ok(Some(self.clone()));
        }
        let r = self.with_table(tls, "[tls]", "over TLS")?;
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

    /// The recipe serving HTTP/2 over TLS on the address and port it would
    /// serve cleartext on: [`Recipe::over_tls`], then its `[h2]` inserts
    /// and notes, so ALPN offers h2 before http/1.1 and every TLS setting
    /// is the `[tls]` table's. `Ok(None)` when it has no `[h2]` or no
    /// `[tls]` table: throng cannot run the server over h2. Composes as
    /// [`Recipe::over_tls`] does, and a recipe already over h2 is returned
    /// as it is.
    pub fn over_h2(&self) -> anyhow::Result<Option<Recipe>> {
        let Some(h2) = &self.h2 else {
            return Ok(None);
        };
        if self.tls.is_some() && self.is_over(Some(h2)) {
            return Ok(Some(self.clone()));
        }
        let Some(tls) = self.over_tls()? else {
            return Ok(None);
        };
        tls.with_table(h2, "[h2]", "over HTTP/2").map(Some)
    }

    /// The recipe serving HTTP/2 over cleartext TCP to clients with prior
    /// knowledge (RFC 9113, section 3.3) on the address and port it would
    /// serve HTTP/1.1 on: its `[h2c]` inserts and notes. Whether HTTP/1.1
    /// still works on that port is the server's to say, in the notes.
    /// `Ok(None)` when it has no `[h2c]` table. Composes as
    /// [`Recipe::over_tls`] does, and a recipe already over h2c is returned
    /// as it is. Give it the cleartext recipe: the `[h2c]` and `[tls]`
    /// tables are not made to be combined.
    pub fn over_h2c(&self) -> anyhow::Result<Option<Recipe>> {
        let Some(h2c) = &self.h2c else {
            return Ok(None);
        };
        self.with_table(h2c, "[h2c]", "over h2c").map(Some)
    }

    /// The recipe serving HTTP/3 over QUIC on UDP, on the address and port
    /// it serves HTTP/2 over TCP on, with the same certificate:
    /// [`Recipe::over_h2`], then its `[h3]` inserts and notes, so the TCP
    /// side serves as over h2. `Ok(None)` when it has no `[h3]` table, or
    /// one that says why it cannot ([`Recipe::h3_unsupported`]). Composes
    /// as [`Recipe::over_tls`] does, and a recipe already over h3 is
    /// returned as it is.
    pub fn over_h3(&self) -> anyhow::Result<Option<Recipe>> {
        let Some(h3) = self.h3.as_ref().filter(|t| t.unsupported.is_none()) else {
            return Ok(None);
        };
        if self.is_over(Some(h3)) {
            return Ok(Some(self.clone()));
        }
        let Some(h2) = self.over_h2()? else {
            return Ok(None);
        };
        h2.with_table(h3, "[h3]", "over HTTP/3").map(Some)
    }

    /// Why the recipe's server cannot serve HTTP/3, as its `[h3]` table
    /// says; `None` when it serves it or says nothing.
    pub fn h3_unsupported(&self) -> Option<&str> {
        self.h3.as_ref()?.unsupported.as_deref()
    }

    /// Whether the `[tls]`, `[h2]`, `[h2c]` and `[h3]` tables apply, and
    /// `unsupported` is said only where it means something: found when
    /// the recipe loads rather than when a study's server starts.
    pub(crate) fn check_protocol_tables(&self) -> anyhow::Result<()> {
        for (what, t) in [
            ("[tls]", &self.tls),
            ("[h2]", &self.h2),
            ("[h2c]", &self.h2c),
        ] {
            if t.as_ref().is_some_and(|t| t.unsupported.is_some()) {
                bail!(
                    "recipe {}: {what}: `unsupported` belongs to [h3] alone; leave the table \
                     out to serve no such protocol",
                    self.name
                );
            }
        }
        if let Some(h3) = &self.h3 {
            match (&h3.unsupported, h3.insert.is_empty()) {
                (Some(_), false) => bail!(
                    "recipe {}: [h3] has both inserts and `unsupported`",
                    self.name
                ),
                (Some(why), true) if why.trim().is_empty() => {
                    bail!("recipe {}: [h3] unsupported: say why", self.name)
                }
                (None, _) if self.h2.is_none() => bail!(
                    "recipe {}: [h3] is applied on top of [h2], and there is no [h2]",
                    self.name
                ),
                _ => {}
            }
        }
        self.over_tls()?;
        if self.h2.is_some() && self.tls.is_none() {
            bail!(
                "recipe {}: [h2] is applied on top of [tls], and there is no [tls]",
                self.name
            );
        }
        self.over_h2()?;
        self.over_h2c()?;
        self.over_h3()?;
        Ok(())
    }

    /// The recipe with `table`'s inserts and notes, or as it is when they
    /// are already there; `what` names the table in errors.
    fn with_table(&self, table: &ProtocolTable, what: &str, label: &str) -> anyhow::Result<Recipe> {
        if table.insert.is_empty() {
            bail!("recipe {}: {what} has no insert", self.name);
        }
        if self.is_over(Some(table)) {
            return Ok(self.clone());
        }
        self.with_inserts(&table.insert, what, label, &table.notes)
    }

    /// Whether every insert of `table` is already in the templates.
    fn is_over(&self, table: Option<&ProtocolTable>) -> bool {
        table.is_some_and(|t| !t.insert.is_empty() && t.insert.iter().all(|i| self.has_inserted(i)))
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
            // A child for each of the study's 3000 connections and one spare
            // for each of its 2 cores, all started at once.
            (
                "apache2-prefork",
                "MaxConnectionsPerChild 0\nStartServers 3002\n",
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
        for name in ["h2o", "caddy", "node"] {
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
            if ["varnish", "varnish-apache", "squid", "trafficserver"].contains(&r.name.as_str()) {
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

    /// The built-ins that serve HTTP/2: every one with TLS but Apache's
    /// prefork MPM, which mod_http2 does not run under.
    const HTTP2: [&str; 6] = [
        "nginx",
        "lighttpd",
        "apache2-worker",
        "apache2-event",
        "h2o",
        "caddy",
    ];

    #[test]
    fn every_builtin_h2_and_h2c_table_applies_once_for_every_workload_and_profile() {
        let probe = ProbeValues {
            htpasswd: Path::new("/run/x/htpasswd"),
            throttle_kib_s: 64,
        };
        type Over = fn(&Recipe) -> anyhow::Result<Option<Recipe>>;
        let tables: [(&str, Over, &str); 2] = [
            ("[h2]", Recipe::over_h2, " over HTTP/2: "),
            ("[h2c]", Recipe::over_h2c, " over h2c: "),
        ];
        for r in Recipes::builtin().all() {
            let serves = HTTP2.contains(&r.name.as_str());
            assert_eq!(r.h2.is_some(), serves, "{} [h2]", r.name);
            assert_eq!(r.h2c.is_some(), serves, "{} [h2c]", r.name);
            for (what, over, label) in tables {
                let Some(once) = over(r).unwrap() else {
                    assert!(!serves, "{} {what}", r.name);
                    continue;
                };
                let table = if what == "[h2]" { &r.h2 } else { &r.h2c };
                assert!(!table.as_ref().unwrap().notes.is_empty(), "{}", r.name);
                assert!(once.notes.contains(label), "{} {what}", r.name);
                assert_ne!(all_configs(&once), all_configs(r), "{} {what}", r.name);
                // Applied once: a recipe already over the protocol stays
                // as it is.
                assert_eq!(over(&once).unwrap().unwrap(), once, "{} {what}", r.name);
                if what == "[h2]" {
                    // Nor does [tls] apply again under it.
                    assert_eq!(once.over_tls().unwrap().unwrap(), once, "{}", r.name);
                }
                for profile in Profile::ALL {
                    let a = over(&r.profiled(profile).unwrap()).unwrap().unwrap();
                    let b = once.profiled(profile).unwrap();
                    assert_eq!(
                        all_configs(&a),
                        all_configs(&b),
                        "{} {what} {profile:?}",
                        r.name
                    );
                    for kind in WorkloadKind::ALL {
                        if r.workload(kind).is_err() {
                            continue;
                        }
                        let c = a.for_workload(kind).unwrap();
                        let d = over(&r.for_workload(kind).unwrap())
                            .unwrap()
                            .unwrap()
                            .profiled(profile)
                            .unwrap();
                        let (rc, rd) = (first_config(&c), first_config(&d));
                        assert_eq!(rc, rd, "{} {what} {profile:?} {kind:?}", r.name);
                        // The probes still find their anchors.
                        r.probe.apply(&rc, &probe).unwrap();
                    }
                }
            }
        }
    }

    /// Each template of `r` with the text of every insert of `table` taken
    /// out again.
    fn without(r: &Recipe, table: &ProtocolTable) -> Vec<String> {
        r.configs
            .iter()
            .map(|c| {
                let mut t = c.template.clone();
                for i in &table.insert {
                    let done = format!("{}{}", i.after, i.text);
                    t = t.replacen(&done, &i.after, 1);
                }
                t
            })
            .collect()
    }

    #[test]
    fn h2_changes_nothing_of_the_tls_config_but_its_inserts() {
        for r in Recipes::builtin().all() {
            let Some(h2) = r.over_h2().unwrap() else {
                continue;
            };
            let tls = r.over_tls().unwrap().unwrap();
            let tls_templates: Vec<String> =
                tls.configs.iter().map(|c| c.template.clone()).collect();
            assert_eq!(
                without(&h2, r.h2.as_ref().unwrap()),
                tls_templates,
                "{}",
                r.name
            );
            assert_eq!(h2.notes.find(&tls.notes), Some(0), "{}", r.name);
            let h2c = r.over_h2c().unwrap().unwrap();
            let plain: Vec<String> = r.configs.iter().map(|c| c.template.clone()).collect();
            assert_eq!(without(&h2c, r.h2c.as_ref().unwrap()), plain, "{}", r.name);
        }
    }

    #[test]
    fn h2_and_h2c_configs_say_what_their_notes_say() {
        let recipes = Recipes::builtin();
        let conf = |name: &str, h2c: bool| {
            let r = recipes.get(name).unwrap();
            let over = if h2c { r.over_h2c() } else { r.over_h2() };
            all_configs(&over.unwrap().unwrap())
        };
        let wants: &[(&str, bool, &[&str])] = &[
            ("nginx", false, &["        listen 127.0.0.1:8081 ssl http2;\n"]),
            ("nginx", true, &["        listen 127.0.0.1:8081 http2;\n"]),
            (
                "lighttpd",
                false,
                &["server.feature-flags = ( \"server.h2proto\" => \"disable\" )\nserver.feature-flags := ( \"server.h2proto\" => \"enable\" )\n"],
            ),
            (
                "lighttpd",
                true,
                &["server.feature-flags = ( \"server.h2proto\" => \"enable\" )\n"],
            ),
            ("h2o", false, &["http1-request-timeout: 60\nhttp2-idle-timeout: 60\n"]),
            (
                "h2o",
                true,
                &["http1-request-timeout: 60\nhttp1-upgrade-to-http2: ON\nhttp2-idle-timeout: 60\n"],
            ),
            ("caddy", false, &["\tservers {\n\t\tprotocols h1 h2\n"]),
            ("caddy", true, &["\tservers {\n\t\tprotocols h1 h2c\n"]),
        ];
        for mpm in ["worker", "event"] {
            let name = format!("apache2-{mpm}");
            for (h2c, protocols) in [
                (false, "Protocols h2 http/1.1\n"),
                (true, "Protocols h2c http/1.1\n"),
            ] {
                let text = conf(&name, h2c);
                assert!(
                    text.contains(
                        "LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so\n"
                    ),
                    "{name}"
                );
                assert!(
                    text.contains(protocols),
                    "{name} lacks {protocols:?}:\n{text}"
                );
            }
        }
        for (name, h2c, lines) in wants {
            let text = conf(name, *h2c);
            for want in *lines {
                assert!(text.contains(want), "{name} lacks {want:?}:\n{text}");
            }
        }
        // Neither HTTP/3 nor h2c over TLS.
        assert!(!conf("caddy", false).contains("h3") && !conf("caddy", false).contains("h2c"));
        // Every table's notes record the server's cap on concurrent streams.
        let caps = [
            ("nginx", "128 concurrent streams"),
            ("lighttpd", "8 concurrent streams"),
            ("apache2-worker", "100 concurrent streams"),
            ("apache2-event", "100 concurrent streams"),
            ("h2o", "100 concurrent requests"),
            ("caddy", "250 concurrent streams"),
        ];
        for (name, cap) in caps {
            let r = recipes.get(name).unwrap();
            for table in [&r.h2, &r.h2c] {
                assert!(table.as_ref().unwrap().notes.contains(cap), "{name} {cap}");
            }
        }
        let nginx = recipes.get("nginx").unwrap().h2c.as_ref().unwrap();
        assert!(nginx.notes.contains("serves no HTTP/1.1 on an h2c port"));
    }

    #[test]
    fn an_h2_or_h2c_table_that_cannot_apply_names_the_recipe_and_the_table() {
        let base = "name = \"mine\"\nbinary = \"/x\"\nstart = [\"/x\"]\n[[configs]]\nfile = \"a.conf\"\ntemplate = \"listen 80\\n\"\n";
        let tls = "[tls]\nnotes = \"t\"\n[[tls.insert]]\nafter = \"listen 80\"\ntext = \" ssl\\ncert {{rundir}}/tls-cert.pem\\nkey {{rundir}}/tls-key.pem\"\n";
        let h2 = "[h2]\nnotes = \"h\"\n[[h2.insert]]\nafter = \"listen 80 ssl\"\ntext = \" h2\"\n";
        let h2c = "[h2c]\nnotes = \"c\"\n[[h2c.insert]]\nafter = \"listen 80\"\ntext = \" h2c\"\n";
        let mine = Recipe::parse(&format!("{base}{tls}{h2}{h2c}")).unwrap();
        let over = mine.over_h2().unwrap().unwrap();
        assert_eq!(
            over.configs[0].template,
            "listen 80 ssl h2\ncert {{rundir}}/tls-cert.pem\nkey {{rundir}}/tls-key.pem\n"
        );
        assert_eq!(over.notes, "over TLS: t over HTTP/2: h");
        let over = mine.over_h2c().unwrap().unwrap();
        assert_eq!(over.configs[0].template, "listen 80 h2c\n");
        assert_eq!(over.notes, "over h2c: c");
        // No table, no protocol.
        let plain = Recipe::parse(base).unwrap();
        assert_eq!(
            (plain.over_h2().unwrap(), plain.over_h2c().unwrap()),
            (None, None)
        );
        let mut no_tls = mine.clone();
        no_tls.tls = None;
        assert_eq!(no_tls.over_h2().unwrap(), None);
        // A recipe whose [h2] or [h2c] cannot apply fails when it loads.
        let e = Recipe::parse(&format!(
            "{base}{tls}{}{h2c}",
            h2.replace("80 ssl", "81 ssl")
        ))
        .unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "recipe mine: [h2]: no config has \"listen 81 ssl\" to insert after"
        );
        let e = Recipe::parse(&format!(
            "{base}{tls}{h2}{}",
            h2c.replace("\"listen 80", "\"listen 81")
        ))
        .unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "recipe mine: [h2c]: no config has \"listen 81\" to insert after"
        );
        let e = Recipe::parse(&format!("{base}{h2}")).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "recipe mine: [h2] is applied on top of [tls], and there is no [tls]"
        );
        for table in ["h2", "h2c"] {
            let e = Recipe::parse(&format!("{base}{tls}[{table}]\nnotes = \"x\"\n")).unwrap_err();
            assert_eq!(
                format!("{e:#}"),
                format!("recipe mine: [{table}] has no insert")
            );
        }
    }

    #[test]
    fn h3_is_served_by_caddy_over_its_h2_config_and_every_other_builtin_says_why_not() {
        let recipes = Recipes::builtin();
        for r in recipes.all() {
            let over = r.over_h3().unwrap();
            if r.name == "caddy" {
                let once = over.unwrap();
                assert_eq!(r.h3_unsupported(), None);
                let caddyfile = &once.configs[0].template;
                assert!(
                    caddyfile.contains("\t\tprotocols h1 h2 h3\n"),
                    "{caddyfile}"
                );
                assert!(
                    caddyfile.contains("tls {{rundir}}/tls-cert.pem"),
                    "{caddyfile}"
                );
                assert!(once.notes.contains(" over HTTP/3: protocols h1 h2 h3"));
                assert!(once.notes.contains("NewReno"));
                // Applied once, and neither [h2] nor [tls] again under it.
                assert_eq!(once.over_h3().unwrap().unwrap(), once);
                assert_eq!(once.over_h2().unwrap().unwrap(), once);
                assert_eq!(once.over_tls().unwrap().unwrap(), once);
                for profile in Profile::ALL {
                    let a = r.profiled(profile).unwrap().over_h3().unwrap().unwrap();
                    assert_eq!(
                        all_configs(&a),
                        all_configs(&once.profiled(profile).unwrap())
                    );
                }
                continue;
            }
            assert_eq!(over, None, "{}", r.name);
            let why = r.h3_unsupported().unwrap_or_else(|| panic!("{}", r.name));
            assert!(why.contains(" has no "), "{}: {why}", r.name);
        }
        assert_eq!(
            recipes.get("nginx").unwrap().h3_unsupported(),
            Some(
                "nginx 1.22 (Debian 12's) has no ngx_http_v3_module: HTTP/3 came in nginx \
                 1.25.0, and Debian 12's build lists no --with-http_v3_module in nginx -V"
            )
        );
    }

    #[test]
    fn an_h3_table_either_serves_it_on_top_of_h2_or_says_why_not() {
        let base = "name = \"mine\"\nbinary = \"/x\"\nstart = [\"/x\"]\n[[configs]]\nfile = \"a.conf\"\ntemplate = \"listen 80\\n\"\n";
        let tls = "[tls]\nnotes = \"t\"\n[[tls.insert]]\nafter = \"listen 80\"\ntext = \" ssl\\ncert {{rundir}}/tls-cert.pem\\nkey {{rundir}}/tls-key.pem\"\n";
        let h2 = "[h2]\nnotes = \"h\"\n[[h2.insert]]\nafter = \"listen 80 ssl\"\ntext = \" h2\"\n";
        let h3 =
            "[h3]\nnotes = \"q\"\n[[h3.insert]]\nafter = \"listen 80 ssl h2\"\ntext = \" h3\"\n";
        let mine = Recipe::parse(&format!("{base}{tls}{h2}{h3}")).unwrap();
        let over = mine.over_h3().unwrap().unwrap();
        assert_eq!(
            over.configs[0].template,
            "listen 80 ssl h2 h3\ncert {{rundir}}/tls-cert.pem\nkey {{rundir}}/tls-key.pem\n"
        );
        assert_eq!(over.notes, "over TLS: t over HTTP/2: h over HTTP/3: q");
        let not = Recipe::parse(&format!("{base}[h3]\nunsupported = \"no QUIC here\"\n")).unwrap();
        assert_eq!(
            (not.over_h3().unwrap(), not.h3_unsupported()),
            (None, Some("no QUIC here"))
        );
        for (rest, want) in [
            (
                format!(
                    "{tls}{h2}{}",
                    h3.replace("notes = \"q\"\n", "notes = \"q\"\nunsupported = \"x\"\n")
                ),
                "recipe mine: [h3] has both inserts and `unsupported`",
            ),
            (
                "[h3]\nunsupported = \" \"\n".to_string(),
                "recipe mine: [h3] unsupported: say why",
            ),
            (
                format!("{tls}{h3}"),
                "recipe mine: [h3] is applied on top of [h2], and there is no [h2]",
            ),
            (
                "[tls]\nunsupported = \"x\"\n".to_string(),
                "recipe mine: [tls]: `unsupported` belongs to [h3] alone; leave the table out \
                 to serve no such protocol",
            ),
        ] {
            let e = Recipe::parse(&format!("{base}{rest}")).unwrap_err();
            assert_eq!(format!("{e:#}"), want, "{rest}");
        }
    }
}
