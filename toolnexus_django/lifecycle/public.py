"""What of a stored Task leaves the server: an allow-list of its keys, and
of its parts the valid ones.

Only :data:`PUBLIC_TASK_KEYS` leave the server, whatever a store or a later
feature adds to the stored Task. The wire renders :func:`public_task` in each
dialect; the signals hand it to receivers.

Message and artifact parts are in the canonical (toolnexus / A2A v0.3) shape.
A part is an object of a known kind whose fields have the right types (the
wire refuses others on the way in, with :func:`part_problem`):

==========  ==============================================================
kind        fields
==========  ==============================================================
``text``    ``text``: string (a part with ``text`` and no ``kind`` is text)
``data``    ``data``: object
``file``    ``file``: object with ``bytes`` or ``uri`` (string), optional
            ``mimeType`` and ``name`` (strings)
==========  ==============================================================

``metadata``, when present, is an object; any other field is kept as it is.
A part already stored that breaks these rules (stored before they were
checked) is left out when the Task is rendered, with one warning per Task,
so one bad part never makes a Task unreadable.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

from ..stores.base import Task

logger = logging.getLogger("toolnexus_django.lifecycle")

KINDS = ("text", "data", "file")
#: The media type of each part kind a Task's runs read and write: text, and
#: data (an answer to a pending Request comes in as one, the Request goes out
#: as one). File parts are kept, but no run reads them.
KIND_MEDIA_TYPES = {"text": "text/plain", "data": "application/json"}
#: The Agent Card's input and output modes: the media types above.
MEDIA_TYPES = tuple(KIND_MEDIA_TYPES.values())


def part_problem(part: Any) -> str | None:
    """Why ``part`` is not a valid canonical part, or None."""
    if not isinstance(part, dict):
        return "must be an object"
    kind = part.get("kind", "text" if "text" in part else None)
    if "metadata" in part and not isinstance(part["metadata"], dict):
        return "metadata must be an object"
    if kind == "text":
        ok = isinstance(part.get("text"), str)
        return None if ok else "a text part's text must be a string"
    if kind == "data":
        ok = isinstance(part.get("data"), dict)
        return None if ok else "a data part's data must be an object"
    if kind == "file":
        file = part.get("file")
        if not isinstance(file, dict):
            return "a file part's file must be an object"
        if not any(isinstance(file.get(key), str) for key in ("bytes", "uri")):
            return "a file part's file needs bytes or uri (a string)"
        for key in ("bytes", "uri", "mimeType", "name"):
            if key in file and not isinstance(file[key], str):
                return f"a file part's file.{key} must be a string"
        return None
    if kind is None:
        return "a part needs a kind (text, data or file)"
    return f"unknown part kind {str(kind)[:40]!r} (expected text, data or file)"


# -- rendering stored Tasks ------------------------------------------------------

_warned: OrderedDict[str, None] = OrderedDict()
_warned_lock = threading.Lock()
_WARNED_MAX = 1000


def _warn_once(task_id: str, reason: str) -> None:
    with _warned_lock:
        if task_id in _warned:
            return
        _warned[task_id] = None
        if len(_warned) > _WARNED_MAX:
            _warned.popitem(last=False)
    logger.warning("Task %s: a stored part is left out when rendered (%s)", task_id[:100], reason)


def readable(parts: Any, task_id: str) -> list[Any]:
    """The valid parts of a stored list (the list itself when all are)."""
    if not isinstance(parts, list):
        _warn_once(task_id, "parts is not an array")
        return []
    bad = [(i, part_problem(p)) for i, p in enumerate(parts)]
    bad = [(i, reason) for i, reason in bad if reason is not None]
    if not bad:
        return parts
    _warn_once(task_id, bad[0][1] or "")
    skip = {i for i, _ in bad}
    return [p for i, p in enumerate(parts) if i not in skip]


def readable_message(message: Any, task_id: str) -> dict[str, Any] | None:
    """A stored message fit to render (its bad parts left out), or None."""
    if not isinstance(message, dict):
        _warn_once(task_id, "a message is not an object")
        return None
    parts = message.get("parts")
    kept = readable(parts, task_id) if parts is not None else None
    return message if kept is parts else {**message, "parts": kept}


# -- what of a Task anyone may see -------------------------------------------------

PUBLIC_TASK_KEYS = ("id", "contextId", "kind", "status", "artifacts", "history", "metadata")
PUBLIC_STATUS_KEYS = ("state", "message", "timestamp")


def public_status(status: Any, task_id: str) -> dict[str, Any]:
    status = status if isinstance(status, dict) else {}
    out = {k: status[k] for k in PUBLIC_STATUS_KEYS if k in status}
    if "message" in out:
        message = readable_message(out["message"], task_id)
        if message is None:
            del out["message"]
        else:
            out["message"] = message
    return out


def public_artifact(artifact: dict[str, Any], task_id: str) -> dict[str, Any]:
    if artifact.get("parts") is None:
        return artifact
    return {**artifact, "parts": readable(artifact["parts"], task_id)}


def public_task(task: Task) -> Task:
    """The public part of a stored Task, in the canonical shape."""
    out: dict[str, Any] = {k: task[k] for k in PUBLIC_TASK_KEYS if k in task}
    tid = str(task.get("id") or "")
    out["status"] = public_status(task.get("status"), tid)
    if "history" in out:
        history = out["history"] if isinstance(out["history"], list) else []
        out["history"] = [m for m in (readable_message(m, tid) for m in history) if m]
    if "artifacts" in out:
        artifacts = out["artifacts"] if isinstance(out["artifacts"], list) else []
        out["artifacts"] = [public_artifact(a, tid) for a in artifacts if isinstance(a, dict)]
    if "metadata" in out and not isinstance(out["metadata"], dict):
        del out["metadata"]
    out.setdefault("kind", "task")
    return out
