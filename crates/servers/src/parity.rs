//! Parity: the settings each server ran with and where each value comes
//! from, so a reader can check that servers were compared on equal terms
//! ("was sendfile on for both?"). A recipe's `[parity.<setting>]` tables
//! say how its rendered config sets each setting the config decides, and
//! what the server does when the config is silent; the lab's own settings
//! (workers, pinning, connection limit, protocol) come from the lab.

use std::path::Path;

use throng_model::{ConfigFile, ParityEntry, Setting, Source};

use crate::recipe::Recipe;
pub use crate::rules::{check, ParityRule, CONFIG_SETTINGS};

/// The lab's own settings for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabSettings {
    pub workers: u32,
    /// The CPUs the server is pinned to; empty when it is not pinned.
    pub cpus: Vec<usize>,
    pub max_connections: u32,
    /// How clients speak to it, e.g. "HTTP/2 over TLS (h2)".
    pub protocol: String,
    /// What TLS it was given to serve, or "none (cleartext)".
    pub cipher: String,
    /// How each end paces what it sends: the kernel's over TCP, each
    /// QUIC stack's own over HTTP/3.
    pub congestion: String,
}

impl LabSettings {
    /// Settings of a server spoken to over cleartext HTTP/1.1.
    pub fn cleartext(workers: u32, cpus: Vec<usize>, max_connections: u32) -> LabSettings {
        LabSettings {
            workers,
            cpus,
            max_connections,
            protocol: "HTTP/1.1 cleartext".to_string(),
            cipher: "none (cleartext)".to_string(),
            congestion: TCP_CONGESTION.to_string(),
        }
    }
}

/// The congestion control of a server spoken to over TCP, when the lab
/// names no algorithm: both ends' kernels choose it.
pub const TCP_CONGESTION: &str = "the kernel's TCP congestion control \
    (net.ipv4.tcp_congestion_control), at both ends";

/// The config settings `recipe` declares no rule for.
pub fn missing(recipe: &Recipe) -> Vec<Setting> {
    CONFIG_SETTINGS
        .into_iter()
        .filter(|s| !recipe.parity.contains_key(s.name()))
        .collect()
}

/// Every setting of [`Setting::ALL`], in that order: config settings from
/// the rendered `configs` (the files and the command written for the
/// server) or the server's default, the rest from the lab.
pub fn parity(recipe: &Recipe, configs: &[ConfigFile], lab: &LabSettings) -> Vec<ParityEntry> {
    Setting::ALL
        .into_iter()
        .map(|setting| {
            let from_lab = |value: String| ParityEntry {
                setting,
                value,
                source: Source::Lab,
                detail: String::new(),
            };
            match setting {
                // Prefork serves each connection in a process of its own:
                // "1" said one worker of a server running 33.
                Setting::Workers if recipe.model == "processes" => from_lab(format!(
                    "a process per connection, up to {}",
                    lab.max_connections
                )),
                Setting::Workers => from_lab(lab.workers.to_string()),
                Setting::Pinning => from_lab(pinning(&lab.cpus)),
                Setting::MaxConnections => ParityEntry {
                    detail: connection_limit_detail(recipe),
                    ..from_lab(connection_limit(recipe, lab.max_connections))
                },
                Setting::Protocol => from_lab(lab.protocol.clone()),
                Setting::Cipher => from_lab(lab.cipher.clone()),
                Setting::CongestionControl => from_lab(lab.congestion.clone()),
                _ => from_config(recipe, setting, configs),
            }
        })
        .collect()
}

/// Whether `recipe`'s configs or command take `key`.
fn renders(recipe: &Recipe, key: &str) -> bool {
    let key = format!("{{{{{key}}}}}");
    recipe.configs.iter().any(|c| c.template.contains(&key))
        || recipe.start.iter().any(|a| a.contains(&key))
}

/// The connection limit the server was given: the lab's figure where its
/// configs take it, and said so where they do not. Every server was shown
/// at 1024, where Apache's event MPM, Caddy and Varnish set no limit and
/// served 2,000 connections at once.
fn connection_limit(recipe: &Recipe, limit: u32) -> String {
    if renders(recipe, "max_connections") {
        limit.to_string()
    } else if renders(recipe, "max_request_workers") {
        format!("{limit} requests at once")
    } else {
        "none set".to_string()
    }
}

fn connection_limit_detail(recipe: &Recipe) -> String {
    if renders(recipe, "max_connections") {
        "rendered into its config as {{max_connections}}".into()
    } else if renders(recipe, "max_request_workers") {
        "workers serving requests at once (MaxRequestWorkers); idle keep-alive connections \
         beyond them are held"
            .into()
    } else {
        format!("the {} recipe sets no connection limit", recipe.name)
    }
}

fn pinning(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "none".to_string();
    }
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    format!("cpus {}", list.join(","))
}

fn from_config(recipe: &Recipe, setting: Setting, configs: &[ConfigFile]) -> ParityEntry {
    let Some(rule) = recipe.parity.get(setting.name()) else {
        return ParityEntry {
            setting,
            value: "unknown".to_string(),
            source: Source::Default,
            detail: format!(
                "the {} recipe declares no [parity.{}]",
                recipe.name,
                setting.name()
            ),
        };
    };
    // A cache's configs come with its backend's (and a dynamic workload's
    // with its helper's): only the recipe's own files and command count.
    let own = configs.iter().filter(|c| {
        let file = c.path.rsplit('/').next().unwrap_or_default();
        file == "command" || recipe.configs.iter().any(|t| t.file == file)
    });
    let found = rule
        .after
        .as_deref()
        .and_then(|after| last_line(own, after));
    let why = |detail: &str| match &rule.plus_doc {
        Some(why) if rule.plus != 0 => format!("{detail}; {why}"),
        _ => detail.to_string(),
    };
    match found {
        Some((line, value)) => ParityEntry {
            setting,
            value: rule.acted(&rule.value.clone().unwrap_or(value)),
            source: Source::Config,
            detail: why(line),
        },
        None => ParityEntry {
            setting,
            value: rule.acted(&rule.default),
            source: Source::Default,
            detail: why(&rule.doc),
        },
    }
}

/// The last line of the configs that sets `after`, with its value: a later
/// line overrides an earlier one in every server's syntax.
fn last_line<'a>(
    configs: impl Iterator<Item = &'a ConfigFile>,
    after: &str,
) -> Option<(&'a str, String)> {
    configs
        .flat_map(|c| c.content.lines())
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with("//"))
        .filter_map(|l| value_in(l, after).map(|v| (l, v)))
        .last()
}

fn value_in(line: &str, after: &str) -> Option<String> {
    let clean = |v: &str| v.trim().trim_matches('"').to_string();
    if let Some(rest) = line.strip_prefix(after) {
        return Some(clean(rest.split(';').next().unwrap_or_default()));
    }
    let at = line.find(&format!(" {after}"))? + 1 + after.len();
    let word = line[at..]
        .split(|c: char| c == ';' || c.is_whitespace())
        .next()
        .unwrap_or_default();
    Some(clean(word))
}

/// Total size of the log files under a server's directory (its output,
/// error log, and any access log a config writes there), to compare before
/// and after a round: an access log that is on grows whatever the config
/// says.
pub fn log_bytes(server_dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(server_dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => log_bytes(&path),
                Ok(t) if t.is_file() && is_log(&e.file_name().to_string_lossy()) => {
                    e.metadata().map(|m| m.len()).unwrap_or(0)
                }
                _ => 0,
            }
        })
        .sum()
}

/// Logs by the names servers give them: `*.log` (every recipe's error log
/// and the lab's output.log), Apache's `access_log`, Traffic Server's
/// `traffic.out`.
fn is_log(name: &str) -> bool {
    name.ends_with(".log") || name.ends_with("_log") || name.ends_with(".out")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use crate::recipe::{test_context, Recipes};

    #[test]
    fn workers_and_connection_limits_are_each_servers_own() {
        let lab = LabSettings::cleartext(1, vec![0], 1024);
        let of = |name: &str, setting: Setting| {
            let recipes = Recipes::builtin();
            let r = recipes.get(name).unwrap();
            parity(r, &[], &lab)
                .into_iter()
                .find(|e| e.setting == setting)
                .unwrap()
                .value
        };
        assert_eq!(of("nginx", Setting::Workers), "1");
        assert_eq!(
            of("apache2-prefork", Setting::Workers),
            "a process per connection, up to 1024"
        );
        assert_eq!(of("nginx", Setting::MaxConnections), "1024");
        assert_eq!(
            of("apache2-event", Setting::MaxConnections),
            "1024 requests at once"
        );
        assert_eq!(of("caddy", Setting::MaxConnections), "none set");
    }

    /// What the launcher stores for a server named like its recipe in
    /// group `g`: its rendered files, then its command.
    fn rendered(r: &Recipe) -> Vec<ConfigFile> {
        let ctx = test_context(true);
        let dir = format!("g/{}", r.name);
        let mut v: Vec<ConfigFile> = r
            .render_configs(&ctx)
            .unwrap()
            .into_iter()
            .map(|(path, content)| ConfigFile {
                path: format!("{dir}/{}", path.file_name().unwrap().to_string_lossy()),
                content,
            })
            .collect();
        v.push(ConfigFile {
            path: format!("{dir}/command"),
            content: r.render_start(&ctx).unwrap().join(" "),
        });
        v
    }

    fn lab() -> LabSettings {
        LabSettings::cleartext(2, vec![0, 1], 6000)
    }

    /// (value, source, detail) of `setting` for recipe `name` in `profile`.
    fn entry(name: &str, profile: Profile, setting: Setting) -> (String, Source, String) {
        let r = Recipes::builtin()
            .get(name)
            .unwrap()
            .profiled(profile)
            .unwrap();
        let all = parity(&r, &rendered(&r), &lab());
        let e = all.into_iter().find(|e| e.setting == setting).unwrap();
        (e.value, e.source, e.detail)
    }

    fn config(value: &str, line: &str) -> (String, Source, String) {
        (value.into(), Source::Config, line.into())
    }

    fn default(value: &str, doc: &str) -> (String, Source, String) {
        (value.into(), Source::Default, doc.into())
    }

    #[test]
    fn every_builtin_declares_every_config_setting() {
        for r in Recipes::builtin().all() {
            assert_eq!(missing(r), [], "{}", r.name);
        }
        let mut nginx = Recipes::builtin().get("nginx").unwrap().clone();
        nginx.parity.remove("sendfile");
        assert_eq!(missing(&nginx), [Setting::Sendfile]);
    }

    #[test]
    fn nginx_settings_come_from_its_config_or_its_documented_defaults() {
        use Profile::{Defaults, Tuned};
        let doc = "nginx docs (ngx_http_core_module): sendfile off by default";
        assert_eq!(
            entry("nginx", Defaults, Setting::Sendfile),
            default("off", doc)
        );
        assert_eq!(
            entry("nginx", Tuned, Setting::Sendfile),
            config("on", "sendfile on;")
        );
        assert_eq!(
            entry("nginx", Tuned, Setting::OpenFileCache),
            config(
                "max=1000 inactive=60s",
                "open_file_cache max=1000 inactive=60s;"
            )
        );
        assert_eq!(
            entry("nginx", Defaults, Setting::OpenFileCache).1,
            Source::Default
        );
        assert_eq!(
            entry("nginx", Defaults, Setting::AccessLog),
            config("off", "access_log off;")
        );
        assert_eq!(
            entry("nginx", Defaults, Setting::KeepAliveTimeout),
            config("60s", "keepalive_timeout 60s;")
        );
        assert_eq!(
            entry("nginx", Defaults, Setting::ListenBacklog),
            default(
                "511",
                "nginx docs (listen): backlog=511 by default on Linux"
            )
        );
    }

    #[test]
    fn lighttpd_and_apache_settings() {
        use Profile::{Defaults, Tuned};
        assert_eq!(entry("lighttpd", Defaults, Setting::Sendfile).0, "sendfile");
        assert_eq!(
            entry("lighttpd", Defaults, Setting::KeepAliveRequests),
            config(
                "1024",
                "server.max-keep-alive-requests = 1023; lighttpd ends keep-alive once a \
                 connection's count of requests passes the limit (connections.c), so a \
                 connection serves one more than server.max-keep-alive-requests"
            )
        );
        assert_eq!(
            entry("lighttpd", Defaults, Setting::AccessLog),
            default(
                "off",
                "lighttpd docs (mod_accesslog): nothing is logged unless mod_accesslog is loaded"
            )
        );
        assert_eq!(
            entry("lighttpd", Tuned, Setting::OpenFileCache),
            config("inotify", "server.stat-cache-engine = \"inotify\"")
        );
        for mpm in ["prefork", "worker", "event"] {
            let name = format!("apache2-{mpm}");
            assert_eq!(
                entry(&name, Defaults, Setting::Sendfile),
                default(
                    "Off",
                    "httpd docs (core): EnableSendfile Off by default since 2.3.9"
                )
            );
            assert_eq!(
                entry(&name, Tuned, Setting::Sendfile),
                config("On", "EnableSendfile On")
            );
            assert_eq!(
                entry(&name, Defaults, Setting::ListenBacklog),
                config("4096", "ListenBacklog 4096")
            );
            assert_eq!(entry(&name, Defaults, Setting::AccessLog).0, "off");
            let requests = entry(&name, Defaults, Setting::KeepAliveRequests);
            assert_eq!(requests.0, "1024");
            assert!(requests.2.starts_with("MaxKeepAliveRequests 1023; "));
        }
    }

    #[test]
    fn caches_read_their_command_and_not_their_backends_config() {
        use Profile::Defaults;
        let varnish = entry("varnish", Defaults, Setting::KeepAliveTimeout);
        assert_eq!((varnish.0.as_str(), varnish.1), ("60", Source::Config));
        assert!(varnish.2.contains(" -p timeout_idle=60 "), "{}", varnish.2);
        assert_eq!(entry("varnish", Defaults, Setting::Gzip).0, "off");
        assert_eq!(
            entry("varnish", Defaults, Setting::ListenBacklog).1,
            Source::Default
        );
        assert_eq!(
            entry("trafficserver", Defaults, Setting::AccessLog),
            config("0", "CONFIG proxy.config.log.logging_enabled INT 0")
        );
        // Squid's configs come after its nginx backend's, which set the
        // same directive names in its own syntax.
        let recipes = Recipes::builtin();
        let squid = recipes.get("squid").unwrap();
        let mut configs = rendered(recipes.get("nginx").unwrap());
        for c in &mut configs {
            c.path = c.path.replace("g/nginx/", "g/squid-backend/");
        }
        configs.extend(rendered(squid));
        let access = parity(squid, &configs, &lab())
            .into_iter()
            .find(|e| e.setting == Setting::AccessLog)
            .unwrap();
        assert_eq!(
            (access.value.as_str(), access.detail.as_str()),
            ("none", "access_log none")
        );
    }

    #[test]
    fn lab_settings_come_from_the_lab_in_setting_order() {
        let r = Recipes::builtin().get("h2o").unwrap().clone();
        let all = parity(&r, &rendered(&r), &lab());
        let order: Vec<Setting> = all.iter().map(|e| e.setting).collect();
        assert_eq!(order, Setting::ALL);
        let lab_values: Vec<(&str, &str)> = all
            .iter()
            .filter(|e| e.source == Source::Lab)
            .map(|e| (e.setting.name(), e.value.as_str()))
            .collect();
        assert_eq!(
            lab_values,
            [
                ("workers", "2"),
                ("pinning", "cpus 0,1"),
                ("max_connections", "6000"),
                ("protocol", "HTTP/1.1 cleartext"),
                ("cipher", "none (cleartext)"),
                ("congestion_control", TCP_CONGESTION)
            ]
        );
        assert_eq!(pinning(&[]), "none");
        let requests = &all[Setting::KeepAliveRequests as usize];
        assert_eq!(
            (requests.value.as_str(), requests.source),
            ("unlimited", Source::Default)
        );
        // A user's command declares nothing.
        let mine = Recipe::from_command("mine", &["/bin/x".into()]).unwrap();
        let e = &parity(&mine, &[], &lab())[0];
        assert_eq!(
            (e.value.as_str(), e.detail.as_str()),
            ("unknown", "the mine recipe declares no [parity.access_log]")
        );
    }

    #[test]
    fn values_are_read_from_lines_and_parameters() {
        let v = |line: &str, after: &str| value_in(line, after);
        assert_eq!(v("sendfile on;", "sendfile ").as_deref(), Some("on"));
        assert_eq!(
            v("listen 127.0.0.1:80 backlog=4096 reuseport;", "backlog=").as_deref(),
            Some("4096")
        );
        assert_eq!(
            v(
                "server.network-backend = \"writev\"",
                "server.network-backend = "
            )
            .as_deref(),
            Some("writev")
        );
        assert_eq!(v("nosendfile on;", "sendfile "), None);
        let configs = [ConfigFile {
            path: "g/x/x.conf".into(),
            content: "# sendfile on;\n  sendfile off;\n  sendfile on;\n".into(),
        }];
        assert_eq!(
            last_line(configs.iter(), "sendfile "),
            Some(("sendfile on;", "on".to_string()))
        );
    }

    #[test]
    fn only_config_settings_take_a_table() {
        let rule = ParityRule {
            after: None,
            value: None,
            default: "x".into(),
            doc: "y".into(),
            plus: 0,
            plus_doc: None,
        };
        let rules =
            |name: &str| std::collections::BTreeMap::from([(name.to_string(), rule.clone())]);
        check(&rules("etag")).unwrap();
        let e = check(&rules("workers")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "[parity.workers]: the lab sets workers, not the config"
        );
        assert!(check(&rules("speed")).is_err());
        let unexplained = ParityRule { plus: 1, ..rule };
        let e = check(&std::collections::BTreeMap::from([(
            "keepalive_requests".to_string(),
            unexplained,
        )]))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "[parity.keepalive_requests]: plus = 1 needs a plus_doc saying why"
        );
    }

    #[test]
    fn a_number_the_server_counts_from_its_second_request_is_shown_as_done() {
        let rule = ParityRule {
            after: Some("MaxKeepAliveRequests ".into()),
            value: None,
            default: "100".into(),
            doc: "httpd docs: 100 by default".into(),
            plus: 1,
            plus_doc: Some("counts the requests after the first".into()),
        };
        assert_eq!(rule.acted("1023"), "1024");
        assert_eq!(rule.acted("unlimited"), "unlimited");
        assert_eq!(
            ParityRule {
                plus: 0,
                ..rule.clone()
            }
            .acted("1023"),
            "1023"
        );
    }

    #[test]
    fn log_bytes_add_up_the_logs_of_a_server_directory() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (name, len) in [
            ("error.log", 10),
            ("output.log", 5),
            ("access_log", 3),
            ("traffic.out", 4),
            ("nginx.conf", 100),
        ] {
            std::fs::write(d.join(name), vec![b'x'; len]).unwrap();
        }
        std::fs::create_dir(d.join("logs")).unwrap();
        std::fs::write(d.join("logs/access.log"), "ab").unwrap();
        assert_eq!(log_bytes(d), 24);
        assert_eq!(log_bytes(&d.join("gone")), 0);
    }
}
