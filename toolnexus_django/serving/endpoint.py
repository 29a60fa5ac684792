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
from typing import Any

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope
from django.conf import settings
from rest_framework.permissions import AllowAny

from ..a2a.card import build_card, card_headers, extended_card_builder, not_modified
from ..a2a.dialects import Dialect, version_asked
from ..a2a.follow import await_settled
from ..a2a.jsonrpc import (
    INTERNAL_ERROR,
    RpcEnvelope,
    RpcError,
    body_too_large,
    failure,
    parse_request,
    success,
)
from ..a2a.methods import Awaiting, CallContext, Envelope, EventStream, dispatch
from ..a2a.rest import MethodNotAllowed, RestEnvelope, check_version, rest_error, route
from ..conf import toolnexus_settings
from ..dbthreads import run_sync
from ..stores import get_task_store
from ..strictjson import dumps
from .wsgi import (
    EndpointActions,
    JsonRpcView,
    rpc_authentication_classes,
    rpc_permission_classes,
)

logger = logging.getLogger("toolnexus_django.endpoint")


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


# -- who is calling ---------------------------------------------------------------------


def _needs_drf() -> bool:
    perms = rpc_permission_classes()
    return bool(rpc_authentication_classes()) or any(p is not AllowAny for p in perms)


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


def authenticate(
    scope: HTTPScope, body: bytes, view_class: type[Any] = JsonRpcView
) -> tuple[Any, tuple[int, bytes, Any] | None]:
    """(the authenticated DRF request, None) — or (None, DRF's refusal as
    (status, body, headers)). Runs the DRF authentication, permission and
    throttle classes of ``view_class`` (the endpoint's, or the MCP view's)
    as DRF's ``APIView.dispatch`` does."""
    from django.core.handlers.asgi import ASGIRequest

    django_request = ASGIRequest(scope, io.BytesIO(body))
    with_session(django_request)
    view = view_class()
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
    return request, None


def owner_of(request: Any) -> str | None:
    """The owner id of an authenticated request's caller (None: anonymous)."""
    user = getattr(request, "user", None) if request is not None else None
    return str(user.pk) if user is not None and user.is_authenticated else None


def call_context(
    scope: HTTPScope, store: Any, request: Any, version: str | None, rpc_path: str
) -> CallContext:
    """Who is calling and what they may do, for :func:`dispatch`."""
    return CallContext(
        store=store,
        actions=EndpointActions(store),
        owner=owner_of(request),
        a2a_version=version,
        last_event_id=headers_of(scope).get("last-event-id"),
        held=None,  # waiting holds no thread here
        extended_card=(
            extended_card_builder(
                request, endpoint_url(scope, rpc_path), rpc_authentication_classes()
            )
            if request is not None
            else None
        ),
    )


# -- the JSON-RPC endpoint -------------------------------------------------------------------


def _version(scope: HTTPScope, headers: dict[str, str]) -> str | None:
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


async def read_request(
    scope: HTTPScope,
    receive: ASGIReceiveCallable,
    send: ASGISendCallable,
    version: str | None,
    *,
    rest: bool = False,
) -> Any:
    """The request's body and its caller: (body, DRF request or None), or
    None when it was answered already (too big, too slow, refused by DRF;
    ``rest``: in the HTTP+JSON binding's words)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        body = await read_body(receive, limit, float(toolnexus_settings.READ_TIMEOUT))
    except BodyTooLarge:
        err = body_too_large(limit, _speaks_v1(version))
        await (respond_rest_error(send, err) if rest else respond_json(send, failure(None, err)))
        return None
    except (TimeoutError, ClientGone):
        # Too slow (or gone): a 408 the client may never read; nothing was done.
        with contextlib.suppress(Exception):
            await respond(send, 408, b"Request Timeout", [(b"connection", b"close")])
        return None
    request = None
    if _needs_drf():
        request, refusal = await run_sync(authenticate, scope, body)
        if refusal is not None:
            await respond(send, *refusal)
            return None
    return body, request


async def serve_rpc(
    scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable, rpc_path: str = ""
) -> None:
    """``POST <prefix>/``: one JSON-RPC request."""
    version = _version(scope, headers_of(scope))
    rid = None
    try:
        read = await read_request(scope, receive, send, version)
        if read is None:
            return
        body, request = read
        rpc = parse_request(body)
        rid = rpc.id
        store = get_task_store()
        ctx = call_context(scope, store, request, version, rpc_path or scope.get("path", ""))
        result = await run_sync(dispatch, rpc, ctx)
        if isinstance(result, EventStream):
            await stream_events(receive, send, RpcEnvelope(rid), result)
            return
        if isinstance(result, Awaiting):
            result = await _settle(store, result)
        await respond_json(send, success(rid, result))
    except RpcError as err:
        await respond_json(send, failure(err.id if err.id is not None else rid, err))
    except Exception:
        logger.exception("JSON-RPC request failed")
        await respond_json(send, failure(rid, RpcError(INTERNAL_ERROR, "Internal error")))


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
    from urllib.parse import parse_qs

    headers = headers_of(scope)
    version = _version(scope, headers)
    try:
        read = await read_request(scope, receive, send, "1.0", rest=True)
        if read is None:
            return
        body, request = read
        check_version(version)
        query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
        rpc = route(scope["method"], path, query, body)
        store = get_task_store()
        result = await run_sync(dispatch, rpc, call_context(scope, store, request, "1.0", rpc_path))
        if isinstance(result, EventStream):
            await stream_events(receive, send, RestEnvelope(), result)
            return
        if isinstance(result, Awaiting):
            result = await _settle(store, result)
        if rpc.method == "GetExtendedAgentCard":
            await respond_card(scope, send, dumps(result), private=True)
            return
        await respond_json(send, result)
    except RpcError as err:
        err.details = True
        await respond_rest_error(send, err)
    except Exception:
        logger.exception("HTTP+JSON request failed")
        await respond_rest_error(send, RpcError(INTERNAL_ERROR, "Internal error", details=True))


async def respond_rest_error(send: ASGISendCallable, err: RpcError) -> None:
    status, payload = rest_error(err)
    headers = JSON_HEADERS
    if isinstance(err, MethodNotAllowed):
        headers = [*headers, (b"allow", ", ".join(err.allow).encode())]
    await respond(send, status, dumps(payload), headers)


async def _until_disconnect(receive: ASGIReceiveCallable) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def stream_events(
    receive: ASGIReceiveCallable, send: ASGISendCallable, envelope: Envelope, stream: EventStream
) -> None:
    """The stream's messages as Server-Sent Events, until it ends or the
    client goes away (then it stops watching at once)."""
    events = stream.aevents(run_sync)
    gone = asyncio.ensure_future(_until_disconnect(receive))
    try:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": SSE_HEADERS,
                "trailers": False,
            }
        )
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
                chunk = b"event: error\ndata: " + dumps(envelope.error(error)) + b"\n\n"
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                break
            if item is None:
                chunk = KEEP_ALIVE
            else:
                head = b"id: " + item.id.encode() + b"\n" if item.id else b""
                chunk = head + b"data: " + dumps(envelope.result(item.result)) + b"\n\n"
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


def endpoint_url(scope: HTTPScope, rpc_path: str) -> str:
    """The endpoint's absolute URL as this request sees it: Django's own
    ``build_absolute_uri``, so a reverse proxy's ``X-Forwarded-Host`` /
    ``-Proto`` count exactly where the settings say (``USE_X_FORWARDED_HOST``,
    ``SECURE_PROXY_SSL_HEADER``)."""
    from django.core.handlers.asgi import ASGIRequest

    return ASGIRequest(scope, io.BytesIO()).build_absolute_uri(rpc_path)


def card_for(scope: HTTPScope, rpc_path: str) -> bytes:
    return dumps(build_card(endpoint_url(scope, rpc_path), rpc_authentication_classes()))


async def respond_card(
    scope: HTTPScope, send: ASGISendCallable, body: bytes, *, private: bool = False
) -> None:
    """A card with its ETag and Cache-Control; 304 when If-None-Match has it."""
    headers = card_headers(body, private=private)
    extra = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    if not_modified(headers_of(scope).get("if-none-match"), headers["ETag"]):
        await respond(send, 304, b"", extra)
        return
    if scope["method"] == "HEAD":
        body = b""
    await respond(send, 200, body, [*JSON_HEADERS, *extra])


async def serve_card(
    scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable, rpc_path: str
) -> None:
    """``GET <prefix>/.well-known/agent-card.json``: public, like any A2A card."""
    try:
        # On a thread: the card reads the skills from disk (cached) and may
        # call the project's hooks.
        body = await run_sync(card_for, scope, rpc_path)
    except Exception:
        logger.exception("building the Agent Card failed")
        await respond_json(send, {"detail": "Internal error"}, status=500)
        return
    await respond_card(scope, send, body)


__all__ = ["authenticate", "serve_card", "serve_rest", "serve_rpc", "stream_events"]
