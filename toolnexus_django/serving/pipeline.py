"""The steps every binding shares: read the body within its limits, find
who is calling with the endpoint's DRF authentication, permission and
throttle classes (run as DRF's ``APIView`` runs them), and respond.

Under WSGI the views are DRF views (:class:`EndpointAccess` is their base),
and Django reads the body. Over ASGI, :func:`read_body` reads it,
:func:`authenticate` runs the same classes on a request built from the scope
(on a database thread: authenticating may query) and :func:`respond` sends
the answer. Django middleware does not run there, so the session and the
user that the session and authentication middleware would set are set here
(:func:`with_session`), and ``SessionAuthentication`` works too.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Iterable
from importlib import import_module
from typing import Any

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope
from django.conf import settings
from django.contrib.auth import get_user
from django.core.handlers.asgi import ASGIRequest
from django.utils.functional import SimpleLazyObject
from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from ..a2a.refusals import Refused, message_of
from ..conf import toolnexus_settings
from ..strictjson import dumps
from .credentials import authenticate_remembering

# -- the body and the response (ASGI) ------------------------------------------------------

JSON_HEADERS = [(b"content-type", b"application/json")]
#: HTTP+JSON answers carry A2A's own media type (v1.0.1 §11.1: SHOULD, as the
#: official SDK's REST server does); JSON-RPC keeps application/json (§9.1).
A2A_JSON = "application/a2a+json"
A2A_JSON_HEADERS = [(b"content-type", A2A_JSON.encode())]


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


async def respond_json(
    send: ASGISendCallable,
    payload: Any,
    status: int = 200,
    headers: list[tuple[bytes, bytes]] = JSON_HEADERS,
) -> None:
    # Strict JSON whatever the payload holds (see strictjson).
    await respond(send, status, dumps(payload), headers)


async def respond_timeout(send: ASGISendCallable) -> None:
    """A body too slow (or a client gone): a 408 the client may never read;
    nothing was done."""
    with contextlib.suppress(Exception):
        await respond(send, 408, b"Request Timeout", [(b"connection", b"close")])


# -- who is calling ------------------------------------------------------------------------


def rpc_authentication_classes() -> list[Any]:
    """The endpoint's DRF authentication classes (the card declares them)."""
    classes = toolnexus_settings.imported("AUTHENTICATION_CLASSES")
    return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES) if classes is None else classes


def rpc_permission_classes() -> list[Any]:
    """The endpoint's DRF permission classes."""
    classes = toolnexus_settings.imported("PERMISSION_CLASSES")
    return list(api_settings.DEFAULT_PERMISSION_CLASSES) if classes is None else classes


def needs_drf(authentication: list[Any], permissions: list[Any]) -> bool:
    """Whether a request must go through DRF (any authentication, a
    permission other than AllowAny, or DRF's throttles, which count
    anonymous callers too); if not, every caller is anonymous."""
    if EndpointAccess.throttle_classes:
        return True
    return bool(authentication) or any(p is not AllowAny for p in permissions)


#: How DRF renders a refusal here, whatever the project's default renderers.
REFUSAL_RENDERER = JSONRenderer()


class EndpointAccess(APIView):
    """The A2A endpoint's DRF classes: the base of its WSGI views, and what
    :func:`authenticate` runs over ASGI."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # Responses are built by the edge, not by DRF's renderers; DRF renders
        # only a refusal, which the binding reads back as JSON. So nothing is
        # negotiated: an Accept header (streaming clients send
        # "text/event-stream") is never a 406, and is not even parsed.
        return REFUSAL_RENDERER, REFUSAL_RENDERER.media_type

    def get_authenticators(self) -> list[Any]:
        return [c() for c in rpc_authentication_classes()]

    def get_permissions(self) -> list[Any]:
        return [c() for c in rpc_permission_classes()]

    def perform_authentication(self, request: Request) -> None:
        # A peer's verified header, remembered a few seconds (.credentials).
        authenticate_remembering(request, request.authenticators)


SESSION_MIDDLEWARE = "django.contrib.sessions.middleware.SessionMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"


def with_session(request: Any) -> None:
    """What Django's session and authentication middleware would have set
    on ``request`` (where the project uses them): ``request.session`` and a
    lazy ``request.user``, so DRF's ``SessionAuthentication`` works here too
    (it checks CSRF itself)."""
    middleware = settings.MIDDLEWARE
    if SESSION_MIDDLEWARE in middleware:
        engine = import_module(settings.SESSION_ENGINE)
        request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
        if AUTH_MIDDLEWARE in middleware:
            request.user = SimpleLazyObject(lambda: get_user(request))


def authenticate(
    scope: HTTPScope, body: bytes, view_class: type[APIView] = EndpointAccess
) -> tuple[Any, tuple[int, bytes, Any] | None]:
    """(the authenticated DRF request, None) — or (None, DRF's refusal as
    (status, body, headers)). Runs the DRF authentication, permission and
    throttle classes of ``view_class`` (the endpoint's, or the MCP view's)
    as DRF's ``APIView.dispatch`` does."""
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
        return None, _refusal(view, request, exc)
    return request, None


def not_authenticated(request: Any, scope: HTTPScope | None = None) -> tuple[int, bytes, Any]:
    """DRF's answer to a caller who must authenticate (401 with the first
    authentication class's challenge, as a permission class's refusal);
    ``request`` None: an anonymous caller DRF did not see, of ``scope``."""
    view = EndpointAccess()
    view.args, view.kwargs = (), {}
    view.headers = view.default_response_headers
    if request is None:
        assert scope is not None, "an unseen caller's request is made from its scope"
        request = view.initialize_request(ASGIRequest(scope, io.BytesIO(b"")))
    view.request = request
    return _refusal(view, request, NotAuthenticated())


def _refusal(view: APIView, request: Any, exc: Exception) -> tuple[int, bytes, Any]:
    response = view.finalize_response(request, view.handle_exception(exc))
    response.render()
    headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in response.items()]
    return response.status_code, response.content, headers


#: DRF's headers that say nothing of a refusal in a binding's words: the
#: view's methods (``Allow``), DRF's renderer negotiation (``Vary: Accept``),
#: and the type and length of DRF's own body.
NOT_KEPT = frozenset({"allow", "vary", "content-type", "content-length"})


def refused_by_drf(status: int, data: Any, headers: Iterable[tuple[str, str]]) -> Refused:
    """DRF's refusal — its status, its response data, its headers — as the
    binding's error (a2a/refusals.py), keeping the challenge and ``Retry-After``."""
    kept = [(k, v) for k, v in headers if k.lower() not in NOT_KEPT]
    return Refused(status, message_of(status, data), kept)


def refusal_of(status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]]) -> Refused:
    """:func:`refused_by_drf` of a refusal as :func:`authenticate` renders it."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    named = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
    return refused_by_drf(status, data, named)


def encoded(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """``headers`` as an ASGI response carries them."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def caller_owner(request: Any) -> str | None:
    """The owner id of an authenticated request's caller (None: anonymous); a
    Task's own owner is :func:`lifecycle.owner_of`."""
    user = getattr(request, "user", None) if request is not None else None
    return str(user.pk) if user is not None and user.is_authenticated else None
