"""The HTTP protocol of ``toolnexus_serve``'s workers: uvicorn's httptools
protocol, bounded against clients that are slow or send too much.

Works around uvicorn, which times out idle keep-alive connections but bounds
neither how long a client may take over a request nor how large its headers
may grow (httptools keeps an unfinished header in memory). Here, for every
path the server serves — the lean endpoint, MCP, and everything handed to
Django (the admin, static files, a project's own views):

* **Headers**: a request's line and headers must be complete within
  ``read_timeout`` seconds of the connection opening (or of the request's
  first byte), else the connection is closed; and within ``max_header_bytes``
  bytes, counted as they arrive (an unfinished header counts), else the
  client gets ``431 Request Header Fields Too Large`` and the connection is
  closed at once — so a connection never holds more than that (plus one
  read) of headers in memory.
* **Body**: the whole body must arrive within ``read_timeout`` seconds of the
  end of the headers, else the client gets ``408 Request Timeout`` (if no
  response has started) and the connection is closed; the application sees
  the client gone (``http.disconnect``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ..conf import DEFAULTS

logger = logging.getLogger("toolnexus_django.server")

DEFAULT_MAX_HEADER_BYTES: int = DEFAULTS["MAX_HEADER_BYTES"]
#: After a refusal, how long what the client still sends is read and dropped
#: before the connection is closed (a close with unread data resets it, and
#: the client would lose the answer), as nginx's lingering close does.
LINGER_SECONDS = 2.0


class Bounds:
    """A connection's state for the bounds (one attribute of the protocol:
    uvicorn's protocol has 28, and past 30 Python gives an instance a dict
    of its own, 1.3 KB more per connection — 13 MB for 10,000 open streams)."""

    __slots__ = ("deadline", "head_bytes", "in_head", "lingering")

    def __init__(self) -> None:
        self.deadline: asyncio.TimerHandle | None = None
        #: Whether the parser is reading a request's line and headers (or
        #: waiting for the next request), and how many bytes of them came.
        self.in_head = True
        self.head_bytes = 0
        self.lingering = False


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the deadlines and the header-size
    limit of the module (subclass it with other class attributes to set them)."""

    read_timeout: float = 30.0
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._bounds = Bounds()
        self._arm(self._headers_too_slow)

    # -- deadlines --------------------------------------------------------------------------

    def _arm(self, expired: Callable[[], None]) -> None:
        if self._bounds.deadline is None:
            self._bounds.deadline = self.loop.call_later(self.read_timeout, expired)

    def _disarm(self) -> None:
        if self._bounds.deadline is not None:
            self._bounds.deadline.cancel()
            self._bounds.deadline = None

    def _headers_too_slow(self) -> None:
        self._bounds.deadline = None
        if not self.transport.is_closing():
            logger.info("closing a connection that sent no complete headers in time")
            self.transport.close()

    def _body_too_slow(self) -> None:
        self._bounds.deadline = None
        if self.transport.is_closing():
            return
        logger.info("closing a connection that did not send its whole body in time")
        # A 408 only where no response to this request has begun.
        started = self.cycle is not None and self.cycle.response_started
        self._refuse(408, b"Request Timeout: the body did not arrive in time", answer=not started)

    def _refuse(self, status: int, message: bytes, *, answer: bool) -> None:
        """Answer ``status`` (when ``answer``) and end the connection: the
        application of a request still running sees the client gone."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # what it sends from now on is dropped
            cycle.message_event.set()  # a receive() waiting for the body returns
        if not answer or not self.transport.can_write_eof():
            self.transport.close()
            return
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(message),
            b"connection: close\r\n\r\n",
            message,
        ]
        self.transport.write(b"".join(head))
        self.transport.write_eof()
        self._bounds.lingering = True
        self._disarm()
        self._bounds.deadline = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    # -- counting header bytes ------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._bounds.lingering:
            return  # refused: read and dropped until the client or LINGER_SECONDS ends it
        if self._bounds.in_head:
            self._bounds.head_bytes += len(data)
        super().data_received(data)
        if (
            self._bounds.in_head
            and self._bounds.head_bytes > self.max_header_bytes
            and not self.transport.is_closing()
        ):
            self._disarm()
            logger.info("refusing a request whose headers exceed %d bytes", self.max_header_bytes)
            # Not while an earlier (pipelined) request's response is still to come.
            previous = self.cycle
            self._refuse(
                431,
                b"Request Header Fields Too Large",
                answer=previous is None or previous.response_complete,
            )

    # -- the parser's callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self._headers_too_slow)

    def on_headers_complete(self) -> None:
        self._disarm()
        self._bounds.in_head = False
        super().on_headers_complete()
        if not (self.parser.should_upgrade() and self._should_upgrade()):
            self._arm(self._body_too_slow)

    def on_message_complete(self) -> None:
        self._disarm()
        self._bounds.in_head, self._bounds.head_bytes = True, 0
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


__all__ = ["DEFAULT_MAX_HEADER_BYTES", "BoundedHttpProtocol", "Bounds"]
