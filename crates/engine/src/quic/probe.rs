//! One QUIC handshake to each address before the load, so a server that
//! does not answer on UDP, refuses the certificate's name or speaks no
//! h3 is one clear error, bounded by the run's timeout, rather than a
//! run of failed connections. Nothing is requested: the server sees no
//! request.

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{DatagramEvent, Endpoint, Event, VarInt};

use crate::spec::LoadSpec;

use super::Quic;

/// The first target that failed, and why, as `(url, reason)`.
pub(crate) fn probe(spec: &LoadSpec) -> Result<(), (String, String)> {
    let quic = Quic::new(spec);
    let mut seen = Vec::new();
    for t in &spec.targets {
        if seen.contains(&t.addr) {
            continue;
        }
        seen.push(t.addr);
        handshake(&quic, t.addr, spec.timeout).map_err(|reason| (t.url.clone(), reason))?;
    }
    Ok(())
}

fn handshake(quic: &Quic, addr: std::net::SocketAddr, timeout: Duration) -> Result<(), String> {
    let bind = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let sock = UdpSocket::bind(bind).map_err(|e| e.to_string())?;
    let mut endpoint = Endpoint::new(Arc::new(quic.endpoint.clone()), None, false, None);
    let client = quic.client().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let (ch, mut conn) = endpoint
        .connect(start, client, addr, &quic.server_name)
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut recv = BytesMut::new();
    let deadline = start + timeout;
    // Bounded by the deadline: each pass waits at most until it.
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "no QUIC handshake within {:.1} s (does the server speak HTTP/3 on UDP {}?)",
                timeout.as_secs_f64(),
                addr.port()
            ));
        }
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(back) = endpoint.handle_event(ch, ev) {
                conn.handle_event(back);
            }
        }
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    conn.close(now, VarInt::from_u32(0x100), bytes::Bytes::new());
                    while let Some(t) = conn.poll_transmit(now, 1, &mut buf) {
                        let _ = sock.send_to(&buf[..t.size], t.destination);
                        buf.clear();
                    }
                    return Ok(());
                }
                Event::ConnectionLost { reason } => return Err(reason.to_string()),
                _ => {}
            }
        }
        while let Some(t) = conn.poll_transmit(now, 1, &mut buf) {
            let _ = sock.send_to(&buf[..t.size], t.destination);
            buf.clear();
        }
        let mut wake = deadline;
        if let Some(t) = conn.poll_timeout() {
            wake = wake.min(t);
        }
        let wait = wake
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        sock.set_read_timeout(Some(wait))
            .map_err(|e| e.to_string())?;
        recv.resize(64 * 1024, 0);
        if let Ok((n, from)) = sock.recv_from(&mut recv) {
            let data = recv.split_to(n);
            let mut response = Vec::new();
            if let Some(DatagramEvent::ConnectionEvent(_, ev)) =
                endpoint.handle(Instant::now(), from, None, None, data, &mut response)
            {
                conn.handle_event(ev);
            }
        }
    }
}
