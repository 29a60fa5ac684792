"""The HTTP+JSON binding (A2A v1.0 §11): REST routes onto the same operations.

Each route is turned into the v1.0 JSON-RPC request it means and answered by
:func:`~toolnexus_django.a2a.methods.dispatch`, so both bindings share one
Task, one store, one set of checks and one set of errors:

==========================================  ====================================
route (under the endpoint's mount)          operation
==========================================  ====================================
``POST message:send``                       SendMessage (body: its request)
``POST message:stream``                     SendStreamingMessage (SSE)
``GET tasks/{id}?historyLength=``           GetTask
``POST tasks/{id}:cancel``                  CancelTask
``GET|POST tasks/{id}:subscribe``           SubscribeToTask (SSE)
``GET tasks?contextId=&status=&...``        ListTasks
``GET extendedAgentCard``                   GetExtendedAgentCard
``POST|GET tasks/{id}/pushNotificationConfigs``  Create / List push configs
``GET|DELETE …/pushNotificationConfigs/{c}``  Get / Delete a push config
==========================================  ====================================

A result is the JSON-RPC ``result`` itself; a stream's events are the same
``StreamResponse`` objects, one per SSE ``data:``, with the same ``id:`` for
``Last-Event-ID``. An error is a ``google.rpc.Status``-shaped
``{"error": {"code": <HTTP status>, "status": ..., "message": ...,
"details": [ErrorInfo]}}`` with the HTTP status below — the official a2a-sdk
server's table, whose client maps errors back by ``ErrorInfo.reason`` — and
so is a refusal by the endpoint's DRF classes, with DRF's status (a2a/refusals.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .dialects import negotiate_version, version_error
from .jsonrpc import (
    CONTENT_TYPE_NOT_SUPPORTED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    TASK_NOT_FOUND,
    RpcError,
    RpcRequest,
    error_details,
    parse_object,
)
from .protojson import proto_name
from .refusals import Refused

#: JSON-RPC code -> (HTTP status, google.rpc status) for this binding.
STATUS: dict[int, tuple[int, str]] = {
    TASK_NOT_FOUND: (404, "NOT_FOUND"),
    METHOD_NOT_FOUND: (404, "NOT_FOUND"),
    INVALID_PARAMS: (400, "INVALID_ARGUMENT"),
    CONTENT_TYPE_NOT_SUPPORTED: (400, "INVALID_ARGUMENT"),
    INVALID_REQUEST: (400, "INVALID_ARGUMENT"),
    PARSE_ERROR: (400, "INVALID_ARGUMENT"),
    INTERNAL_ERROR: (500, "INTERNAL"),
}
#: Every other A2A error: a precondition the request did not meet.
OTHER = (400, "FAILED_PRECONDITION")

#: The routes, for a 405's ``Allow`` (route name -> methods).
ALLOWED = {
    "message:send": ("POST",),
    "message:stream": ("POST",),
    "tasks": ("GET",),
    "task": ("GET",),
    "cancel": ("POST",),
    "subscribe": ("GET", "POST"),
    "extendedAgentCard": ("GET",),
    "configs": ("GET", "POST"),
    "config": ("GET", "DELETE"),
}

#: The ListTasks parameters a query string may carry (each also by its proto
#: field name: ``page_size``).
LIST_PARAMS = (
    "contextId",
    "status",
    "pageSize",
    "pageToken",
    "historyLength",
    "statusTimestampAfter",
    "includeArtifacts",
)


class MethodNotAllowed(RpcError):
    """A known route asked with the wrong HTTP method (HTTP 405)."""

    def __init__(self, route: str, method: str) -> None:
        self.allow = ALLOWED[route]
        super().__init__(
            METHOD_NOT_FOUND,
            f"Method not allowed: {method[:10]} (use {', '.join(self.allow)})",
        )


def rest_error(err: RpcError) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of ``err`` on this binding."""
    status, word = STATUS.get(err.code, OTHER)
    if isinstance(err, MethodNotAllowed):
        status, word = 405, "UNIMPLEMENTED"
    if isinstance(err, Refused):  # the DRF classes' own status (a2a/refusals.py)
        status, word = err.status, err.grpc_status
    # A body that is not JSON is the SDK's "invalid request" (it has no parse error).
    code = INVALID_REQUEST if err.code == PARSE_ERROR else err.code
    return status, {
        "error": {
            "code": status,
            "status": word,
            "message": err.message,
            "details": error_details(code, err.data, err.reason),
        }
    }


class RestEnvelope:
    """How results and errors travel on this binding (cf. ``RpcEnvelope``)."""

    def result(self, result: Any) -> Any:
        return result

    def error(self, err: RpcError) -> Any:
        return rest_error(err)[1]


def check_version(asked: str | None) -> None:
    """This binding speaks A2A 1.0 (its routes are v1.0's); ``0.3`` is -32009."""
    if negotiate_version(asked) == "0.3":
        raise version_error("The HTTP+JSON binding speaks A2A 1.0: send A2A-Version: 1.0")


def _one(query: Mapping[str, Sequence[str]], key: str) -> str | None:
    values = query.get(key) or ()
    return values[-1] if values else None  # the last one wins, as in the SDK


def _flag(value: str | None, name: str) -> bool | None:
    if value is None:
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise RpcError(INVALID_PARAMS, f"Invalid params: {name} must be true or false")


def _query_params(query: Mapping[str, Sequence[str]], names: Sequence[str]) -> dict[str, Any]:
    """The parameters ``names`` a query string carries, by their JSON name or
    their proto field name (``pageSize``, ``page_size``: the dispatch reads
    both, and refuses a request naming one twice)."""
    params: dict[str, Any] = {}
    for name in names:
        for key in (name, proto_name(name)):
            value = _one(query, key)
            if value is None or value == "":
                continue
            params[key] = _flag(value, key) if name == "includeArtifacts" else value
    return params


def route(method: str, path: str, query: Mapping[str, Sequence[str]], body: bytes) -> RpcRequest:
    """The v1.0 request a REST call means. ``path`` is what follows the
    endpoint's mount (``"tasks/abc:cancel"``); ``query`` maps each query
    parameter to its values. Raises :class:`RpcError` (404 for no such
    route, 405 for a wrong HTTP method). Routes are exact: an empty segment
    (``//``, a trailing ``/``) is no route."""

    def call(name: str, v1_method: str, params: dict[str, Any], *methods: str) -> RpcRequest:
        if method not in methods and not (method == "HEAD" and "GET" in methods):
            raise MethodNotAllowed(name, method)
        return RpcRequest(id=None, method=v1_method, params=params)

    if path in ("message:send", "message:stream"):
        v1_method = "SendMessage" if path == "message:send" else "SendStreamingMessage"
        if method != "POST":
            raise MethodNotAllowed(path, method)
        return call(path, v1_method, parse_object(body), "POST")
    if path == "tasks":
        return call("tasks", "ListTasks", _query_params(query, LIST_PARAMS), "GET")
    if path == "extendedAgentCard":
        return call("extendedAgentCard", "GetExtendedAgentCard", {}, "GET")
    segments = path.split("/")
    if segments[0] == "tasks" and len(segments) > 1 and "" not in segments:
        task_id = segments[1]
        if segments[2:] == ["pushNotificationConfigs"]:
            if method == "POST":
                # The path names the Task, whatever the body says (either spelling).
                given = {k: v for k, v in parse_object(body).items() if k != "task_id"}
                created = {**given, "taskId": task_id}
                return call("configs", "CreateTaskPushNotificationConfig", created, "POST")
            return call("configs", "ListTaskPushNotificationConfigs", {"taskId": task_id}, "GET")
        if len(segments) == 4 and segments[2] == "pushNotificationConfigs":
            ref = {"taskId": task_id, "id": segments[3]}
            if method == "DELETE":
                return call("config", "DeleteTaskPushNotificationConfig", ref, "DELETE")
            return call("config", "GetTaskPushNotificationConfig", ref, "GET")
        if len(segments) == 2:
            for suffix, name, v1_method, methods in (
                (":cancel", "cancel", "CancelTask", ("POST",)),
                (":subscribe", "subscribe", "SubscribeToTask", ("GET", "POST")),
            ):
                if task_id.endswith(suffix) and len(task_id) > len(suffix):
                    return call(name, v1_method, {"id": task_id[: -len(suffix)]}, *methods)
            params = {"id": task_id, **_query_params(query, ("historyLength",))}
            return call("task", "GetTask", params, "GET")
    raise RpcError(METHOD_NOT_FOUND, f"Not found: no HTTP+JSON route {path[:100]!r}")


__all__ = ["RestEnvelope", "check_version", "rest_error", "route"]
