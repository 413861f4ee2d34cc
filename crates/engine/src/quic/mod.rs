//! HTTP/3 load: QUIC v1 through quinn-proto, a sans-IO state machine on
//! rustls (aws-lc-rs, the provider TLS over TCP uses), driven by the
//! engine's own per-thread loop over a non-blocking UDP socket; HTTP/3's
//! frames and QPACK are the engine's own (`crate::h3`). No async runtime
//! and no lock: each thread has its endpoint, socket and connections.

mod conn;
mod probe;
mod schedule;
mod udp;
mod worker;

use std::collections::BTreeMap;
use std::sync::Arc;

use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, ConnectionError, EndpointConfig, TransportConfig, VarInt};
use throng_model::Http3Report;

use crate::driver::{Job, Shared, ThreadResult, Window};
use crate::h3::H3Requests;
use crate::result::ErrorKind;
use crate::spec::{Congestion, LoadSpec};
use crate::tls::TlsVersion;

use conn::H3Conn;
pub(crate) use probe::probe;
use worker::QuicWorker;

/// What every thread's QUIC side shares, read-only.
pub(crate) struct Quic {
    pub requests: H3Requests,
    pub endpoint: EndpointConfig,
    pub transport: Arc<TransportConfig>,
    pub server_name: String,
    pub congestion: Congestion,
    tls: crate::tls::TlsSpec,
}

impl Quic {
    pub(crate) fn new(spec: &LoadSpec) -> Quic {
        let mut t = TransportConfig::default();
        // Large windows, as HTTP/2's are: the server never waits on the client.
        let window = VarInt::from_u32(spec.http.stream_window);
        t.stream_receive_window(window);
        t.receive_window(VarInt::from_u32(
            spec.http.conn_window.max(spec.http.stream_window),
        ));
        t.max_concurrent_bidi_streams(VarInt::from_u32(0));
        t.max_concurrent_uni_streams(VarInt::from_u32(16));
        // The run's timeout bounds a silent path, whatever the server's
        // idle timeout says.
        let idle = spec.timeout.max(std::time::Duration::from_secs(1));
        t.max_idle_timeout(quinn_proto::IdleTimeout::try_from(idle).ok());
        let congestion = spec.http.congestion;
        match congestion {
            Congestion::Cubic => t.congestion_controller_factory(Arc::new(CubicConfig::default())),
            Congestion::NewReno => {
                t.congestion_controller_factory(Arc::new(NewRenoConfig::default()))
            }
            Congestion::Bbr => t.congestion_controller_factory(Arc::new(BbrConfig::default())),
        };
        let mut tls = spec.tls.clone().unwrap_or_default();
        tls.versions = vec![TlsVersion::Tls13];
        tls.alpn = vec!["h3".into()];
        let target = &spec.targets[0];
        let server_name = crate::tls::server_name(&target.host_header)
            .map(|n| n.to_str().into_owned())
            .unwrap_or_else(|_| target.addr.ip().to_string());
        Quic {
            requests: H3Requests::new(spec),
            endpoint: EndpointConfig::default(),
            transport: Arc::new(t),
            server_name,
            congestion,
            tls,
        }
    }

    /// A client config for one thread: its own TLS config, so its own
    /// session cache.
    pub(crate) fn client(&self) -> std::io::Result<ClientConfig> {
        let other = |e: String| std::io::Error::other(e);
        let rustls = self.tls.client_config().map_err(|e| other(e.to_string()))?;
        let quic = QuicClientConfig::try_from(rustls).map_err(|e| other(e.to_string()))?;
        let mut c = ClientConfig::new(Arc::new(quic));
        c.transport_config(self.transport.clone());
        Ok(c)
    }
}

/// Asks the kernel for a receive buffer of `bytes` (it may give less).
pub(super) fn receive_buffer(sock: &std::net::UdpSocket, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket and a c_int option value, for the call's length.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// A thread's tally of what its connections did and why they ended.
#[derive(Debug, Default)]
pub(crate) struct LossBook {
    pub connections: u64,
    datagrams_sent: u64,
    datagrams_received: u64,
    packets_sent: u64,
    packets_lost: u64,
    rtt_sum_us: u64,
    rtt_count: u64,
    min_rtt_us: Option<u64>,
    peak: usize,
    capped: bool,
    pub transport_errors: BTreeMap<String, u64>,
    pub h3_errors: BTreeMap<String, u64>,
    pub stream_resets: BTreeMap<String, u64>,
    pub idle_timeouts: u64,
    pub handshake_failures: u64,
    pub version_mismatches: u64,
    pub goaways: u64,
    pub retried: u64,
    /// System calls that sent datagrams, and that received them.
    pub send_calls: u64,
    pub receive_calls: u64,
    /// The kernel's offloads the thread's socket used.
    pub gso: bool,
    pub gro: bool,
}

impl LossBook {
    /// Connection `c`'s figures, once, as it closes or the run ends.
    pub(crate) fn book(&mut self, c: &H3Conn) {
        let s = c.q.stats();
        self.datagrams_sent += s.udp_tx.datagrams;
        self.datagrams_received += s.udp_rx.datagrams;
        self.packets_sent += s.path.sent_packets;
        self.packets_lost += s.path.lost_packets;
        if c.connected {
            self.rtt_sum_us += s.path.rtt.as_micros() as u64;
            self.rtt_count += 1;
            let min = c.q.min_rtt().as_micros() as u64;
            self.min_rtt_us = Some(self.min_rtt_us.map_or(min, |m| m.min(min)));
        }
        if c.capped && c.peak < usize::MAX {
            self.capped = true;
            self.peak = if self.peak == 0 {
                c.peak
            } else {
                self.peak.min(c.peak)
            };
        }
    }

    /// Why a connection was lost, counted; the kind its requests fail as.
    pub(crate) fn lost(&mut self, connected: bool, reason: &ConnectionError) -> ErrorKind {
        let count = |m: &mut BTreeMap<String, u64>, k: String| *m.entry(k).or_default() += 1;
        if !connected {
            self.handshake_failures += 1;
        }
        match reason {
            ConnectionError::VersionMismatch => {
                self.version_mismatches += 1;
                ErrorKind::ConnectOther
            }
            ConnectionError::TransportError(e) => {
                count(&mut self.transport_errors, format!("{:?}", e.code));
                if connected {
                    ErrorKind::Closed
                } else {
                    ErrorKind::Tls
                }
            }
            ConnectionError::ConnectionClosed(c) => {
                count(&mut self.transport_errors, format!("{:?}", c.error_code));
                if connected {
                    ErrorKind::Closed
                } else {
                    ErrorKind::Tls
                }
            }
            ConnectionError::ApplicationClosed(c) => {
                count(
                    &mut self.h3_errors,
                    crate::h3::code_name(c.error_code.into_inner()),
                );
                ErrorKind::Closed
            }
            ConnectionError::Reset => ErrorKind::Reset,
            ConnectionError::TimedOut => {
                self.idle_timeouts += 1;
                if connected {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::ConnectTimeout
                }
            }
            ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => ErrorKind::Closed,
        }
    }

    pub(crate) fn into_report(self, quic: &Quic, streams: usize) -> Http3Report {
        Http3Report {
            connections: self.connections,
            streams: streams as u64,
            server_max_streams: (self.capped && self.peak < streams).then_some(self.peak as u64),
            congestion: quic.congestion.name().into(),
            datagrams_sent: self.datagrams_sent,
            datagrams_received: self.datagrams_received,
            packets_sent: self.packets_sent,
            packets_lost: self.packets_lost,
            rtt_us: (self.rtt_count > 0).then(|| self.rtt_sum_us as f64 / self.rtt_count as f64),
            min_rtt_us: self.min_rtt_us,
            transport_errors: self.transport_errors,
            h3_errors: self.h3_errors,
            stream_resets: self.stream_resets,
            idle_timeouts: self.idle_timeouts,
            handshake_failures: self.handshake_failures,
            version_mismatches: self.version_mismatches,
            goaways: self.goaways,
            retried: self.retried,
            send_calls: self.send_calls,
            receive_calls: self.receive_calls,
            gso: self.gso,
            gro: self.gro,
        }
    }
}

/// Runs the threads of an HTTP/3 load over `window`.
pub(crate) fn run_threads(
    plan: &Shared,
    jobs: Vec<Job>,
    window: &Window,
) -> Vec<std::io::Result<ThreadResult>> {
    let quic = Quic::new(plan.spec);
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let (quic, window) = (&quic, window.clone());
                std::thread::Builder::new()
                    .name(format!("throng-quic-{}", job.index))
                    .spawn_scoped(s, move || {
                        QuicWorker::new(plan, quic, job).map(|w| w.run(window))
                    })
                    .expect("spawning a load thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("load thread panicked"))
            .collect()
    })
}

/// The threads' HTTP/3 figures as one.
pub(crate) fn outcome(parts: &[ThreadResult]) -> Option<Http3Report> {
    let mut it = parts.iter().map(|p| &p.stats.h3);
    let mut out = it.next()?.clone();
    for p in it {
        out.add(p);
    }
    Some(out)
}
