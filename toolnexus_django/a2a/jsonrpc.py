"""JSON-RPC 2.0 envelope: parsing a request body and building responses."""

from __future__ import annotations

import json
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
    EXTENDED_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
    INVALID_PARAMS: "INVALID_PARAMS",
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INTERNAL_ERROR: "INTERNAL_ERROR",
}

RequestId = str | int | float | None


class RpcError(Exception):
    """An error the endpoint answers with a JSON-RPC error object.

    ``details``: render ``data`` the A2A v1.0 way (a list of typed details whose
    ``ErrorInfo.metadata`` carries ``data``); toolnexus and v0.3 callers get
    ``data`` as it is. The endpoint sets it once it knows the dialect.
    """

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
            error["data"] = error_details(self.code, self.data)
        elif self.data is not None:
            error["data"] = self.data
        return error


def _metadata_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def error_details(code: int, data: Any = None) -> list[dict[str, Any]]:
    """``error.data`` of an A2A v1.0 error: ``[google.rpc.ErrorInfo]`` with the
    A2A reason, and ``data`` (an object) as its string-valued ``metadata``."""
    metadata = (
        {str(k): _metadata_value(v) for k, v in data.items()} if isinstance(data, dict) else {}
    )
    return [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": REASONS.get(code, "UNKNOWN_ERROR"),
            "domain": A2A_DOMAIN,
            "metadata": metadata,
        }
    ]


@dataclass(frozen=True)
class RpcRequest:
    id: RequestId
    method: str
    params: Any


def _valid_id(value: Any) -> bool:
    # JSON-RPC ids are strings, numbers or null (never booleans, objects, arrays).
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def parse_request(body: bytes) -> RpcRequest:
    """Parse one JSON-RPC request object, or raise :class:`RpcError`."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise RpcError(PARSE_ERROR, "Parse error: the body is not valid JSON") from None
    if isinstance(payload, list):
        raise RpcError(
            INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC request object (batches are not supported)",
        )
    if not isinstance(payload, dict):
        raise RpcError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC request object")
    rid = payload.get("id")
    if not _valid_id(rid):
        raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
    if payload.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', id=rid)
    method = payload.get("method")
    if not isinstance(method, str) or not method:
        raise RpcError(INVALID_REQUEST, "Invalid Request: missing method", id=rid)
    params = payload.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object", id=rid)
    return RpcRequest(id=rid, method=method, params=params)


def success(rid: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def failure(rid: RequestId, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": error.as_error()}
