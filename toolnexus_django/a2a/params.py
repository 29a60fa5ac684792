"""Reading what a request carries: its parameters checked, and an A2A v1.0
message read into the canonical (toolnexus / v0.3) shape the stores keep.

Every query parameter — what names a Task, a context, a push config, a page,
a count or a moment — is read by one of the readers below, and
:func:`read_query` reads each operation's (:data:`QUERY_PARAMS`, every
dialect's spelling; the HTTP+JSON routes are turned into the same params)
before the operation runs. So a value a database refuses or cannot hold —
NUL in text, an id longer than its column, a number past the wire's int32,
a moment outside datetime's range once in UTC — is the caller's mistake
(-32602) on every method and binding, on SQLite and PostgreSQL alike, never
a database error (-32603). A message's parts and ids are checked here too
(:func:`check_parts`, :func:`check_id_field`), after a v1.0 one is read
(:func:`message_from_v1`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .. import lifecycle
from ..lifecycle.public import part_problem
from ..stores import TaskStore
from ..stores.base import Task, parse_instant
from .dialects import DATA_PART_COMPAT, STATE_TO_V1, Dialect
from .jsonrpc import INVALID_PARAMS, TASK_NOT_FOUND, RpcError

#: The longest id (a Task's, a context's, a message's, a push config's) a
#: parameter may name: the database's id columns hold 255 characters.
MAX_ID_CHARS = 255
#: The longest page token (ListTasks' cursors are far shorter).
MAX_TOKEN_CHARS = 4096
#: Counts travel as protobuf int32 on A2A v1.0.
MAX_COUNT = 2**31 - 1
#: The most Tasks one ListTasks page holds.
MAX_PAGE_SIZE = 100
#: protobuf's JSON mapping may write an int32 as a string.
_DIGITS = re.compile(r"-?[0-9]{1,20}")


def invalid(name: str, rule: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"Invalid params: {name} {rule}")


def read_text(value: Any, name: str, limit: int = MAX_ID_CHARS) -> str:
    """A string of at most ``limit`` characters that every database stores:
    no NUL, no lone surrogate."""
    if not isinstance(value, str):
        raise invalid(name, "must be a string")
    if len(value) > limit or "\x00" in value or not _is_unicode(value):
        raise invalid(name, f"must be at most {limit} characters of valid Unicode, without NUL")
    return value


def _is_unicode(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_whole(value: Any, name: str, low: int = 0, high: int = MAX_COUNT) -> int:
    """A whole number in ``[low, high]`` (a JSON integer, or its digits as a string)."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise invalid(name, f"must be a whole number from {low} to {high}")
    return value


def read_timestamp(value: Any, name: str) -> datetime:
    """An RFC 3339 moment (no zone: UTC) that is still a moment in UTC
    (years 1 to 9999, what every database stores)."""
    rule = "must be an RFC 3339 timestamp between the years 1 and 9999 (UTC)"
    # Python's parser ignores a trailing NUL: refuse it first.
    if not isinstance(value, str) or len(value) > 64 or "\x00" in value:
        raise invalid(name, rule)
    moment = parse_instant(value)
    if moment is not None:
        with contextlib.suppress(OverflowError):  # outside datetime's range in UTC
            return moment.astimezone(UTC)
    raise invalid(name, rule)


def _id(value: Any, name: str) -> str:
    return read_text(value, name)


def _token(value: Any, name: str) -> str:
    return read_text(value, name, limit=MAX_TOKEN_CHARS)


def _count(value: Any, name: str) -> int:
    return read_whole(value, name)


def _page_size(value: Any, name: str) -> int:
    return read_whole(value, name, 1, MAX_PAGE_SIZE)


def _state(value: Any, name: str) -> str | None:
    return state_filter(value)  # "" and UNSPECIFIED: no filter


def _moment(value: Any, name: str) -> datetime | None:
    return None if value == "" else read_timestamp(value, name)  # "": no filter


Reader = Callable[[Any, str], Any]
_PUSH_REF: dict[str, Reader] = {"taskId": _id, "id": _id, "pushNotificationConfigId": _id}

#: Each operation's query parameters by name (every dialect's), and their readers.
QUERY_PARAMS: dict[str, dict[str, Reader]] = {
    "get": {"id": _id, "historyLength": _count},
    "cancel": {"id": _id},
    "subscribe": {"id": _id},
    "list": {
        "contextId": _id,
        "status": _state,
        "pageSize": _page_size,
        "pageToken": _token,
        "historyLength": _count,
        "statusTimestampAfter": _moment,
    },
    "push-set": {"taskId": _id, "id": _id},
    "push-get": _PUSH_REF,
    "push-list": _PUSH_REF,
    "push-delete": _PUSH_REF,
}


def read_query(operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with each of ``operation``'s query parameters read (checked,
    and numbers, states and moments as values); absent and null ones are
    left for the operation to default or require."""
    readers = QUERY_PARAMS.get(operation)
    if not readers:
        return params
    read = dict(params)
    for name, reader in readers.items():
        if params.get(name) is not None:
            read[name] = reader(params[name], name)
    return read


def history_length_of(value: Any) -> int | None:
    if value is None:
        return None
    return read_whole(value, "historyLength")


def read_task_id(params: dict[str, Any]) -> str:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(INVALID_PARAMS, "Invalid params: params.id must be a non-empty string")
    return read_text(task_id, "params.id")


#: A message's role in each dialect that requires one (v1.0: protobuf's JSON
#: mapping also takes the enum's number).
ROLES: dict[Dialect, tuple[Any, ...]] = {
    Dialect.V10: ("ROLE_USER", "ROLE_AGENT", 1, 2),
    Dialect.V03: ("user", "agent"),
}


def check_required(message: dict[str, Any], dialect: Dialect) -> None:
    """A message's ``messageId``, ``role`` and ``parts`` (at least one: a
    required list) are required (A2A v1.0 §5.7, the v0.3 schema): -32602
    naming the one missing. protobuf's JSON mapping writes an unset field as
    its zero value (``""``, ``ROLE_UNSPECIFIED``, ``0``, ``[]``): absent too.
    The toolnexus dialect (SPEC §7B) needs only parts with text."""
    roles = ROLES.get(dialect)
    if roles is None:
        return
    if message.get("messageId") in (None, ""):
        raise required("params.message.messageId", "the sender's id for this message")
    if message.get("parts") in (None, []):
        raise required("params.message.parts", "at least one part")
    role = message.get("role")
    if role in (None, "", 0, "ROLE_UNSPECIFIED") and not isinstance(role, bool):
        raise required("params.message.role", " or ".join(str(r) for r in roles[:2]))
    if isinstance(role, bool) or role not in roles:
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: params.message.role must be {' or '.join(str(r) for r in roles[:2])}",
            data={"field": "params.message.role"},
        )


def required(name: str, what: str) -> RpcError:
    return RpcError(
        INVALID_PARAMS, f"Invalid params: {name} is required ({what})", data={"field": name}
    )


def check_id_field(message: dict[str, Any], key: str) -> None:
    """A message's id fields are strings of at most MAX_ID_CHARS with no NUL
    (no database can index one), the same on every store."""
    value = message.get(key)
    if value is None or (value == "" and key != "taskId"):  # "" is "not given" there
        return
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"Invalid params: message.{key} must be a non-empty string")
    read_text(value, f"message.{key}")


def check_parts(parts: Any, where: str = "params.message.parts") -> list[dict[str, Any]]:
    """A message's ``parts`` if every one is valid (what a valid part is:
    ``lifecycle.public``); otherwise -32602 naming the first bad one."""
    if not isinstance(parts, list):
        raise RpcError(INVALID_PARAMS, f"Invalid params: {where} must be an array")
    for index, part in enumerate(parts):
        reason = part_problem(part)
        if reason is not None:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: {where}[{index}] {reason}",
                data={"field": f"{where}[{index}]"},
            )
    return parts


def configuration_of(params: dict[str, Any]) -> dict[str, Any]:
    configuration = params.get("configuration")
    if configuration is None:
        return {}
    if not isinstance(configuration, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: configuration must be an object")
    return configuration


def push_config_of(configuration: dict[str, Any], dialect: Dialect) -> Any:
    """The push config a send's ``configuration`` carries inline, or None
    (a send without one never enters ``pushops``)."""
    key = "taskPushNotificationConfig" if dialect is Dialect.V10 else "pushNotificationConfig"
    return configuration.get(key) or None


def blocking_asked(configuration: dict[str, Any], dialect: Dialect) -> bool:
    """Whether a send waits for the Task to stop (terminal or waiting on a
    person). v0.3: ``blocking``, true
    when absent; v1.0: ``not returnImmediately`` (false when absent) — the
    official SDK's defaults. The toolnexus dialect always returns at once."""
    if dialect is Dialect.TOOLNEXUS:
        return False
    key, default = ("blocking", True) if dialect is Dialect.V03 else ("returnImmediately", False)
    value = configuration.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"Invalid params: configuration.{key} must be a boolean")
    return value if dialect is Dialect.V03 else not value


def own_task(store: TaskStore, owner: str | None, task_id: str) -> Task:
    """The Task ``task_id`` if ``owner`` owns it, else -32001."""
    task = store.get(task_id)
    # Another owner's Task answers exactly like an unknown one: its existence
    # is not disclosed.
    if task is None or lifecycle.owner_of(task) != owner:
        raise RpcError(TASK_NOT_FOUND, f"Task not found: {task_id[:100]}")
    return task


# -- a v1.0 request read into the canonical shape (the way out: ``dialects``) ------------
#
# The names follow the official a2a-sdk (``a2a.types.a2a_pb2``, rendered by
# protobuf's JSON mapping): ``TASK_STATE_*`` states, ``ROLE_USER``/``ROLE_AGENT``,
# parts without ``kind`` (``text`` | ``data`` | ``raw`` | ``url``, plus
# ``mediaType``/``filename``/``metadata``).

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
    """An incoming v1.0 message (its required fields checked:
    :func:`check_required`) in the canonical shape."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise _bad("params.message.parts must be an array")
    out: dict[str, Any] = {
        "kind": "message",
        "role": ROLE_FROM_V1[message["role"]],
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
