"""JSON-RPC 2.0 envelope: parsing a request body and building responses."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# A2A's own codes.
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
#: Never raised here (our runs' answers are checked before they are stored);
#: named for the bindings' error tables.
INVALID_AGENT_RESPONSE = -32006
EXTENDED_CARD_NOT_CONFIGURED = -32007
VERSION_NOT_SUPPORTED = -32009

#: A2A v1.0 carries error details in ``error.data``: a list of google.rpc-style
#: typed details, the first a ``google.rpc.ErrorInfo`` naming the A2A reason
#: (as the official a2a-sdk's ``build_error_details`` does).
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
A2A_DOMAIN = "a2a-protocol.org"
REASONS: dict[int, str] = {
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOTIFICATION_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    INVALID_AGENT_RESPONSE: "INVALID_AGENT_RESPONSE",
    EXTENDED_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
    INVALID_PARAMS: "INVALID_PARAMS",
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INTERNAL_ERROR: "INTERNAL_ERROR",
}

RequestId = str | int | float | None


class AuthenticationRequired(Exception):
    """The operation needs an authenticated caller (v1.0 §13.3: the extended
    Agent Card): each binding answers it as its authentication error — HTTP
    401 with the endpoint's challenge and the binding's error body
    (:class:`~toolnexus_django.a2a.refusals.Refused`), gRPC ``UNAUTHENTICATED``."""


class RpcError(Exception):
    """An error the endpoint answers with a JSON-RPC error object.

    ``details``: render ``data`` the A2A v1.0 way (a list of typed details whose
    ``ErrorInfo.metadata`` carries ``data``); toolnexus and v0.3 callers get
    ``data`` as it is. The endpoint sets it once it knows the dialect.
    """

    #: The ``ErrorInfo`` reason, where the code alone does not name it (:data:`REASONS`).
    reason: str | None = None

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: Any = None,
        id: RequestId = None,
        details: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.id = id
        self.details = details

    def as_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["data"] = error_details(self.code, self.data, self.reason)
        elif self.data is not None:
            error["data"] = self.data
        return error


def _metadata_value(value: Any) -> str:
    # ErrorInfo.metadata is a map of strings: a list of scalars reads as
    # "a,b"; anything richer is carried as its JSON text.
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return ",".join(str(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def error_details(code: int, data: Any = None, reason: str | None = None) -> list[dict[str, Any]]:
    """``error.data`` of an A2A v1.0 error: ``[google.rpc.ErrorInfo]`` with the
    A2A reason (``reason``, else the code's), and ``data`` (an object) as its
    string-valued ``metadata``."""
    metadata = (
        {str(k): _metadata_value(v) for k, v in data.items()} if isinstance(data, dict) else {}
    )
    return [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": reason or REASONS.get(code, "UNKNOWN_ERROR"),
            "domain": A2A_DOMAIN,
            "metadata": metadata,
        }
    ]


@dataclass(frozen=True)
class RpcRequest:
    id: RequestId
    method: str
    params: Any


#: Containers nested deeper than this are refused (-32600): nothing the
#: protocol sends comes close, and every later step (storage, rendering,
#: schema checks) may recurse over what is stored.
MAX_NESTING = 64


class _NonFinite:
    """What ``NaN``, ``Infinity`` and numbers too large for a float parse to."""

    def __repr__(self) -> str:
        return "<non-finite number>"


NON_FINITE = _NonFinite()


def _valid_id(value: Any) -> bool:
    # JSON-RPC ids are strings, numbers or null (never booleans, objects, arrays).
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _has_lone_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _scan(payload: Any) -> tuple[int, bool, bool]:
    """(depth, non-finite number seen, lone surrogate seen) of a parsed body,
    without recursion; stops early once the depth is over the limit."""
    depth, non_finite, surrogate = 0, False, False
    stack: list[tuple[Any, int]] = [(payload, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, str):
            surrogate = surrogate or _has_lone_surrogate(value)
        elif value is NON_FINITE:
            non_finite = True
        elif isinstance(value, (dict, list)):
            depth = max(depth, level)
            if depth > MAX_NESTING:
                break
            if isinstance(value, dict):
                for key, item in value.items():
                    surrogate = surrogate or _has_lone_surrogate(key)
                    stack.append((item, level + 1))
            else:
                stack.extend((item, level + 1) for item in value)
    return depth, non_finite, surrogate


def _float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else NON_FINITE


def _loads(body: bytes) -> Any:
    """Parse ``body`` as UTF-8 JSON; NaN/Infinity/1e400 become NON_FINITE."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcError(PARSE_ERROR, "Parse error: the body is not valid UTF-8") from None
    try:
        return json.loads(text, parse_constant=lambda _: NON_FINITE, parse_float=_float)
    except RecursionError:
        # Valid JSON, only deeper than this Python's parser goes (3.11 gives
        # up at about a thousand levels, 3.13 much later): the same answer as
        # any body nested past MAX_NESTING, whichever Python parses it.
        raise _too_deep() from None
    except ValueError:
        raise RpcError(PARSE_ERROR, "Parse error: the body is not valid JSON") from None


def _too_deep(rid: RequestId = None) -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        f"Invalid Request: the body is nested deeper than {MAX_NESTING} levels",
        data={"maxNesting": MAX_NESTING},
        id=rid,
    )


def _not_finite(rid: RequestId) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        "Invalid params: NaN, Infinity and numbers too large for a double are not JSON",
        id=rid,
    )


def _check_values(payload: Any, rid: RequestId) -> bool:
    """Refuse a body nested too deep or holding a lone surrogate (-32600);
    return whether it holds a non-finite number (the caller's -32602, after
    its own checks of the envelope)."""
    depth, non_finite, surrogate = _scan(payload)
    if depth > MAX_NESTING:
        raise _too_deep(rid)
    if surrogate:
        raise RpcError(
            INVALID_REQUEST,
            "Invalid Request: the body contains a lone UTF-16 surrogate (not valid Unicode)",
            id=rid,
        )
    return non_finite


def body_too_large(limit: int, details: bool = False) -> RpcError:
    """A body over ``limit`` bytes (``DATA_UPLOAD_MAX_MEMORY_SIZE``): -32600."""
    return RpcError(
        INVALID_REQUEST,
        f"Invalid Request: the body is larger than {limit} bytes",
        data={"limit": limit},
        details=details,
    )


def parse_request(body: bytes) -> RpcRequest:
    """Parse one JSON-RPC request object, or raise :class:`RpcError`.

    Only strict JSON gets through: a non-finite id is -32600 (``id: null``), a
    non-finite number anywhere else -32602, a lone surrogate -32600, nesting
    past :data:`MAX_NESTING` -32600 — so nothing later can fail to store or
    to encode what was accepted."""
    payload = _loads(body)
    if isinstance(payload, list):
        raise RpcError(
            INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC request object (batches are not supported)",
        )
    if not isinstance(payload, dict):
        raise RpcError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC request object")
    rid = payload.get("id")
    if rid is NON_FINITE:
        raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a finite number")
    if not _valid_id(rid):
        raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
    if isinstance(rid, str) and _has_lone_surrogate(rid):
        raise RpcError(INVALID_REQUEST, "Invalid Request: id is not valid Unicode")
    non_finite = _check_values(payload, rid)
    if payload.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', id=rid)
    method = payload.get("method")
    if not isinstance(method, str) or not method:
        raise RpcError(INVALID_REQUEST, "Invalid Request: missing method", id=rid)
    params = payload.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object", id=rid)
    if non_finite:
        raise _not_finite(rid)
    return RpcRequest(id=rid, method=method, params=params)


def request_id(body: bytes) -> RequestId:
    """The id an answer to ``body`` carries: its request's, or None where
    :func:`parse_request` finds none (JSON-RPC 2.0 §5: null when it cannot
    be detected)."""
    try:
        return parse_request(body).id
    except RpcError as err:
        return err.id


def parse_object(body: bytes) -> dict[str, Any]:
    """Parse a request body that is one JSON object (the HTTP+JSON binding's),
    as strictly as :func:`parse_request`; an empty body is ``{}``."""
    if not body.strip():
        return {}
    payload = _loads(body)
    if not isinstance(payload, dict):
        raise RpcError(INVALID_REQUEST, "Invalid Request: the body must be a JSON object")
    if _check_values(payload, None):
        raise _not_finite(None)
    return payload


def success(rid: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def failure(rid: RequestId, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": error.as_error()}


@dataclass(frozen=True)
class RpcEnvelope:
    """How results and errors travel on JSON-RPC: each in a response object
    with the request's id (one per SSE event on a stream)."""

    rid: RequestId

    def result(self, result: Any) -> Any:
        return success(self.rid, result)

    def error(self, err: RpcError) -> Any:
        return failure(self.rid, err)
