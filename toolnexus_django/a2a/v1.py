"""A2A v1.0 requests read into the canonical (toolnexus / v0.3) shapes the
stores keep; the way out, a Task rendered in v1.0, is ``dialects``' (with
every other dialect's).

The names follow the official a2a-sdk (``a2a.types.a2a_pb2``, rendered by
protobuf's JSON mapping): ``TASK_STATE_*`` states, ``ROLE_USER``/``ROLE_AGENT``,
parts without ``kind`` (``text`` | ``data`` | ``raw`` | ``url``, plus
``mediaType``/``filename``/``metadata``).
"""

from __future__ import annotations

from typing import Any

from .dialects import DATA_PART_COMPAT, STATE_TO_V1
from .jsonrpc import INVALID_PARAMS, RpcError

STATE_FROM_V1: dict[str, str] = {v: k for k, v in STATE_TO_V1.items()}
#: protobuf's JSON mapping also accepts an enum's number.
STATE_NUMBERS: dict[int, str] = {
    1: "submitted",
    2: "working",
    3: "completed",
    4: "failed",
    5: "canceled",
    6: "input-required",
    7: "rejected",
    8: "auth-required",
}
ROLE_FROM_V1 = {"ROLE_USER": "user", "ROLE_AGENT": "agent", 1: "user", 2: "agent"}


def state_filter(value: Any) -> str | None:
    """A ``status`` filter of ListTasks as a canonical state (None: no filter)."""
    if value in (None, "", 0, "TASK_STATE_UNSPECIFIED"):
        return None
    if isinstance(value, str) and value in STATE_FROM_V1:
        return STATE_FROM_V1[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in STATE_NUMBERS:
        return STATE_NUMBERS[value]
    raise RpcError(INVALID_PARAMS, "Invalid params: status must be a TASK_STATE_* value")


# -- incoming: v1.0 -> canonical --------------------------------------------------


def _bad(what: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"Invalid params: {what}")


def part_from_v1(part: Any) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise _bad("each part must be an object")
    if "kind" in part:  # already canonical (lenient)
        return dict(part)
    metadata = part.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _bad("part metadata must be an object")
    out: dict[str, Any]
    if "text" in part:
        if not isinstance(part["text"], str):
            raise _bad("a text part's text must be a string")
        out = {"kind": "text", "text": part["text"]}
    elif "data" in part:
        data = part["data"]
        if isinstance(data, dict):
            out = {"kind": "data", "data": data}
        else:
            out = {"kind": "data", "data": {"value": data}}
            metadata = {**(metadata or {}), DATA_PART_COMPAT: True}
    elif "raw" in part or "url" in part:
        key, target = ("raw", "bytes") if "raw" in part else ("url", "uri")
        if not isinstance(part[key], str):
            raise _bad(f"a file part's {key} must be a string")
        file: dict[str, Any] = {target: part[key]}
        if isinstance(part.get("mediaType"), str) and part["mediaType"]:
            file["mimeType"] = part["mediaType"]
        if isinstance(part.get("filename"), str) and part["filename"]:
            file["name"] = part["filename"]
        out = {"kind": "file", "file": file}
    else:
        raise _bad("a part needs one of text, data, raw or url")
    if metadata:
        out["metadata"] = metadata
    return out


def message_from_v1(message: dict[str, Any]) -> dict[str, Any]:
    """An incoming v1.0 message in the canonical shape."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise _bad("params.message.parts must be an array")
    role = message.get("role")
    known = isinstance(role, (str, int)) and not isinstance(role, bool)
    out: dict[str, Any] = {
        "kind": "message",
        "role": ROLE_FROM_V1.get(role, role if role in ("user", "agent") else "user")
        if known
        else "user",
        "parts": [part_from_v1(p) for p in parts],
    }
    for key in ("messageId", "contextId", "taskId", "metadata", "extensions", "referenceTaskIds"):
        if message.get(key) is not None:
            out[key] = message[key]
    # protobuf's JSON form writes an unset string as "": the same as absent.
    for key in ("contextId", "taskId"):
        if out.get(key) == "":
            del out[key]
    return out
