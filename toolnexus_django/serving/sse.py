"""Server-Sent Events for the streaming methods (message/stream,
SendStreamingMessage, tasks/resubscribe, SubscribeToTask), framed here once
for both edges.

Each event is one result in its binding's envelope (``data: {...}``: a
JSON-RPC response object, or the bare result on HTTP+JSON), as the official
a2a-sdk server sends them, with an ``id:`` a client may send back as
``Last-Event-ID`` to resume (see :mod:`toolnexus_django.a2a.follow`); an
error after the stream started is sent as ``event: error`` with the
binding's error object. Quiet periods carry a comment
(``: keep-alive``) every STREAM_HEARTBEAT seconds.

Over ASGI (:func:`stream_events`) a stream holds no thread: it waits on its
Task's wake-ups, and stops watching as soon as the client disconnects.
Under WSGI (:func:`sse_response`) the body is a plain iterator handed to
Django's ``StreamingHttpResponse``: under gunicorn's threaded workers each
open stream holds one server thread (see :mod:`toolnexus_django.a2a.follow`
for the bound). When the client goes away, the next write fails, the server
closes the iterator, and the stream stops watching.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable
from django.http import StreamingHttpResponse

from ..a2a.dialects import Dialect
from ..a2a.follow import Message
from ..a2a.jsonrpc import INTERNAL_ERROR, RpcError
from ..a2a.methods import Envelope, EventStream
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from ..strictjson import dumps

logger = logging.getLogger("toolnexus_django.streaming")

KEEP_ALIVE = b": keep-alive\n\n"
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
]


def event(envelope: Envelope, item: Message | None) -> bytes:
    """One message as an SSE event (None: a keep-alive comment)."""
    if item is None:
        return KEEP_ALIVE
    head = b"id: " + item.id.encode() + b"\n" if item.id else b""
    return head + b"data: " + dumps(envelope.result(item.result)) + b"\n\n"


def error_event(envelope: Envelope, stream: EventStream, exc: Exception) -> bytes:
    """The ``event: error`` that ends a stream that failed (logged here)."""
    log_exception(logger, "SSE stream failed", exc=exc)
    error = exc if isinstance(exc, RpcError) else RpcError(INTERNAL_ERROR, "Internal error")
    error.details = stream.dialect is Dialect.V10
    return b"event: error\ndata: " + dumps(envelope.error(error)) + b"\n\n"


# -- under WSGI ------------------------------------------------------------------------------


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
            return error_event(self.envelope, self.stream, exc)
        return event(self.envelope, item)

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


# -- over ASGI -------------------------------------------------------------------------------


async def _until_disconnect(receive: ASGIReceiveCallable) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def stream_events(
    receive: ASGIReceiveCallable, send: ASGISendCallable, envelope: Envelope, stream: EventStream
) -> None:
    """The stream's messages as Server-Sent Events, until it ends or the
    client goes away (then it stops watching at once).

    An idle stream is two tasks, nothing per message: the request's own
    (here, waiting in the follower: a future and a timer) and ``gone``,
    waiting for the client to go away — which ends the follower's wait at
    once (``until``) rather than racing a task per message against it. Kept
    between messages: nothing of the Task (issue 32: 10,000 idle streams)."""
    gone = asyncio.ensure_future(_until_disconnect(receive))
    events = stream.aevents(run_sync, until=gone)
    try:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": SSE_HEADERS,
                "trailers": False,
            }
        )
        while await _send_next(send, envelope, stream, events, gone):
            pass
        if not gone.done():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        pass  # the client went away mid-write
    finally:
        gone.cancel()
        with contextlib.suppress(BaseException):
            await events.aclose()
        stream.close()


async def _send_next(
    send: ASGISendCallable,
    envelope: Envelope,
    stream: EventStream,
    events: AsyncGenerator[Message | None, None],
    gone: asyncio.Future[None],
) -> bool:
    """Send the stream's next message; False when the stream is over (its
    locals, the message among them, go with this call)."""
    try:
        item = await events.__anext__()
    except StopAsyncIteration:
        return False
    except Exception as exc:
        if not gone.done():
            chunk = error_event(envelope, stream, exc)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        return False
    if gone.done():
        return False  # the client went away
    await send({"type": "http.response.body", "body": event(envelope, item), "more_body": True})
    return True
