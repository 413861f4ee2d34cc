//! The lab's requests to a server host's agent and its replies, carried as
//! JSON values inside the agent protocol's extension messages.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use throng_model::{ConfigFile, Environment, Finding, ServerUsage, StackProfile};
use throng_servers::syscalls::Counts;

use super::archive::Manifest;
use crate::executor::Stage;

/// What the coordinator asks of the server host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "lab", rename_all = "snake_case")]
pub enum LabRequest {
    /// The study, as its TOML, the recipes it draws on (as TOML, a
    /// `--recipes` folder's among them), and the address servers listen on.
    Open {
        study_toml: String,
        recipes: Vec<String>,
        listen: IpAddr,
        keep_workdir: bool,
    },
    Survey {
        connections: u64,
        server_cpus: Vec<usize>,
    },
    Start {
        server: String,
        cores: u32,
        server_cpus: Vec<usize>,
        workload: String,
        max_concurrency: u32,
    },
    /// Sample the server's tree from `delay_s` after now for `seconds`;
    /// a planned slice's window is named by its index in the plan too, so
    /// the next one can be begun before this one ends.
    WindowBegin {
        server: String,
        delay_s: f64,
        seconds: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slice: Option<u32>,
    },
    WindowEnd {
        server: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slice: Option<u32>,
    },
    DiagnoseBegin {
        server: String,
    },
    DiagnoseEnd {
        server: String,
    },
    Exited {
        server: String,
    },
    Answers {
        server: String,
    },
    LogTail {
        server: String,
    },
    Stop {
        server: String,
    },
    OomKills,
    /// The feature probes of one server, on the server host.
    Features {
        server: String,
        cpus: Vec<usize>,
    },
    /// A site of the user's own: what its files are, before their bytes.
    SiteBegin {
        manifest: Manifest,
    },
    /// Bytes of one file of the site being sent, base64, in order.
    SiteChunk {
        path: String,
        data: String,
    },
    /// Every byte of the site is sent: it is verified file by file.
    SiteEnd,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "lab", rename_all = "snake_case")]
pub enum LabReply {
    Opened {
        cpus: Vec<usize>,
    },
    Survey {
        findings: Vec<Finding>,
        environment: Environment,
    },
    Started {
        pid: i32,
        port: u16,
        configs: Vec<ConfigFile>,
        paths: Vec<String>,
        /// Over TLS: the certificate the server host made for the server
        /// address, which the client hosts are to trust, and the ALPN offer.
        tls: Option<throng_engine::tls::TlsSpec>,
    },
    NotReady {
        stage: String,
        message: String,
        log_tail: String,
        configs: Vec<ConfigFile>,
    },
    Usage {
        usage: ServerUsage,
    },
    Counted {
        counts: Counts,
        log_bytes: u64,
        /// The server's stacks, sampled, folded and compressed on the
        /// server host, or why they are absent there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile: Option<StackProfile>,
    },
    Exited {
        how: Option<String>,
    },
    Answers {
        error: Option<String>,
    },
    LogTail {
        text: String,
    },
    OomKills {
        kills: Option<u64>,
    },
    Features {
        found: Vec<throng_model::FeatureResult>,
    },
    Done,
}

pub(super) fn stage_name(s: Stage) -> &'static str {
    match s {
        Stage::Start => "start",
        Stage::Pinning => "pinning",
        Stage::Verification => "verification",
    }
}

pub(super) fn stage_of(s: &str) -> Stage {
    match s {
        "pinning" => Stage::Pinning,
        "verification" => Stage::Verification,
        _ => Stage::Start,
    }
}
