"""The Agent Card on both edges: ``GET <prefix>/.well-known/agent-card.json``
(public, like any A2A card) and the extended card's response, with their
ETags, Last-Modified and Cache-Control (304 when ``If-None-Match`` has the
ETag, or, without it, when ``If-Modified-Since`` is not before Last-Modified).

The card names the endpoint's absolute URL as the request sees it — Django's
own ``build_absolute_uri``, so a reverse proxy's ``X-Forwarded-Host`` /
``-Proto`` count exactly where the settings say (``USE_X_FORWARDED_HOST``,
``SECURE_PROXY_SSL_HEADER``) — and how to authenticate to it: the security
schemes of the endpoint's authentication classes (see a2a/card.py). With a
card key, both cards are signed (a2a/cardsigning.py).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Hashable
from typing import Any

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.urls import reverse
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from ..a2a.card import build_card, card_headers, not_modified
from ..a2a.cardsigning import signed
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from ..strictjson import dumps
from .pipeline import headers_of, respond, respond_json, rpc_authentication_classes

logger = logging.getLogger("toolnexus_django.endpoint")


# -- over ASGI -------------------------------------------------------------------------------


def endpoint_url(scope: HTTPScope, rpc_path: str) -> str:
    """The endpoint's absolute URL as this request sees it."""
    return ASGIRequest(scope, io.BytesIO()).build_absolute_uri(rpc_path)


def card_for(scope: HTTPScope, rpc_path: str) -> tuple[bytes, str]:
    """The public card's body, and the endpoint URL it names."""
    url = endpoint_url(scope, rpc_path)
    return dumps(signed(build_card(url, rpc_authentication_classes()), url)), url


async def respond_card(
    scope: HTTPScope,
    send: ASGISendCallable,
    body: bytes,
    *,
    private: bool = False,
    media_type: str = "application/json",
    slot: Hashable | None = None,
) -> None:
    """A card with its ETag, Last-Modified (``slot``: what the card is for,
    ``a2a.card.ChangeTimes``) and Cache-Control; 304 when not modified."""
    headers = card_headers(body, private=private, slot=slot)
    extra = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    asked = headers_of(scope)
    if not_modified(
        asked.get("if-none-match"),
        headers["ETag"],
        asked.get("if-modified-since"),
        headers.get("Last-Modified"),
    ):
        await respond(send, 304, b"", extra)
        return
    if scope["method"] == "HEAD":
        body = b""
    await respond(send, 200, body, [(b"content-type", media_type.encode()), *extra])


async def serve_card(
    scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable, rpc_path: str
) -> None:
    """``GET <prefix>/.well-known/agent-card.json`` over ASGI."""
    try:
        # On a thread: the card reads the skills from disk (cached) and may
        # call the project's hooks.
        body, url = await run_sync(card_for, scope, rpc_path)
    except Exception:
        log_exception(logger, "building the Agent Card failed")
        await respond_json(send, {"detail": "Internal error"}, status=500)
        return
    await respond_card(scope, send, body, slot=url)


# -- under WSGI ------------------------------------------------------------------------------


def mount_url(request: Any, namespace: str | None = None) -> str:
    """The absolute URL of the endpoint of the mount ``namespace`` (None: the
    one this request came through), as this request sees it."""
    if namespace is None:
        namespace = request.resolver_match.namespace if request.resolver_match else ""
    name = f"{namespace}:rpc" if namespace else "rpc"
    return request.build_absolute_uri(reverse(name))


def card_response(
    request: Any,
    card: dict[str, Any],
    *,
    private: bool = False,
    media_type: str = "application/json",
    slot: Hashable | None = None,
) -> HttpResponse:
    """A card with its ETag, Last-Modified (``slot``: what the card is for,
    ``a2a.card.ChangeTimes``) and Cache-Control; 304 when not modified."""
    body = dumps(card)
    headers = card_headers(body, private=private, slot=slot)
    if not_modified(
        request.headers.get("If-None-Match"),
        headers["ETag"],
        request.headers.get("If-Modified-Since"),
        headers.get("Last-Modified"),
    ):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type=media_type)
    for key, value in headers.items():
        response[key] = value
    return response


class AgentCardView(APIView):
    """``GET <prefix>/.well-known/agent-card.json`` under WSGI (and the root
    card, :func:`toolnexus_django.urls.root_card`, on both edges)."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    #: The namespace of the mount this card describes; None: the one it is
    #: served under (the card at the origin's root names it: ``root_card``).
    describes: str | None = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        url = mount_url(request, self.describes)
        card = signed(build_card(url, rpc_authentication_classes()), url)
        return card_response(request, card, slot=url)
