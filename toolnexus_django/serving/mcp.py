"""The MCP binding: ``<prefix>/mcp`` served lean over ASGI (:func:`serve_mcp`,
routed by :class:`toolnexus_django.asgi.AgentApplication`) and as a DRF view
under WSGI (:class:`McpView`).

Both go through the edge's pipeline: read the body within
``MCP["MAX_REQUEST_BYTES"]`` (413 past it), run the endpoint's DRF
authentication, permission and throttle classes (:mod:`.pipeline`; an
unauthenticated call is refused 401 with ``WWW-Authenticate``, as MCP's
HTTP transport expects), hand the request to the request handler
(:meth:`.handler.RequestHandler.on_mcp_request`: a fresh MCP server on the
runtime's loop, ``mcp.exchange``), record its calls (``mcp.audit``) and
send the transport's answer as it is. GET (a server-sent stream) and DELETE
(ending a session) are 405: the server is stateless, as toolnexus's is.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope
from django.http import Http404, HttpResponse
from rest_framework.request import Request
from rest_framework.views import APIView

from ..a2a.jsonrpc import RpcError, failure
from ..conf import toolnexus_settings
from ..mcp import audit, config
from ..mcp.exchange import Exchange, Reply, deadline
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from .credentials import authenticate_remembering
from .handler import handler
from .pipeline import (
    BodyTooLarge,
    ClientGone,
    authenticate,
    needs_drf,
    read_body,
    respond,
    respond_timeout,
    rpc_authentication_classes,
    rpc_permission_classes,
)

logger = logging.getLogger("toolnexus_django.mcp")


JSON = [(b"content-type", b"application/json")]


def _rpc_error(code: int, message: str) -> bytes:
    return json.dumps(failure(None, RpcError(code, message))).encode()


def too_large(limit: int) -> bytes:
    return _rpc_error(-32600, f"Request body too large (the limit is {limit} bytes)")


def authentication_classes() -> list[Any]:
    """The endpoint's DRF authentication classes (None: the A2A endpoint's)."""
    classes = toolnexus_settings.imported("MCP", "AUTHENTICATION_CLASSES")
    return rpc_authentication_classes() if classes is None else classes


def permission_classes() -> list[Any]:
    """The endpoint's DRF permission classes (None: the A2A endpoint's)."""
    classes = toolnexus_settings.imported("MCP", "PERMISSION_CLASSES")
    return rpc_permission_classes() if classes is None else classes


def declared_length(value: Any) -> int | None:
    """The number a ``Content-Length`` header says (None: it says none). ASCII
    digits only (``"²".isdigit()`` holds), and never ``int()`` of thousands of
    them (past its 4,300-digit limit it raises): 19 digits or more is 10**18."""
    text = str(value or "0").strip().lstrip("0") or "0"
    if not (text.isascii() and text.isdigit()):
        return None
    return int(text) if len(text) <= 18 else 10**18


class McpView(APIView):
    """``<prefix>/mcp`` under WSGI, and the DRF classes of the ASGI endpoint."""

    def get_authenticators(self) -> list[Any]:
        return [c() for c in authentication_classes()]

    def get_permissions(self) -> list[Any]:
        return [c() for c in permission_classes()]

    def perform_authentication(self, request: Request) -> None:
        # A caller's verified header, remembered a few seconds (serving/credentials.py).
        authenticate_remembering(request, request.authenticators)

    def get_authenticate_header(self, request: Request) -> str:
        # Never a 403 for "not authenticated": MCP clients look for 401 and
        # its challenge (DRF sends 403 when the first class has no header).
        return super().get_authenticate_header(request) or config.FALLBACK_CHALLENGE

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if not config.enabled():
            raise Http404("The MCP endpoint is off (TOOLNEXUS['MCP']['tools'] is not set).")
        super().initial(request, *args, **kwargs)

    def post(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        limit = int(config.number("MAX_REQUEST_BYTES"))
        declared = declared_length(request.META.get("CONTENT_LENGTH"))
        if declared is not None and declared > limit:
            return HttpResponse(too_large(limit), status=413, content_type="application/json")
        body = request.body
        if len(body) > limit:
            return HttpResponse(too_large(limit), status=413, content_type="application/json")
        headers = [
            (k.lower().encode("latin-1"), str(v).encode("latin-1"))
            for k, v in request.headers.items()
        ]
        exchange = Exchange("POST", request.path, headers, body, audit.Caller.of(request))
        future = handler.on_mcp_request(exchange)
        try:
            reply = future.result(deadline())
        except TimeoutError:
            future.cancel()
            return HttpResponse(_rpc_error(-32603, "The MCP request took too long"), status=504)
        audit.store(reply.calls)
        response = HttpResponse(reply.body, status=reply.status)
        for name, value in reply.headers:
            if name.lower() != b"content-length":
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response


async def serve_mcp(scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    """``<prefix>/mcp`` over ASGI (the endpoint is on: the router checked)."""
    if scope["method"] != "POST":
        allow = [(b"allow", b"POST"), *JSON]
        body = _rpc_error(-32000, "Method not allowed: this MCP server is stateless")
        await respond(send, 405, body, allow)
        return
    limit = int(config.number("MAX_REQUEST_BYTES"))
    try:
        body = await read_body(receive, limit, float(toolnexus_settings.READ_TIMEOUT))
    except BodyTooLarge:
        await respond(send, 413, too_large(limit), JSON)
        return
    except (TimeoutError, ClientGone):
        await respond_timeout(send)
        return
    request = None
    if needs_drf(authentication_classes(), permission_classes()):
        request, refusal = await run_sync(authenticate, scope, body, McpView)
        if refusal is not None:
            await respond(send, *refusal)
            return
    exchange = Exchange(
        "POST",
        scope.get("path", ""),
        list(scope.get("headers") or ()),
        body,
        audit.Caller.of(request),
    )
    try:
        # On a thread: the first request of a process starts the runtime.
        future = await asyncio.to_thread(handler.on_mcp_request, exchange)
        reply: Reply = await asyncio.wait_for(asyncio.wrap_future(future), deadline())
    except TimeoutError:
        await respond(send, 504, _rpc_error(-32603, "The MCP request took too long"), JSON)
        return
    except Exception:
        log_exception(logger, "MCP request failed")
        await respond(send, 500, _rpc_error(-32603, "Internal error"), JSON)
        return
    await audit.store_together(reply.calls)
    headers = [(k, v) for k, v in reply.headers if k.lower() != b"content-length"]
    await respond(send, reply.status, reply.body, headers)


__all__ = ["McpView", "serve_mcp"]
