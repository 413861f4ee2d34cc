//! Server recipes: how to configure, start, check and stop one web server.
//!
//! A recipe is data, not code: a TOML file with config templates and a start
//! command. The built-in ones are embedded in the binary; a folder of TOML
//! files given with `--recipes` adds recipes or replaces built-ins by name.
//! Every built-in renders the same settings (no access log, keep-alive 60 s
//! and 1024 requests per connection, one worker per server core, the
//! server's default sendfile, no compression); where a server has no such
//! setting its recipe's `notes` say so, and the notes are stored with results.
//! A recipe's `[profiles.tuned]` adds what the server's documentation
//! advises for static files (see `profile`), and its `[parity.*]` tables
//! say where each setting's value comes from (see `parity`). Its `[tls]`
//! table says how the same config serves HTTPS/1.1 instead, on the same
//! address and port, its `[h2]` table how that TLS config offers HTTP/2
//! as well, its `[h2c]` table how the cleartext config serves HTTP/2
//! with prior knowledge, and its `[h3]` table how the HTTP/2 config
//! serves HTTP/3 beside it, or why the server cannot (see `profile`,
//! [`Recipe::over_tls`], [`Recipe::over_h2`], [`Recipe::over_h2c`],
//! [`Recipe::over_h3`]).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};

use throng_model::{Profile, WorkloadKind};

use crate::helper::Helper;
use crate::names;
use crate::probe::{Insert, ProbeSettings};
use crate::rules::{self, ParityRule, Profiles};
use crate::spot::Spot;
use crate::template::{substitute, unknown};

/// The embedded recipes, in the order `throng servers` lists them.
const BUILTIN: &[(&str, &str)] = &[
    ("nginx", include_str!("../recipes/nginx.toml")),
    ("lighttpd", include_str!("../recipes/lighttpd.toml")),
    (
        "apache2-prefork",
        include_str!("../recipes/apache2-prefork.toml"),
    ),
    (
        "apache2-worker",
        include_str!("../recipes/apache2-worker.toml"),
    ),
    (
        "apache2-event",
        include_str!("../recipes/apache2-event.toml"),
    ),
    ("h2o", include_str!("../recipes/h2o.toml")),
    ("caddy", include_str!("../recipes/caddy.toml")),
    ("node", include_str!("../recipes/node.toml")),
    ("varnish", include_str!("../recipes/varnish.toml")),
    (
        "varnish-apache",
        include_str!("../recipes/varnish-apache.toml"),
    ),
    ("squid", include_str!("../recipes/squid.toml")),
    (
        "trafficserver",
        include_str!("../recipes/trafficserver.toml"),
    ),
];

/// How a server serves one dynamic workload (`[workloads.cgi]` etc.).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Rendered in place of the `{{dynamic}}` line of the config templates.
    #[serde(default)]
    pub config: String,
    /// Program started with the server: "fcgiwrap", "php-fpm" or "node".
    #[serde(default)]
    pub helper: Option<Helper>,
    /// Why the server cannot serve this workload; its steps are then
    /// stored as unsupported instead of measured.
    #[serde(default)]
    pub unsupported: Option<String>,
    /// How it is done, stored with the results like the recipe's notes.
    #[serde(default)]
    pub notes: String,
}

/// One configuration file a recipe renders into the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigTemplate {
    /// File name inside the server's run directory.
    pub file: String,
    pub template: String,
}

/// A recipe's `[tls]`, `[h2]` or `[h2c]` table: how its config is changed
/// to speak another protocol on the address and port it would serve
/// cleartext HTTP/1.1 on.
///
/// `[tls]` serves HTTPS/1.1, with the certificate and key the lab writes
/// into the server's directory before it starts, `{{rundir}}/tls-cert.pem`
/// and `{{rundir}}/tls-key.pem`. Every built-in that has one offers TLS 1.2
/// and 1.3 only, honours the client's cipher order where the server lets it
/// be said, keeps its default session resumption and speaks HTTP/1.1 only;
/// its notes say where a server cannot. `[h2]` is applied on top of `[tls]`
/// and offers h2 over ALPN before http/1.1, its TLS settings unchanged;
/// `[h2c]` serves HTTP/2 over cleartext TCP to clients with prior knowledge
/// (RFC 9113, section 3.3). The notes of both say what the server caps per
/// HTTP/2 connection (concurrent streams, requests, idle time).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolTable {
    /// Which directives are set and why, with the server's documentation;
    /// stored with the results like the recipe's notes.
    #[serde(default)]
    pub notes: String,
    /// Insertions into the config templates, each into the first template
    /// that has its anchor, as a profile's are.
    #[serde(default)]
    pub insert: Vec<Insert>,
    /// `[h3]` alone: why the server as packaged cannot serve the protocol
    /// (its version, a module it is built without), stored with the
    /// steps it leaves unmeasured. A table with this has no insert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
}

/// Where the lab writes a TLS server's certificate (PEM), as the
/// templates of a `[tls]` table name it.
pub const TLS_CERT: &str = "{{rundir}}/tls-cert.pem";
/// Where the lab writes that certificate's private key (PEM).
pub const TLS_KEY: &str = "{{rundir}}/tls-key.pem";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    /// Debian package that installs the server; empty for user commands.
    #[serde(default)]
    pub package: String,
    /// Main executable: checked for presence, its size is reported.
    pub binary: String,
    /// Concurrency model: "event loop", "processes", "threads", "processes+threads".
    #[serde(default)]
    pub model: String,
    /// Command whose output (stdout and stderr) holds the version.
    #[serde(default)]
    pub version_command: Vec<String>,
    /// The version is the first run of digits and dots after this text.
    #[serde(default)]
    pub version_after: String,
    /// Argument vector; placeholders are rendered like config templates.
    pub start: Vec<String>,
    /// Signal sent to the process group to stop the server.
    #[serde(default = "default_stop_signal")]
    pub stop_signal: String,
    /// Servers without a user directive of their own are started as the
    /// unprivileged user directly when the lab runs as root.
    #[serde(default)]
    pub drop_privileges: bool,
    /// Every connection the config allows takes a task of the server's
    /// own (a thread or a process, started at once or on demand), so the
    /// kernel's task ids bound how many users it can be searched to.
    #[serde(default)]
    pub task_per_connection: bool,
    /// Open files the server keeps for each connection by its own rule
    /// (lighttpd: at most half its files are connections), so a
    /// process's open-file limit bounds its users; 1 when unsaid.
    #[serde(default = "one")]
    pub files_per_connection: u32,
    /// Recipe of a backend started first on `{{backend_port}}` (varnish).
    #[serde(default)]
    pub backend: Option<String>,
    /// Settings the server lacks or interprets differently; stored with results.
    #[serde(default)]
    pub notes: String,
    /// Environment variables (values are templates).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub configs: Vec<ConfigTemplate>,
    /// Per dynamic workload (cgi, php, app): what to add to the config.
    #[serde(default)]
    pub workloads: BTreeMap<String, WorkloadConfig>,
    /// How the feature probes configure this server.
    #[serde(default)]
    pub probe: ProbeSettings,
    /// The `tuned` profile: what the server's documentation recommends.
    #[serde(default)]
    pub profiles: Profiles,
    /// Per setting of the config (`[parity.sendfile]` etc.): how the
    /// rendered config sets it and the server's default otherwise.
    #[serde(default)]
    pub parity: BTreeMap<String, ParityRule>,
    /// How the config serves TLS; `None` when throng cannot run this
    /// server over TLS (see [`Recipe::over_tls`]).
    #[serde(default)]
    pub tls: Option<ProtocolTable>,
    /// How the TLS config also serves HTTP/2 (see [`Recipe::over_h2`]).
    #[serde(default)]
    pub h2: Option<ProtocolTable>,
    /// How the cleartext config serves HTTP/2 with prior knowledge (see
    /// [`Recipe::over_h2c`]).
    #[serde(default)]
    pub h2c: Option<ProtocolTable>,
    /// How the HTTP/2 config also serves HTTP/3 over QUIC on the same
    /// port over UDP, or why it cannot (see [`Recipe::over_h3`]).
    #[serde(default)]
    pub h3: Option<ProtocolTable>,
}

fn one() -> u32 {
    1
}

fn default_stop_signal() -> String {
    "TERM".to_string()
}

/// Every placeholder [`RenderContext`] fills (`{{root}}` aside, which
/// only starts a line); a recipe naming another is refused when it loads.
pub const PLACEHOLDERS: [&str; 16] = [
    "listen",
    "listen_url_host",
    "port",
    "backend_port",
    "docroot",
    "rundir",
    "workers",
    "user",
    "group",
    "max_connections",
    "nofile",
    "threads_per_child",
    "max_request_workers",
    "start_servers",
    "binary",
    "dynamic",
];

/// Values the templates' placeholders are replaced with.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderContext {
    /// The address the server listens on: loopback when the lab and the
    /// server share a machine, the benchmark network's address of the
    /// server's host when clients load it from other hosts.
    pub listen: IpAddr,
    pub port: u16,
    pub backend_port: Option<u16>,
    pub docroot: PathBuf,
    pub rundir: PathBuf,
    /// Server cores: worker processes or threads.
    pub workers: u32,
    /// Highest concurrency of the study: servers must accept that many clients.
    pub concurrency: u32,
    pub user: String,
    pub group: String,
    /// Lines starting with `{{root}}` are kept only when the lab runs as root.
    pub as_root: bool,
}

/// Connection limit rendered into every server: comfortably above the
/// study's highest concurrency so no server refuses a client by config.
/// The parity table states this same figure.
pub fn max_connections_for(concurrency: u32) -> u32 {
    concurrency.saturating_mul(2).max(1024)
}

impl RenderContext {
    pub fn max_connections(&self) -> u32 {
        max_connections_for(self.concurrency)
    }

    fn value(&self, key: &str, binary: &str) -> Option<String> {
        let workers = self.workers.max(1);
        // Apache's threaded MPMs: one child per core, with enough threads in
        // all of them together for every connection of the study.
        let threads_per_child = self.max_connections().div_ceil(workers).max(25);
        Some(match key {
            "listen" => self.listen.to_string(),
            "listen_url_host" => url_host(self.listen),
            "port" => self.port.to_string(),
            "backend_port" => self.backend_port?.to_string(),
            "docroot" => self.docroot.display().to_string(),
            "rundir" => self.rundir.display().to_string(),
            "workers" => workers.to_string(),
            "user" => self.user.clone(),
            "group" => self.group.clone(),
            "max_connections" => self.max_connections().to_string(),
            "nofile" => (self.max_connections() * 4 + 1024).to_string(),
            "threads_per_child" => threads_per_child.to_string(),
            "max_request_workers" => (threads_per_child * workers).to_string(),
            // Apache prefork: a process for every connection of the study's
            // highest level, and a spare one per core, all started at once.
            "start_servers" => self.concurrency.saturating_add(workers).to_string(),
            "binary" => binary.to_string(),
            // Filled by Recipe::for_workload; static workloads add nothing.
            "dynamic" => String::new(),
            _ => return None,
        })
    }
}

/// `ip` as the host part of a URL or of an `address:port` pair: an IPv6
/// address in brackets, or its colons would be read as the port's.
pub fn url_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

impl Recipe {
    /// A recipe's TOML, checked; an error in the TOML, or a placeholder
    /// the lab does not fill, is a [`Spot`] where the text has it.
    pub fn parse(text: &str) -> anyhow::Result<Recipe> {
        let r: Recipe = crate::spot::from_str(text)?;
        r.check()?;
        if let Some((written, message)) = r.unknown_placeholder() {
            // A placeholder spelt with TOML escapes is not found as written,
            // and is refused without a place.
            return Err(match text.find(&written) {
                Some(at) => Spot::at_offset(text, at, message).into(),
                None => anyhow!(message),
            });
        }
        Ok(r)
    }

    /// The first placeholder rendering would fail on, as written, and why:
    /// otherwise a typo is found only when a server starts, after the run
    /// is stored, and fails every step of that server.
    fn unknown_placeholder(&self) -> Option<(String, String)> {
        let known =
            |k: &str| PLACEHOLDERS.contains(&k) && (k != "backend_port" || self.backend.is_some());
        let mut texts: Vec<(String, &str)> = Vec::new();
        texts.extend(
            self.start
                .iter()
                .map(|a| ("`start`".to_string(), a.as_str())),
        );
        texts.extend(
            self.env
                .iter()
                .map(|(k, v)| (format!("[env] {k}"), v.as_str())),
        );
        for c in &self.configs {
            texts.push((format!("[[configs]] {}", c.file), &c.template));
        }
        for (k, w) in &self.workloads {
            texts.push((format!("[workloads.{k}] config"), &w.config));
        }
        let tables = [
            (
                "[profiles.tuned]",
                self.profiles.tuned.as_ref().map(|t| &t.insert),
            ),
            ("[tls]", self.tls.as_ref().map(|t| &t.insert)),
            ("[h2]", self.h2.as_ref().map(|t| &t.insert)),
            ("[h2c]", self.h2c.as_ref().map(|t| &t.insert)),
            ("[h3]", self.h3.as_ref().map(|t| &t.insert)),
        ];
        for (table, inserts) in tables {
            for i in inserts.into_iter().flatten() {
                texts.push((format!("{table} insert"), &i.text));
            }
        }
        for (place, text) in texts {
            for line in text.lines() {
                let line = line.strip_prefix("{{root}}").unwrap_or(line);
                if let Some(written) = unknown(line, known) {
                    let why = if written.contains("backend_port") && written.ends_with("}}") {
                        "{{backend_port}} is the port of the recipe's `backend`, and it names none"
                            .to_string()
                    } else {
                        format!(
                            "unknown placeholder {written} (known: {})",
                            PLACEHOLDERS.join(", ")
                        )
                    };
                    let message = format!("recipe {}: {place}: {why}", self.name);
                    return Some((written.to_string(), message));
                }
            }
        }
        None
    }

    /// Everything that would otherwise fail in the middle of a study:
    /// names that become paths, the stop signal, the workload tables, and
    /// whether the tuned profile and the `[tls]`, `[h2]`, `[h2c]` and
    /// `[h3]` tables apply.
    fn check(&self) -> anyhow::Result<()> {
        names::check("recipe name", &self.name)?;
        if self.start.is_empty() {
            bail!("recipe {}: `start` is empty", self.name);
        }
        if self.binary.is_empty() {
            bail!("recipe {}: `binary` is empty", self.name);
        }
        signal_by_name(&self.stop_signal).with_context(|| format!("recipe {}", self.name))?;
        if let Some(b) = &self.backend {
            names::check("backend recipe name", b)?;
        }
        for (k, c) in self.configs.iter().enumerate() {
            names::check_file(&c.file).with_context(|| format!("recipe {}", self.name))?;
            // Rendered in turn into one folder, the second would silently
            // replace the first.
            if self.configs[..k].iter().any(|o| o.file == c.file) {
                bail!("recipe {}: [[configs]] names {} twice", self.name, c.file);
            }
        }
        // A NUL cannot pass into an argument or the environment of a
        // process; an `=` in a variable's name would make it another
        // variable. Found at launch, each failed every step of the server.
        for a in &self.start {
            if a.contains('\0') {
                bail!(
                    "recipe {}: `start` argument {a:?} holds a NUL byte",
                    self.name
                );
            }
        }
        for (k, v) in &self.env {
            if k.is_empty() || k.contains(['=', '\0']) {
                bail!(
                    "recipe {}: [env] name {k:?} must be non-empty and hold no '=' or NUL",
                    self.name
                );
            }
            if v.contains('\0') {
                bail!("recipe {}: [env] {k} holds a NUL byte", self.name);
            }
        }
        self.probe
            .check()
            .with_context(|| format!("recipe {}: [probe]", self.name))?;
        if self.profiles.tuned.is_some() {
            self.profiled(Profile::Tuned)?;
        }
        self.check_protocol_tables()?;
        rules::check(&self.parity).with_context(|| format!("recipe {}", self.name))?;
        for (k, w) in &self.workloads {
            // A workload served through another's table (phpinfo through
            // php's) takes none of its own.
            let kind =
                WorkloadKind::parse(k).filter(|k| k.is_dynamic() && k.recipe_table() == k.name());
            if kind.is_none() {
                bail!(
                    "recipe {}: [workloads.{k}]: only dynamic workloads (cgi, php, app) take a table",
                    self.name
                );
            }
            if w.helper.is_some() && w.unsupported.is_some() {
                bail!(
                    "recipe {}: [workloads.{k}] has both a helper and `unsupported`",
                    self.name
                );
            }
        }
        Ok(())
    }

    /// A recipe for a user's own server binary given in a study.
    pub fn from_command(name: &str, command: &[String]) -> anyhow::Result<Recipe> {
        let first = command
            .first()
            .ok_or_else(|| anyhow!("server {name}: `command` is empty"))?;
        // No program can be given such an argument: it was refused only
        // when the server was started, with the run already stored.
        if let Some(a) = command.iter().find(|a| a.contains('\0')) {
            bail!(
                "server {name}: `command`: {:?} holds a NUL byte, which no argument can",
                a
            );
        }
        // A program named without a slash is looked up on PATH now, as a
        // shell would, so the study fails here, in one line, when it is
        // not there; the found path is what is started and reported.
        let binary = if first.contains('/') || first.contains("{{") {
            first.clone()
        } else {
            find_on_path(first)
                .map(|p| p.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    anyhow!(
                        "server {name}: no program {first:?} on PATH; give its full path in `command`"
                    )
                })?
        };
        let known = |k: &str| PLACEHOLDERS.contains(&k) && k != "backend_port";
        if let Some(written) = command
            .iter()
            .find_map(|a| unknown(a.strip_prefix("{{root}}").unwrap_or(a), known))
        {
            bail!(
                "server {name}: `command`: unknown placeholder {written} (known: {})",
                PLACEHOLDERS.join(", ")
            );
        }
        let mut start = command.to_vec();
        start[0] = binary.clone();
        Ok(Recipe {
            name: name.to_string(),
            package: String::new(),
            binary,
            model: String::new(),
            version_command: Vec::new(),
            version_after: String::new(),
            start,
            stop_signal: default_stop_signal(),
            drop_privileges: true,
            task_per_connection: false,
            files_per_connection: 1,
            backend: None,
            notes: "user command: its settings are whatever its arguments say".to_string(),
            env: BTreeMap::new(),
            configs: Vec::new(),
            workloads: BTreeMap::new(),
            probe: ProbeSettings::default(),
            profiles: Profiles::default(),
            parity: BTreeMap::new(),
            tls: None,
            h2: None,
            h2c: None,
            h3: None,
        })
    }

    /// How this server serves `kind`: `Ok(None)` for static files (and
    /// for no built-in kind: a site of the user's own),
    /// `Err(reason)` when it cannot serve it at all.
    pub fn workload(
        &self,
        kind: impl Into<Option<WorkloadKind>>,
    ) -> Result<Option<&WorkloadConfig>, String> {
        let Some(kind) = kind.into().filter(|k| k.is_dynamic()) else {
            return Ok(None);
        };
        match self.workloads.get(kind.recipe_table()) {
            Some(w) => match &w.unsupported {
                Some(reason) => Err(reason.clone()),
                None => Ok(Some(w)),
            },
            None => Err(format!(
                "the {} recipe has no configuration for the {} workload",
                self.name,
                kind.name()
            )),
        }
    }

    /// The recipe with `kind`'s config in place of `{{dynamic}}`.
    pub fn for_workload(&self, kind: WorkloadKind) -> anyhow::Result<Recipe> {
        let mut r = self.clone();
        let Some(w) = self.workload(kind).map_err(|e| anyhow!(e))? else {
            return Ok(r);
        };
        let snippet = w.config.trim_start_matches('\n').trim_end_matches('\n');
        // A cache that passes the workload to its backend adds nothing.
        if !snippet.is_empty()
            && !self
                .configs
                .iter()
                .any(|c| c.template.contains("{{dynamic}}"))
        {
            bail!(
                "recipe {}: no template has a {{{{dynamic}}}} line",
                self.name
            );
        }
        for c in &mut r.configs {
            c.template = c.template.replace("{{dynamic}}", snippet);
        }
        if !w.notes.is_empty() {
            r.notes = format!("{} {}", r.notes, w.notes).trim().to_string();
        }
        Ok(r)
    }

    pub fn render(&self, template: &str, ctx: &RenderContext) -> anyhow::Result<String> {
        let mut out = String::with_capacity(template.len());
        for line in template.split_inclusive('\n') {
            let line = match line.strip_prefix("{{root}}") {
                Some(rest) if ctx.as_root => rest,
                Some(_) => continue,
                None => line,
            };
            out.push_str(
                &substitute(line, |k| ctx.value(k, &self.binary))
                    .with_context(|| format!("recipe {}: line {:?}", self.name, line.trim_end()))?,
            );
        }
        // Config files are written from the first template line on, and a
        // leading newline would only come from TOML's multi-line strings.
        Ok(out.trim_start_matches('\n').to_string())
    }

    /// The config files, rendered, with the path each is written to.
    pub fn render_configs(&self, ctx: &RenderContext) -> anyhow::Result<Vec<(PathBuf, String)>> {
        self.configs
            .iter()
            .map(|c| Ok((ctx.rundir.join(&c.file), self.render(&c.template, ctx)?)))
            .collect()
    }

    pub fn render_start(&self, ctx: &RenderContext) -> anyhow::Result<Vec<String>> {
        self.start.iter().map(|a| self.render(a, ctx)).collect()
    }

    pub fn render_env(&self, ctx: &RenderContext) -> anyhow::Result<Vec<(String, String)>> {
        self.env
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.render(v, ctx)?)))
            .collect()
    }

    pub fn stop_signal(&self) -> nix::sys::signal::Signal {
        signal_by_name(&self.stop_signal).unwrap_or(nix::sys::signal::Signal::SIGTERM)
    }

    pub fn is_installed(&self) -> bool {
        is_executable(Path::new(&self.binary))
    }

    /// Why the binary cannot be run, in words that follow its path; `None`
    /// when it can. A relative path or a folder was "not installed".
    pub fn not_runnable(&self) -> Option<&'static str> {
        let p = Path::new(&self.binary);
        if !p.is_absolute() {
            return Some("is not an absolute path");
        }
        match std::fs::metadata(p) {
            Err(_) => Some("is not installed"),
            Ok(_) if !is_executable(p) => Some("is not an executable file"),
            Ok(_) => None,
        }
    }

    pub fn exe_bytes(&self) -> u64 {
        std::fs::metadata(&self.binary)
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// The installed version, or an empty string when it cannot be told.
    pub fn version(&self) -> String {
        let Some((prog, args)) = self.version_command.split_first() else {
            return String::new();
        };
        let Ok(out) = Command::new(prog).args(args).output() else {
            return String::new();
        };
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        version_in(&text, &self.version_after).unwrap_or_default()
    }
}

/// The first run of digits and dots after `after` (anywhere when empty).
pub fn version_in(text: &str, after: &str) -> Option<String> {
    let start = if after.is_empty() {
        0
    } else {
        text.find(after)? + after.len()
    };
    let rest = &text[start..];
    let first = rest.find(|c: char| c.is_ascii_digit())?;
    let v: String = rest[first..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some(v.trim_end_matches('.').to_string())
}

fn signal_by_name(name: &str) -> anyhow::Result<nix::sys::signal::Signal> {
    use nix::sys::signal::Signal;
    let n = name.trim().trim_start_matches("SIG");
    Ok(match n {
        "TERM" => Signal::SIGTERM,
        "QUIT" => Signal::SIGQUIT,
        "INT" => Signal::SIGINT,
        "KILL" => Signal::SIGKILL,
        "HUP" => Signal::SIGHUP,
        "WINCH" => Signal::SIGWINCH,
        _ => bail!("unknown stop signal {name:?}"),
    })
}

/// A program looked up on PATH as a shell would (absolute directories only).
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// All known recipes: the built-ins, overridden or extended from a folder.
#[derive(Debug, Clone)]
pub struct Recipes {
    list: Vec<Recipe>,
}

impl Recipes {
    pub fn builtin() -> Recipes {
        let list = BUILTIN
            .iter()
            .map(|(name, text)| {
                let r =
                    Recipe::parse(text).unwrap_or_else(|e| panic!("built-in recipe {name}: {e:#}"));
                assert_eq!(&r.name, name, "built-in recipe file name and name differ");
                r
            })
            .collect();
        Recipes { list }
    }

    /// Built-ins, then every `*.toml` of `dir` (same name replaces).
    pub fn load(dir: Option<&Path>) -> anyhow::Result<Recipes> {
        let mut recipes = Recipes::builtin();
        let Some(dir) = dir else {
            return Ok(recipes);
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("reading recipes folder {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for f in files {
            let text = throng_model::read_text_file(&f)
                .map_err(|e| anyhow::anyhow!("recipe {}: {e}", f.display()))?;
            let r = Recipe::parse(&text).map_err(|e| crate::spot::in_file(e, &f, "recipe"))?;
            recipes.put(r);
        }
        Ok(recipes)
    }

    /// Built-ins, with `texts` (recipes as TOML, checked as a folder's
    /// are) replacing those of the same name or added.
    pub fn with_texts(texts: &[String]) -> anyhow::Result<Recipes> {
        let mut recipes = Recipes::builtin();
        for text in texts {
            recipes.put(Recipe::parse(text)?);
        }
        Ok(recipes)
    }

    /// `r` in place of the recipe of its name, or added.
    fn put(&mut self, r: Recipe) {
        match self.list.iter_mut().find(|x| x.name == r.name) {
            Some(slot) => *slot = r,
            None => self.list.push(r),
        }
    }

    /// Recipe `r` as TOML that [`Recipe::parse`] reads back as `r`.
    pub fn text_of(r: &Recipe) -> anyhow::Result<String> {
        Ok(toml::to_string(r)?)
    }

    pub fn get(&self, name: &str) -> Option<&Recipe> {
        self.list.iter().find(|r| r.name == name)
    }

    pub fn all(&self) -> &[Recipe] {
        &self.list
    }
}

/// The render context the tests of recipes, profiles and parity share.
#[cfg(test)]
pub(crate) fn test_context(as_root: bool) -> RenderContext {
    RenderContext {
        listen: std::net::Ipv4Addr::LOCALHOST.into(),
        port: 8081,
        backend_port: Some(8082),
        docroot: PathBuf::from("/tmp/run/docroot"),
        rundir: PathBuf::from("/tmp/run/nginx"),
        workers: 2,
        concurrency: 3000,
        user: "www-data".into(),
        group: "www-data".into(),
        as_root,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(as_root: bool) -> RenderContext {
        test_context(as_root)
    }

    /// What a server host apart is sent: every recipe, as TOML, reads
    /// back as itself.
    #[test]
    fn a_recipe_as_text_reads_back_as_itself() {
        for r in Recipes::builtin().all() {
            let text = Recipes::text_of(r).unwrap();
            assert_eq!(&Recipe::parse(&text).unwrap(), r, "{}", r.name);
        }
        let recipes = Recipes::with_texts(&[Recipes::text_of(&Recipe {
            name: "nginx-mine".into(),
            ..Recipes::builtin().get("nginx").unwrap().clone()
        })
        .unwrap()])
        .unwrap();
        assert_eq!(recipes.all().len(), Recipes::builtin().all().len() + 1);
        assert!(recipes.get("nginx-mine").is_some());
    }

    #[test]
    fn builtins_parse_and_render_without_unknown_placeholders() {
        let recipes = Recipes::builtin();
        let names: Vec<&str> = recipes.all().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "nginx",
                "lighttpd",
                "apache2-prefork",
                "apache2-worker",
                "apache2-event",
                "h2o",
                "caddy",
                "node",
                "varnish",
                "varnish-apache",
                "squid",
                "trafficserver"
            ]
        );
        for r in recipes.all() {
            for (root, listen) in [(false, "127.0.0.1"), (true, "127.0.0.1"), (true, "::1")] {
                let ctx = RenderContext {
                    listen: listen.parse().unwrap(),
                    ..ctx(root)
                };
                r.render_configs(&ctx).unwrap();
                r.render_start(&ctx).unwrap();
                r.render_env(&ctx).unwrap();
            }
        }
    }

    #[test]
    fn every_builtin_renders_the_equal_settings() {
        let recipes = Recipes::builtin();
        let conf = |name: &str| {
            recipes
                .get(name)
                .unwrap()
                .render_configs(&ctx(true))
                .unwrap()[0]
                .1
                .clone()
        };
        let nginx = conf("nginx");
        for want in [
            "worker_processes 2;",
            "access_log off;",
            "keepalive_timeout 60s;",
            "keepalive_requests 1024;",
            "listen 127.0.0.1:8081;",
            "user www-data www-data;",
            "worker_connections 6000;",
        ] {
            assert!(nginx.contains(want), "nginx lacks {want}");
        }
        assert!(!nginx.contains("sendfile") && !nginx.contains("gzip"));
        let lighttpd = conf("lighttpd");
        for want in [
            "server.max-worker = 2",
            "server.max-keep-alive-idle = 60",
            "server.max-keep-alive-requests = 1023",
            "server.username = \"www-data\"",
        ] {
            assert!(lighttpd.contains(want), "lighttpd lacks {want}");
        }
        assert!(!lighttpd.contains("mod_accesslog"));
        for mpm in ["prefork", "worker", "event"] {
            let a = conf(&format!("apache2-{mpm}"));
            assert!(a.contains(&format!("mod_mpm_{mpm}.so")));
            for want in [
                "KeepAliveTimeout 60",
                "MaxKeepAliveRequests 1023",
                "StartServers 2",
                "User www-data",
            ] {
                assert!(a.contains(want), "apache2-{mpm} lacks {want}");
            }
            assert!(!a.contains("log_config") && !a.contains("deflate"));
        }
        // 6000 connections over 2 children: 3000 threads each.
        assert!(conf("apache2-event").contains("ThreadsPerChild 3000\n"));
        assert!(conf("apache2-event").contains("MaxRequestWorkers 6000\n"));
        assert!(conf("apache2-prefork").contains("MaxRequestWorkers 6000\n"));
        let h2o = conf("h2o");
        assert!(h2o.contains("num-threads: 2\n") && h2o.contains("http1-request-timeout: 60\n"));
        assert!(!h2o.contains("access-log"));
        assert!(conf("caddy").contains("idle 60s"));
        assert!(conf("varnish").contains(".port = \"8082\";"));
        let v = recipes
            .get("varnish")
            .unwrap()
            .render_start(&ctx(false))
            .unwrap();
        assert!(
            v.contains(&"thread_pools=2".to_string()) && v.contains(&"timeout_idle=60".to_string())
        );
    }

    /// Every file, argument and variable a recipe renders, as one text.
    fn rendered(r: &Recipe, ctx: &RenderContext) -> String {
        let mut all: Vec<String> = r
            .render_configs(ctx)
            .unwrap()
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        all.extend(r.render_start(ctx).unwrap());
        all.extend(r.render_env(ctx).unwrap().into_iter().map(|(_, v)| v));
        all.join("\n")
    }

    #[test]
    fn builtins_listen_on_the_address_given_and_reach_backends_on_loopback() {
        let ctx = RenderContext {
            listen: "198.18.0.13".parse().unwrap(),
            ..ctx(true)
        };
        // Where a cache reaches its backend, which always runs on the
        // server's host: the only loopback addresses left.
        let backend = |name: &str| -> &[&str] {
            match name {
                "varnish" | "varnish-apache" => &[".host = \"127.0.0.1\";"],
                "squid" => &["cache_peer 127.0.0.1 parent 8082 "],
                "trafficserver" => &[
                    "map / http://127.0.0.1:8082/",
                    "  - apply: out\n    ip_addrs: 127.0.0.1\n",
                ],
                _ => &[],
            }
        };
        for r in Recipes::builtin().all() {
            let mut text = rendered(r, &ctx);
            for b in backend(&r.name) {
                assert!(text.contains(b), "{} lacks {b:?}", r.name);
                text = text.replace(b, "");
            }
            assert!(!text.contains("127.0.0.1"), "{}:\n{text}", r.name);
            assert!(text.contains("198.18.0.13"), "{}:\n{text}", r.name);
        }
    }

    #[test]
    fn ipv6_listening_addresses_are_bracketed_where_the_syntax_needs_it() {
        let ctx = RenderContext {
            listen: "::1".parse().unwrap(),
            ..ctx(true)
        };
        let recipes = Recipes::builtin();
        let text = |name: &str| rendered(recipes.get(name).unwrap(), &ctx);
        let wants = [
            ("nginx", "        listen [::1]:8081;\n"),
            ("lighttpd", "server.bind = \"[::1]\"\n"),
            ("apache2-event", "Listen [::1]:8081\n"),
            ("h2o", "  host: \"::1\"\n  port: 8081\n"),
            ("h2o", "  \"[::1]:8081\":\n"),
            ("caddy", "http://[::1]:8081 {\n\tbind ::1\n"),
            ("varnish", "\n-a\n[::1]:8081\n"),
            (
                "squid",
                "http_port [::1]:8081 accel defaultsite=[::1] no-vhost\n",
            ),
            (
                "trafficserver",
                "proxy.config.http.server_ports STRING 8081:ip-in=[::1]\n",
            ),
        ];
        for (name, want) in wants {
            assert!(text(name).contains(want), "{name} lacks {want:?}");
        }
        assert_eq!(url_host("198.18.0.13".parse().unwrap()), "198.18.0.13");
        assert_eq!(url_host("fd00::2".parse().unwrap()), "[fd00::2]");
    }

    #[test]
    fn dynamic_workloads_render_into_each_recipe_or_are_unsupported() {
        let recipes = Recipes::builtin();
        let conf = |name: &str, kind: WorkloadKind| {
            recipes
                .get(name)
                .unwrap()
                .for_workload(kind)
                .unwrap()
                .render_configs(&ctx(true))
                .unwrap()[0]
                .1
                .clone()
        };
        // Static workloads leave no trace of the dynamic configs.
        let nginx = conf("nginx", WorkloadKind::Page);
        assert!(!nginx.contains("fastcgi_pass") && !nginx.contains("{{"));
        assert!(conf("nginx", WorkloadKind::Php)
            .contains("fastcgi_pass unix:/tmp/run/nginx/helper.sock;\n"));
        let lighttpd = conf("lighttpd", WorkloadKind::Cgi);
        // mod_cgi must come before mod_staticfile, or the program is sent as a file.
        let cgi = lighttpd.find("\"mod_cgi\"").unwrap();
        assert!(cgi < lighttpd.find("\"mod_staticfile\"").unwrap());
        assert!(conf("apache2-prefork", WorkloadKind::App).contains(
            "ProxyPass \"/app/\" \"unix:/tmp/run/nginx/helper.sock|http://localhost/app/\"\n"
        ));
        assert!(conf("h2o", WorkloadKind::Cgi)
            .contains("        file.custom-handler:\n          extension: .cgi\n"));
        assert!(conf("caddy", WorkloadKind::Cgi).contains("\t\t\tsplit .cgi\n"));
        for name in ["nginx", "lighttpd", "apache2-event", "h2o", "caddy"] {
            for kind in [WorkloadKind::Cgi, WorkloadKind::Php, WorkloadKind::App] {
                let r = recipes.get(name).unwrap();
                assert!(r.workload(kind).unwrap().is_some(), "{name} {kind:?}");
            }
        }
        let helpers = |kind| {
            ["nginx", "lighttpd", "apache2-worker", "h2o", "caddy"].map(|n| {
                recipes
                    .get(n)
                    .unwrap()
                    .workload(kind)
                    .unwrap()
                    .unwrap()
                    .helper
            })
        };
        let fcgiwrap = Some(Helper::FcgiWrap);
        assert_eq!(
            helpers(WorkloadKind::Cgi),
            [fcgiwrap, None, None, None, fcgiwrap]
        );
        assert_eq!(
            helpers(WorkloadKind::Php),
            [(); 5].map(|_| Some(Helper::PhpFpm))
        );
        let varnish = recipes.get("varnish").unwrap();
        assert!(varnish.workload(WorkloadKind::Php).is_err());
        assert!(varnish.for_workload(WorkloadKind::Php).is_err());
        assert!(varnish.workload(WorkloadKind::Phpinfo).is_err());
        assert_eq!(varnish.workload(WorkloadKind::Tiny), Ok(None));
        // phpinfo() alone goes through each recipe's PHP table.
        for name in ["nginx", "lighttpd", "apache2-prefork", "apache2-worker"] {
            let r = recipes.get(name).unwrap();
            assert_eq!(
                r.workload(WorkloadKind::Phpinfo),
                r.workload(WorkloadKind::Php)
            );
            assert_eq!(
                r.for_workload(WorkloadKind::Phpinfo).unwrap(),
                r.for_workload(WorkloadKind::Php).unwrap()
            );
        }
        // In front of Apache, Varnish passes PHP on: nothing of its own,
        // no helper (the backend's is started), the VCL unchanged.
        let front = recipes.get("varnish-apache").unwrap();
        assert_eq!(front.backend.as_deref(), Some("apache2-prefork"));
        let php = front.workload(WorkloadKind::Phpinfo).unwrap().unwrap();
        assert_eq!((php.helper, php.config.as_str()), (None, ""));
        assert_eq!(
            front.for_workload(WorkloadKind::Phpinfo).unwrap().configs,
            front.configs
        );
        assert!(front.workload(WorkloadKind::Cgi).is_err());
        let mine = Recipe::from_command("mine", &["/bin/x".into()]).unwrap();
        assert_eq!(
            mine.workload(WorkloadKind::Cgi),
            Err("the mine recipe has no configuration for the cgi workload".to_string())
        );
    }

    #[test]
    fn varnish_neither_asks_for_nor_serves_gzip() {
        let recipes = Recipes::builtin();
        let v = recipes.get("varnish").unwrap();
        let argv = v.render_start(&ctx(false)).unwrap();
        assert!(argv.contains(&"http_gzip_support=off".to_string()));
        let vcl = &v.render_configs(&ctx(false)).unwrap()[0].1;
        assert!(vcl.contains("unset req.http.Accept-Encoding;"));
        assert!(v.notes.contains("Gzip pitfall"));
    }

    #[test]
    fn root_lines_are_dropped_when_not_root() {
        let r = Recipes::builtin();
        let nginx = r.get("nginx").unwrap();
        let conf = &nginx.render_configs(&ctx(false)).unwrap()[0].1;
        assert!(!conf.contains("user "));
        assert!(conf.starts_with("worker_processes 2;\n"));
    }

    #[test]
    fn unknown_placeholder_is_an_error() {
        let mut r = Recipe::from_command("x", &["/bin/x".into(), "{{port}}".into()]).unwrap();
        r.start[1] = "{{prot}}".into();
        let e = r.render_start(&ctx(false)).unwrap_err();
        assert!(
            format!("{e:#}").contains("unknown placeholder {{prot}}"),
            "{e:#}"
        );
    }

    #[test]
    fn a_recipe_files_error_is_one_line_at_its_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            format!("{:#}", Recipes::load(Some(dir.path())).unwrap_err())
        };
        let head = "name = \"mine\"\nbinary = \"/bin/true\"\n";
        assert_eq!(
            load(&format!("{head}start = [\"{{{{binary}}}}\"\n[[configs]]\n")),
            format!("{}:4:1: invalid array, expected `]`", path.display())
        );
        assert_eq!(
            load(&format!(
                "{head}start = [\"{{{{binary}}}}\", \"-p\", \"{{{{prot}}}}\"]\n"
            )),
            format!(
                "{}:3:31: recipe mine: `start`: unknown placeholder {{{{prot}}}} (known: {})",
                path.display(),
                PLACEHOLDERS.join(", ")
            )
        );
        assert_eq!(
            load(&format!("{head}start = []\n")),
            format!("recipe {}: recipe mine: `start` is empty", path.display())
        );
    }

    #[test]
    fn what_a_process_or_a_folder_cannot_take_is_refused_when_the_recipe_loads() {
        let base = "name = \"mine\"\nbinary = \"/bin/true\"\n";
        let refused = |rest: &str| {
            Recipe::parse(&format!("{base}{rest}"))
                .unwrap_err()
                .to_string()
        };
        let start = "start = [\"{{binary}}\"]\n";
        assert_eq!(
            refused("start = [\"{{binary}}\", \"a\\u0000b\"]\n"),
            "recipe mine: `start` argument \"a\\0b\" holds a NUL byte"
        );
        for name in ["\"A=B\"", "\"\"", "\"A\\u0000\""] {
            let e = refused(&format!("{start}[env]\n{name} = \"x\"\n"));
            assert!(
                e.contains("must be non-empty and hold no '=' or NUL"),
                "{name}: {e}"
            );
        }
        assert_eq!(
            refused(&format!("{start}[env]\nA = \"x\\u0000\"\n")),
            "recipe mine: [env] A holds a NUL byte"
        );
        assert_eq!(
            Recipe::parse(&format!("name = \"mine\"\nbinary = \"\"\n{start}"))
                .unwrap_err()
                .to_string(),
            "recipe mine: `binary` is empty"
        );
        let twice = "[[configs]]\nfile = \"m.conf\"\ntemplate = \"a\"\n";
        assert_eq!(
            refused(&format!("{start}{twice}{twice}")),
            "recipe mine: [[configs]] names m.conf twice"
        );
    }

    #[test]
    fn an_unknown_placeholder_is_refused_when_the_recipe_loads_with_its_place() {
        let known = PLACEHOLDERS.join(", ");
        let base = "name = \"mine\"\nbinary = \"/bin/true\"\nstart = [\"{{binary}}\"]\n";
        let refused = |rest: &str| {
            Recipe::parse(&format!("{base}{rest}"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(
                "[[configs]]\nfile = \"m.conf\"\ntemplate = '''\nport {{port}};\n\
                 conns {{ max_conections }};\n'''\n"
            ),
            format!(
                "line 8, column 7: recipe mine: [[configs]] m.conf: unknown placeholder \
                 {{{{ max_conections }}}} (known: {known})"
            )
        );
        assert_eq!(
            refused("[env]\nPORT = \"{{port\"\n"),
            format!(
                "line 5, column 9: recipe mine: [env] PORT: unknown placeholder {{{{port \
                 (known: {known})"
            )
        );
        assert_eq!(
            refused("[[configs]]\nfile = \"m.conf\"\ntemplate = \"proxy {{backend_port}}\"\n"),
            "line 6, column 19: recipe mine: [[configs]] m.conf: {{backend_port}} is the port \
             of the recipe's `backend`, and it names none"
        );
        // A line kept or dropped whole by `{{root}}` is checked past it.
        assert!(
            refused("[[configs]]\nfile = \"m.conf\"\ntemplate = \"{{root}}user {{usr}};\"\n")
                .contains("unknown placeholder {{usr}}")
        );
        let e = Recipe::from_command("x", &["/bin/x".into(), "{{prot}}".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("server x: `command`: unknown placeholder {{{{prot}}}} (known: {known})")
        );
    }

    #[test]
    fn version_is_found_after_its_marker() {
        assert_eq!(
            version_in("nginx version: nginx/1.22.1\n", "nginx/").as_deref(),
            Some("1.22.1")
        );
        assert_eq!(
            version_in("Server version: Apache/2.4.62 (Debian)\n", "Apache/").as_deref(),
            Some("2.4.62")
        );
        assert_eq!(version_in("2.6.2\n", "").as_deref(), Some("2.6.2"));
        assert_eq!(
            version_in("varnishd (varnish-7.1.1 revision", "varnish-").as_deref(),
            Some("7.1.1")
        );
        assert_eq!(version_in("no digits", "x"), None);
    }

    #[test]
    fn folder_overrides_and_extends_builtins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("nginx.toml"),
            "name = \"nginx\"\nbinary = \"/opt/nginx\"\nstart = [\"/opt/nginx\"]\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("mine.toml"),
            "name = \"mine\"\nbinary = \"/opt/mine\"\nstart = [\"/opt/mine\", \"{{port}}\"]\nstop_signal = \"QUIT\"\n",
        )
        .unwrap();
        let r = Recipes::load(Some(dir.path())).unwrap();
        // The built-ins, nginx replaced, and one more.
        assert_eq!(r.all().len(), BUILTIN.len() + 1);
        assert_eq!(r.get("nginx").unwrap().binary, "/opt/nginx");
        assert_eq!(
            r.get("mine").unwrap().stop_signal(),
            nix::sys::signal::Signal::SIGQUIT
        );
        std::fs::write(
            dir.path().join("bad.toml"),
            "name = \"bad\"\nbinary = \"/x\"\nstart = [\"/x\"]\nstop_signal = \"NOPE\"\n",
        )
        .unwrap();
        assert!(Recipes::load(Some(dir.path())).is_err());
    }
}
