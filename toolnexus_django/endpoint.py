"""The agent's JSON-RPC endpoint and Agent Card as ASGI coroutines.

The same methods as the DRF views (:mod:`.views`), with no thread held while
a request waits: a stream or a blocking send waits on its Task's wake-ups
(:mod:`.lifecycle.wakeups`), and only the short database work — parsing
nothing, reading or moving a Task — runs on the database threads
(:mod:`.dbthreads`). One process can so keep thousands of streams open.

Authentication and permissions are DRF's: when the endpoint has any
authentication class, or a permission class other than ``AllowAny``, the
request is run through :class:`.views.JsonRpcView`'s ``initial()`` (on a
database thread: authenticating may query), and DRF's own refusals (401,
403, 429) are sent as DRF renders them. Django middleware does not run
here; the session and the user the session and authentication middleware
would set are (:func:`with_session`), so ``SessionAuthentication`` works.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from rest_framework.permissions import AllowAny
from rest_framework.settings import api_settings

from .a2a.card import build_card
from .a2a.dialects import Dialect, version_asked
from .a2a.follow import await_settled
from .a2a.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError, failure, parse_request, success
from .a2a.methods import Awaiting, CallContext, EventStream, dispatch
from .conf import toolnexus_settings
from .dbthreads import run_sync
from .stores import get_task_store
from .strictjson import dumps
from .views import EndpointActions, JsonRpcView, _classes

logger = logging.getLogger("toolnexus_django.endpoint")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

KEEP_ALIVE = b": keep-alive\n\n"
JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-store"),
    # Reverse proxies (nginx) must pass each event on as it comes.
    (b"x-accel-buffering", b"no"),
]


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the last of repeated ones)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}


async def read_body(receive: Receive, limit: int | None, timeout: float) -> bytes:
    """The whole body; raises :class:`BodyTooLarge` past ``limit`` bytes,
    ``TimeoutError`` when it takes longer than ``timeout`` seconds in all,
    :class:`ClientGone` when the client disconnects first."""
    chunks: list[bytes] = []
    size = 0
    async with asyncio.timeout(timeout):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if limit is not None and size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send: Send, payload: Any, status: int = 200) -> None:
    # Strict JSON whatever the payload holds (see strictjson).
    await respond(send, status, dumps(payload), JSON_HEADERS)


# -- who is calling ---------------------------------------------------------------------


def _needs_drf() -> bool:
    auth = _classes(
        toolnexus_settings.AUTHENTICATION_CLASSES, api_settings.DEFAULT_AUTHENTICATION_CLASSES
    )
    perms = _classes(toolnexus_settings.PERMISSION_CLASSES, api_settings.DEFAULT_PERMISSION_CLASSES)
    return bool(auth) or any(p is not AllowAny for p in perms)


SESSION_MIDDLEWARE = "django.contrib.sessions.middleware.SessionMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"


def with_session(request: Any) -> None:
    """What Django's session and authentication middleware would have set
    on ``request`` (where the project uses them): ``request.session`` and a
    lazy ``request.user``, so DRF's ``SessionAuthentication`` works here too
    (it checks CSRF itself)."""
    from importlib import import_module

    from django.utils.functional import SimpleLazyObject

    middleware = settings.MIDDLEWARE
    if SESSION_MIDDLEWARE in middleware:
        engine = import_module(settings.SESSION_ENGINE)
        request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
        if AUTH_MIDDLEWARE in middleware:
            from django.contrib.auth import get_user

            request.user = SimpleLazyObject(lambda: get_user(request))


def authenticate(scope: Scope, body: bytes) -> tuple[str | None, tuple[int, bytes, Any] | None]:
    """(the caller's owner id, None) — or (None, DRF's refusal as
    (status, body, headers)). Runs the endpoint's DRF authentication,
    permission and throttle classes as DRF's ``APIView.dispatch`` does."""
    from django.core.handlers.asgi import ASGIRequest

    django_request = ASGIRequest(scope, io.BytesIO(body))
    with_session(django_request)
    view = JsonRpcView()
    view.args, view.kwargs = (), {}
    view.headers = view.default_response_headers
    request = view.initialize_request(django_request)
    view.request = request
    try:
        view.initial(request)
    except Exception as exc:
        response = view.finalize_response(request, view.handle_exception(exc))
        response.render()
        headers = [
            (k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in response.items()
        ]
        return None, (response.status_code, response.content, headers)
    user = request.user
    owner = str(user.pk) if user is not None and user.is_authenticated else None
    return owner, None


# -- the JSON-RPC endpoint -------------------------------------------------------------------


def _version(scope: Scope, headers: dict[str, str]) -> str | None:
    """The A2A version the caller names: header, else query parameter."""
    query = scope.get("query_string") or b""
    asked = None
    if b"a2a-version" in query.lower():
        from urllib.parse import parse_qs

        values = parse_qs(query.decode("latin-1"))
        for key, found in values.items():
            if key.lower() == "a2a-version" and found:
                asked = found[0]
    return version_asked(headers.get("a2a-version"), asked)


def _speaks_v1(version: str | None) -> bool:
    return str(version or "").strip().startswith("1")


async def serve_rpc(scope: Scope, receive: Receive, send: Send) -> None:
    """``POST <prefix>/``: one JSON-RPC request."""
    headers = headers_of(scope)
    version = _version(scope, headers)
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        body = await read_body(receive, limit, float(toolnexus_settings.READ_TIMEOUT))
    except BodyTooLarge:
        too_big = RpcError(
            INVALID_REQUEST,
            f"Invalid Request: the body is larger than {limit} bytes",
            data={"limit": limit},
            details=_speaks_v1(version),
        )
        await respond_json(send, failure(None, too_big))
        return
    except (TimeoutError, ClientGone):
        # Too slow (or gone): a 408 the client may never read; nothing was done.
        with contextlib.suppress(Exception):
            await respond(send, 408, b"Request Timeout", [(b"connection", b"close")])
        return
    rid = None
    try:
        owner = None
        if _needs_drf():
            owner, refusal = await run_sync(authenticate, scope, body)
            if refusal is not None:
                await respond(send, *refusal)
                return
        rpc = parse_request(body)
        rid = rpc.id
        store = get_task_store()
        ctx = CallContext(
            store=store,
            actions=EndpointActions(store),
            owner=owner,
            a2a_version=version,
            last_event_id=headers.get("last-event-id"),
            held=None,  # waiting holds no thread here
        )
        result = await run_sync(dispatch, rpc, ctx)
        if isinstance(result, EventStream):
            await stream_events(receive, send, rid, result)
            return
        if isinstance(result, Awaiting):
            waiting = result
            try:
                result = waiting.result(await await_settled(store, waiting.task, run_sync))
            finally:
                waiting.close()
        await respond_json(send, success(rid, result))
    except RpcError as err:
        await respond_json(send, failure(err.id if err.id is not None else rid, err))
    except Exception:
        logger.exception("JSON-RPC request failed")
        await respond_json(send, failure(rid, RpcError(INTERNAL_ERROR, "Internal error")))


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def stream_events(receive: Receive, send: Send, rid: Any, stream: EventStream) -> None:
    """The stream's messages as Server-Sent Events, until it ends or the
    client goes away (then it stops watching at once)."""
    events = stream.aevents(run_sync)
    gone = asyncio.ensure_future(_until_disconnect(receive))
    try:
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        while True:
            step = asyncio.ensure_future(events.__anext__())
            await asyncio.wait((step, gone), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                with contextlib.suppress(BaseException):
                    await step
                return  # the client went away
            try:
                item = step.result()
            except StopAsyncIteration:
                break
            except Exception as exc:
                logger.exception("SSE stream failed")
                error = (
                    exc if isinstance(exc, RpcError) else RpcError(INTERNAL_ERROR, "Internal error")
                )
                error.details = stream.dialect is Dialect.V10
                chunk = b"event: error\ndata: " + dumps(failure(rid, error)) + b"\n\n"
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                break
            if item is None:
                chunk = KEEP_ALIVE
            else:
                head = b"id: " + item.id.encode() + b"\n" if item.id else b""
                chunk = head + b"data: " + dumps(success(rid, item.result)) + b"\n\n"
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        pass  # the client went away mid-write
    finally:
        gone.cancel()
        with contextlib.suppress(BaseException):
            await events.aclose()
        stream.close()


# -- the Agent Card -------------------------------------------------------------------------------


def endpoint_url(scope: Scope, rpc_path: str) -> str:
    """The endpoint's absolute URL as this request sees it: Django's own
    ``build_absolute_uri``, so a reverse proxy's ``X-Forwarded-Host`` /
    ``-Proto`` count exactly where the settings say (``USE_X_FORWARDED_HOST``,
    ``SECURE_PROXY_SSL_HEADER``)."""
    from django.core.handlers.asgi import ASGIRequest

    return ASGIRequest(scope, io.BytesIO()).build_absolute_uri(rpc_path)


def card_for(scope: Scope, rpc_path: str) -> bytes:
    rpc_auth = _classes(
        toolnexus_settings.AUTHENTICATION_CLASSES, api_settings.DEFAULT_AUTHENTICATION_CLASSES
    )
    return dumps(build_card(endpoint_url(scope, rpc_path), rpc_auth))


async def serve_card(scope: Scope, receive: Receive, send: Send, rpc_path: str) -> None:
    """``GET <prefix>/.well-known/agent-card.json``: public, like any A2A card."""
    try:
        # On a thread: the card reads the skills from disk (cached) and may
        # call the project's hooks.
        body = await run_sync(card_for, scope, rpc_path)
    except Exception:
        logger.exception("building the Agent Card failed")
        await respond_json(send, {"detail": "Internal error"}, status=500)
        return
    if scope["method"] == "HEAD":
        body = b""
    await respond(send, 200, body, JSON_HEADERS)


__all__ = ["authenticate", "serve_card", "serve_rpc", "stream_events"]
