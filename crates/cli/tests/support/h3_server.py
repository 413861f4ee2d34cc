"""An HTTP/3 server on aioquic for throng's tests.

Usage: h3_server.py PORT CERT KEY LOG [ADDRESS]

Answers every request with BODY, except `/reset`, whose stream it resets
with H3_REQUEST_REJECTED before any answer, and `/silent`, which it
never answers, and `/stamped`, whose line in LOG is followed by the
monotonic clock's reading as it was read, in seconds, and `/big-header`, which it answers with five header fields of
14,000 bytes: above the 65,536 the client's SETTINGS allow; `/slow`, which
it answers 150 ms after reading it. Under `/goaway`, a connection's fifth request is its
last: answered, then a GOAWAY names the next stream, and requests on it
or above are logged as `ignored PATH` and never answered. Each request's path is
appended to LOG as it arrives, so a test counts exactly what the server
saw. Prints `ready` once it listens; runs until killed.
"""

import asyncio
import sys
import time

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection, encode_frame
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated

BODY = b"hello over h3\n"
H3_REQUEST_REJECTED = 0x10B
SLOW_S = 0.15


class Handler(QuicConnectionProtocol):
    log = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.answered = 0
        self.goaway = None

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if not isinstance(e, HeadersReceived):
                continue
            path = dict(e.headers).get(b":path", b"")
            if self.goaway is not None and e.stream_id >= self.goaway:
                Handler.log.write("ignored " + path.decode() + "\n")
                Handler.log.flush()
                continue
            if path == b"/stamped":
                Handler.log.write("/stamped %.6f\n" % time.monotonic())
            else:
                Handler.log.write(path.decode() + "\n")
            Handler.log.flush()
            self.answered += 1
            if path == b"/goaway" and self.answered == 5:
                self.goaway = e.stream_id + 4
                self._quic.send_stream_data(
                    self.h3._local_control_stream_id,
                    encode_frame(FrameType.GOAWAY, encode_uint_var(self.goaway)),
                )
            if path == b"/reset":
                self._quic.reset_stream(e.stream_id, H3_REQUEST_REJECTED)
            elif path == b"/silent":
                pass
            elif path == b"/slow":
                asyncio.get_running_loop().call_later(SLOW_S, self.answer, e.stream_id)
            elif path == b"/big-header":
                self.h3.send_headers(
                    e.stream_id,
                    [(b":status", b"200")] + [(b"x-big-%d" % k, b"~" * 14000) for k in range(5)],
                )
                self.h3.send_data(e.stream_id, BODY, end_stream=True)
            else:
                self.answer(e.stream_id, transmit=False)
        self.transmit()

    def answer(self, stream_id, transmit=True):
        self.h3.send_headers(
            stream_id,
            [(b":status", b"200"), (b"content-length", str(len(BODY)).encode())],
        )
        self.h3.send_data(stream_id, BODY, end_stream=True)
        if transmit:
            self.transmit()


async def main():
    port, cert, key, log = sys.argv[1:5]
    address = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
    Handler.log = open(log, "a")
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    await serve(address, int(port), configuration=config, create_protocol=Handler)
    print("ready", flush=True)
    await asyncio.Future()


asyncio.run(main())
