//! Verdicts: whether a number can be believed, and if not, why.

use serde::{Deserialize, Serialize};

/// Whether a number can be believed, and if not, why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// No reasons: valid.
    pub reasons: Vec<Reason>,
}

impl Verdict {
    pub fn valid() -> Self {
        Verdict::default()
    }
    pub fn is_valid(&self) -> bool {
        self.reasons.is_empty()
    }
    pub fn has(&self, code: ReasonCode) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }
    pub fn push(&mut self, code: ReasonCode, message: impl Into<String>) {
        self.reasons.push(Reason {
            code,
            message: message.into(),
        });
    }
    /// "valid" or "suspect: code, code".
    pub fn label(&self) -> String {
        if self.is_valid() {
            "valid".to_string()
        } else {
            let codes: Vec<&str> = self.reasons.iter().map(|r| r.code.name()).collect();
            format!("suspect: {}", codes.join(", "))
        }
    }
}

/// One reason a measurement is suspect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub message: String,
}

/// What makes a measurement suspect. The serde names are the codes stored
/// in databases and printed in JSON since the first schema, so they never
/// change; docs/trust.md describes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    ClientBound,
    Errors,
    Drift,
    DelayedAck,
    BottleneckElsewhere,
    Noisy,
    Ports,
    Connections,
    SharedCores,
    ShortRound,
    ServerStarved,
    Interrupted,
    Saturated,
    ShapeChanged,
    LaunchesDiffer,
    LinkBound,
    Retransmits,
}

impl ReasonCode {
    pub const ALL: [ReasonCode; 17] = [
        ReasonCode::ClientBound,
        ReasonCode::Errors,
        ReasonCode::Drift,
        ReasonCode::DelayedAck,
        ReasonCode::BottleneckElsewhere,
        ReasonCode::Noisy,
        ReasonCode::Ports,
        ReasonCode::Connections,
        ReasonCode::SharedCores,
        ReasonCode::ShortRound,
        ReasonCode::ServerStarved,
        ReasonCode::Interrupted,
        ReasonCode::Saturated,
        ReasonCode::ShapeChanged,
        ReasonCode::LaunchesDiffer,
        ReasonCode::LinkBound,
        ReasonCode::Retransmits,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReasonCode::ClientBound => "client_bound",
            ReasonCode::Errors => "errors",
            ReasonCode::Drift => "drift",
            ReasonCode::DelayedAck => "delayed_ack",
            ReasonCode::BottleneckElsewhere => "bottleneck_elsewhere",
            ReasonCode::Noisy => "noisy",
            ReasonCode::Ports => "ports",
            ReasonCode::Connections => "connections",
            ReasonCode::SharedCores => "shared_cores",
            ReasonCode::ShortRound => "short_round",
            ReasonCode::ServerStarved => "server_starved",
            ReasonCode::Interrupted => "interrupted",
            ReasonCode::Saturated => "saturated",
            ReasonCode::ShapeChanged => "shape_changed",
            ReasonCode::LaunchesDiffer => "launches_differ",
            ReasonCode::LinkBound => "link_bound",
            ReasonCode::Retransmits => "retransmits",
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_keep_their_stored_names() {
        for c in ReasonCode::ALL {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<ReasonCode>(&json).unwrap(), c);
        }
        let v: Verdict =
            serde_json::from_str(r#"{"reasons":[{"code":"noisy","message":"wide"}]}"#).unwrap();
        assert_eq!(v.label(), "suspect: noisy");
        assert_eq!(
            serde_json::to_string(&ReasonCode::ServerStarved).unwrap(),
            "\"server_starved\""
        );
        assert_eq!(
            serde_json::to_string(&ReasonCode::Interrupted).unwrap(),
            "\"interrupted\""
        );
        assert_eq!(
            serde_json::to_string(&ReasonCode::Saturated).unwrap(),
            "\"saturated\""
        );
        assert_eq!(
            serde_json::to_string(&ReasonCode::ShapeChanged).unwrap(),
            "\"shape_changed\""
        );
        assert_eq!(
            serde_json::to_string(&ReasonCode::LaunchesDiffer).unwrap(),
            "\"launches_differ\""
        );
        assert_eq!(
            serde_json::to_string(&ReasonCode::LinkBound).unwrap(),
            "\"link_bound\""
        );
        assert_eq!(
            serde_json::to_string(&ReasonCode::Retransmits).unwrap(),
            "\"retransmits\""
        );
        assert_eq!(ReasonCode::ALL.len(), 17);
    }
}
