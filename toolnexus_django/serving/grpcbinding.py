"""The gRPC binding (A2A v1.0 §10): the ``lf.a2a.v1.A2AService`` answered by
the one request handler, as JSON-RPC and HTTP+JSON are.

Each call goes through the same steps as an HTTP request:

0. what the call says (metadata, peer) copied on the loop
   (:class:`.grpccall.CallInfo`): nothing of a grpc call object is touched
   off the loop's thread, nor after the handler ends; the request message,
   received as bytes, refused over ``DATA_UPLOAD_MAX_MEMORY_SIZE``
   (``RESOURCE_EXHAUSTED``) before anything reads it;
1. who is calling: the endpoint's DRF classes run on a request built from the
   call's metadata (``authorization``, ``cookie``, any other header a class
   reads), exactly as over ASGI (:func:`.pipeline.authenticate`); a refusal is
   ``UNAUTHENTICATED`` (401), ``PERMISSION_DENIED`` (403) or
   ``RESOURCE_EXHAUSTED`` (429, a throttle) — a caller DRF would find
   anonymous and admit skips them (:class:`.anonymous.AnonymousPass`), and
   for any other the classes and steps 2's dispatch share one hop to a
   database thread, as over ASGI;
2. the request message decoded (``INVALID_ARGUMENT`` when it does not) and
   read as its v1.0 JSON (``json_format.MessageToDict``: the proto3 JSON
   mapping *is* v1.0's JSON), dispatched as the v1.0 method of the
   same name (``handler.dispatch`` on a database thread): the same params
   checks, the same store, the same owner scoping — another owner's Task is
   ``NOT_FOUND``;
3. the v1.0 result back into the response message (:mod:`.grpcmessages`: what
   ``json_format.ParseDict`` makes, for a tenth of its CPU);
   a stream's events one ``StreamResponse`` each, read from the Task's events
   as SSE reads them (``EventStream.aevents``: no thread per stream);
4. an ``RpcError`` as the status of A2A v1.0's error table (:data:`STATUS`),
   with a ``google.rpc.Status`` carrying the ``ErrorInfo`` (the A2A reason) in
   the ``grpc-status-details-bin`` trailer, where the official a2a-sdk client
   maps it back to its error class.

The generated code is the official a2a-sdk's (``a2a.types.a2a_pb2`` and
``a2a_pb2_grpc``, the ``grpc`` extra): the same definitions its clients
are built from, kept in step with the spec by the SDK's releases, with no
code generation step (nor ``grpcio-tools``) here. Only a process serving
gRPC imports this module (``toolnexus_serve`` with ``TOOLNEXUS["GRPC"]``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import any_pb2, empty_pb2, message_factory
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from ..a2a.card import extended_card_builder
from ..a2a.dialects import negotiate_version, version_error
from ..a2a.follow import await_settled
from ..a2a.jsonrpc import (
    A2A_DOMAIN,
    CONTENT_TYPE_NOT_SUPPORTED,
    INTERNAL_ERROR,
    INVALID_AGENT_RESPONSE,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REASONS,
    TASK_NOT_FOUND,
    AuthenticationRequired,
    RpcError,
    RpcRequest,
)
from ..a2a.methods import Awaiting, CallContext, EventStream
from ..observability import tracing
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from .endpoint import Bound, bound, takes_drf
from .grpccall import (
    CallInfo,
    MessageTooLarge,
    Refused,
    check_size,
    request_params,
    serve_admitted,
)
from .grpcmessages import as_message
from .handler import EndpointActions, handler
from .pipeline import caller_owner

logger = logging.getLogger("toolnexus_django.grpc")

#: JSON-RPC code -> gRPC status (A2A v1.0 §5.4; the a2a-sdk server's table).
STATUS: dict[int, grpc.StatusCode] = {
    TASK_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    METHOD_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    INVALID_PARAMS: grpc.StatusCode.INVALID_ARGUMENT,
    INVALID_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    PARSE_ERROR: grpc.StatusCode.INVALID_ARGUMENT,
    CONTENT_TYPE_NOT_SUPPORTED: grpc.StatusCode.INVALID_ARGUMENT,
    INTERNAL_ERROR: grpc.StatusCode.INTERNAL,
    INVALID_AGENT_RESPONSE: grpc.StatusCode.INTERNAL,
}
#: Every other A2A error (not cancelable, unsupported operation, no extended
#: card, version, push not supported): a precondition the call did not meet.
OTHER = grpc.StatusCode.FAILED_PRECONDITION
#: A request message over DATA_UPLOAD_MAX_MEMORY_SIZE (-32600 in its details).
RESOURCE_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
STATUS_DETAILS_KEY = "grpc-status-details-bin"
#: The service's full name, and its methods (what their requests decode as).
SERVICE = "lf.a2a.v1.A2AService"
_METHODS = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"].methods_by_name


def grpc_call_context(
    info: CallInfo, binding: Bound, request: Any, endpoint_url: str
) -> CallContext:
    """Who is calling (``request``: DRF's, or None where no class is set)
    and what they may do."""
    if negotiate_version(info.get("a2a-version")) == "0.3":  # v1.0's binding, as REST
        raise version_error("The gRPC binding speaks A2A 1.0: send a2a-version: 1.0")
    return CallContext(
        store=binding.store,
        actions=EndpointActions(binding.store),
        owner=caller_owner(request),
        a2a_version="1.0",
        last_event_id=info.get("last-event-id"),
        binding="grpc",
        trace_headers=dict(info.metadata) if tracing.recording() else None,
        held=None,  # waiting holds no thread here
        # None for a caller DRF did not see: anonymous, as DRF would have found.
        extended_card=extended_card_builder(request, endpoint_url, binding.authentication),
    )


def status_of(err: RpcError) -> tuple[grpc.StatusCode, bytes]:
    """The status ``err`` is answered with, and its ``google.rpc.Status``
    (code, message, ``ErrorInfo`` with the A2A reason and ``data`` as metadata)."""
    code = RESOURCE_EXHAUSTED if isinstance(err, MessageTooLarge) else STATUS.get(err.code, OTHER)
    # A body that is not JSON is the SDK's "invalid request" (it has no parse error).
    reason = REASONS.get(INVALID_REQUEST if err.code == PARSE_ERROR else err.code)
    info = error_details_pb2.ErrorInfo(
        reason=reason or "UNKNOWN_ERROR",
        domain=A2A_DOMAIN,
        metadata=_metadata(err.data),
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=err.message, details=[detail])
    return code, status.SerializeToString()


def _metadata(data: Any) -> dict[str, str]:
    if not isinstance(data, dict):
        return {}
    return {
        str(k): v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), default=str)
        for k, v in data.items()
    }


#: method -> its response message (SendStreamingMessage and SubscribeToTask: each event).
RESPONSES: dict[str, type[Message]] = {
    "SendMessage": a2a_pb2.SendMessageResponse,
    "SendStreamingMessage": a2a_pb2.StreamResponse,
    "GetTask": a2a_pb2.Task,
    "ListTasks": a2a_pb2.ListTasksResponse,
    "CancelTask": a2a_pb2.Task,
    "SubscribeToTask": a2a_pb2.StreamResponse,
    "CreateTaskPushNotificationConfig": a2a_pb2.TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": a2a_pb2.TaskPushNotificationConfig,
    "ListTaskPushNotificationConfigs": a2a_pb2.ListTaskPushNotificationConfigsResponse,
    "DeleteTaskPushNotificationConfig": empty_pb2.Empty,
    "GetExtendedAgentCard": a2a_pb2.AgentCard,
}


class A2AService(a2a_pb2_grpc.A2AServiceServicer):
    """Every method of the service, each one the v1.0 operation of its name.

    ``endpoint_url``: the JSON-RPC endpoint's absolute URL, which the
    extended card names (a gRPC call does not say which HTTP host it meant);
    ``authority``: the ``host:port`` clients dial (the card's gRPC URL)."""

    def __init__(self, endpoint_url: str = "", authority: str = "") -> None:
        self.endpoint_url = endpoint_url
        self.authority = authority
        #: method -> the message its request decodes as.
        self.requests: dict[str, type[Message]] = {
            method: message_factory.GetMessageClass(_METHODS[method].input_type)
            for method in RESPONSES
        }
        for method in RESPONSES:
            streams = RESPONSES[method] is a2a_pb2.StreamResponse
            setattr(self, method, self._streaming(method) if streams else self._unary(method))

    async def _dispatch(self, raw: bytes, info: CallInfo, method: str) -> Any:
        check_size(raw)  # before anything is parsed, stored or sent to the model
        binding = bound()
        # A call DRF must see is authenticated and served in one hop to a
        # database thread, as over ASGI (``endpoint.admitted``), not in one
        # hop to authenticate and another to serve.
        if takes_drf(binding, "POST", info.metadata):
            serve = functools.partial(self._serve, raw, info, method, binding)
            return await serve_admitted(info, method, self.authority, serve)
        ctx, request = self._read(raw, info, method, binding, None)
        return ctx, await run_sync(handler.dispatch, request, ctx)

    def _read(
        self, raw: bytes, info: CallInfo, method: str, binding: Bound, caller: Any
    ) -> tuple[CallContext, RpcRequest]:
        """The call's context for ``caller`` (DRF's request, or None; the
        version it names checked first), then its message, as the request."""
        ctx = grpc_call_context(info, binding, caller, self.endpoint_url)
        return ctx, RpcRequest(None, method, request_params(raw, self.requests[method]))

    def _serve(
        self, raw: bytes, info: CallInfo, method: str, binding: Bound, caller: Any
    ) -> tuple[CallContext, Any]:
        """On a database thread, once DRF's classes admitted ``caller``: the call."""
        ctx, request = self._read(raw, info, method, binding, caller)
        return ctx, handler.dispatch(request, ctx)

    def _unary(self, method: str) -> Callable[..., Any]:
        kind = RESPONSES[method]

        async def call(raw: bytes, context: grpc.aio.ServicerContext) -> Message:
            try:
                # What the call says, copied here on its loop: only the copy leaves it.
                ctx, result = await self._dispatch(raw, CallInfo.of(context), method)
                if isinstance(result, Awaiting):
                    waiting = result
                    try:
                        settled = await await_settled(ctx.store, waiting.task, run_sync)
                        result = waiting.result(settled)
                    finally:
                        waiting.close()
                return kind() if kind is empty_pb2.Empty else as_message(result, kind)
            except Exception as exc:  # answered with a status; never a traceback to the caller
                await abort(context, exc, method)
                raise  # abort() raises; for the type checker

        call.__name__ = method
        return call

    def _streaming(self, method: str) -> Callable[..., Any]:
        async def call(raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[Message]:
            stream: EventStream | None = None
            try:
                _ctx, stream = await self._dispatch(raw, CallInfo.of(context), method)
                assert isinstance(stream, EventStream)
                events = stream.aevents(run_sync)
                try:
                    async for item in events:
                        if item is not None:  # None: SSE's keep-alive; gRPC keeps its own
                            yield as_message(item.result, a2a_pb2.StreamResponse)
                finally:
                    with contextlib.suppress(Exception):
                        await events.aclose()
            except Exception as exc:
                await abort(context, exc, method)
            finally:
                # Also where grpc dropped this generator after a cancel (closed
                # later, off the call's life): nothing here touches the call.
                if stream is not None:
                    stream.close()

        call.__name__ = method
        return call


async def abort(context: grpc.aio.ServicerContext, exc: Exception, method: str) -> None:
    """End the call with the status ``exc`` means (raises, as ``context.abort`` does).

    Called only from the call's handler, on its loop, while grpc still holds
    the call (it frees it once the handler ends): a client's cancel ends the
    handler with ``CancelledError``, which never comes here, so neither the
    trailing metadata nor the status is ever set on a freed call."""
    if isinstance(exc, Refused):
        await context.abort(exc.code, exc.message)
    if isinstance(exc, AuthenticationRequired):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
    if not isinstance(exc, RpcError):
        log_exception(logger, "gRPC %s failed", method, exc=exc)
        exc = RpcError(INTERNAL_ERROR, "Internal error")
    code, details = status_of(exc)
    context.set_trailing_metadata(((STATUS_DETAILS_KEY, details),))
    await context.abort(code, exc.message)


def method_handlers(service: A2AService) -> dict[str, grpc.RpcMethodHandler]:
    """``service``'s methods as grpc handlers. Each takes its request as the
    bytes that came (no deserializer: :mod:`.grpccall` bounds, then decodes
    them) and answers with its response message, serialized by grpc."""
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method, kind in RESPONSES.items():
        make = (
            grpc.unary_stream_rpc_method_handler
            if kind is a2a_pb2.StreamResponse
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[method] = make(
            getattr(service, method),
            request_deserializer=None,
            response_serializer=kind.SerializeToString,
        )
    return handlers


def add_service(server: grpc.aio.Server, endpoint_url: str = "", authority: str = "") -> A2AService:
    """Serve the A2A service on ``server`` (as the SDK's generated
    ``add_A2AServiceServicer_to_server`` does, with :func:`method_handlers`)."""
    service = A2AService(endpoint_url, authority)
    handlers = method_handlers(service)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)
    return service
