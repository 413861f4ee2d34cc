//! Studies: what `throng lab` runs, from a built-in name or a TOML file
//! (format in docs/study-format.md), and the plan of core assignments.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use throng_servers::{names, Profile, Recipe, Recipes};

use crate::group::Group;
use crate::precision::Precision;
use crate::workload::{OwnSite, WorkloadId};

mod client;
mod cores;
mod duet;
mod hosts;
mod limits;
mod link;
mod load;
mod machine;
mod protocol;
mod site;
mod tables;
mod threshold;
mod thresholds;
mod users;
mod users_cap;
mod values;

pub use users_cap::{CapLimit, UsersCap};

pub use cores::{auto_note as auto_cores_note, plan_cores, plan_cores_apart, CoresPlan};
pub use hosts::Hosts;
pub use link::path_links;
use load::*;
pub use load::{Level, WorkloadLoad};
use protocol::protocols;
pub use protocol::Protocol;
pub use tables::{parse_duration, LoadTable};
pub use threshold::{PrecisionKey, PrecisionRule};
pub use thresholds::ThresholdLimits;
pub use values::{parse_range, ListOrRange, ServerEntry};

/// The highest concurrency the search may try: the study's cap, bounded by
/// the connections the open-file limit allows.
pub fn cap_by_open_files(cap: u32) -> u32 {
    let most = throng_engine::max_connections().min(u32::MAX as u64) as u32;
    cap.min(most).max(1)
}

/// Built-in studies, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    ("quick", include_str!("../../studies/quick.toml")),
    (
        "static-sweep",
        include_str!("../../studies/static-sweep.toml"),
    ),
    ("acme", include_str!("../../studies/acme.toml")),
    ("ladder", include_str!("../../studies/ladder.toml")),
    ("shootout", include_str!("../../studies/shootout.toml")),
    ("sessions", include_str!("../../studies/sessions.toml")),
    (
        "site-visits",
        include_str!("../../studies/site-visits.toml"),
    ),
    ("calibrate", include_str!("../../studies/calibrate.toml")),
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundsFile {
    #[serde(default = "d_seconds")]
    pub seconds: f64,
    #[serde(default = "d_round_warmup")]
    pub warmup_seconds: f64,
    #[serde(default = "d_min")]
    pub min: u32,
    #[serde(default = "d_max")]
    pub max: u32,
    #[serde(default = "d_step_seconds")]
    pub step_seconds: f64,
    /// A number pins the decision threshold; absent (or "calibrated"),
    /// it comes from the machine's calibration run.
    #[serde(default)]
    pub precision: PrecisionKey,
    /// The threshold when the machine has no calibration run.
    #[serde(default)]
    pub fallback_precision: Option<f64>,
    /// Starts of every server a group gets at least (see
    /// `Precision::launches`).
    /// Default: 2, or `max` when that is fewer.
    #[serde(default)]
    pub launches: Option<u32>,
    /// Starts a timed group may get while its comparisons are not narrow
    /// enough; at least `launches`.
    #[serde(default)]
    pub max_launches: Option<u32>,
}

/// The most starts a study may ask of each server in a group: each costs
/// every server's start and warmup.
pub const MAX_LAUNCHES: u32 = 20;

fn d_seconds() -> f64 {
    5.0
}
fn d_round_warmup() -> f64 {
    0.5
}
fn d_min() -> u32 {
    3
}
fn d_max() -> u32 {
    10
}
fn d_step_seconds() -> f64 {
    60.0
}
fn d_warmup() -> f64 {
    2.0
}

impl Default for RoundsFile {
    fn default() -> Self {
        RoundsFile {
            seconds: d_seconds(),
            warmup_seconds: d_round_warmup(),
            min: d_min(),
            max: d_max(),
            step_seconds: d_step_seconds(),
            precision: PrecisionKey::default(),
            fallback_precision: None,
            launches: None,
            max_launches: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The published article the study rebuilds, and how it differs.
    #[serde(default)]
    pub article: Option<throng_model::ArticleNote>,
    pub servers: Vec<ServerEntry>,
    pub workloads: Vec<String>,
    #[serde(deserialize_with = "values::cores")]
    pub cores: ListOrRange,
    #[serde(deserialize_with = "values::concurrency")]
    pub concurrency: ListOrRange,
    /// Load before the sweep of each started server, not measured.
    #[serde(default = "d_warmup")]
    pub warmup_seconds: f64,
    #[serde(default)]
    pub rounds: RoundsFile,
    #[serde(default)]
    pub allow_shared_cores: bool,
    /// Probe every server's features live before the sweep.
    #[serde(default = "d_features")]
    pub features: bool,
    /// After each sweep, step concurrency up until the server breaks.
    #[serde(default)]
    pub max_users: bool,
    /// p99 above this is a broken level for max users.
    #[serde(default = "d_patience")]
    pub patience_seconds: f64,
    /// Highest concurrency the max-users search tries (default: 4 × the
    /// sweep's highest level), bounded by the open-file limit.
    #[serde(default)]
    pub max_users_cap: Option<u32>,
    /// The load engine's naps before waiting for responses (closed model;
    /// `throng load --no-coalesce` is the same switch).
    #[serde(default = "d_client_naps")]
    pub client_naps: bool,
    /// A nap is at most 1/D of the recent latency (`throng load
    /// --nap-divisor D`): a smaller D spends less client CPU per response
    /// and holds more connections on the client (docs/performance.md).
    #[serde(default)]
    pub client_nap_divisor: Option<u64>,
    /// Closed-model rounds: a wait for a response spins this long before
    /// it sleeps, and takes no naps (`throng load --spin`).
    #[serde(default)]
    pub client_spin: Option<String>,
    /// After each step's measured rounds, one diagnostic round that counts
    /// the server's syscalls and context switches per request.
    #[serde(default = "d_diagnose")]
    pub diagnose: bool,
    /// The server the others are compared against (default: the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Two servers at once on separate, equal cores, each under its own
    /// load, so that both see the same interference at every instant.
    #[serde(default)]
    pub duet: bool,
    /// "global" (the default): servers start on the kernel's global futex
    /// hash; "kernel": on whatever the kernel gives them (`crate::futex`).
    #[serde(default)]
    pub futex_hash: Option<String>,
    /// The recipes' profile: "defaults" or "tuned".
    #[serde(default)]
    pub profile: Option<String>,
    /// Several profiles: every server is run with each, the later ones
    /// named `SERVER-PROFILE`, to measure what tuning is worth.
    #[serde(default)]
    pub profiles: Option<Vec<String>>,
    /// How clients speak to every server: "http1" (the default), "https1",
    /// "h2" (HTTP/2 over TLS), "h2c" (HTTP/2 over cleartext);
    /// each after the first makes a server `SERVER-PROTOCOL`.
    #[serde(default)]
    pub protocols: Option<Vec<String>>,
    /// The key of the run's TLS certificate: "ecdsa-p256" (default) or
    /// "rsa2048".
    #[serde(default)]
    pub certificate: Option<String>,
    /// Where the servers run: "local" or "ssh://[user@]host[:port]".
    #[serde(default)]
    pub server_host: Option<String>,
    /// Where the load comes from, split over the hosts.
    #[serde(default)]
    pub client_hosts: Option<Vec<String>>,
    /// The ssh command line (THRONG_SSH_COMMAND overrides it, as
    /// GIT_SSH_COMMAND overrides git's core.sshCommand).
    #[serde(default)]
    pub ssh_command: Option<String>,
    /// Any other stdio transport, e.g. "kubectl exec -i {host} --".
    #[serde(default)]
    pub transport: Option<String>,
    /// The address servers listen on and client hosts connect to
    /// (default: server_host's name, resolved here).
    #[serde(default)]
    pub server_address: Option<String>,
    /// The path's rate between client and server hosts, in bits per
    /// second ("1Gbit"), where /sys does not show it or shows another.
    #[serde(default)]
    pub link_capacity: Option<String>,
    /// How every workload's requests are made.
    #[serde(default)]
    pub load: LoadTable,
    /// One workload's own levels and requests, over `[load]`.
    #[serde(default)]
    pub workload: BTreeMap<String, LoadTable>,
    /// Pass-or-fail limits each step is judged against, by figure.
    #[serde(default)]
    pub thresholds: BTreeMap<String, ThresholdLimits>,
}

fn d_diagnose() -> bool {
    true
}

fn d_features() -> bool {
    true
}
fn d_client_naps() -> bool {
    true
}
fn d_patience() -> f64 {
    throng_model::max_users::DEFAULT_PATIENCE_S
}

/// A server as the study runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyServer {
    pub name: String,
    /// The recipe with its profile (and its protocol's config) applied.
    pub recipe: Recipe,
    pub backend: Option<Recipe>,
    pub profile: Profile,
    pub protocol: Protocol,
    /// Why the server cannot be measured with its protocol (a recipe that
    /// serves no TLS): its steps are stored as unsupported, with this.
    pub unsupported: Option<String>,
    /// Over TLS: the key of the certificate it serves.
    pub certificate: crate::certs::CertKind,
    /// Its recipe over cleartext HTTP/1.1, when the study measures it
    /// over another protocol alone (no "http1" in `protocols`): the
    /// feature probes that are not its protocol's own (range, basic auth,
    /// gzip...) are made there, since no cleartext server of the study
    /// makes them.
    pub cleartext: Option<Recipe>,
}

/// A validated study.
#[derive(Debug, Clone)]
pub struct Study {
    pub name: String,
    pub description: String,
    /// The TOML as given, stored with the run.
    pub toml: String,
    pub servers: Vec<StudyServer>,
    /// The recipes the servers were drawn from, as found (before profile
    /// and protocol): a server host apart starts its servers from these,
    /// a `--recipes` folder's among them, rather than its built-ins.
    pub recipes: Vec<Recipe>,
    pub workloads: Vec<WorkloadId>,
    /// The workloads of `workloads` that are sites of the user's own.
    pub sites: Vec<OwnSite>,
    /// `None`: "auto", chosen from the machine's cores.
    pub cores: Option<Vec<u32>>,
    pub concurrency: Vec<u32>,
    pub warmup_s: f64,
    pub round_s: f64,
    pub round_warmup_s: f64,
    /// `precision.target` is the threshold before the run looks for a
    /// calibration run; this says whether it may.
    pub precision: Precision,
    pub precision_rule: PrecisionRule,
    pub allow_shared_cores: bool,
    pub features: bool,
    /// `Some(cap)` when the study searches max users, up to `cap`.
    pub max_users_cap: Option<u32>,
    /// The kernel's task ids (see [`Study::users_cap`]), read as the
    /// study is.
    pub task_ids: Option<u32>,
    pub patience_s: f64,
    /// Whether client threads nap before blocking for responses
    /// (docs/methodology.md, "The load generator").
    pub client_naps: bool,
    /// A nap's fraction of the recent latency is 1/this.
    pub client_nap_divisor: u64,
    /// How long a closed-model round's wait for a response spins before
    /// it sleeps (docs/methodology.md, "Spinning for answers").
    pub client_spin: Option<std::time::Duration>,
    /// Whether each step ends with a diagnostic round.
    pub diagnose: bool,
    /// Index in `servers` of the server the others are compared against.
    pub baseline: usize,
    pub duet: bool,
    /// Whether servers start on the kernel's global futex hash.
    pub futex_global: bool,
    pub hosts: Hosts,
    /// `link_capacity`, in bits per second.
    pub link_capacity: Option<u64>,
    /// Per workload of `workloads`, in order: its levels and requests.
    pub loads: Vec<WorkloadLoad>,
    /// `[load]` alone over the study's levels, for a workload the study
    /// does not list.
    pub default_load: WorkloadLoad,
    /// `[thresholds]`: each step judged against them by its worst round.
    pub thresholds: Vec<throng_load::thresholds::Threshold>,
}

impl Study {
    /// A measured round of this study in `group` at `level`: the
    /// study's round length or the workload's requests per round, the
    /// workload's timeout (the study's, else its kind's), order and
    /// request shape.
    pub fn round_load(&self, group: &Group, level: Level, seed: u64) -> crate::spec::RoundLoad {
        let kind = group.workload.kind;
        let study = self;
        let w = study.load_of(kind);
        crate::spec::RoundLoad {
            concurrency: level.concurrency,
            rate: level.rate,
            seconds: if w.round_requests.is_some() {
                crate::spec::COUNTED_ROUND_WATCH_S
            } else {
                study.round_s
            },
            requests: w.round_requests,
            warmup_s: study.round_warmup_s,
            timeout: w.timeout.unwrap_or_else(|| kind.request_timeout()),
            random_order: w.random_order,
            naps: study.client_naps,
            nap_divisor: study.client_nap_divisor,
            spin: study.client_spin,
            tick: w.tick,
            seed,
            client_cpus: group.client_cpus.clone(),
            shape: w.shape.clone(),
        }
    }

    /// A built-in name or a path to a TOML file.
    pub fn load(name_or_path: &str, recipes: &Recipes) -> anyhow::Result<Study> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Study::parse(text, recipes);
        }
        let p = Path::new(name_or_path);
        // A name that is plainly a path is a file that is not there, not
        // an unknown built-in.
        if !p.exists() && (name_or_path.contains('/') || name_or_path.ends_with(".toml")) {
            bail!("study {name_or_path}: no such file");
        }
        if !p.exists() {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            bail!(
                "no study named {name_or_path:?}: built-in studies are {}, or give a TOML file",
                names.join(", ")
            );
        }
        let text = throng_model::read_text_file(p)
            .map_err(|e| anyhow::anyhow!("study {}: {e}", p.display()))?;
        let dir = p.parent().unwrap_or(Path::new(""));
        Study::parse_at(&text, recipes, dir)
            .map_err(|e| throng_servers::spot::in_file(e, p, "study"))
    }

    /// A study's TOML, its paths relative to the current folder.
    pub fn parse(text: &str, recipes: &Recipes) -> anyhow::Result<Study> {
        Study::parse_at(text, recipes, Path::new("."))
    }

    /// A study's TOML, its paths (`docroot`, `urls`) relative to `base`.
    pub fn parse_at(text: &str, recipes: &Recipes, base: &Path) -> anyhow::Result<Study> {
        Study::parse_with(text, recipes, base, true)
    }

    /// A study's TOML on its server host: its sites of the user's own are
    /// not read from this host's disk but sent by the coordinator, which
    /// read and checked them there (`sites` stays empty).
    pub fn parse_sent(text: &str, recipes: &Recipes) -> anyhow::Result<Study> {
        Study::parse_with(text, recipes, Path::new("."), false)
    }

    fn parse_with(
        text: &str,
        recipes: &Recipes,
        base: &Path,
        sites_here: bool,
    ) -> anyhow::Result<Study> {
        let f: StudyFile = throng_servers::spot::from_str(text)?;
        if let Some(problem) = f.article.as_ref().and_then(|a| a.problem()) {
            bail!("{problem}");
        }
        let profiles = profiles(&f)?;
        let protocols = protocols(&f)?;
        let certificate = match &f.certificate {
            None => crate::certs::CertKind::default(),
            Some(c) => crate::certs::CertKind::parse(c).ok_or_else(|| {
                anyhow::anyhow!("certificate = {c:?}: give \"ecdsa-p256\" or \"rsa2048\"")
            })?,
        };
        if f.certificate.is_some() && !protocols.iter().any(|p| p.tls()) {
            bail!(
                "certificate: only TLS servers serve one; add \"https1\", \"h2\" or \"h3\" \
                 to `protocols`"
            );
        }
        let mut servers = Vec::new();
        let mut drawn = Vec::new();
        for (e, profile, protocol) in f.servers.iter().flat_map(|e| {
            profiles
                .iter()
                .flat_map(|p| protocols.iter().map(move |q| (*p, *q)))
                .map(move |(p, q)| (e, p, q))
        }) {
            let (name, recipe) = match e {
                ServerEntry::Recipe(n) => (n.clone(), find(recipes, n, &mut drawn)?),
                ServerEntry::Table {
                    name,
                    recipe: Some(r),
                    command: None,
                } => (name.clone(), find(recipes, r, &mut drawn)?),
                ServerEntry::Table {
                    name,
                    recipe: None,
                    command: Some(c),
                } => (name.clone(), Recipe::from_command(name, c)?),
                ServerEntry::Table { name, .. } => {
                    bail!("server {name:?}: give either `recipe` or `command`")
                }
            };
            // With several profiles, the first keeps the plain name.
            let name = if profile == profiles[0] {
                name
            } else {
                format!("{name}-{}", profile.name())
            };
            let name = if protocol == protocols[0] {
                name
            } else {
                format!("{name}-{}", protocol.name())
            };
            let recipe = recipe.profiled(profile)?;
            let cleartext = (protocol != Protocol::Http1 && !protocols.contains(&Protocol::Http1))
                .then(|| recipe.clone());
            let (over, what) = match protocol {
                Protocol::Http1 => (Some(recipe.clone()), ""),
                Protocol::Https1 => (recipe.over_tls()?, "no TLS"),
                Protocol::H2 => (recipe.over_h2()?, "no HTTP/2 over TLS"),
                Protocol::H2c => (recipe.over_h2c()?, "no HTTP/2 over cleartext (h2c)"),
                Protocol::H3 => (recipe.over_h3()?, "no HTTP/3"),
            };
            let (recipe, unsupported) = match over {
                Some(r) => (r, None),
                None => {
                    // A recipe may say why (the version Debian ships, a
                    // module it is built without): that is what is stored.
                    let because = match protocol {
                        Protocol::H3 => recipe.h3_unsupported().map(|w| format!(": {w}")),
                        _ => None,
                    };
                    let why = format!(
                        "{} serves {what} in throng's recipe, so it is not measured over {}{}",
                        recipe.name,
                        protocol.name(),
                        because.unwrap_or_default()
                    );
                    (recipe, Some(why))
                }
            };
            names::check("server name", &name)?;
            if servers.iter().any(|s: &StudyServer| s.name == name) {
                bail!("server {name:?} is listed twice");
            }
            let backend = match &recipe.backend {
                Some(b) => Some(find(recipes, b, &mut drawn)?),
                None => None,
            };
            servers.push(StudyServer {
                name,
                recipe,
                backend,
                profile,
                protocol,
                unsupported,
                certificate,
                cleartext,
            });
        }
        if servers.is_empty() {
            bail!("the study lists no servers");
        }
        values::once("workloads", &f.workloads, "workload name")?;
        let workloads = f
            .workloads
            .iter()
            .map(|w| match f.workload.contains_key(w) {
                true => workload_id(&f, w).map_err(|e| anyhow::anyhow!("[workload.{w}]{e}")),
                false => crate::workload::parse_kind(w).map(WorkloadId::Builtin),
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        if workloads.is_empty() {
            bail!("the study lists no workloads");
        }
        let cores = match &f.cores {
            ListOrRange::Text(t) if t == "auto" => None,
            c => Some(c.values("cores")?),
        };
        if cores
            .as_ref()
            .is_some_and(|c| c.is_empty() || c.contains(&0))
        {
            bail!("cores: give core counts of 1 or more");
        }
        values::once("cores", cores.as_deref().unwrap_or_default(), "core count")?;
        let concurrency = f.concurrency.values("concurrency")?;
        if concurrency.is_empty() || concurrency.contains(&0) {
            bail!("concurrency: give levels of 1 or more");
        }
        values::once("concurrency", &concurrency, "level")?;
        limits::check(&f)?;
        let r = &f.rounds;
        if r.seconds.is_nan() || r.seconds <= 0.0 || r.min == 0 || r.max < r.min {
            bail!("rounds: need seconds > 0, 1 <= min <= max");
        }
        // Each launch measures every level once at least.
        let launches = r.launches.unwrap_or(2.min(r.max));
        if launches == 0 || launches > MAX_LAUNCHES.min(r.max) {
            bail!(
                "rounds.launches = {launches}: give 1 to {} starts of each server (each \
                 measures every level once at least, and rounds.max = {})",
                MAX_LAUNCHES.min(r.max),
                r.max
            );
        }
        let max_launches = r.max_launches.unwrap_or(launches.max(5));
        if max_launches < launches || max_launches > MAX_LAUNCHES {
            bail!(
                "rounds.max_launches = {max_launches}: give {launches} to {MAX_LAUNCHES}, at \
                 least rounds.launches"
            );
        }
        let precision_rule = threshold::rule(r)?;
        let (default_load, loads) = resolve_loads(&f, &workloads, &concurrency, base)?;
        protocol::check_h3(&protocols, &loads)?;
        let hosts = Hosts::parse(&f)?;
        let link_capacity = link::stated(f.link_capacity.as_deref())?;
        // A server host elsewhere is reached only when the study runs; its
        // plan then skips, with the reason, a count it lacks.
        if hosts.server.is_local() {
            cores::check_cpus(cores.as_deref(), throng_engine::affinity::own_cpus().len())?;
        }
        let sites = if sites_here {
            site::open_sites(&f, &workloads, base)?
        } else {
            Vec::new()
        };
        let sweep_top = loads
            .iter()
            .flat_map(|w| &w.concurrency)
            .max()
            .copied()
            .unwrap_or(1);
        // Users who think each hold up to `conns_per_user` connections.
        let per_user = loads
            .iter()
            .filter_map(|w| w.shape.users.as_ref().map(|u| u.conns_per_user as u32))
            .max()
            .unwrap_or(1)
            .max(1);
        let max_users_cap = f.max_users.then(|| {
            let cap = f.max_users_cap.unwrap_or(sweep_top.saturating_mul(4));
            cap_by_open_files(cap.saturating_mul(per_user)) / per_user
        });
        if f.patience_seconds.is_nan() || f.patience_seconds <= 0.0 {
            bail!("patience_seconds: give a time above 0");
        }
        let (client_nap_divisor, client_spin) = client::waits(&f)?;
        let baseline = match &f.baseline {
            None => 0,
            Some(b) => servers.iter().position(|s| &s.name == b).with_context(|| {
                let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                format!(
                    "baseline {b:?} is not a server of the study ({})",
                    names.join(", ")
                )
            })?,
        };
        Ok(Study {
            name: f.name.clone(),
            description: f.description.clone(),
            toml: text.to_string(),
            servers,
            recipes: drawn,
            workloads,
            sites,
            cores,
            concurrency,
            warmup_s: f.warmup_seconds.max(0.0),
            round_s: r.seconds,
            round_warmup_s: r.warmup_seconds.max(0.0),
            precision: Precision {
                target: precision_rule.before_calibration(),
                min_rounds: r.min,
                max_rounds: r.max,
                max_step_s: r.step_seconds,
                launches,
                max_launches,
            },
            precision_rule,
            allow_shared_cores: f.allow_shared_cores,
            features: f.features,
            max_users_cap,
            task_ids: users_cap::read_task_ids(),
            patience_s: f.patience_seconds,
            client_naps: f.client_naps,
            client_nap_divisor,
            client_spin,
            diagnose: f.diagnose,
            baseline,
            duet: f.duet,
            futex_global: crate::futex::global(f.futex_hash.as_deref())?,
            hosts,
            link_capacity,
            loads,
            default_load,
            thresholds: thresholds::read(&f.thresholds)?,
        })
    }

    /// How `kind`'s requests are made and its levels.
    pub fn load_of(&self, kind: impl Into<WorkloadId>) -> &WorkloadLoad {
        let kind = kind.into();
        self.loads
            .iter()
            .find(|w| w.kind == kind)
            .unwrap_or(&self.default_load)
    }

    /// The concurrency levels of `kind`'s sweep.
    pub fn levels(&self, kind: impl Into<WorkloadId>) -> &[u32] {
        &self.load_of(kind).concurrency
    }

    /// Steps of one server at one core count: every workload's levels.
    pub fn levels_per_cores(&self) -> u64 {
        self.loads.iter().map(|w| w.levels().len() as u64).sum()
    }

    /// Some workload opens a connection per request: the machine checks
    /// then look at what running out of ports takes.
    pub fn close_mode(&self) -> bool {
        self.loads.iter().any(|w| !w.shape.keep_alive)
    }

    /// Fails, naming each package to install, when a server the study
    /// needs is not installed: checked before anything is started or
    /// stored.
    pub fn check_installed(&self) -> anyhow::Result<()> {
        let missing = self.missing_servers();
        if !missing.is_empty() {
            bail!(
                "study {} cannot start its servers: {}",
                self.name,
                missing.join("; ")
            );
        }
        Ok(())
    }

    /// The programs the server host must have: every recipe's binary.
    pub fn programs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.servers {
            for r in std::iter::once(&s.recipe).chain(&s.backend) {
                if !out.contains(&r.binary) {
                    out.push(r.binary.clone());
                }
            }
        }
        out
    }

    /// Recipes the study needs that are not installed, as messages naming
    /// the Debian package to install.
    pub fn missing_servers(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.servers {
            for r in std::iter::once(&s.recipe).chain(&s.backend) {
                if let Some(why) = r.not_runnable() {
                    let how = if r.package.is_empty() || why != "is not installed" {
                        String::new()
                    } else {
                        format!(" (apt-get install {})", r.package)
                    };
                    let m = format!("{}: {} {why}{how}", s.name, r.binary.escape_debug());
                    if !out.contains(&m) {
                        out.push(m);
                    }
                }
            }
        }
        out
    }

    /// The servers' indices in the order they are compared: the baseline
    /// first, then the others as listed. Each is compared with every one
    /// before it.
    pub fn comparison_order(&self) -> Vec<usize> {
        std::iter::once(self.baseline)
            .chain((0..self.servers.len()).filter(|&i| i != self.baseline))
            .collect()
    }
}

/// The profiles a study asks for, in order: `profile` or `profiles`, or
/// the recipes' defaults.
fn profiles(f: &StudyFile) -> anyhow::Result<Vec<Profile>> {
    let names: Vec<String> = match (&f.profile, &f.profiles) {
        (Some(_), Some(_)) => bail!("give `profile` or `profiles`, not both"),
        (Some(p), None) => vec![p.clone()],
        (None, Some(ps)) => ps.clone(),
        (None, None) => return Ok(vec![Profile::Defaults]),
    };
    if names.is_empty() {
        bail!("profiles: give at least one of \"defaults\", \"tuned\"");
    }
    let mut out = Vec::new();
    for n in &names {
        let p = Profile::parse(n).with_context(|| {
            format!("profile {n:?}: known profiles are \"defaults\" and \"tuned\"")
        })?;
        if out.contains(&p) {
            bail!("profile {n:?} is listed twice");
        }
        out.push(p);
    }
    Ok(out)
}

/// Recipe `name`, noted in `drawn` once.
fn find(recipes: &Recipes, name: &str, drawn: &mut Vec<Recipe>) -> anyhow::Result<Recipe> {
    let r = recipes.get(name).cloned().with_context(|| {
        let known: Vec<&str> = recipes.all().iter().map(|r| r.name.as_str()).collect();
        format!("no recipe {name:?} (known: {})", known.join(", "))
    })?;
    if !drawn.iter().any(|d: &Recipe| d.name == r.name) {
        drawn.push(r.clone());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RequestShape;
    use std::time::Duration;
    use throng_model::WorkloadKind;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("10..50 step 10").unwrap(), [10, 20, 30, 40, 50]);
        assert_eq!(parse_range("1..3").unwrap(), [1, 2, 3]);
        assert_eq!(parse_range("10..1000 step 10").unwrap().len(), 100);
        assert_eq!(parse_range("5..12 step 5").unwrap(), [5, 10]);
        assert!(parse_range("50..10").is_err());
        assert!(parse_range("1..10 step 0").is_err());
        assert!(parse_range("ten..20").is_err());
    }

    #[test]
    fn builtins_parse() {
        let r = Recipes::builtin();
        let quick = Study::load("quick", &r).unwrap();
        let names: Vec<&str> = quick.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["nginx", "lighttpd", "apache2-event", "h2o"]);
        assert_eq!(quick.concurrency, [10, 50, 100, 200]);
        assert_eq!(quick.cores, Some(vec![1]));
        assert_eq!(quick.workloads, [WorkloadKind::Tiny.into()]);
        assert!(quick.client_naps);
        let sweep = Study::load("static-sweep", &r).unwrap();
        assert_eq!(sweep.cores, None);
        assert_eq!(sweep.concurrency.len(), 10);
        assert_eq!(sweep.servers.len(), 8);
        assert_eq!(sweep.servers[7].backend.as_ref().unwrap().name, "nginx");
        let acme = Study::load("acme", &r).unwrap();
        assert_eq!(
            acme.workloads,
            [
                WorkloadKind::SmallFiles.into(),
                WorkloadKind::Cgi.into(),
                WorkloadKind::Large.into()
            ]
        );
        let e = Study::load("nope", &r).unwrap_err().to_string();
        assert!(e.contains("quick, static-sweep, acme"), "{e}");
    }

    #[test]
    fn every_study_that_rebuilds_an_article_says_which_and_how_it_differs() {
        for (name, text) in BUILTIN {
            let f: StudyFile = toml::from_str(text).unwrap();
            let rebuilds = ["static-sweep", "acme", "ladder", "shootout", "sessions"];
            match f.article {
                Some(a) => {
                    assert!(rebuilds.contains(name), "{name}");
                    assert_eq!(a.problem(), None, "{name}");
                    assert!(!a.differences.is_empty(), "{name}");
                }
                None => assert!(!rebuilds.contains(name), "{name} has no [article]"),
            }
        }
    }

    #[test]
    fn an_article_table_the_report_could_not_show_is_refused() {
        let r = Recipes::builtin();
        let parse = |article: &str| {
            let text = format!(
                "name = \"x\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
                 concurrency = [10]\n[article]\n{article}"
            );
            Study::parse(&text, &r).map_err(|e| e.to_string())
        };
        let fine = "source = \"s\"\nmeasured = \"m\"\n";
        assert_eq!(
            parse(&format!("title = \"t\"\n{fine}here = \" \"\n")).unwrap_err(),
            "article.here is empty: say it in a sentence"
        );
        assert_eq!(
            parse(&format!("title = \"t\\u0007\"\n{fine}here = \"h\"\n")).unwrap_err(),
            "article.title holds a control character"
        );
        let e = parse(&format!("title = \"t\"\n{fine}here = \"h\"\nseen = 1\n")).unwrap_err();
        assert!(e.contains("unknown field `seen`"), "{e}");
        assert!(parse(&format!("title = \"t\"\n{fine}here = \"h\"\n")).is_ok());
    }

    #[test]
    fn a_study_files_toml_error_is_one_line_at_its_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let e = Study::load(path.to_str().unwrap(), &Recipes::builtin()).unwrap_err();
            format!("{e:#}")
        };
        let head = "name = 'x'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n";
        assert_eq!(
            load(&format!("{head}concurrency = [10\n")),
            format!("{}:6:1: invalid array, expected `]`", path.display())
        );
        assert_eq!(
            load(&format!("{head}concurrency = [10]\n  name = 'y'\n")),
            format!(
                "{}:6:3: duplicate key `name` in document root",
                path.display()
            )
        );
        // What the study says, rather than how it is written, is refused
        // by key after the file's name.
        assert_eq!(
            load(&format!("{head}concurrency = [0]\n")),
            format!(
                "study {}: concurrency: give levels of 1 or more",
                path.display()
            )
        );
    }

    /// A group of `s`'s first workload on one core, its load on another:
    /// what a round's load spec needs of one.
    fn one_core_group(s: &Study) -> crate::group::Group {
        crate::group::Group {
            cores: 1,
            server_cpus: vec![0],
            client_cpus: vec![1],
            shared: false,
            workload: crate::workload::Workload {
                kind: s.workloads[0],
                docroot: std::path::PathBuf::new(),
                files: Vec::new(),
                checked: Vec::new(),
            },
            max_concurrency: 1,
            lanes: Vec::new(),
        }
    }

    #[test]
    fn the_nap_divisor_reaches_every_rounds_load_spec() {
        let r = Recipes::builtin();
        let head = "name='x'\nservers=['nginx']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n";
        let parse = |extra: &str| Study::parse(&format!("{head}{extra}"), &r);
        let spec_of = |s: &Study| {
            let load = s.round_load(&one_core_group(s), Level::closed(1), 7);
            crate::spec::load_spec(Vec::new(), &load)
        };
        let default = parse("").unwrap();
        assert_eq!(default.client_nap_divisor, 128);
        assert_eq!(spec_of(&default).nap_divisor, 128);
        let sixteen = parse("client_nap_divisor = 16\n").unwrap();
        assert_eq!(sixteen.client_nap_divisor, 16);
        let spec = spec_of(&sixteen);
        assert_eq!((spec.coalesce, spec.nap_divisor), (true, 16));
        for (extra, said) in [
            (
                "client_nap_divisor = 1\n",
                "client_nap_divisor = 1: give 2 to 65536",
            ),
            (
                "client_nap_divisor = 65537\n",
                "client_nap_divisor = 65537: give 2 to 65536",
            ),
            (
                "client_naps = false\nclient_nap_divisor = 16\n",
                "client_nap_divisor sets how long a nap is: it cannot go with client_naps = false",
            ),
        ] {
            assert_eq!(parse(extra).unwrap_err().to_string(), said, "{extra}");
        }
        assert!(parse("client_nap_divisor = -3\n").is_err());
    }

    #[test]
    fn a_spin_reaches_the_closed_models_rounds_alone() {
        let r = Recipes::builtin();
        let head = "name='x'\nservers=['nginx']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n";
        let parse = |extra: &str| Study::parse(&format!("{head}{extra}"), &r);
        let spec_at = |s: &Study, level: Level| {
            let load = s.round_load(&one_core_group(s), level, 7);
            let at = std::net::SocketAddr::from(([127, 0, 0, 1], 80));
            crate::spec::load_spec(crate::spec::targets(at, &["/".to_string()]), &load)
        };
        let none = parse("").unwrap();
        assert_eq!(none.client_spin, None);
        assert_eq!(spec_at(&none, Level::closed(1)).spin, None);
        let ten = parse("client_spin = \"10us\"\n").unwrap();
        assert_eq!(ten.client_spin, Some(Duration::from_micros(10)));
        let spec = spec_at(&ten, Level::closed(1));
        assert_eq!(spec.spin, Some(Duration::from_micros(10)));
        assert!(!spec.naps(), "a spin takes no naps");
        assert_eq!(spec.validate(), Ok(()));
        // A rate's rounds wait for their schedule.
        let rated = Level {
            rate: Some(100.0),
            ..Level::closed(1)
        };
        let spec = spec_at(&ten, rated);
        assert_eq!((spec.rate, spec.spin), (Some(100.0), None));
        assert_eq!(spec.validate(), Ok(()));
        for (extra, said) in [
            (
                "client_spin = \"2ms\"\n",
                "client_spin = \"2ms\": give from 1µs to 1ms",
            ),
            (
                "client_spin = \"0s\"\n",
                "client_spin = \"0s\": give from 1µs to 1ms",
            ),
            (
                "client_spin = \"10us\"\nclient_nap_divisor = 16\n",
                "client_spin takes no naps: it cannot go with client_nap_divisor",
            ),
        ] {
            assert_eq!(parse(extra).unwrap_err().to_string(), said, "{extra}");
        }
        assert!(parse("client_spin = \"soon\"\n")
            .unwrap_err()
            .to_string()
            .starts_with("client_spin: "));
    }

    #[test]
    fn user_commands_and_errors() {
        let r = Recipes::builtin();
        let s = Study::parse(
            r#"
name = "mine"
servers = ["nginx", { name = "py", command = ["/usr/bin/python3", "-m", "http.server", "{{port}}"] }, { name = "ng2", recipe = "nginx" }]
workloads = ["page"]
cores = [1, 2]
concurrency = "1..4"
client_naps = false
[rounds]
seconds = 0.5
"#,
            &r,
        )
        .unwrap();
        assert_eq!(s.servers[1].recipe.start[3], "{{port}}");
        assert!(s.servers[1].recipe.drop_privileges);
        assert_eq!(s.servers[2].recipe.name, "nginx");
        assert_eq!(s.concurrency, [1, 2, 3, 4]);
        assert_eq!(s.round_s, 0.5);
        assert!(!s.client_naps);
        assert_eq!(s.precision.min_rounds, 3);
        let bad = |t: &str| Study::parse(t, &r).unwrap_err();
        let e =
            bad("name='x'\nservers=['ngnix']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n");
        assert!(e.to_string().starts_with("no recipe \"ngnix\""), "{e}");
        let e =
            bad("name='x'\nservers=['nginx']\nworkloads=['tiny']\ncores=[0]\nconcurrency=[1]\n");
        assert_eq!(e.to_string(), "cores: give core counts of 1 or more");
        let e = bad(
            "name='x'\nservers=['nginx','nginx']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n",
        );
        assert_eq!(e.to_string(), "server \"nginx\" is listed twice");
        assert!(Study::parse(
            "name='x'\nservers=['nginx']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\ntypo=1\n",
            &r
        )
        .is_err());
    }

    #[test]
    fn a_command_named_without_a_path_is_found_on_path() {
        let r = Recipes::builtin();
        let parse = |program: &str| {
            Study::parse(
                &format!(
                    "name='x'\nservers=[{{ name = 'mine', command = ['{program}', '-c', 'true'] }}]\n\
                     workloads=['tiny']\ncores=[1]\nconcurrency=[1]\n"
                ),
                &r,
            )
        };
        let s = parse("sh").unwrap();
        let recipe = &s.servers[0].recipe;
        let found = std::path::Path::new(&recipe.binary);
        assert!(found.is_absolute() && found.ends_with("sh"), "{found:?}");
        assert_eq!(recipe.start, [recipe.binary.as_str(), "-c", "true"]);
        assert!(s.missing_servers().is_empty());
        assert_eq!(
            parse("no-such-server-anywhere").unwrap_err().to_string(),
            "server mine: no program \"no-such-server-anywhere\" on PATH; give its full path in \
             `command`"
        );
        // A path is taken as given; a missing one is reported before the
        // study starts, as for any recipe.
        let s = parse("/nonexistent/mine").unwrap();
        assert_eq!(
            s.missing_servers(),
            ["mine: /nonexistent/mine is not installed"]
        );
    }

    #[test]
    fn missing_servers_name_the_package() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("gone.toml"),
            "name = \"gone\"\npackage = \"gone-httpd\"\nbinary = \"/nonexistent/gone\"\nstart = [\"/nonexistent/gone\"]\n",
        )
        .unwrap();
        let r = Recipes::load(Some(dir.path())).unwrap();
        let s = Study::parse(
            "name='x'\nservers=['gone']\nworkloads=['tiny']\ncores=[1]\nconcurrency=[1]\n",
            &r,
        )
        .unwrap();
        assert_eq!(
            s.missing_servers(),
            ["gone: /nonexistent/gone is not installed (apt-get install gone-httpd)"]
        );
    }

    #[test]
    fn core_plans() {
        let cpus = [0, 1];
        let p = plan_cores(Some(&[1, 2, 4]), &cpus, false);
        assert_eq!(
            p[0],
            CoresPlan::Run {
                cores: 1,
                server_cpus: vec![0],
                client_cpus: vec![1],
                shared: false
            }
        );
        assert!(
            matches!(&p[1], CoresPlan::Skip { cores: 2, reason } if reason.contains("allow_shared_cores"))
        );
        assert!(
            matches!(&p[2], CoresPlan::Skip { cores: 4, reason } if reason.contains("only 2 CPUs"))
        );
        let p = plan_cores(Some(&[2]), &cpus, true);
        assert_eq!(
            p[0],
            CoresPlan::Run {
                cores: 2,
                server_cpus: vec![0, 1],
                client_cpus: vec![0, 1],
                shared: true
            }
        );
        let auto = |n: usize| -> Vec<u32> {
            let cpus: Vec<usize> = (0..n).collect();
            plan_cores(None, &cpus, false)
                .iter()
                .map(|p| match p {
                    CoresPlan::Run { cores, .. } => *cores,
                    CoresPlan::Skip { .. } => panic!("auto never skips"),
                })
                .collect()
        };
        assert_eq!(auto(2), [1]);
        assert_eq!(auto(16), [1, 2, 4, 8]);
        assert_eq!(auto(9), [1, 2, 4, 8]);
    }

    /// One nginx on one core at 10 and 50, with `rest` after those keys.
    fn with_load(workloads: &str, rest: &str) -> anyhow::Result<Study> {
        Study::parse(
            &format!(
                "name='x'\nservers=['nginx']\nworkloads={workloads}\ncores=[1]\n\
                 concurrency=[10, 50]\nfeatures=false\n{rest}"
            ),
            &Recipes::builtin(),
        )
    }

    fn refused(workloads: &str, rest: &str) -> String {
        match with_load(workloads, rest) {
            Ok(_) => panic!("accepted: {rest}"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn a_time_that_no_duration_holds_or_a_name_on_two_lines_is_refused() {
        for (rest, want) in [
            (
                "warmup_seconds = nan\n",
                "warmup_seconds = NaN: give a time of 0 or more and at most 86400 seconds",
            ),
            (
                "[rounds]\nseconds = inf\n",
                "rounds.seconds = inf: give a time above 0 and at most 86400 seconds",
            ),
            (
                "[rounds]\nwarmup_seconds = 1e300\n",
                "rounds.warmup_seconds = 1e300: give a time of 0 or more and at most 86400 seconds",
            ),
        ] {
            assert_eq!(refused("['tiny']", rest), want);
        }
        for name in ["", "a\\nb", &"n".repeat(201)] {
            let e = Study::parse(
                &format!(
                    "name = \"{name}\"\nservers = ['nginx']\nworkloads = ['tiny']\n\
                     cores = [1]\nconcurrency = [10]\n"
                ),
                &Recipes::builtin(),
            )
            .unwrap_err();
            assert!(
                format!("{e:#}").ends_with("give one line of up to 200 characters"),
                "{e:#}"
            );
        }
    }

    #[test]
    fn without_a_load_table_requests_are_the_engines() {
        let s = with_load("['tiny', 'large']", "").unwrap();
        for w in &s.loads {
            assert_eq!(w.shape, RequestShape::default());
            assert_eq!((w.timeout, w.round_requests), (None, None));
            assert_eq!(w.concurrency, [10, 50]);
        }
        let d = RequestShape::default();
        assert!(d.keep_alive && d.pipeline == 1 && d.method == "GET" && d.body.is_none());
        assert!(!s.close_mode());
        assert_eq!(s.levels_per_cores(), 4);
    }

    #[test]
    fn h3_runs_caddy_over_its_h3_table_and_stores_the_others_reason() {
        let s = Study::parse(
            "name='x'\nservers=['caddy', 'nginx', 'varnish']\nworkloads=['tiny']\ncores=[1]\n\
             concurrency=[10]\nfeatures=false\nprotocols=['h2', 'h3']\n[load]\nstreams = 4\n",
            &Recipes::builtin(),
        )
        .unwrap();
        let got: Vec<(&str, &str, Option<&str>)> = s
            .servers
            .iter()
            .map(|x| (x.name.as_str(), x.protocol.name(), x.unsupported.as_deref()))
            .collect();
        let why = |name: &str, reason: &str| {
            format!(
                "{name} serves no HTTP/3 in throng's recipe, so it is not measured over h3: \
                 {reason}"
            )
        };
        let nginx = why(
            "nginx",
            "nginx 1.22 (Debian 12's) has no ngx_http_v3_module: HTTP/3 came in nginx 1.25.0, \
             and Debian 12's build lists no --with-http_v3_module in nginx -V",
        );
        let varnish = why(
            "varnish",
            "Varnish Cache 7.1 (Debian 12's) has no HTTP/3, nor TLS of its own: it serves \
             cleartext over TCP alone",
        );
        assert_eq!(
            got,
            [
                ("caddy", "h2", None),
                ("caddy-h3", "h3", None),
                ("nginx", "h2", None),
                ("nginx-h3", "h3", Some(nginx.as_str())),
                (
                    "varnish",
                    "h2",
                    Some(
                        "varnish serves no HTTP/2 over TLS in throng's recipe, so it is not \
                         measured over h2"
                    )
                ),
                ("varnish-h3", "h3", Some(varnish.as_str())),
            ]
        );
        let caddyfile = &s.servers[1].recipe.configs[0].template;
        assert!(
            caddyfile.contains("\t\tprotocols h1 h2 h3\n"),
            "{caddyfile}"
        );
        assert!(s.servers[1]
            .recipe
            .notes
            .contains(" over HTTP/3: protocols h1 h2 h3"));
        assert!(s.servers[1].protocol.tls());
        assert_eq!(s.load_of(WorkloadKind::Tiny).shape.streams, 4);
        for (rest, want) in [
            ("[load]\npipeline = 4\n", "pipeline: HTTP/3 multiplexes streams and is never pipelined"),
            (
                "[load]\nkeep_alive = false\n",
                "keep_alive = false: HTTP/3 keeps its connections, its streams taking a request each",
            ),
            (
                "[load]\nrequests_per_connection = 10\n",
                "requests_per_connection: throng's HTTP/3 connections carry no request limit",
            ),
        ] {
            assert_eq!(
                refused("['tiny']", &format!("protocols = ['https1', 'h3']\n{rest}")),
                format!(
                    "protocols: \"h3\" cannot load workload tiny with {want}; measure it \
                     without \"h3\" or leave that key out"
                ),
                "{rest}"
            );
        }
        // The same loads over TCP alone are a study.
        assert!(with_load("['tiny']", "protocols = ['https1']\n[load]\npipeline = 4\n").is_ok());
    }

    #[test]
    fn http2_protocols_and_streams() {
        let s = Study::parse(
            "name='x'\nservers=['nginx', 'apache2-prefork', 'varnish']\nworkloads=['tiny']\n\
             cores=[1]\nconcurrency=[10]\nfeatures=false\nprotocols=['h2', 'h2c', 'https1']\n\
             [load]\nstreams = 10\n",
            &Recipes::builtin(),
        )
        .unwrap();
        let got: Vec<(String, &str, bool)> = s
            .servers
            .iter()
            .map(|x| (x.name.clone(), x.protocol.name(), x.unsupported.is_none()))
            .collect();
        assert_eq!(
            got,
            [
                ("nginx".to_string(), "h2", true),
                ("nginx-h2c".into(), "h2c", true),
                ("nginx-https1".into(), "https1", true),
                ("apache2-prefork".into(), "h2", false),
                ("apache2-prefork-h2c".into(), "h2c", false),
                ("apache2-prefork-https1".into(), "https1", true),
                ("varnish".into(), "h2", false),
                ("varnish-h2c".into(), "h2c", false),
                ("varnish-https1".into(), "https1", false),
            ]
        );
        // nginx over h2 has the TLS settings of https1, plus http2.
        let cfg = |name: &str| {
            let r = &s.servers.iter().find(|x| x.name == name).unwrap().recipe;
            r.configs[0].template.clone()
        };
        assert!(cfg("nginx").contains(" ssl http2"));
        assert!(cfg("nginx-h2c").contains(" http2;") && !cfg("nginx-h2c").contains(" ssl"));
        assert_eq!(
            s.servers[3].unsupported.as_deref(),
            Some(
                "apache2-prefork serves no HTTP/2 over TLS in throng's recipe, so it is not \
                 measured over h2"
            )
        );
        assert_eq!(s.load_of(WorkloadKind::Tiny).shape.streams, 10);
        for (rest, want) in [
            (
                "[load]\nstreams = 0\n",
                "[load] streams = 0: give 1 to 4096 streams per connection",
            ),
            (
                "[load]\nstreams = 4\npipeline = 2\n",
                "[load] streams = 4 with [load] pipeline = 2: HTTP/2 multiplexes streams and is \
                 never pipelined; leave one of them out",
            ),
        ] {
            assert_eq!(refused("['tiny']", rest), want, "{rest}");
        }
        assert_eq!(
            refused("['tiny']", "protocols = ['h4']\n"),
            "protocols: \"h4\": give \"http1\", \"https1\", \"h2\", \"h2c\" or \"h3\""
        );
    }

    #[test]
    fn every_load_key_is_read() {
        let s = with_load(
            "['php']",
            "[load]\nkeep_alive = false\ntimeout = \"250ms\"\n\
             headers = [\"X-Run: 7\", \"Accept:text/html \"]\nmethod = \"post\"\n\
             body = \"a=1\"\nrequests = 600\n[rounds]\nmin = 3\nmax = 3\n",
        )
        .unwrap();
        let w = s.load_of(WorkloadKind::Php);
        assert!(!w.shape.keep_alive);
        assert_eq!(w.timeout, Some(Duration::from_millis(250)));
        assert_eq!(
            w.shape.headers,
            [
                ("X-Run".to_string(), "7".to_string()),
                ("Accept".to_string(), "text/html".to_string())
            ]
        );
        assert_eq!(w.shape.method, "POST");
        assert_eq!(w.shape.body.as_deref(), Some(&b"a=1"[..]));
        // 600 requests a level over 3 rounds: 200 each. One server has no
        // pairs to form, so they are not split further.
        assert_eq!((w.round_requests, w.counted_rounds), (Some(200), Some(3)));
        assert_eq!(w.split_note, None);
        // Two servers: 3 rounds would leave 3 pairs, too few to bound a
        // comparison; 6 rounds of 100 instead, and said.
        let two = Study::parse(
            "name='x'\nservers=['nginx', 'lighttpd']\nworkloads=['php']\ncores=[1]\n\
             concurrency=[10, 50]\nfeatures=false\n[load]\nrequests = 600\n[rounds]\nmin = 3\n",
            &Recipes::builtin(),
        )
        .unwrap();
        let w = two.load_of(WorkloadKind::Php);
        assert_eq!((w.round_requests, w.counted_rounds), (Some(100), Some(6)));
        assert_eq!(
            w.split_note.as_deref(),
            Some(
                "php: 600 requests a level as 6 rounds of 100 rather than 3 of 200, so that the \
                 paired slices are enough to bound each comparison (6 or more)"
            )
        );
        assert!(s.close_mode());
        let s = with_load(
            "['tiny']",
            "[load]\npipeline = 8\nrequests_per_connection = 100\n",
        )
        .unwrap();
        let w = s.load_of(WorkloadKind::Tiny);
        assert_eq!((w.shape.keep_alive, w.shape.pipeline), (true, 8));
        assert_eq!(w.shape.requests_per_connection, Some(100));
    }

    #[test]
    fn a_workload_table_overrides_the_load_table_for_its_workload() {
        // The 2007 Apache/lighttpd/nginx/Varnish comparison: ab without
        // keep-alive, 50 clients for the page and PHP, 10 for the 21 MB file.
        let s = with_load(
            "['page', 'php', 'large']",
            "[load]\nkeep_alive = false\ntimeout = \"3s\"\n\
             [workload.page]\nconcurrency = [50]\n\
             [workload.php]\nconcurrency = [50]\nheaders = [\"Accept: text/html\"]\n\
             [workload.large]\nconcurrency = \"5..10 step 5\"\nkeep_alive = true\ntimeout = \"2m\"\n",
        )
        .unwrap();
        assert_eq!(s.levels(WorkloadKind::Page), [50]);
        assert_eq!(s.levels(WorkloadKind::Php), [50]);
        assert_eq!(s.levels(WorkloadKind::Large), [5, 10]);
        let (page, php, large) = (
            s.load_of(WorkloadKind::Page),
            s.load_of(WorkloadKind::Php),
            s.load_of(WorkloadKind::Large),
        );
        assert!(!page.shape.keep_alive && !php.shape.keep_alive && large.shape.keep_alive);
        assert_eq!(page.timeout, Some(Duration::from_secs(3)));
        assert_eq!(large.timeout, Some(Duration::from_secs(120)));
        assert!(page.shape.headers.is_empty());
        assert_eq!(php.shape.headers.len(), 1);
        // Servers accept the most any workload asks for; the study's own
        // list is no workload's here.
        assert_eq!(s.max_concurrency(), 50);
        assert_eq!(s.levels_per_cores(), 4);
        assert!(s.close_mode());
        // A workload the study does not list: the engine's defaults.
        assert_eq!(s.levels(WorkloadKind::Tiny), [10, 50]);
        assert_eq!(s.load_of(WorkloadKind::Tiny).shape, RequestShape::default());
    }

    #[test]
    fn the_documented_load_example_parses() {
        // docs/study-format.md, "Load".
        let s = with_load(
            "['page', 'php', 'large']",
            "[load]\nrequests = 3000\n\
             [workload.large]\nconcurrency = [10]\nrequests = 300\ntimeout = \"2m\"\n",
        )
        .unwrap();
        let rounds: Vec<(u32, Option<u64>)> = s
            .loads
            .iter()
            .map(|w| (w.concurrency[0], w.round_requests))
            .collect();
        assert_eq!(
            rounds,
            [(10, Some(1000)), (10, Some(1000)), (10, Some(100))]
        );
    }

    #[test]
    fn durations_read_as_throng_load_reads_them() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("250ms"), Ok(ms(250)));
        assert_eq!(parse_duration("3s"), Ok(ms(3000)));
        assert_eq!(parse_duration("1.5s"), Ok(ms(1500)));
        assert_eq!(parse_duration("2m"), Ok(ms(120_000)));
        assert_eq!(parse_duration("3"), Ok(ms(3000)));
        assert_eq!(parse_duration("24h"), Ok(ms(86_400_000)));
        assert_eq!(
            parse_duration("153722867280912930m"),
            Err(
                "\"153722867280912930m\": longer than a day, the most a study's time may be".into()
            )
        );
        assert_eq!(
            parse_duration("3 parsecs"),
            Err("\"3 parsecs\": unknown unit \"parsecs\" (use ms, s, m or h)".to_string())
        );
        assert_eq!(
            parse_duration("soon"),
            Err("\"soon\" is not a duration (try \"3s\", \"250ms\", \"2m\")".to_string())
        );
    }

    #[test]
    fn a_load_key_that_does_not_apply_is_refused_by_name() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "['tiny']",
                "[load]\nkeepalive = false\n",
                "line 8, column 1: unknown field `keepalive`, expected one of `keep_alive`, `pipeline`, `streams`, \
                 `timeout`, `headers`, `method`, `body`, `requests`, `rate`, `tick`, `concurrency`, \
                 `requests_per_connection`, `order`, `docroot`, `urls`, `sessions`, `think`, `think_random`, `users_per_sec`, `arrival`, `conns_per_user`",
            ),
            (
                "['tiny']",
                "[load]\nconcurrency = [10]\n",
                "[load] concurrency: the study's levels are the top-level `concurrency`; a \
                 [workload.NAME] table gives one workload its own",
            ),
            (
                "['tiny']",
                "[workload.large]\nconcurrency = [10]\n",
                "[workload.large]: large is not one of the study's workloads (tiny); add it to \
                 `workloads` or remove the table",
            ),
            (
                "['tiny']",
                "[workload.huge]\nconcurrency = [10]\n",
                "[workload.huge]: unknown workload \"huge\" (known: tiny, small-files, page, \
                 large, site, cgi, php, phpinfo, app)",
            ),
            (
                "['tiny']",
                "[workload.tiny]\nconcurrency = [0]\n",
                "[workload.tiny] concurrency: give levels of 1 or more",
            ),
            (
                "['tiny']",
                "[load]\nkeep_alive = false\npipeline = 4\n",
                "[load] pipeline = 4 with keep_alive = false: a connection closed after each \
                 request carries one, so there is nothing to pipeline",
            ),
            (
                "['tiny']",
                "[load]\nkeep_alive = false\n[workload.tiny]\npipeline = 4\n",
                "[workload.tiny] pipeline = 4 with [load] keep_alive = false: a connection \
                 closed after each request carries one, so there is nothing to pipeline",
            ),
            (
                "['tiny']",
                "[load]\npipeline = 0\n",
                "[load] pipeline = 0: give a depth from 1 to 1024",
            ),
            (
                "['tiny']",
                "[load]\nrequests = 301\n",
                "[load] requests = 301 is not a multiple of rounds.min = 3: each of a level's 3 \
                 rounds completes the same number of requests",
            ),
            (
                "['tiny']",
                "[load]\nrequests = 120\n",
                "[load] requests = 120 makes rounds of 40 requests (over rounds.min = 3), fewer \
                 than concurrency 50: some connections would never send one",
            ),
            (
                "['tiny']",
                "[load]\nrequests = 0\n",
                "[load] requests = 0: give at least one request per round",
            ),
            (
                "['tiny']",
                "max_users = true\n[load]\nrequests = 300\n",
                "[load] requests: the max-users search runs timed rounds; remove `requests` or \
                 `max_users = true`",
            ),
            (
                "['tiny']",
                "duet = true\n[workload.tiny]\nrequests = 300\n",
                "[workload.tiny] requests: a duet measures two servers over the same seconds, \
                 and a request count ends each round at its own time; remove `requests` or \
                 `duet = true`",
            ),
            (
                "['tiny']",
                "[load]\nbody = \"a=1\"\n",
                "[load] body: a GET request carries no body; set method = \"POST\" (or \"PUT\", \
                 \"PATCH\") to send one",
            ),
            (
                "['php']",
                "[load]\nmethod = \"delete\"\n[workload.php]\nbody = \"a=1\"\n",
                "[workload.php] body: a DELETE request carries no body ([load] method = \
                 \"DELETE\"); set method = \"POST\" (or \"PUT\", \"PATCH\") to send one",
            ),
            (
                "['tiny']",
                "[load]\nmethod = \"G T\"\n",
                "[load] method = \"G T\" is not an HTTP method",
            ),
            (
                "['tiny']",
                "[load]\nheaders = [\"X-Run 7\"]\n",
                "[load] headers: \"X-Run 7\" must look like \"Name: value\"",
            ),
            (
                "['tiny']",
                "[load]\nheaders = [\"Bad Name: 7\"]\n",
                "[load] headers: \"Bad Name: 7\" has an invalid name",
            ),
            (
                "['tiny']",
                "[load]\nheaders = [\"Connection: close\"]\n",
                "[load] headers: \"Connection: close\": say it with keep_alive (and \
                 requests_per_connection), by which the load engine opens and closes its \
                 connections",
            ),
            (
                "['tiny']",
                "[load]\ntimeout = \"3 parsecs\"\n",
                "[load] timeout: \"3 parsecs\": unknown unit \"parsecs\" (use ms, s, m or h)",
            ),
            (
                "['tiny']",
                "[load]\ntimeout = \"0s\"\n",
                "[load] timeout = \"0s\": give a time above 0",
            ),
            (
                "['tiny']",
                "[load]\nrequests_per_connection = 0\n",
                "[load] requests_per_connection = 0: a connection carries at least one request",
            ),
            (
                "['tiny']",
                "[load]\nkeep_alive = false\nrequests_per_connection = 10\n",
                "[load] requests_per_connection = 10 with keep_alive = false: a connection \
                 closed after each request carries one; leave one of them out",
            ),
            (
                "['tiny']",
                "[load]\npipeline = 16\n[workload.tiny]\nrequests_per_connection = 10\n",
                "[load] pipeline = 16 with [workload.tiny] requests_per_connection = 10: a \
                 connection would close with requests of its pipeline unanswered",
            ),
        ];
        for (workloads, rest, message) in cases {
            assert_eq!(&refused(workloads, rest), message, "{rest}");
        }
    }

    #[test]
    fn a_rate_makes_each_offered_rate_a_level_over_one_concurrency() {
        let s = with_load(
            "['tiny', 'page']",
            "[load]\nrate = [1000, 2000, 5000]\n[workload.tiny]\nconcurrency = [4]\n\
             [workload.page]\nconcurrency = [50]\nrate = \"1000..3000 step 1000\"\n",
        )
        .unwrap();
        let tiny = s.load_of(WorkloadKind::Tiny);
        assert_eq!(tiny.rates, [1000.0, 2000.0, 5000.0]);
        assert_eq!(
            tiny.levels(),
            [1000.0, 2000.0, 5000.0].map(|r| Level {
                concurrency: 4,
                rate: Some(r)
            })
        );
        let page = s.load_of(WorkloadKind::Page);
        assert_eq!(
            (page.concurrency.as_slice(), page.rates.as_slice()),
            (&[50][..], &[1000.0, 2000.0, 3000.0][..])
        );
        assert_eq!(s.levels_per_cores(), 6);
        // Without a rate, levels are the concurrency's, in the closed model.
        let closed = with_load("['tiny']", "").unwrap();
        assert_eq!(
            closed.load_of(WorkloadKind::Tiny).levels(),
            [Level::closed(10), Level::closed(50)]
        );
    }

    #[test]
    fn a_rate_that_cannot_run_as_written_is_refused_by_name() {
        let cases: &[(&str, &str)] = &[
            (
                "[load]\nrate = [1000, 2000]\n",
                "[load] rate: a rate is offered over the workload's connections, so its \
                 concurrency must be exactly one value, and concurrency gives 2 (10, 50); set \
                 [workload.tiny] concurrency = [N]",
            ),
            (
                "[workload.tiny]\nconcurrency = [4, 8]\nrate = [1000]\n",
                "[workload.tiny] rate: a rate is offered over the workload's connections, so \
                 its concurrency must be exactly one value, and [workload.tiny] concurrency \
                 gives 2 (4, 8); set [workload.tiny] concurrency = [N]",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = [0, 1000]\n",
                "[workload.tiny] rate: give rates of 1 or more requests per second",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = [2000, 1000]\n",
                "[workload.tiny] rate: give the rates in increasing order, each once: a \
                 server's sweep stops at the first rate it does not keep up with",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = \"1000..500\"\n",
                "[workload.tiny] rate: range \"1000..500\": needs FROM <= TO and a step above 0",
            ),
            (
                "[load]\npipeline = 4\n[workload.tiny]\nconcurrency = [4]\nrate = [1000]\n",
                "[workload.tiny] rate with [load] pipeline = 4: a rate schedule sends each \
                 request at its own time, so there is nothing to pipeline; leave one of them out",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = [1000]\nrequests = 300\n",
                "[workload.tiny] requests with rate: a rate level runs timed rounds at its \
                 rate; leave one of them out",
            ),
            (
                "max_users = true\n[workload.tiny]\nconcurrency = [4]\nrate = [1000]\n",
                "[workload.tiny] rate: the max-users search steps concurrency up in the closed \
                 model; remove `rate` or `max_users = true`",
            ),
        ];
        for (rest, message) in cases {
            assert_eq!(&refused("['tiny']", rest), message, "{rest}");
        }
    }

    #[test]
    fn a_tick_keeps_each_rate_levels_schedule_and_reaches_its_load_spec() {
        let r = Recipes::builtin();
        let head = "name='x'\nservers=['nginx']\nworkloads=['tiny','page']\ncores=[1]\n\
                    concurrency=[1]\n";
        let s = Study::parse(
            &format!(
                "{head}[load]\nrate = [1000, 2000]\ntick = \"250us\"\n\
                 [workload.page]\nrate = [500]\ntick = \"1ms\"\n"
            ),
            &r,
        )
        .unwrap();
        let tiny = s.load_of(WorkloadKind::Tiny);
        let page = s.load_of(WorkloadKind::Page);
        assert_eq!(tiny.tick, Some(Duration::from_micros(250)));
        assert_eq!(page.tick, Some(Duration::from_millis(1)));
        let load = s.round_load(&one_core_group(&s), tiny.levels()[1], 7);
        let spec = crate::spec::load_spec(Vec::new(), &load);
        assert_eq!(
            (spec.rate, spec.tick),
            (Some(2000.0), Some(Duration::from_micros(250)))
        );
        // `[load] tick` is the schedule of the workloads with a rate only.
        let mixed = Study::parse(
            &format!("{head}[load]\ntick = \"1ms\"\n[workload.page]\nrate = [500]\n"),
            &r,
        )
        .unwrap();
        assert_eq!(mixed.load_of(WorkloadKind::Tiny).tick, None);
        assert_eq!(
            mixed.load_of(WorkloadKind::Page).tick,
            Some(Duration::from_millis(1))
        );
        // Without `tick`, each request at its own instant, as before.
        let plain = Study::parse(&format!("{head}[load]\nrate = [1000]\n"), &r).unwrap();
        assert_eq!(plain.load_of(WorkloadKind::Tiny).tick, None);
    }

    #[test]
    fn a_tick_without_a_rate_or_out_of_its_bounds_is_refused_by_name() {
        let cases: &[(&str, &str)] = &[
            (
                "[load]\ntick = \"1ms\"\n",
                "[load] tick: a tick is a rate's schedule; give `rate` too, or leave it out",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\ntick = \"1ms\"\n",
                "[workload.tiny] tick: a tick is a rate's schedule; give `rate` too, or leave \
                 it out",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = [1000]\ntick = \"2s\"\n",
                "[workload.tiny] tick = \"2s\": give from 1µs to 1s",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = [1000]\ntick = \"0us\"\n",
                "[workload.tiny] tick = \"0us\": give from 1µs to 1s",
            ),
            (
                "[workload.tiny]\nconcurrency = [4]\nrate = [1000]\ntick = \"soon\"\n",
                "[workload.tiny] tick: \"soon\" is not a duration (try \"3s\", \"250ms\", \"2m\")",
            ),
        ];
        for (rest, message) in cases {
            assert_eq!(&refused("['tiny']", rest), message, "{rest}");
        }
    }

    #[test]
    fn a_level_beyond_the_open_file_limit_is_refused_before_anything_starts() {
        let s = Study::parse(
            "name = \"big\"\nservers = [\"nginx\"]\ncores = [1]\nworkloads = [\"tiny\"]\nconcurrency = [10, 30000]\n",
            &Recipes::builtin(),
        )
        .unwrap();
        assert_eq!(
            s.check_open_files(20_000).unwrap_err().to_string(),
            "[workload.tiny] concurrency 30000 opens 30000 connections, and the open-file limit \
             lets the load generator open at most 20000: lower the level, or raise the limit \
             (ulimit -n) before the run"
        );
        assert!(s.check_open_files(30_000).is_ok());
    }

    #[test]
    fn the_open_file_limit_bounds_the_cap() {
        let bound = throng_engine::max_connections() as u32;
        assert_eq!(cap_by_open_files(u32::MAX), bound);
        assert_eq!(cap_by_open_files(1), 1);
    }
}
