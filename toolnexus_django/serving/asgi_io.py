"""Reading a request body and sending a response over ASGI, for every
binding of the ASGI edge (JSON-RPC, HTTP+JSON, the card, MCP)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope

from ..strictjson import dumps

JSON_HEADERS = [(b"content-type", b"application/json")]


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


def headers_of(scope: HTTPScope) -> dict[str, str]:
    """The request's headers by lower-case name (the last of repeated ones)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}


async def read_body(receive: ASGIReceiveCallable, limit: int | None, timeout: float) -> bytes:
    """The whole body; raises :class:`BodyTooLarge` past ``limit`` bytes,
    ``TimeoutError`` when it takes longer than ``timeout`` seconds in all,
    :class:`ClientGone` when the client disconnects first."""
    chunks: list[bytes] = []
    size = 0
    async with asyncio.timeout(timeout):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientGone  # http.disconnect, the only other message here
            chunk = message.get("body", b"")
            size += len(chunk)
            if limit is not None and size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def respond(
    send: ASGISendCallable, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers, "trailers": False}
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def respond_json(send: ASGISendCallable, payload: Any, status: int = 200) -> None:
    # Strict JSON whatever the payload holds (see strictjson).
    await respond(send, status, dumps(payload), JSON_HEADERS)


async def respond_timeout(send: ASGISendCallable) -> None:
    """A body too slow (or a client gone): a 408 the client may never read;
    nothing was done."""
    with contextlib.suppress(Exception):
        await respond(send, 408, b"Request Timeout", [(b"connection", b"close")])
