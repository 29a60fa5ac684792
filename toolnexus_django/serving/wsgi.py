"""Thin DRF views: parse -> :mod:`toolnexus_django.a2a.methods` -> respond."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.views import APIView
from toolnexus import Answer

from .. import lifecycle
from ..a2a.card import build_card, card_headers, extended_card_builder, not_modified
from ..a2a.dialects import version_asked
from ..a2a.follow import held, wait_settled
from ..a2a.jsonrpc import (
    INTERNAL_ERROR,
    RpcEnvelope,
    RpcError,
    body_too_large,
    failure,
    parse_request,
    success,
)
from ..a2a.methods import Awaiting, CallContext, EventStream, dispatch
from ..a2a.rest import MethodNotAllowed, RestEnvelope, check_version, rest_error, route
from ..conf import toolnexus_settings
from ..fulfilment.jobs import schedule_fulfilment
from ..lifecycle.messages import answer_data, user_message
from ..review import answer_task, cancel_task
from ..stores import DuplicateMessage, TaskStore, get_task_store
from ..stores.base import Task
from ..strictjson import dumps
from .sse import sse_response

logger = logging.getLogger("toolnexus_django.views")


def json_response(payload: Any, status: int = 200) -> HttpResponse:
    # Strict JSON whatever the payload holds (see strictjson).
    return HttpResponse(dumps(payload), status=status, content_type="application/json")


class EndpointActions:
    """What the wire may change, for one request: start a Task (and schedule
    its run), answer one as its requester, cancel one."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def start(self, message: dict[str, Any], *, owner: str | None, text: str) -> Task:
        try:
            task = lifecycle.submit(self.store, message, owner=owner, text=text).task
        except DuplicateMessage as repeat:
            # A retry of a send that already started a Task: that Task, no second run.
            existing = self.store.get(repeat.task_id)
            if existing is None:
                raise
            return existing
        schedule_fulfilment(task["id"], self.store)
        return task

    def answer(self, task: Task, message: dict[str, Any], *, owner: str | None) -> Task:
        pending = lifecycle.read(task).pending or {}
        return answer_task(
            task["id"],
            Answer(id=pending.get("id"), ok=True, data=answer_data(message)),
            decision="message",
            role="requester",
            actor=owner,
            via="a2a",
            message=user_message(message, task=task),
            store=self.store,
        )

    def push_configs(self) -> Any:
        from ..a2a.pushconfig import keeps_configs
        from ..push.configs import DatabasePushConfigs
        from ..push.local import LocalPushConfigs
        from ..stores import DjangoTaskStore

        if isinstance(self.store, DjangoTaskStore):
            return DatabasePushConfigs(self.store.using)
        return LocalPushConfigs(self.store) if keeps_configs(self.store) else None

    def cancel(self, task_id: str, *, owner: str | None) -> Task:
        from ..review import NotCancelable, TaskNotFound

        try:
            return cancel_task(task_id, store=self.store, actor=owner, via="a2a")
        except (NotCancelable, TaskNotFound) as refused:
            state = getattr(refused, "state", "gone")
            raise lifecycle.IllegalMove("cancel", task_id, state, "done") from None


def _version(request: Request) -> str | None:
    """The A2A version the caller names: header, else query parameter."""
    return version_asked(request.headers.get("A2A-Version"), request.GET.get("A2A-Version"))


def _speaks_v1(request: Request) -> bool:
    """Whether the caller asked for A2A v1.0 (its errors carry typed details)."""
    return str(_version(request) or "").strip().startswith("1")


def rpc_authentication_classes() -> list[Any]:
    """The endpoint's DRF authentication classes (the card declares them)."""
    classes = toolnexus_settings.imported("AUTHENTICATION_CLASSES")
    return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES) if classes is None else classes


def rpc_permission_classes() -> list[Any]:
    """The endpoint's DRF permission classes."""
    classes = toolnexus_settings.imported("PERMISSION_CLASSES")
    return list(api_settings.DEFAULT_PERMISSION_CLASSES) if classes is None else classes


def _endpoint_url(request: Any, namespace: str | None = None) -> str:
    """The absolute URL of the endpoint of the mount ``namespace`` (None: the
    one this request came through), as this request sees it."""
    if namespace is None:
        namespace = request.resolver_match.namespace if request.resolver_match else ""
    name = f"{namespace}:rpc" if namespace else "rpc"
    return request.build_absolute_uri(reverse(name))


def card_response(request: Any, card: dict[str, Any], *, private: bool = False) -> HttpResponse:
    """A card with its ETag and Cache-Control; 304 when If-None-Match has it."""
    body = dumps(card)
    headers = card_headers(body, private=private)
    if not_modified(request.headers.get("If-None-Match"), headers["ETag"]):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type="application/json")
    for key, value in headers.items():
        response[key] = value
    return response


class AgentCardView(APIView):
    """``GET <prefix>/.well-known/agent-card.json`` — public, like any A2A card.

    It declares how to authenticate to the JSON-RPC endpoint: the security
    schemes of that endpoint's authentication classes (see a2a/card.py).
    """

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    #: The namespace of the mount this card describes; None: the one it is
    #: served under (the card at the origin's root names it: ``root_card``).
    describes: str | None = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        card = build_card(_endpoint_url(request, self.describes), rpc_authentication_classes())
        return card_response(request, card)


class JwksView(APIView):
    """``GET <prefix>/.well-known/jwks.json`` — the key set that verifies signed
    push notifications (``PUSH["SIGNING_KEY"]``; empty when they are not signed)."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        from ..push.signing import jwks

        response = json_response(jwks())
        response["Cache-Control"] = "public, max-age=300"
        return response


class JsonRpcView(APIView):
    """``POST <prefix>/`` — the JSON-RPC 2.0 endpoint.

    The body is parsed here, not by DRF's parsers: malformed JSON must be a
    JSON-RPC -32700, not DRF's HTTP 400. The streaming methods answer with
    Server-Sent Events (:mod:`toolnexus_django.streaming`); DRF passes a
    ``StreamingHttpResponse`` through untouched.
    """

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # Responses are built here, not by DRF's renderers: an Accept header
        # (streaming clients send "text/event-stream") must never be a 406.
        return super().perform_content_negotiation(request, force=True)

    def get_authenticators(self) -> list[Any]:
        return [c() for c in rpc_authentication_classes()]

    def get_permissions(self) -> list[Any]:
        return [c() for c in rpc_permission_classes()]

    def context(self, request: Request, store: TaskStore, version: str | None) -> CallContext:
        """Who is calling and what they may do, for :func:`dispatch`."""
        user = request.user
        owner = str(user.pk) if user is not None and user.is_authenticated else None
        return CallContext(
            store=store,
            actions=EndpointActions(store),
            owner=owner,
            a2a_version=version,
            last_event_id=request.headers.get("Last-Event-ID"),
            # Each waiting request holds one of this server's threads.
            held=held,
            extended_card=extended_card_builder(
                request, _endpoint_url(request), rpc_authentication_classes()
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
            result = dispatch(rpc, self.context(request, store, _version(request)))
            if isinstance(result, EventStream):
                return sse_response(RpcEnvelope(rid), result)
            if isinstance(result, Awaiting):
                result = _settle(store, result)
            return json_response(success(rid, result))
        except RpcError as err:
            return json_response(failure(err.id if err.id is not None else rid, err))
        except Exception:
            logger.exception("JSON-RPC request failed")
            return json_response(failure(rid, RpcError(INTERNAL_ERROR, "Internal error")))


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
            result = dispatch(rpc, self.context(request, store, "1.0"))
            if isinstance(result, EventStream):
                return sse_response(RestEnvelope(), result)
            if isinstance(result, Awaiting):
                result = _settle(store, result)
            if rpc.method == "GetExtendedAgentCard":
                return card_response(request, result, private=True)
            return json_response(result)
        except RpcError as err:
            err.details = True
            return rest_response(err)
        except Exception:
            logger.exception("HTTP+JSON request failed")
            return rest_response(RpcError(INTERNAL_ERROR, "Internal error"))


def rest_response(err: RpcError) -> HttpResponse:
    status, payload = rest_error(err)
    response = json_response(payload, status=status)
    if isinstance(err, MethodNotAllowed):
        response["Allow"] = ", ".join(err.allow)
    return response
