//! A connection's HTTP/2 layer: the `H2` session (`crate::h2`) takes the
//! server's frames and its outcomes are handed back as `Happened`
//! (responses, resets, GOAWAYs, SETTINGS), which the driver applies to the
//! ring (driver/streams.rs); the frames it queues wait for the backend to
//! write (sealed by TLS first, over TLS).

use crate::h2::{Event, CODES};
use crate::result::ErrorKind;

use super::{Happened, Layers};

/// A thread's HTTP/2 figures for one window.
#[derive(Default)]
pub(crate) struct H2Stats {
    /// Connections that spoke HTTP/2, opened in the measured phase.
    pub connections: u64,
    /// RST_STREAM and GOAWAY received, by error code (the last slot for
    /// codes the RFC does not define).
    pub resets: [u64; CODES.len() + 1],
    pub goaways: [u64; CODES.len() + 1],
    /// Requests the server never processed (above a GOAWAY's last
    /// stream), sent again on a fresh connection.
    pub retried: u64,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server sent.
    pub peer_max_streams: Option<u32>,
}

impl Layers {
    /// HTTP/2's share of `http_step`: the session takes `data` up to the
    /// end of a frame that tells something. A fault of the server's has
    /// the session queue a GOAWAY saying why, and fails the connection.
    #[inline]
    pub(crate) fn h2_step(&mut self, data: &[u8], arrived: u64) -> (usize, Option<Happened>) {
        let Some(h) = self.h2.as_mut() else {
            return (data.len(), Some(Happened::Failed(ErrorKind::H2Protocol)));
        };
        h.stamp(arrived);
        let (used, ev) = match h.feed(data) {
            Ok(fed) => fed,
            Err(fault) => {
                h.fail(fault);
                return (data.len(), Some(Happened::Failed(fault.kind())));
            }
        };
        let ev = ev.map(|ev| match ev {
            Event::Response { stream, resp } => {
                self.first_rx_ns = h.first_byte_ns();
                Happened::StreamAnswer { stream, resp }
            }
            Event::Reset { stream, code } => Happened::Reset { stream, code },
            Event::Malformed { stream } => Happened::Malformed { stream },
            Event::GoAway { last_stream, code } => Happened::GoAway { last_stream, code },
            Event::Settings => Happened::Settings {
                max_streams: h.peer_max_streams(),
            },
            Event::Unsolicited { .. } => Happened::Unsolicited { fatal: false },
        });
        (used, ev)
    }
}
