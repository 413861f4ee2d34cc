//! The frames other than DATA, each read whole: header blocks (HEADERS
//! and CONTINUATION, decoded with `hpack`), resets, SETTINGS, PINGs,
//! GOAWAYs and window updates, checked as RFC 9113 asks of a client.

use super::*;

impl H2 {
    pub(super) fn frame_of(
        &mut self,
        typ: u8,
        flags: u8,
        id: u32,
        p: &[u8],
    ) -> Result<Option<Event>, Fault> {
        match typ {
            HEADERS => {
                if id == 0 || id.is_multiple_of(2) || id >= self.next_id {
                    return Err(Fault::Protocol);
                }
                let mut frag = p;
                if flags & PADDED != 0 {
                    let (&pad, rest) = frag.split_first().ok_or(Fault::FrameSize)?;
                    if pad as usize > rest.len() {
                        return Err(Fault::Protocol);
                    }
                    frag = &rest[..rest.len() - pad as usize];
                }
                if flags & PRIORITY_FLAG != 0 {
                    if frag.len() < 5 {
                        return Err(Fault::FrameSize);
                    }
                    frag = &frag[5..];
                }
                self.block.clear();
                self.block.extend_from_slice(frag);
                let end_stream = flags & END_STREAM != 0;
                if flags & END_HEADERS == 0 {
                    self.continuing = Some((id, end_stream));
                    return Ok(None);
                }
                self.header_block(id, end_stream)
            }
            CONTINUATION => {
                let Some((sid, end_stream)) = self.continuing else {
                    return Err(Fault::Protocol);
                };
                if sid != id {
                    return Err(Fault::Protocol);
                }
                if self.block.len() + p.len() > MAX_BLOCK {
                    return Err(Fault::Protocol);
                }
                self.block.extend_from_slice(p);
                if flags & END_HEADERS == 0 {
                    return Ok(None);
                }
                self.continuing = None;
                self.header_block(id, end_stream)
            }
            PRIORITY => {
                if id == 0 {
                    return Err(Fault::Protocol);
                }
                if p.len() != 5 {
                    return Err(Fault::FrameSize);
                }
                Ok(None)
            }
            RST_STREAM => {
                if id == 0 || id >= self.next_id {
                    return Err(Fault::Protocol);
                }
                if p.len() != 4 {
                    return Err(Fault::FrameSize);
                }
                let code = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                // A reset of a stream already answered (a server ending its
                // half after a full response, §8.1) fails nothing, but is
                // one of the frames received all the same.
                if let Some(k) = self.streams.iter().position(|s| s.id == id) {
                    self.streams.swap_remove(k);
                }
                Ok(Some(Event::Reset { stream: id, code }))
            }
            SETTINGS => self.settings(flags, id, p),
            PUSH_PROMISE => Err(Fault::Protocol),
            PING => {
                if id != 0 {
                    return Err(Fault::Protocol);
                }
                if p.len() != 8 {
                    return Err(Fault::FrameSize);
                }
                if flags & ACK == 0 {
                    self.acknowledge()?;
                    frame_head(&mut self.out, 8, PING, ACK, 0);
                    self.out.extend_from_slice(p);
                }
                Ok(None)
            }
            GOAWAY => {
                if id != 0 {
                    return Err(Fault::Protocol);
                }
                if p.len() < 8 {
                    return Err(Fault::FrameSize);
                }
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & MAX_WINDOW;
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                // A later GOAWAY may only lower the last stream.
                let last = self.goaway.map_or(last, |l| l.min(last));
                self.goaway = Some(last);
                Ok(Some(Event::GoAway {
                    last_stream: last,
                    code,
                }))
            }
            WINDOW_UPDATE => {
                if p.len() != 4 {
                    return Err(Fault::FrameSize);
                }
                let inc = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & MAX_WINDOW;
                if inc == 0 {
                    return Err(Fault::Protocol);
                }
                let window = if id == 0 {
                    &mut self.conn_send
                } else {
                    match self.streams.iter_mut().find(|s| s.id == id) {
                        Some(s) => &mut s.send_window,
                        None => return Ok(None),
                    }
                };
                *window += i64::from(inc);
                if *window > i64::from(MAX_WINDOW) {
                    return Err(Fault::FlowControl);
                }
                Ok(None)
            }
            // Unknown frame types are ignored (§5.5).
            _ => Ok(None),
        }
    }

    /// One more acknowledgement queued. A server that sends PINGs or
    /// SETTINGS faster than it reads their acknowledgements would have
    /// them pile up without end (RFC 9113 §10.5: a flood); past
    /// `MAX_ACKS_UNWRITTEN` the connection fails instead. The bound is
    /// well above what one read can bring (a 64 KiB read holds 3,855
    /// PINGs), so a server that floods but reads is answered in full.
    fn acknowledge(&mut self) -> Result<(), Fault> {
        self.acks += 1;
        if self.acks > MAX_ACKS_UNWRITTEN {
            return Err(Fault::Protocol);
        }
        Ok(())
    }

    fn settings(&mut self, flags: u8, id: u32, p: &[u8]) -> Result<Option<Event>, Fault> {
        if id != 0 {
            return Err(Fault::Protocol);
        }
        if flags & ACK != 0 {
            if !p.is_empty() {
                return Err(Fault::FrameSize);
            }
            return Ok(None);
        }
        if !p.len().is_multiple_of(6) {
            return Err(Fault::FrameSize);
        }
        for s in p.chunks_exact(6) {
            let key = u16::from_be_bytes([s[0], s[1]]);
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match key {
                // Our blocks index only what fits the table it allows.
                SETTINGS_HEADER_TABLE_SIZE if (v as usize) < self.table_bytes && !self.plain => {
                    self.plain = true;
                    if self.primed {
                        self.size_update = true;
                    }
                }
                // Only a client may ask for push (RFC 9113 §6.5.2): a
                // server's 1 is a connection error, like any value past 1.
                SETTINGS_ENABLE_PUSH if v != 0 => return Err(Fault::Protocol),
                SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = v,
                SETTINGS_INITIAL_WINDOW_SIZE => {
                    if v > MAX_WINDOW {
                        return Err(Fault::FlowControl);
                    }
                    let delta = i64::from(v) - i64::from(self.peer_initial_window);
                    self.peer_initial_window = v;
                    for s in &mut self.streams {
                        s.send_window += delta;
                        if s.send_window > i64::from(MAX_WINDOW) {
                            return Err(Fault::FlowControl);
                        }
                    }
                }
                SETTINGS_MAX_FRAME_SIZE => {
                    if !(MAX_FRAME..=(1 << 24) - 1).contains(&v) {
                        return Err(Fault::Protocol);
                    }
                    self.peer_max_frame = v;
                }
                _ => {}
            }
        }
        self.got_settings = true;
        self.acknowledge()?;
        frame_head(&mut self.out, 0, SETTINGS, ACK, 0);
        Ok(Some(Event::Settings))
    }

    /// A whole header block for stream `id`.
    fn header_block(&mut self, id: u32, end_stream: bool) -> Result<Option<Event>, Fault> {
        let mut status: Option<u16> = None;
        let mut length: Option<u64> = None;
        let mut bad = false;
        let (mut pseudo, mut regular) = (false, false);
        let block = std::mem::take(&mut self.block);
        let mut fields = self.capture.as_mut().map(|c| &mut c.headers);
        if let Some(f) = fields.as_mut() {
            f.clear();
        }
        let r = self.decoder.decode(&block, |n, v| {
            if let Some(f) = fields.as_mut() {
                f.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ));
            }
            // Malformed (RFC 9113 §8.2, §8.3): a name with capitals, a
            // connection-specific field, a pseudo-field a response does not
            // have, or one after a regular field.
            if n.first() == Some(&b':') {
                bad |= regular || n != b":status" || pseudo;
                pseudo = true;
            } else {
                regular = true;
                bad |= matches!(
                    n,
                    b"connection"
                        | b"keep-alive"
                        | b"proxy-connection"
                        | b"transfer-encoding"
                        | b"upgrade"
                );
            }
            bad |= n.iter().any(u8::is_ascii_uppercase);
            match n {
                b":status" => {
                    status = std::str::from_utf8(v)
                        .ok()
                        .filter(|s| s.len() == 3)
                        .and_then(|s| s.parse().ok())
                        .filter(|s| (100..1000).contains(s));
                    bad |= status.is_none();
                }
                b"content-length" => {
                    length = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                    bad |= length.is_none();
                }
                _ => {}
            }
        });
        self.block = block;
        if r.is_err() {
            return Err(Fault::Compression);
        }
        let Some(k) = self.streams.iter().position(|s| s.id == id) else {
            // Decoded for the table's sake; the stream is gone. A new
            // answer on one that ended on its own answers no request.
            if status.is_some() && self.ended(id) {
                return Ok(Some(Event::Unsolicited { stream: id }));
            }
            return Ok(None);
        };
        let s = &mut self.streams[k];
        if s.headers_done {
            // Trailers end the stream, and carry no pseudo-field.
            if !end_stream || pseudo || bad {
                let id = s.id;
                self.streams.swap_remove(k);
                self.rst(id, 0x1);
                return Ok(Some(Event::Malformed { stream: id }));
            }
            return Ok(Some(self.end_stream(k)));
        }
        match status {
            // HTTP/2 has no 101 (§8.6): it is no interim response here.
            Some(st) if !bad && st != 101 && (st >= 200 || !end_stream) => {
                if st >= 200 {
                    s.status = st;
                    s.headers_done = true;
                    s.first_ns = self.now_ns;
                    s.content_length = length;
                }
                if end_stream {
                    return Ok(Some(self.end_stream(k)));
                }
                Ok(None)
            }
            _ => {
                let id = s.id;
                self.streams.swap_remove(k);
                self.rst(id, 0x1);
                Ok(Some(Event::Malformed { stream: id }))
            }
        }
    }
}
