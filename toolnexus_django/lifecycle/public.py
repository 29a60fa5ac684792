"""What of a stored Task anyone may see: an allow-list.

Only these keys leave the server, whatever a store or a later feature adds to
the stored Task; parts that break the rules (stored before they were checked)
are left out (see :mod:`.parts`). The wire renders this in each dialect; the
signals hand it to receivers.
"""

from __future__ import annotations

from typing import Any

from ..stores.base import Task
from . import parts

PUBLIC_TASK_KEYS = ("id", "contextId", "kind", "status", "artifacts", "history", "metadata")
PUBLIC_STATUS_KEYS = ("state", "message", "timestamp")


def public_status(status: Any, task_id: str) -> dict[str, Any]:
    status = status if isinstance(status, dict) else {}
    out = {k: status[k] for k in PUBLIC_STATUS_KEYS if k in status}
    if "message" in out:
        message = parts.readable_message(out["message"], task_id)
        if message is None:
            del out["message"]
        else:
            out["message"] = message
    return out


def public_artifact(artifact: dict[str, Any], task_id: str) -> dict[str, Any]:
    if artifact.get("parts") is None:
        return artifact
    return {**artifact, "parts": parts.readable(artifact["parts"], task_id)}


def public_task(task: Task) -> Task:
    """The public part of a stored Task, in the canonical shape."""
    out: dict[str, Any] = {k: task[k] for k in PUBLIC_TASK_KEYS if k in task}
    tid = str(task.get("id") or "")
    out["status"] = public_status(task.get("status"), tid)
    if "history" in out:
        history = out["history"] if isinstance(out["history"], list) else []
        out["history"] = [m for m in (parts.readable_message(m, tid) for m in history) if m]
    if "artifacts" in out:
        artifacts = out["artifacts"] if isinstance(out["artifacts"], list) else []
        out["artifacts"] = [public_artifact(a, tid) for a in artifacts if isinstance(a, dict)]
    if "metadata" in out and not isinstance(out["metadata"], dict):
        del out["metadata"]
    out.setdefault("kind", "task")
    return out
