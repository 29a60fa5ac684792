"""What one gRPC call brings, read on the event loop that serves it.

A ``grpc.aio`` call object (its servicer context: metadata, peer) belongs to
the loop's thread, and lives only as long as the call: once the client
cancels, grpc ends the handler's task and unrefs the core call, whose memory
the metadata and the peer point into. Reading them from a database thread
that picked the work up late crashed a worker with SIGSEGV (30 GetTask calls
with wrong Basic credentials, cancelled after 0.3 s: each round; and 12
cancelled streaming sends). So the handler copies what the call says into a
:class:`CallInfo` first, on the loop, and only that copy crosses to a thread.

The request message arrives as bytes (the service is registered without a
request deserializer, :mod:`.grpcbinding`), so that before anything is parsed,
stored or sent to the model its size is held to the limit HTTP bodies have
(Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``: ``RESOURCE_EXHAUSTED``), then it is
decoded here, where an undecodable message is ``INVALID_ARGUMENT``, not
grpc's ``UNKNOWN``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from django.conf import settings
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from ..a2a.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError
from ..runtime.dbthreads import run_sync
from .pipeline import authenticate

T = TypeVar("T")

#: The path DRF sees a call under (its method's full name), e.g. for throttles' scopes.
SERVICE_PATH = "/lf.a2a.v1.A2AService/"
#: DRF's refusals (HTTP status) -> gRPC status.
REFUSALS: dict[int, grpc.StatusCode] = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
}
#: The setting that bounds a request message, as it bounds an HTTP body.
LIMIT_SETTING = "DATA_UPLOAD_MAX_MEMORY_SIZE"
#: grpc's own receive limit where that setting is None (Django's "no limit").
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: grpc's own receive limit is this many times the setting: a message up to
#: it reaches the handler and is refused in words naming the setting; a
#: larger one grpc drops as it arrives, without holding it. Measured on a
#: worker sent 3, 20 and 60 MB messages: 121 MB of peak RSS, nothing stored
#: (at grpc's 64 MiB all three were stored, and the worker peaked at 1,073 MB).
RECEIVE_MULTIPLE = 2
#: grpc takes a C int; never less than this (a tiny setting still gets words).
_INT32_MAX = 2**31 - 1
_RECEIVE_FLOOR = 64 * 1024


class Refused(Exception):
    """The call is answered with ``code`` before it is dispatched."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Abandoned(Exception):
    """The call was cancelled before a database thread took its work up."""


class MessageTooLarge(RpcError):
    """A request message over the limit: -32600, as an HTTP body over it,
    answered ``RESOURCE_EXHAUSTED`` (:func:`.grpcbinding.status_of`)."""


@dataclass(frozen=True)
class CallInfo:
    """A copy of what a call says: its text metadata and its peer."""

    metadata: tuple[tuple[str, str], ...]
    peer: str

    @classmethod
    def of(cls, context: grpc.aio.ServicerContext) -> CallInfo:
        """Copy ``context``'s metadata and peer: on the loop serving the call only."""
        metadata = tuple(
            (str(key).lower(), value)
            for key, value in context.invocation_metadata() or ()
            if isinstance(value, str)  # binary ``-bin`` entries are no header
        )
        return cls(metadata, str(context.peer() or ""))

    def get(self, key: str) -> str | None:
        """The last value of metadata ``key`` (lower-case), if any."""
        found = None
        for name, value in self.metadata:
            if name == key:
                found = value
        return found


def http_scope(info: CallInfo, method: str, authority: str = "") -> dict[str, Any]:
    """The call as the ASGI scope of a POST to ``/<service>/<method>``: its
    metadata as headers, its peer as the client, and ``authority`` (where
    clients dial: grpc passes no ``:authority`` on) as its Host unless the
    metadata names one, for ``request.get_host()``."""
    headers = [
        (key.encode("latin-1", "replace"), value.encode("latin-1", "replace"))
        for key, value in info.metadata
        if not key.startswith(":")
    ]
    if authority and not any(key == b"host" for key, _ in headers):
        headers.append((b"host", authority.encode("latin-1", "replace")))
    host, _, port = info.peer.partition(":")[2].rpartition(":")  # "ipv4:127.0.0.1:5555"
    path = SERVICE_PATH + method
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "2",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": (host.strip("[]"), int(port)) if port.isdigit() and len(port) <= 5 else None,
        "server": None,
    }


def drf_refusal(status: int, body: bytes) -> Refused:
    """DRF's refusal (its status and JSON body) as the call's status."""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        detail = None
    code = REFUSALS.get(status, grpc.StatusCode.PERMISSION_DENIED)
    return Refused(code, str(detail or "Refused"))


def grpc_caller(info: CallInfo, method: str, authority: str, abandoned: threading.Event) -> Any:
    """The DRF request the endpoint's classes authenticated (on a database
    thread: authenticating may query, and a password hash costs 0.3 s of CPU);
    raises :class:`Refused`, or :class:`Abandoned` when nobody waits any more."""
    if abandoned.is_set():
        raise Abandoned
    scope: Any = http_scope(info, method, authority)  # an HTTPScope, as DRF reads one
    request, refused = authenticate(scope, b"")
    if refused is not None:
        raise drf_refusal(refused[0], refused[1])
    return request


async def serve_admitted(
    info: CallInfo, method: str, authority: str, serve: Callable[[Any], T]
) -> T:
    """:func:`grpc_caller`, then ``serve(request)`` for the request DRF
    admitted, in one hop to a database thread (as ``endpoint.admitted`` does
    over ASGI). Work still queued when the call is cancelled is skipped: a
    cancelled call costs no password hash."""
    abandoned = threading.Event()
    try:
        return await run_sync(_serve_admitted, info, method, authority, abandoned, serve)
    except asyncio.CancelledError:
        abandoned.set()
        raise


def _serve_admitted(
    info: CallInfo,
    method: str,
    authority: str,
    abandoned: threading.Event,
    serve: Callable[[Any], T],
) -> T:
    return serve(grpc_caller(info, method, authority, abandoned))


def message_limit() -> int | None:
    """The most bytes a request message may have (None: no limit)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return None if limit is None else int(limit)


def receive_limit() -> int:
    """grpc's own ``max_receive_message_length`` for :func:`message_limit`."""
    limit = message_limit()
    if limit is None:
        return MAX_MESSAGE_BYTES
    return min(_INT32_MAX, max(_RECEIVE_FLOOR, limit * RECEIVE_MULTIPLE))


def check_size(raw: bytes) -> None:
    """Refuse a message over :func:`message_limit`, before it is parsed."""
    limit = message_limit()
    if limit is not None and len(raw) > limit:
        raise MessageTooLarge(
            INVALID_REQUEST,
            f"Invalid Request: the message is {len(raw)} bytes, larger than {LIMIT_SETTING} "
            f"({limit} bytes)",
            data={"limit": limit, "setting": LIMIT_SETTING},
        )


def request_params(raw: bytes, kind: type[Message]) -> dict[str, Any]:
    """``raw`` decoded as a ``kind`` message, as its v1.0 JSON (the proto3
    JSON mapping): -32700 (``INVALID_ARGUMENT``) when it does not decode,
    -32602 when it decodes to what JSON cannot say (a Timestamp past year
    9999, a NaN in a Struct)."""
    name = kind.DESCRIPTOR.full_name
    try:
        message = kind.FromString(raw)
    except (DecodeError, RecursionError) as exc:  # upb: nesting past 100 is a DecodeError
        raise RpcError(
            PARSE_ERROR, f"Parse error: the request is not a valid {name} message: {exc}"
        ) from None
    try:
        return json_format.MessageToDict(message)
    except (json_format.Error, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise RpcError(
            INVALID_PARAMS, f"Invalid params: the {name} message has no JSON form: {exc}"
        ) from None
