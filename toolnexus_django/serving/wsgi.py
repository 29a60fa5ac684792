"""The same bindings under WSGI: thin DRF views over the request handler.

Each view reads the body (Django bounds it by ``DATA_UPLOAD_MAX_MEMORY_SIZE``;
DRF has run the endpoint's authentication and permission classes, those of
:class:`.pipeline.EndpointAccess`), parses it (JSON-RPC) or routes it
(HTTP+JSON), dispatches it to :data:`.handler.handler` as the ASGI edge does,
and renders the answer; a stream is a ``StreamingHttpResponse`` (:mod:`.sse`).
Here a waiting request (a stream, a blocking send) holds a server thread:
at most ``MAX_HELD_REQUESTS`` of them (``a2a.follow.held``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.http.request import RawPostDataException
from django.http.response import HttpResponseBase
from rest_framework import exceptions
from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from ..a2a.card import extended_card_builder
from ..a2a.dialects import version_asked
from ..a2a.follow import held, wait_settled
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
from ..keys import jwks
from ..observability import tracing
from ..runtime.outages import log_exception
from ..stores import TaskStore, get_task_store
from ..strictjson import dumps
from .card import card_response, mount_url
from .handler import EndpointActions, handler
from .pipeline import (
    A2A_JSON,
    EndpointAccess,
    caller_owner,
    refused_by_drf,
    rpc_authentication_classes,
)
from .sse import sse_response

logger = logging.getLogger("toolnexus_django.views")


def json_response(
    payload: Any, status: int = 200, content_type: str = "application/json"
) -> HttpResponse:
    # Strict JSON whatever the payload holds (see strictjson).
    return HttpResponse(dumps(payload), status=status, content_type=content_type)


def _version(request: Request) -> str | None:
    """The A2A version the caller names: header, else query parameter."""
    return version_asked(request.headers.get("A2A-Version"), request.GET.get("A2A-Version"))


def _speaks_v1(request: Request) -> bool:
    """Whether the caller asked for A2A v1.0 (its errors carry typed details)."""
    return str(_version(request) or "").strip().startswith("1")


class JwksView(APIView):
    """``GET <prefix>/.well-known/jwks.json`` — the key set that verifies signed
    push notifications and signed Agent Cards (``PUSH["SIGNING_KEY"]``,
    ``CARD_SIGNING_KEY``; empty when nothing is signed)."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        response = json_response(jwks())
        response["Cache-Control"] = "public, max-age=300"
        return response


class JsonRpcView(EndpointAccess):
    """``POST <prefix>/`` — the JSON-RPC 2.0 endpoint.

    The body is parsed here, not by DRF's parsers: malformed JSON must be a
    JSON-RPC -32700, not DRF's HTTP 400. The streaming methods answer with
    Server-Sent Events (:mod:`.sse`); DRF passes a ``StreamingHttpResponse``
    through untouched.
    """

    def context(self, request: Request, store: TaskStore, version: str | None) -> CallContext:
        """Who is calling and what they may do, for the handler."""
        return CallContext(
            store=store,
            actions=EndpointActions(store),
            owner=caller_owner(request),
            a2a_version=version,
            last_event_id=request.headers.get("Last-Event-ID"),
            binding="http+json" if isinstance(self, RestView) else "jsonrpc",
            trace_headers=request.headers if tracing.recording() else None,
            # Each waiting request holds one of this server's threads.
            held=held,
            extended_card=extended_card_builder(
                request, mount_url(request), rpc_authentication_classes()
            ),
        )

    def post(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            body = request.body
        except RequestDataTooBig:
            return json_response(
                failure(
                    None, body_too_large(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, _speaks_v1(request))
                )
            )
        rid = None
        try:
            rpc = parse_request(body)
            rid = rpc.id
            store = get_task_store()
            result = handler.dispatch(rpc, self.context(request, store, _version(request)))
            if isinstance(result, EventStream):
                return sse_response(RpcEnvelope(rid), result)
            if isinstance(result, Awaiting):
                result = _settle(store, result)
            return json_response(success(rid, result))
        except RpcError as err:
            return json_response(failure(err.id if err.id is not None else rid, err))
        except AuthenticationRequired:
            raise NotAuthenticated() from None  # DRF answers it: 401 with the challenge
        except Exception:
            log_exception(logger, "JSON-RPC request failed")
            return json_response(failure(rid, RpcError(INTERNAL_ERROR, "Internal error")))

    # DRF's stubs say a Response; dispatch passes any HttpResponseBase on
    # (finalize_response takes one), and the answer is ours, not DRF's renderer's.
    def handle_exception(self, exc: Exception) -> HttpResponseBase:  # type: ignore[override]
        """DRF's refusal (401 with the challenge, 403, 429 with ``Retry-After``)
        in this binding's words, as over ASGI (a2a/refusals.py); a request
        with the wrong HTTP method keeps DRF's 405 and its ``Allow``."""
        response = super().handle_exception(exc)
        if isinstance(exc, exceptions.MethodNotAllowed):
            return response
        # Not the view's Allow and DRF's Vary: Accept (finalize_response adds
        # these headers): neither says anything of this answer.
        self.headers = {}
        data = getattr(response, "data", None)
        return self.refusal(refused_by_drf(response.status_code, data, response.items()))

    def refusal(self, err: Refused) -> HttpResponseBase:
        err.id, err.details = request_id(_body(self.request)), _speaks_v1(self.request)
        response = json_response(failure(err.id, err), status=err.status)
        for name, value in err.headers:
            response[name] = value
        return response


def _body(request: Request) -> bytes:
    """The body, where Django still has it (b"": too large, or read as a stream)."""
    try:
        return request.body
    except (RequestDataTooBig, RawPostDataException):
        return b""


def _settle(store: TaskStore, waiting: Awaiting) -> Any:
    """A blocking send's result, once its Task has stopped."""
    try:
        return waiting.result(wait_settled(store, waiting.task))
    finally:
        waiting.close()


class RestView(JsonRpcView):
    """``<prefix>/message:send``, ``<prefix>/tasks/{id}``, ... — the HTTP+JSON
    binding (A2A v1.0 §11; the routes in :mod:`toolnexus_django.a2a.rest`),
    with the JSON-RPC endpoint's authentication and permissions."""

    @property
    def default_response_headers(self) -> dict[str, str]:
        # DRF would answer every response with this view's Allow (all the
        # methods of all the routes); a 405 sets the route's own.
        headers = dict(super().default_response_headers)
        headers.pop("Allow", None)
        return headers

    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.call(request, kwargs.get("route", ""))

    # Every HTTP method is the binding's to answer (405 with the route's
    # Allow), not DRF's: OPTIONS is no metadata page, TRACE no bare 405.
    post = delete = put = patch = options = http_method_not_allowed = get  # type: ignore[assignment]

    def call(self, request: Request, path: str) -> HttpResponseBase:
        try:
            body = request.body
        except RequestDataTooBig:
            return rest_response(body_too_large(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, True))
        try:
            version = _version(request)
            check_version(version)
            rpc = route(request.method or "GET", path, dict(request.GET.lists()), body)
            store = get_task_store()
            result = handler.dispatch(rpc, self.context(request, store, "1.0"))
            if isinstance(result, EventStream):
                return sse_response(RestEnvelope(), result)
            if isinstance(result, Awaiting):
                result = _settle(store, result)
            if rpc.method == "GetExtendedAgentCard":
                slot = (mount_url(request), caller_owner(request))
                return card_response(request, result, private=True, media_type=A2A_JSON, slot=slot)
            return json_response(result, content_type=A2A_JSON)
        except RpcError as err:
            err.details = True
            return rest_response(err)
        except AuthenticationRequired:
            raise NotAuthenticated() from None  # DRF answers it: 401 with the challenge
        except Exception:
            log_exception(logger, "HTTP+JSON request failed")
            return rest_response(RpcError(INTERNAL_ERROR, "Internal error"))

    def refusal(self, err: Refused) -> HttpResponseBase:
        return rest_response(err)


def rest_response(err: RpcError) -> HttpResponse:
    status, payload = rest_error(err)
    response = json_response(payload, status=status, content_type=A2A_JSON)
    if isinstance(err, MethodNotAllowed):
        response["Allow"] = ", ".join(err.allow)
    if isinstance(err, Refused):  # DRF's challenge, Retry-After
        for name, value in err.headers:
            response[name] = value
    return response
