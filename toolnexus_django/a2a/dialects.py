"""The dialects one endpoint speaks, and how a canonical Task is rendered in each.

- ``toolnexus`` (SPEC §7B): ``SendMessage`` / ``GetTask`` with no
  ``A2A-Version: 1.x`` header.
- ``v0.3``: slash method names (``message/send``, ``tasks/get``); the official
  client's v0.3 transport also sends ``A2A-Version: 0.3``.

Rendering is an allow-list: only public keys leave the server, whatever a
store or a later feature adds to the stored Task.
"""

from __future__ import annotations

import enum
from typing import Any

from ..stores.base import Task
from .jsonrpc import VERSION_NOT_SUPPORTED, RpcError


class Dialect(enum.Enum):
    TOOLNEXUS = "toolnexus"
    V03 = "0.3"


#: method name -> (dialect, canonical operation)
METHODS: dict[str, tuple[Dialect, str]] = {
    "SendMessage": (Dialect.TOOLNEXUS, "send"),
    "GetTask": (Dialect.TOOLNEXUS, "get"),
    "message/send": (Dialect.V03, "send"),
    "tasks/get": (Dialect.V03, "get"),
}

SUPPORTED_VERSIONS = ("0.3",)

PUBLIC_TASK_KEYS = ("id", "contextId", "kind", "status", "artifacts", "history", "metadata")
PUBLIC_STATUS_KEYS = ("state", "message", "timestamp")


def check_version(header: str | None) -> None:
    """Refuse an ``A2A-Version`` this server does not speak (-32009)."""
    if not header:
        return
    version = header.strip()
    if version in SUPPORTED_VERSIONS or version.startswith("0.3."):
        return
    raise RpcError(
        VERSION_NOT_SUPPORTED,
        f"A2A version {version[:20]!r} is not supported",
        data={"supportedVersions": list(SUPPORTED_VERSIONS)},
    )


def render_task(task: Task, dialect: Dialect, *, history_length: int | None = None) -> Task:
    """The public form of a stored Task."""
    out: dict[str, Any] = {k: task[k] for k in PUBLIC_TASK_KEYS if k in task}
    status = task.get("status") or {}
    out["status"] = {k: status[k] for k in PUBLIC_STATUS_KEYS if k in status}
    out.setdefault("kind", "task")
    history = out.get("history")
    if history is not None and history_length is not None:
        out["history"] = history[-history_length:] if history_length > 0 else []
    return out
