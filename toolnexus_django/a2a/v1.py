"""A2A v1.0 JSON shapes, converted to and from the canonical (toolnexus / v0.3)
shapes the stores keep.

The names follow the official a2a-sdk (``a2a.types.a2a_pb2``, rendered by
protobuf's JSON mapping): ``TASK_STATE_*`` states, ``ROLE_USER``/``ROLE_AGENT``,
parts without ``kind`` (``text`` | ``data`` | ``raw`` | ``url``, plus
``mediaType``/``filename``/``metadata``), RFC 3339 timestamps with a zone.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from ..stores.base import parse_instant
from .jsonrpc import INVALID_PARAMS, RpcError

STATE_TO_V1: dict[str, str] = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELED",
    "rejected": "TASK_STATE_REJECTED",
}
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
ROLE_TO_V1 = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
ROLE_FROM_V1 = {"ROLE_USER": "user", "ROLE_AGENT": "agent", 1: "user", 2: "agent"}
#: The SDK's marker for a v0.3 data part that wraps a non-object value.
DATA_PART_COMPAT = "data_part_compat"


def state_filter(value: Any) -> str | None:
    """A ``status`` filter of ListTasks as a canonical state (None: no filter)."""
    if value in (None, "", 0, "TASK_STATE_UNSPECIFIED"):
        return None
    if isinstance(value, str) and value in STATE_FROM_V1:
        return STATE_FROM_V1[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in STATE_NUMBERS:
        return STATE_NUMBERS[value]
    raise RpcError(INVALID_PARAMS, "Invalid params: status must be a TASK_STATE_* value")


def timestamp(value: Any) -> str | None:
    """An RFC 3339 UTC timestamp with a zone (``...Z``), or None if unreadable."""
    moment = parse_instant(value)
    if moment is None:
        return None
    try:
        text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    except OverflowError:  # outside datetime's range once in UTC
        return None
    return text.replace("+00:00", "Z")


# -- outgoing: canonical -> v1.0 --------------------------------------------------


def part_to_v1(part: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kind = part.get("kind", "text" if "text" in part else None)
    metadata = dict(part.get("metadata") or {})
    if kind == "text":
        out["text"] = part.get("text") or ""
    elif kind == "data":
        data = part.get("data")
        if metadata.pop(DATA_PART_COMPAT, False) and isinstance(data, dict):
            data = data.get("value")
        out["data"] = data
    elif kind == "file":
        file = part.get("file") or {}
        if "bytes" in file:
            out["raw"] = file["bytes"]
        else:
            out["url"] = file.get("uri") or ""
        if file.get("mimeType"):
            out["mediaType"] = file["mimeType"]
        if file.get("name"):
            out["filename"] = file["name"]
    else:
        out = {k: v for k, v in part.items() if k not in ("kind", "metadata")}
    if metadata:
        out["metadata"] = metadata
    return out


def message_to_v1(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "messageId": message.get("messageId") or "",
        "role": ROLE_TO_V1.get(str(message.get("role")), "ROLE_UNSPECIFIED"),
        "parts": [part_to_v1(p) for p in message.get("parts") or () if isinstance(p, dict)],
    }
    for key in ("contextId", "taskId", "metadata", "extensions", "referenceTaskIds"):
        if message.get(key):
            out[key] = message[key]
    return out


def artifact_to_v1(artifact: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "artifactId": artifact.get("artifactId") or "",
        "parts": [part_to_v1(p) for p in artifact.get("parts") or () if isinstance(p, dict)],
    }
    for key in ("name", "description", "metadata", "extensions"):
        if artifact.get(key):
            out[key] = artifact[key]
    return out


def status_to_v1(status: dict[str, Any]) -> dict[str, Any]:
    state = str(status.get("state") or "")
    out: dict[str, Any] = {"state": STATE_TO_V1.get(state, "TASK_STATE_UNSPECIFIED")}
    if isinstance(status.get("message"), dict):
        out["message"] = message_to_v1(status["message"])
    when = timestamp(status.get("timestamp"))
    if when is not None:
        out["timestamp"] = when
    return out


def task_to_v1(task: dict[str, Any]) -> dict[str, Any]:
    """A public canonical Task (see ``dialects.render_task``) in v1.0 shape."""
    out: dict[str, Any] = {
        "id": task["id"],
        "contextId": task.get("contextId") or "",
        "status": status_to_v1(task.get("status") or {}),
    }
    if task.get("artifacts"):
        out["artifacts"] = [artifact_to_v1(a) for a in task["artifacts"]]
    if task.get("history"):
        out["history"] = [message_to_v1(m) for m in task["history"]]
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


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
