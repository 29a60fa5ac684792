"""The project as an ASGI application, with the agent's endpoint served lean.

:func:`get_asgi_application` wraps Django's own ASGI application. Requests for
the agent's JSON-RPC endpoint, its HTTP+JSON routes, its Agent Card and its
MCP endpoint (:mod:`.mcp`, when ``TOOLNEXUS["MCP"]`` turns it on), wherever
the project mounted ``toolnexus_django.urls``, are answered here, by
coroutines that hold no thread while they wait — a stream or a blocking
send waits on its Task's wake-ups — and hand their short database work to the database threads
(:mod:`.runtime.dbthreads`). Everything else (the admin, the project's own views)
goes to Django, unchanged.

What the lean endpoint does as Django would: the ``Host`` header is checked
against ``ALLOWED_HOSTS``; the body is bounded by
``DATA_UPLOAD_MAX_MEMORY_SIZE``; DRF's authentication, permission and
throttle classes run as DRF runs them (their refusals are DRF's own 401/403/
429). What it does not: Django middleware does not run for these two URLs
(serve over WSGI, :mod:`.wsgi`, where the endpoint needs it),
so ``SessionAuthentication`` (which needs the session middleware) does not
authenticate here.

Lifespan: at start-up the process's runtime starts (:func:`.runtime.start`:
the sweep, ``EXPIRY_SWEEP_INTERVAL``, and the database threads); at shutdown
it stops (:func:`.runtime.stop`): waits and streams end, running Tasks get
``TOOLNEXUS["GRACE_SECONDS"]`` (or what a stopping server left of it), what
is left is released, then the loop and the threads stop. A server that sends
no lifespan (or the tests) still works: every piece starts on first use.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import cast

from asgiref.typing import (
    ASGI3Application,
    ASGIReceiveCallable,
    ASGISendCallable,
    HTTPScope,
    Scope,
)
from django.conf import settings
from django.core.asgi import get_asgi_application as django_asgi
from django.http.request import split_domain_port, validate_host
from django.urls import NoReverseMatch, Resolver404, resolve, reverse

from .. import runtime
from ..mcp.config import enabled as mcp_enabled
from . import staticfiles
from .card import serve_card
from .endpoint import serve_rest, serve_rpc
from .mcp import serve_mcp
from .pipeline import JSON_HEADERS, respond
from .urls import REST_ROUTES

logger = logging.getLogger("toolnexus_django.asgi")


def get_asgi_application(*, serve_static: bool = False) -> ASGI3Application:
    """The project's ASGI application with the agent's endpoint served lean
    (use it as ``asgi.py``'s ``application``); with ``serve_static``, static
    files too (:class:`StaticFiles`: what ``toolnexus_serve`` does)."""
    # django-stubs types Django's handler with plain dicts, not asgiref's TypedDicts.
    app: ASGI3Application = AgentApplication(cast(ASGI3Application, django_asgi()))
    if serve_static:
        app = StaticFiles(app)
    return app


class AgentApplication:
    """Routes the agent's endpoint and card to coroutines, the rest to ``django``."""

    def __init__(self, django: ASGI3Application) -> None:
        self.django = django
        self._paths: tuple[str, str] | bool | None = False
        self._mcp_path: str | bool | None = False

    def paths(self) -> tuple[str, str] | None:
        """(the JSON-RPC endpoint's path, the card's path), or None when the
        project did not mount ``toolnexus_django.urls``."""
        if self._paths is False:
            try:
                self._paths = (
                    reverse("toolnexus_django:rpc"),
                    reverse("toolnexus_django:agent-card"),
                )
            except NoReverseMatch:
                self._paths = None
        return self._paths  # type: ignore[return-value]

    def mcp_path(self) -> str | None:
        """The MCP endpoint's path (``<prefix>/mcp``), or None when not mounted."""
        if self._mcp_path is False:
            try:
                self._mcp_path = reverse("toolnexus_django:mcp")
            except NoReverseMatch:
                self._mcp_path = None
        return self._mcp_path  # type: ignore[return-value]

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        if scope["type"] == "http":
            paths = self.paths()
            path = scope.get("path", "")
            root = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root) :]
            if path == self.mcp_path() and mcp_enabled():
                if not _host_allowed(scope):
                    await _plain(send, 400, b"Bad Request (invalid Host header)")
                else:
                    await serve_mcp(scope, receive, send)
                return
            rest = _rest_route(paths[0], path) if paths is not None else None
            if rest is not None and paths is not None:
                if not _host_allowed(scope):
                    await _plain(send, 400, b"Bad Request (invalid Host header)")
                else:
                    await serve_rest(scope, receive, send, paths[0], rest)
                return
            if paths is not None and path in paths:
                if not _host_allowed(scope):
                    await _plain(send, 400, b"Bad Request (invalid Host header)")
                elif path == paths[0] and scope["method"] == "POST":
                    await serve_rpc(scope, receive, send, paths[0])
                    return
                elif path == paths[1] and scope["method"] in ("GET", "HEAD"):
                    await serve_card(scope, receive, send, paths[0])
                    return
                else:
                    await _plain(send, 405, b'{"detail":"Method not allowed."}', json=True)
                return
        await self.django(scope, receive, send)

    # -- lifespan ------------------------------------------------------------------------

    async def lifespan(self, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await asyncio.to_thread(self.startup)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.to_thread(self.shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return

    def startup(self) -> None:
        runtime.start()

    def shutdown(self) -> None:
        runtime.stop()


def _rest_route(rpc_path: str, path: str) -> str | None:
    """What follows the endpoint's mount in ``path`` (``"tasks/abc:cancel"``)
    when the HTTP+JSON binding answers it — its routes, and (as the URLconf
    says: ``urls.OTHER_PATHS``) every other path under the mount, which gets
    the binding's JSON 404/405 — else None (the card, the JWKS, MCP, a
    project's own view listed before the include: Django's)."""
    if not path.startswith(rpc_path) or len(path) == len(rpc_path):
        return None
    route = path[len(rpc_path) :]
    if re.match(REST_ROUTES, route):
        return route
    return route if _resolves_to_binding(path) else None


def _resolves_to_binding(path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    return match.namespace == "toolnexus_django" and match.url_name in ("rest", "rest-other")


def _host_allowed(scope: HTTPScope) -> bool:
    """Django's ``get_host`` check: the Host (or, with USE_X_FORWARDED_HOST,
    the X-Forwarded-Host) must be in ALLOWED_HOSTS."""
    headers = dict(scope.get("headers") or ())
    raw = headers.get(b"host")
    if settings.USE_X_FORWARDED_HOST and headers.get(b"x-forwarded-host"):
        raw = headers[b"x-forwarded-host"]
    host = raw.decode("latin-1") if raw else str((scope.get("server") or ("",))[0])
    domain, _ = split_domain_port(host)
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


async def _plain(send: ASGISendCallable, status: int, body: bytes, *, json: bool = False) -> None:
    headers = JSON_HEADERS if json else [(b"content-type", b"text/plain; charset=utf-8")]
    await respond(send, status, body, headers)


class StaticFiles:
    """An ASGI wrapper: GET/HEAD under STATIC_URL are answered by
    :mod:`.staticfiles`, everything else goes to ``app`` (the prefix is
    tested here, so no other request enters that module)."""

    def __init__(self, app: ASGI3Application) -> None:
        self.app = app
        self._prefix: str | bool | None = False

    def prefix(self) -> str | None:
        if self._prefix is False:
            self._prefix = staticfiles.static_prefix()
        return self._prefix  # type: ignore[return-value]

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            prefix = self.prefix()
            path = scope.get("path", "")
            if prefix is not None and path.startswith(prefix):
                await staticfiles.serve_static(scope, send, path[len(prefix) :])
                return
        await self.app(scope, receive, send)


__all__ = ["AgentApplication", "StaticFiles", "get_asgi_application"]
