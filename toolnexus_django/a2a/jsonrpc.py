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
UNSUPPORTED_OPERATION = -32004
VERSION_NOT_SUPPORTED = -32009

RequestId = str | int | float | None


class RpcError(Exception):
    """An error the endpoint answers with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, *, data: Any = None, id: RequestId = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.id = id

    def as_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


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
