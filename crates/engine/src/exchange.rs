//! One connection's bytes held against the requests written on it: the
//! parser's responses, and what the stream of a connection adds to them —
//! bytes nobody asked for, and the close. Sans-IO like [`crate::http1`], so
//! the driver and the fuzz harness (the `fuzz` module) run the same rules, and
//! what a server sent is judged the same however TCP split it.

use crate::http1::{BodySink, NoBody, ParseError, ParserConfig, Response, ResponseParser};
use crate::result::ErrorKind;

/// Why a connection's byte stream cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A response began while no request was on the wire: a second answer
    /// to one request, or an idle server talking. Which request any later
    /// byte answers can no longer be known.
    Unsolicited,
    /// The bytes are not HTTP/1.x.
    Parse(ParseError),
    /// The server closed the connection in the middle of a response.
    Closed,
}

impl Fault {
    pub fn kind(self) -> ErrorKind {
        match self {
            Fault::Unsolicited => ErrorKind::Unsolicited,
            Fault::Parse(_) => ErrorKind::Parse,
            Fault::Closed => ErrorKind::Closed,
        }
    }
}

/// One field: laid out as its parser is (`driver::Conn`).
#[repr(transparent)]
pub struct Exchange {
    parser: ResponseParser,
}

impl Exchange {
    /// Where the fields a response reads end (its parser's).
    /// (The layout test of `driver::Conn` reads it.)
    #[cfg(test)]
    pub(crate) const HOT_END: usize = ResponseParser::HOT_END;

    pub fn new(cfg: ParserConfig) -> Self {
        Exchange {
            parser: ResponseParser::new(cfg),
        }
    }

    /// A new connection: nothing of a response is held.
    pub fn reset(&mut self) {
        self.parser.reset();
    }

    /// No byte of an unfinished response is held: the next byte read
    /// starts a response.
    pub fn is_idle(&self) -> bool {
        self.parser.is_idle()
    }

    /// The next byte starts a status line (see [`ResponseParser`]).
    pub fn at_status_line(&self) -> bool {
        self.parser.at_status_line()
    }

    /// The last feed skipped an interim (1xx) response.
    pub fn skipped_interim(&self) -> bool {
        self.parser.skipped_interim()
    }

    /// [`ResponseParser::feed`], for a connection on which `awaiting` says
    /// whether a request has reached the wire (whole or in part) and is
    /// still unanswered.
    pub fn feed(&mut self, buf: &[u8], awaiting: bool) -> Result<(usize, Option<Response>), Fault> {
        self.feed_with(buf, awaiting, &mut NoBody)
    }

    pub fn feed_with<S: BodySink>(
        &mut self,
        buf: &[u8],
        awaiting: bool,
        sink: &mut S,
    ) -> Result<(usize, Option<Response>), Fault> {
        if !awaiting && self.parser.is_idle() {
            // Blank lines between responses are tolerated as httparse
            // tolerates them before a status line; anything else is the
            // start of a response that answers nothing. Judged byte by byte,
            // so where the stream was split does not matter.
            let blank = buf
                .iter()
                .position(|&b| b != b'\r' && b != b'\n')
                .unwrap_or(buf.len());
            if blank < buf.len() {
                return Err(Fault::Unsolicited);
            }
            return Ok((blank, None));
        }
        self.parser.feed_with(buf, sink).map_err(Fault::Parse)
    }

    /// The server closed the connection: a close-delimited body ends here
    /// (Ok(Some)); Ok(None) when no response was under way. The exchange is
    /// reset afterwards.
    pub fn eof(&mut self) -> Result<Option<Response>, Fault> {
        self.parser.eof().map_err(|e| match e {
            ParseError::ClosedMidResponse => Fault::Closed,
            e => Fault::Parse(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    #[test]
    fn a_response_with_no_request_waiting_is_unsolicited() {
        let mut x = Exchange::new(ParserConfig::default());
        let mut two = OK.to_vec();
        two.extend_from_slice(OK);
        let (n, r) = x.feed(&two, true).unwrap();
        assert_eq!((n, r.map(|r| r.status)), (OK.len(), Some(200)));
        assert_eq!(x.feed(&two[n..], false), Err(Fault::Unsolicited));
        // Its first byte is enough: a server streaming an endless unasked
        // answer is caught at once, not when (if ever) it ends.
        let mut x = Exchange::new(ParserConfig::default());
        assert_eq!(x.feed(b"H", false), Err(Fault::Unsolicited));
    }

    #[test]
    fn blank_lines_with_no_request_waiting_are_not_a_response() {
        let mut x = Exchange::new(ParserConfig::default());
        assert_eq!(x.feed(b"\r\n\r", false), Ok((3, None)));
        assert_eq!(x.feed(b"\n", false), Ok((1, None)));
        assert!(x.is_idle());
        assert_eq!(x.eof(), Ok(None));
        assert_eq!(x.feed(b"\r\nX", false), Err(Fault::Unsolicited));
    }

    #[test]
    fn the_close_ends_a_response_or_fails_it() {
        let mut x = Exchange::new(ParserConfig::default());
        let open = b"HTTP/1.1 200 OK\r\n\r\nuntil the close";
        assert_eq!(x.feed(open, true), Ok((open.len(), None)));
        let r = x.eof().unwrap().unwrap();
        assert_eq!((r.body_bytes, r.keep_alive), (15, false));
        assert_eq!(x.feed(&OK[..10], true), Ok((10, None)));
        assert_eq!(x.eof(), Err(Fault::Closed));
        assert!(x.is_idle());
        assert_eq!(Fault::Closed.kind(), ErrorKind::Closed);
        assert_eq!(
            Fault::Parse(ParseError::StatusLine).kind(),
            ErrorKind::Parse
        );
        assert_eq!(Fault::Unsolicited.kind(), ErrorKind::Unsolicited);
    }
}
