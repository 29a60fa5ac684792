"""The JSON-RPC endpoint and the HTTP+JSON binding over ASGI.

Each request goes through one pipeline: read the body within its limits,
then, in one hop to a database thread (:mod:`toolnexus_django.runtime.dbthreads`),
authenticate and permit it with the endpoint's DRF classes (only where they
must read something: :mod:`.pipeline`, :mod:`.anonymous`), parse it
(JSON-RPC) or route it (HTTP+JSON, ``a2a.rest``) and dispatch it to the
request handler (:mod:`.handler`); then render the answer in the
binding's words — a stream as Server-Sent Events (:mod:`.sse`). No thread
is held while a request waits: a stream or a blocking send waits on its
Task's wake-ups (``lifecycle.wakeups``), so one process can keep thousands
open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope
from django.conf import settings
from django.core.signals import setting_changed

from ..a2a.card import extended_card_builder
from ..a2a.dialects import version_asked
from ..a2a.follow import await_settled
from ..a2a.jsonrpc import (
    INTERNAL_ERROR,
    AuthenticationRequired,
    RpcEnvelope,
    RpcError,
    body_too_large,
    failure,
    parse_request,
    request_id,
    success,
)
from ..a2a.methods import Awaiting, CallContext, EventStream
from ..a2a.refusals import Refused
from ..a2a.rest import MethodNotAllowed, RestEnvelope, check_version, rest_error, route
from ..conf import toolnexus_settings
from ..observability import tracing
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from ..runtime.registry import PerProcess
from ..stores import TaskStore, get_task_store
from ..strictjson import dumps
from .anonymous import AnonymousPass, anonymous_pass, asgi_headers
from .card import endpoint_url, respond_card
from .handler import EndpointActions, handler
from .pipeline import (
    A2A_JSON,
    A2A_JSON_HEADERS,
    JSON_HEADERS,
    BodyTooLarge,
    ClientGone,
    EndpointAccess,
    authenticate,
    caller_owner,
    encoded,
    headers_of,
    needs_drf,
    not_authenticated,
    read_body,
    refusal_of,
    respond,
    respond_json,
    respond_timeout,
    rpc_authentication_classes,
    rpc_permission_classes,
)
from .sse import stream_events

logger = logging.getLogger("toolnexus_django.endpoint")


@dataclass(frozen=True)
class Bound:
    """What every request here reads of the settings and of the process,
    looked up on first use — not per request in ``conf``, the store's
    registry and DRF's settings — and again in a forked child or after
    ``TOOLNEXUS`` or ``REST_FRAMEWORK`` changes (``override_settings``)."""

    store: TaskStore
    read_timeout: float
    authentication: tuple[Any, ...]
    #: Whether a request goes through DRF at all (:func:`.pipeline.needs_drf`).
    drf: bool
    #: Which of them are anonymous and admitted without it (:mod:`.anonymous`).
    anonymous: AnonymousPass | None


def takes_drf(binding: Bound, method: str, headers: Iterable[tuple[str, str]]) -> bool:
    """Whether a request must go through the endpoint's DRF classes (on a
    database thread): not when none is set, nor for a caller DRF would find
    anonymous and admit (:class:`.anonymous.AnonymousPass`)."""
    if not binding.drf:
        return False
    return binding.anonymous is None or not binding.anonymous.admits(method, headers)


def _bind() -> Bound:
    authentication, permissions = rpc_authentication_classes(), rpc_permission_classes()
    return Bound(
        store=get_task_store(),
        read_timeout=float(toolnexus_settings.READ_TIMEOUT),
        authentication=tuple(authentication),  # shared by every request: not a list
        drf=needs_drf(authentication, permissions),
        anonymous=anonymous_pass(authentication, permissions, EndpointAccess),
    )


#: Rebuilt in a forked child and, as every reloading PerProcess, when
#: TOOLNEXUS (or DATABASES, TASKS) changes; REST_FRAMEWORK below.
_binding = PerProcess("endpoint binding", _bind)


def bound() -> Bound:
    """This process's :class:`Bound`."""
    return _binding.get()


def forget_bound() -> None:
    """Drop the binding: the next request binds the settings as they are."""
    _binding.reset()


def _drf_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "REST_FRAMEWORK":  # DRF's default classes
        forget_bound()


setting_changed.connect(_drf_changed)


def call_context(
    scope: HTTPScope,
    store: Any,
    request: Any,
    version: str | None,
    rpc_path: str,
    binding: str = "jsonrpc",
) -> CallContext:
    """Who is calling and what they may do, for the handler."""
    headers = headers_of(scope)
    return CallContext(
        store=store,
        actions=EndpointActions(store),
        owner=caller_owner(request),
        a2a_version=version,
        last_event_id=headers.get("last-event-id"),
        binding=binding,
        trace_headers=headers if tracing.recording() else None,
        held=None,  # waiting holds no thread here
        # None for a caller DRF did not see: anonymous, as DRF would have found.
        extended_card=extended_card_builder(
            request, lambda: endpoint_url(scope, rpc_path), bound().authentication
        ),
    )


def _version(scope: HTTPScope, headers: dict[str, str]) -> str | None:
    """The A2A version the caller names: header, else query parameter."""
    query = scope.get("query_string") or b""
    asked = None
    if b"a2a-version" in query.lower():
        values = parse_qs(query.decode("latin-1"))
        for key, found in values.items():
            if key.lower() == "a2a-version" and found:
                asked = found[0]
    return version_asked(headers.get("a2a-version"), asked)


def _speaks_v1(version: str | None) -> bool:
    return str(version or "").strip().startswith("1")


async def read_request(
    receive: ASGIReceiveCallable, send: ASGISendCallable, version: str | None, *, rest: bool = False
) -> bytes | None:
    """The request's body, or None when it was answered already (too big,
    too slow; ``rest``: in the HTTP+JSON binding's words)."""
    limit, binding = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, bound()
    try:
        return await read_body(receive, limit, binding.read_timeout)
    except BodyTooLarge:
        err = body_too_large(limit, _speaks_v1(version))
        await (respond_rest_error(send, err) if rest else respond_json(send, failure(None, err)))
        return None
    except (TimeoutError, ClientGone):
        await respond_timeout(send)
        return None


@dataclass
class Incoming:
    """One request on its way: who is calling (their DRF request, None for a
    caller DRF did not see) and what they asked, filled in as they are known
    — on the database thread, for a caller DRF reads — and read on the loop
    to answer."""

    request: Any = None
    rpc: Any = None

    @property
    def id(self) -> Any:
        return self.rpc.id if self.rpc is not None else None


async def handle_call(
    scope: HTTPScope,
    body: bytes,
    call: Incoming,
    parse: Callable[[], Any],
    context: Callable[[Any], CallContext],
    *,
    rest: bool = False,
) -> Any:
    """The handler's answer to the request: ``parse()`` makes the call,
    ``context(request)`` says who makes it. A caller the endpoint's DRF
    classes must read is read and served in one database-thread hop
    (:func:`admitted`); any other (:func:`takes_drf`) is parsed on the loop
    and served in one hop too."""
    if takes_drf(bound(), scope["method"], asgi_headers(scope)):
        return await run_sync(admitted, scope, body, call, parse, context, rest)
    call.rpc = parse()
    return await run_sync(handler.dispatch, call.rpc, context(None))


def admitted(
    scope: HTTPScope,
    body: bytes,
    call: Incoming,
    parse: Callable[[], Any],
    context: Callable[[Any], CallContext],
    rest: bool,
) -> Any:
    """On a database thread: the endpoint's DRF classes (authenticating may
    query), then, for a caller they admit, the call — one hop, not one to
    authenticate and one to serve. Raises DRF's refusal as the binding's
    error (:class:`.Refused`; JSON-RPC: with the id of the request ``body``
    holds, parsed here too, off the event loop)."""
    request, refusal = authenticate(scope, body)
    if refusal is not None:
        err = refusal_of(*refusal)
        if not rest:
            err.id = request_id(body)
        raise err
    call.request = request
    call.rpc = parse()
    try:
        return handler.dispatch(call.rpc, context(request))
    except AuthenticationRequired:
        raise refusal_of(*not_authenticated(request, scope)) from None


async def respond_refusal(send: ASGISendCallable, err: Refused) -> None:
    """A JSON-RPC error object with the refusal's HTTP status and headers."""
    body = dumps(failure(err.id, err))
    await respond(send, err.status, body, [*JSON_HEADERS, *encoded(err.headers)])


async def serve_rpc(
    scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable, rpc_path: str = ""
) -> None:
    """``POST <prefix>/``: one JSON-RPC request."""
    version = _version(scope, headers_of(scope))
    call = Incoming()
    try:
        body = await read_request(receive, send, version)
        if body is None:
            return
        store = bound().store
        path = rpc_path or scope.get("path", "")
        result = await handle_call(
            scope,
            body,
            call,
            lambda: parse_request(body),
            lambda request: call_context(scope, store, request, version, path),
        )
        if isinstance(result, EventStream):
            await stream_events(receive, send, RpcEnvelope(call.id), result)
            return
        if isinstance(result, Awaiting):
            result = await _settle(store, result)
        await respond_json(send, success(call.id, result))
    except Refused as err:  # by the DRF classes, as they read the caller
        err.id = err.id if err.id is not None else call.id
        err.details = _speaks_v1(version)
        await respond_refusal(send, err)
    except RpcError as err:
        await respond_json(send, failure(err.id if err.id is not None else call.id, err))
    except AuthenticationRequired:  # a caller DRF did not see
        refusal = refusal_of(*await run_sync(not_authenticated, call.request, scope))
        refusal.id, refusal.details = call.id, _speaks_v1(version)
        await respond_refusal(send, refusal)
    except Exception:  # a bug (a traceback), or a database that is down (one line)
        log_exception(logger, "JSON-RPC request failed")
        await respond_json(send, failure(call.id, RpcError(INTERNAL_ERROR, "Internal error")))


async def _settle(store: Any, waiting: Awaiting) -> Any:
    try:
        return waiting.result(await await_settled(store, waiting.task, run_sync))
    finally:
        waiting.close()


async def serve_rest(
    scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable, rpc_path: str, path: str
) -> None:
    """``<prefix>/message:send``, ``<prefix>/tasks/{id}``, ...: the HTTP+JSON
    binding (a2a/rest.py), on the same operations as :func:`serve_rpc`."""
    headers = headers_of(scope)
    version = _version(scope, headers)
    call = Incoming()
    try:
        body = await read_request(receive, send, "1.0", rest=True)
        if body is None:
            return
        store = bound().store

        def parse() -> Any:
            check_version(version)
            query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
            return route(scope["method"], path, query, body)

        result = await handle_call(
            scope,
            body,
            call,
            parse,
            lambda request: call_context(scope, store, request, "1.0", rpc_path, "http+json"),
            rest=True,
        )
        if isinstance(result, EventStream):
            await stream_events(receive, send, RestEnvelope(), result)
            return
        if isinstance(result, Awaiting):
            result = await _settle(store, result)
        if call.rpc.method == "GetExtendedAgentCard":
            slot = (endpoint_url(scope, rpc_path), caller_owner(call.request))
            await respond_card(
                scope, send, dumps(result), private=True, media_type=A2A_JSON, slot=slot
            )
            return
        await respond_json(send, result, headers=A2A_JSON_HEADERS)
    except RpcError as err:  # a Refused too: respond_rest_error keeps its headers
        err.details = True
        await respond_rest_error(send, err)
    except AuthenticationRequired:  # a caller DRF did not see
        refused = refusal_of(*await run_sync(not_authenticated, call.request, scope))
        await respond_rest_error(send, refused)
    except Exception:
        log_exception(logger, "HTTP+JSON request failed")
        await respond_rest_error(send, RpcError(INTERNAL_ERROR, "Internal error", details=True))


async def respond_rest_error(send: ASGISendCallable, err: RpcError) -> None:
    status, payload = rest_error(err)
    headers = A2A_JSON_HEADERS
    if isinstance(err, MethodNotAllowed):
        headers = [*headers, (b"allow", ", ".join(err.allow).encode())]
    if isinstance(err, Refused):  # DRF's challenge, Retry-After
        headers = [*headers, *encoded(err.headers)]
    await respond(send, status, dumps(payload), headers)


__all__ = ["serve_rest", "serve_rpc"]
