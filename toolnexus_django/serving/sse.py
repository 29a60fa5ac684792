"""Server-Sent Events for the streaming methods (message/stream,
SendStreamingMessage, tasks/resubscribe, SubscribeToTask).

Each event is one result in its binding's envelope (``data: {...}``: a
JSON-RPC response object, or the bare result on HTTP+JSON), as the official
a2a-sdk server sends them, with an ``id:`` a client may send back as
``Last-Event-ID`` to resume (see :mod:`toolnexus_django.a2a.follow`); an
error after the stream started is sent as ``event: error`` with the
binding's error object. Quiet periods carry a comment
(``: keep-alive``) every STREAM_HEARTBEAT seconds.

The body is a plain iterator handed to Django's ``StreamingHttpResponse``:
under gunicorn's threaded workers each open stream holds one server thread
(see :mod:`toolnexus_django.a2a.follow` for the bound). When the client goes
away, the next write fails, the server closes the iterator, and the stream
stops watching: a vanished client costs nothing more.
"""

from __future__ import annotations

import logging

from django.http import StreamingHttpResponse

from ..a2a.dialects import Dialect
from ..a2a.jsonrpc import INTERNAL_ERROR, RpcError
from ..a2a.methods import Envelope, EventStream
from ..strictjson import dumps

logger = logging.getLogger("toolnexus_django.streaming")

KEEP_ALIVE = b": keep-alive\n\n"


class SseBody:
    """The response body: one SSE event per item of ``stream``."""

    def __init__(self, envelope: Envelope, stream: EventStream) -> None:
        self.envelope = envelope
        self.stream = stream
        self.events = stream.events()
        self._done = False

    def __iter__(self) -> SseBody:
        return self

    def __next__(self) -> bytes:
        if self._done:
            raise StopIteration
        try:
            item = next(self.events)
        except StopIteration:
            self.close()
            raise
        except Exception as exc:
            self.close()
            logger.exception("SSE stream failed")
            error = exc if isinstance(exc, RpcError) else RpcError(INTERNAL_ERROR, "Internal error")
            error.details = self.stream.dialect is Dialect.V10
            return b"event: error\ndata: " + dumps(self.envelope.error(error)) + b"\n\n"
        if item is None:
            return KEEP_ALIVE
        head = b"id: " + item.id.encode() + b"\n" if item.id else b""
        return head + b"data: " + dumps(self.envelope.result(item.result)) + b"\n\n"

    def close(self) -> None:
        """Called when the stream ends, and by the server when the response
        is closed (client gone, server stopping): stops polling at once."""
        if not self._done:
            self._done = True
            try:
                close = getattr(self.events, "close", None)
                if close is not None:
                    close()
            finally:
                self.stream.close()


def sse_response(envelope: Envelope, stream: EventStream) -> StreamingHttpResponse:
    response = StreamingHttpResponse(SseBody(envelope, stream), content_type="text/event-stream")
    response["Cache-Control"] = "no-store"
    # Reverse proxies (nginx) must pass each event on as it comes.
    response["X-Accel-Buffering"] = "no"
    return response
