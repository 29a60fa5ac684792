"""The dialects one endpoint speaks, how a request picks one, and how a
canonical Task is rendered in each.

- ``toolnexus`` (SPEC §7B): ``SendMessage`` / ``GetTask`` with no
  ``A2A-Version: 1.x`` header (none, or ``0.3``).
- ``v0.3``: slash method names (``message/send``, ``tasks/get``, ...); the
  official client's v0.3 transport also sends ``A2A-Version: 0.3``.
- ``v1.0``: PascalCase method names with ``A2A-Version: 1.0`` (any ``1.x``).

The version comes from the ``A2A-Version`` header or, where a client cannot
set headers, the ``A2A-Version`` query parameter of the endpoint's URL (the
header wins). Which dialect a request speaks:

============================  =========  ===========  ===============  ==========
method                        none       ``0.3``      ``1.0`` / 1.x    other
============================  =========  ===========  ===============  ==========
SendMessage, GetTask          toolnexus  toolnexus    v1.0             -32009
other v1.0 names (ListTasks)  v1.0       -32009       v1.0             -32009
slash names (message/send)    v0.3       v0.3         -32009           -32009
anything else                 -32601     -32601       -32601           -32009
============================  =========  ===========  ===============  ==========

A v1.0-only name with no version at all is v1.0: no other dialect uses it
(a client that omits the header gets what it meant); with ``0.3`` it is the
client's mistake, and -32009 says so.

Rendering starts from the lifecycle's allow-list (``lifecycle.public``): only
public keys leave the server, whatever a store or a later feature adds. The
toolnexus and v0.3 dialects are the canonical shape the stores keep; v1.0's
shapes are written at the end of this module (read, on the way in, by ``params``).
"""

from __future__ import annotations

import enum
import re
from datetime import UTC
from typing import Any

from ..lifecycle.public import public_artifact, public_status, public_task
from ..stores.base import Task, parse_instant
from .jsonrpc import METHOD_NOT_FOUND, VERSION_NOT_SUPPORTED, RpcError


class Dialect(enum.Enum):
    TOOLNEXUS = "toolnexus"
    V03 = "0.3"
    V10 = "1.0"


#: v0.3 method name -> operation.
V03_METHODS: dict[str, str] = {
    "message/send": "send",
    "message/stream": "stream",
    "tasks/get": "get",
    "tasks/cancel": "cancel",
    "tasks/resubscribe": "subscribe",
    "tasks/pushNotificationConfig/set": "push-set",
    "tasks/pushNotificationConfig/get": "push-get",
    "tasks/pushNotificationConfig/list": "push-list",
    "tasks/pushNotificationConfig/delete": "push-delete",
    "agent/getAuthenticatedExtendedCard": "extended-card",
}
#: v1.0 method name -> operation.
V10_METHODS: dict[str, str] = {
    "SendMessage": "send",
    "SendStreamingMessage": "stream",
    "GetTask": "get",
    "ListTasks": "list",
    "CancelTask": "cancel",
    "SubscribeToTask": "subscribe",
    "CreateTaskPushNotificationConfig": "push-set",
    "GetTaskPushNotificationConfig": "push-get",
    "ListTaskPushNotificationConfigs": "push-list",
    "DeleteTaskPushNotificationConfig": "push-delete",
    "GetExtendedAgentCard": "extended-card",
}
#: toolnexus SPEC §7B: the two methods its outbound client calls.
TOOLNEXUS_METHODS: dict[str, str] = {"SendMessage": "send", "GetTask": "get"}

#: Back-compat: every method name this endpoint knows.
METHODS: dict[str, str] = {**V03_METHODS, **V10_METHODS}

SUPPORTED_VERSIONS = ("0.3", "1.0")


#: ``major[.minor[.patch]]`` in ASCII digits, compared as text: ``int()`` of
#: a header's digits met its 4,300-digit limit (-32603 and a traceback).
_VERSION = re.compile(r"([0-9]+)(?:\.([0-9]+))?(?:\.[0-9]+)?")


def version_error(message: str) -> RpcError:
    return RpcError(
        VERSION_NOT_SUPPORTED,
        message,
        data={"supportedVersions": list(SUPPORTED_VERSIONS)},
        details=True,
    )


def negotiate_version(header: str | None) -> str | None:
    """The protocol version an ``A2A-Version`` header asks for: ``None`` (no
    header), ``"0.3"`` or ``"1.0"``; anything else is -32009."""
    if header is None or not header.strip():
        return None
    version = header.strip()
    match = _VERSION.fullmatch(version)
    if match:
        major, minor = _number(match[1]), _number(match[2] or "0")
        if (major, minor) == ("0", "3"):
            return "0.3"
        if major == "1":
            return "1.0"
    raise version_error(
        f"A2A version {version[:20]!r} is not supported "
        f"(supported: {', '.join(SUPPORTED_VERSIONS)})"
    )


def _number(digits: str) -> str:
    """A run of digits as its number's shortest spelling (``"007"`` -> ``"7"``)."""
    return digits.lstrip("0") or "0"


def version_asked(header: str | None, query: str | None) -> str | None:
    """The version a request names: its ``A2A-Version`` header, else the
    query parameter of the same name."""
    if header is not None and header.strip():
        return header
    return query if query is not None and query.strip() else None


def resolve(method: str, header: str | None) -> tuple[Dialect, str]:
    """The dialect and operation of a request (see the module's table);
    ``header`` is the version it names (:func:`version_asked`)."""
    version = negotiate_version(header)
    shown = method[:100]
    if version == "1.0":
        if method in V10_METHODS:
            return Dialect.V10, V10_METHODS[method]
        if method in V03_METHODS:
            raise version_error(
                f"{shown} is an A2A v0.3 method: send it without A2A-Version or with "
                "A2A-Version: 0.3, or use the v1.0 method names"
            )
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {shown}")
    if method in V03_METHODS:
        return Dialect.V03, V03_METHODS[method]
    if method in TOOLNEXUS_METHODS:
        return Dialect.TOOLNEXUS, TOOLNEXUS_METHODS[method]
    if method in V10_METHODS:
        if version is None:
            return Dialect.V10, V10_METHODS[method]
        raise version_error(f"{shown} is an A2A v1.0 method: send the header A2A-Version: 1.0")
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {shown}")


def check_version(header: str | None) -> None:
    """Refuse an ``A2A-Version`` this server does not speak (-32009)."""
    negotiate_version(header)


def limit_history(task: Task, dialect: Dialect, history_length: int | None) -> Task:
    """Keep the last ``history_length`` messages. 0 means none in v1.0 and
    all in v0.3 / toolnexus (the official SDK reads it the same way)."""
    history = task.get("history")
    if history is None or history_length is None:
        return task
    if history_length == 0:
        if dialect is Dialect.V10:
            task["history"] = []
        return task
    task["history"] = history[-history_length:]
    return task


def render_task(
    task: Task,
    dialect: Dialect,
    *,
    history_length: int | None = None,
    include_artifacts: bool = True,
) -> Task:
    """The public form of a stored Task in ``dialect``."""
    out = limit_history(public_task(task), dialect, history_length)
    if not include_artifacts:
        out.pop("artifacts", None)
    if dialect is Dialect.V10:
        return task_to_v1(out)
    return out


# -- streaming events ----------------------------------------------------------------


def stream_task(task: Task, dialect: Dialect, *, history_length: int | None = None) -> Any:
    """The first event of a stream: the Task itself."""
    rendered = render_task(task, dialect, history_length=history_length)
    return {"task": rendered} if dialect is Dialect.V10 else rendered


def status_update(
    task: Task, status: dict[str, Any], dialect: Dialect, *, final: bool
) -> dict[str, Any]:
    """A TaskStatusUpdateEvent carrying ``status`` (a stored status: the
    state, message and time one event left the Task in). v0.3 marks the last
    one ``final``; v1.0 has no such field (the stream simply ends after a
    terminal or interrupted state)."""
    status = public_status(status, str(task["id"]))
    if dialect is Dialect.V10:
        return {
            "statusUpdate": {
                "taskId": task["id"],
                "contextId": task.get("contextId") or "",
                "status": status_to_v1(status),
            }
        }
    return {
        "kind": "status-update",
        "taskId": task["id"],
        "contextId": task.get("contextId"),
        "status": status,
        "final": final,
    }


def status_event(task: Task, dialect: Dialect, *, final: bool) -> dict[str, Any]:
    """A TaskStatusUpdateEvent carrying the Task's current status."""
    return status_update(task, task.get("status") or {}, dialect, final=final)


def artifact_event(
    task: Task,
    artifact: dict[str, Any],
    dialect: Dialect,
    *,
    append: bool = False,
    last: bool = True,
) -> dict[str, Any]:
    """A TaskArtifactUpdateEvent carrying one whole artifact (or, ``last``
    false, a chunk of it: :mod:`.liveevents`)."""
    artifact = public_artifact(artifact, str(task["id"]))
    if dialect is Dialect.V10:
        return {
            "artifactUpdate": {
                "taskId": task["id"],
                "contextId": task.get("contextId") or "",
                "artifact": artifact_to_v1(artifact),
                "append": append,
                "lastChunk": last,
            }
        }
    return {
        "kind": "artifact-update",
        "taskId": task["id"],
        "contextId": task.get("contextId"),
        "artifact": artifact,
        "append": append,
        "lastChunk": last,
    }


# -- rendering in v1.0: canonical -> v1.0 (the way in, v1.0 -> canonical: ``params``) ----
#
# The names follow the official a2a-sdk (``a2a.types.a2a_pb2``, rendered by
# protobuf's JSON mapping): ``TASK_STATE_*`` states, ``ROLE_USER``/``ROLE_AGENT``,
# parts without ``kind`` (``text`` | ``data`` | ``raw`` | ``url``, plus
# ``mediaType``/``filename``/``metadata``), RFC 3339 timestamps with a zone.

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
ROLE_TO_V1 = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
#: The SDK's marker for a v0.3 data part that wraps a non-object value.
DATA_PART_COMPAT = "data_part_compat"


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
