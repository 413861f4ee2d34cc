//! The feature table: what each server can do, probed live.

use serde::{Deserialize, Serialize};

/// The features `throng lab` probes, in the order the report shows them.
/// The serde names are stored in databases and never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    BasicAuth,
    Throttling,
    PrivilegeDrop,
    Gzip,
    Range,
    KeepAlive,
    DirListingOff,
    Sendfile,
    Http2,
    Tls,
}

impl Feature {
    pub const ALL: [Feature; 10] = [
        Feature::BasicAuth,
        Feature::Throttling,
        Feature::PrivilegeDrop,
        Feature::Gzip,
        Feature::Range,
        Feature::KeepAlive,
        Feature::DirListingOff,
        Feature::Sendfile,
        Feature::Http2,
        Feature::Tls,
    ];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            Feature::BasicAuth => "basic_auth",
            Feature::Throttling => "throttling",
            Feature::PrivilegeDrop => "privilege_drop",
            Feature::Gzip => "gzip",
            Feature::Range => "range",
            Feature::KeepAlive => "keep_alive",
            Feature::DirListingOff => "dir_listing_off",
            Feature::Sendfile => "sendfile",
            Feature::Http2 => "http2",
            Feature::Tls => "tls",
        }
    }

    pub fn parse(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The column heading in reports.
    pub fn title(self) -> &'static str {
        match self {
            Feature::BasicAuth => "Basic auth",
            Feature::Throttling => "Throttling",
            Feature::PrivilegeDrop => "Privilege drop",
            Feature::Gzip => "gzip",
            Feature::Range => "Range",
            Feature::KeepAlive => "Keep-alive",
            Feature::DirListingOff => "Dir listing off",
            Feature::Sendfile => "sendfile",
            Feature::Http2 => "HTTP/2",
            Feature::Tls => "TLS",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureStatus {
    Yes,
    No,
    /// Not probed (the lab cannot test it yet, or the probe could not run).
    Untested,
}

impl FeatureStatus {
    pub fn label(self) -> &'static str {
        match self {
            FeatureStatus::Yes => "yes",
            FeatureStatus::No => "no",
            FeatureStatus::Untested => "untested",
        }
    }

    /// The stored label back; anything else was never written and reads as
    /// untested.
    pub fn parse(s: &str) -> FeatureStatus {
        match s {
            "yes" => FeatureStatus::Yes,
            "no" => FeatureStatus::No,
            _ => FeatureStatus::Untested,
        }
    }
}

/// One probed feature of one server, with what was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureResult {
    pub name: Feature,
    pub status: FeatureStatus,
    /// What was observed, e.g. "401 without credentials, 200 with".
    pub evidence: String,
}

impl FeatureResult {
    pub fn new(name: Feature, status: FeatureStatus, evidence: impl Into<String>) -> Self {
        FeatureResult {
            name,
            status,
            evidence: evidence.into(),
        }
    }
}
