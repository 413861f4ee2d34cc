//! Every check on a load spec, in one place: the CLI, the lab's rounds
//! and the max-users search all build a [`LoadSpec`], and the engine runs
//! [`LoadSpec::validate`] before anything else, so no front end can hand
//! it a load it would run wrongly.

use crate::spec::{
    ExpectStatus, IoBackend, LoadSpec, SpecError, Stop, MAX_PIPELINE, MAX_RATE, MAX_SPIN, MAX_TICK,
    MIN_RATE, MIN_SPIN, MIN_TICK,
};
use crate::users::{Arrival, UsersError};

impl LoadSpec {
    /// Every check on a spec, in one place: the CLI, the lab's rounds and
    /// the max-users search all build a [`LoadSpec`] and the engine runs
    /// this before anything else.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.targets.is_empty() {
            return Err(SpecError::NoTargets);
        }
        let https = self.targets.iter().filter(|t| t.is_tls()).count();
        if https > 0 && https < self.targets.len() {
            return Err(SpecError::MixedSchemes);
        }
        if (https > 0) != self.tls.is_some() {
            return Err(SpecError::TlsWithoutHttps);
        }
        if let Some(tls) = &self.tls {
            tls.client_config()?;
            for t in &self.targets {
                crate::tls::server_name(&t.host_header).map_err(SpecError::ServerName)?;
            }
        }
        self.validate_http(https > 0)?;
        for t in &self.targets {
            if let Some(&s) = self
                .sources
                .iter()
                .find(|s| s.is_ipv4() != t.addr.is_ipv4())
            {
                return Err(SpecError::SourceFamily {
                    from: s,
                    target: t.addr,
                });
            }
        }
        if self.io == IoBackend::Uring {
            if let Some(gap) = self.uring_gap() {
                return Err(SpecError::UringUnsupported(gap));
            }
        }
        if self.connections == 0 {
            return Err(SpecError::NoConnections);
        }
        if self.threads == 0 {
            return Err(SpecError::NoThreads);
        }
        if self.timeout.is_zero() {
            return Err(SpecError::ZeroTimeout);
        }
        // A token (RFC 9110 §5.6.2) of letters, as methods are in practice;
        // anything else would be sent as written and break the request line.
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(SpecError::Method(self.method.clone()));
        }
        for (n, v) in &self.headers {
            if n.is_empty() || n.bytes().any(|b| b <= b' ' || b == b':' || b >= 0x7f) {
                return Err(SpecError::HeaderName(format!("{n}: {v}")));
            }
            // RFC 9110 §5.5: visible characters, spaces and tabs; a
            // control character would be sent as typed, a line break
            // would end the field.
            if v.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
                return Err(SpecError::HeaderValue(format!("{n}: {v}")));
            }
        }
        self.validate_framing()?;
        if let ExpectStatus::Codes(codes) = &self.expect_status {
            if let Some(&bad) = codes.iter().find(|s| !(100..1000).contains(*s)) {
                return Err(SpecError::Status(bad));
            }
        }
        if self.pipeline == 0 || self.pipeline > MAX_PIPELINE {
            return Err(SpecError::Pipeline(self.pipeline));
        }
        if let Some(r) = self.rate {
            // Each connection's interval is whole nanoseconds: at 10^9
            // a second there is none left, and below 1 in 1,000 seconds
            // no request falls due in any run anyone waits for.
            if !(MIN_RATE..=MAX_RATE).contains(&r) {
                return Err(SpecError::Rate(r));
            }
            if self.pipeline > 1 {
                return Err(SpecError::RateWithPipeline);
            }
        }
        match self.tick {
            Some(_) if self.rate.is_none() => return Err(SpecError::TickWithoutRate),
            Some(t) if !(MIN_TICK..=MAX_TICK).contains(&t) => return Err(SpecError::Tick(t)),
            _ => {}
        }
        if let Some(spin) = self.spin {
            if !(MIN_SPIN..=MAX_SPIN).contains(&spin) {
                return Err(SpecError::Spin(spin));
            }
            if self.rate.is_some() || self.users.is_some() {
                return Err(SpecError::SpinWithoutClosedModel);
            }
        }
        if let Some(ramp) = &self.ramp {
            ramp.check().map_err(SpecError::Ramp)?;
            let whole = matches!(self.stop, Stop::Duration(d) if d == ramp.length());
            if self.rate.is_none() || !whole || !self.warmup.is_zero() {
                return Err(SpecError::Ramp(
                    "a ramp is an open model of its stages' length, with no warmup",
                ));
            }
        }
        if !self.keep_alive && self.pipeline > 1 {
            return Err(SpecError::CloseWithPipeline);
        }
        match self.requests_per_connection {
            Some(0) => return Err(SpecError::RequestsPerConnection),
            // A deeper pipeline would keep a connection from ever filling
            // it; capping it silently would measure another depth than
            // the one asked for.
            Some(n) if self.keep_alive && self.pipeline as u64 > n => {
                return Err(SpecError::PipelineOverConnectionLimit {
                    pipeline: self.pipeline,
                    limit: n,
                })
            }
            _ => {}
        }
        if let Some(ramp) = &self.users_ramp {
            let Some(users) = &self.users else {
                return Err(UsersError::Stages("stages of users need sessions").into());
            };
            ramp.check_users().map_err(UsersError::Stages)?;
            let whole = matches!(self.stop, Stop::Duration(d) if d == ramp.length());
            if users.arrival != Arrival::Population || !whole || !self.warmup.is_zero() {
                return Err(UsersError::Stages(
                    "stages of users are a population of their stages' length, with no warmup",
                )
                .into());
            }
            if ramp.peak() > users.slots(self.connections) as f64 {
                return Err(UsersError::Stages(
                    "the connections hold fewer users than the stages' peak",
                )
                .into());
            }
        }
        if let Some(users) = &self.users {
            users.validate(self.targets.len(), self.connections)?;
            for t in &self.targets {
                if let Some(m) = &t.method {
                    if m.eq_ignore_ascii_case("HEAD") {
                        return Err(UsersError::Head.into());
                    }
                    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                        return Err(SpecError::Method(m.clone()));
                    }
                }
            }
            if self.is_head() {
                return Err(UsersError::Head.into());
            }
            if self.rate.is_some() {
                return Err(UsersError::Combined("a request rate").into());
            }
            if self.pipeline > 1 {
                return Err(UsersError::Combined("pipelining").into());
            }
            // A user's connections carry one request at a time, as a
            // browser's burst spread over its connections does.
            if self.http.streams > 1 {
                return Err(UsersError::Combined("several HTTP/2 streams a connection").into());
            }
            // Requests mode counts sessions, which any number of users
            // can share.
            if let Stop::Requests(0) = self.stop {
                return Err(SpecError::NoRequests);
            }
            if let Stop::Duration(d) = self.stop {
                if d.is_zero() {
                    return Err(SpecError::ZeroDuration);
                }
            }
            return Ok(());
        }
        match self.stop {
            Stop::Requests(0) => Err(SpecError::NoRequests),
            Stop::Requests(n) if n < self.connections as u64 => {
                Err(SpecError::FewerRequestsThanConnections {
                    requests: n,
                    connections: self.connections,
                })
            }
            Stop::Duration(d) if d.is_zero() => Err(SpecError::ZeroDuration),
            _ => Ok(()),
        }
    }
}
