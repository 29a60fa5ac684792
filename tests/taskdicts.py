"""Task dicts for the store-level tests: the canonical shape, built by hand.

Stores keep whatever Task they are given; their contract (get/save,
compare-and-set, the terminal guard) is tested on plain dicts in any state,
so these builders skip the lifecycle on purpose (tests of the lifecycle's
moves use ``tests.utils.task_in``)."""

from __future__ import annotations

import copy
import dataclasses
import uuid
from typing import Any

from toolnexus_django.stores.base import PRIVATE_KEY, Task, state_of

__all__ = ["completed", "input_required", "new_task", "state_of", "with_status"]

STAMP = "2026-01-01T00:00:00.000Z"


def _message(role: str, text: str, task: Task) -> dict[str, Any]:
    return {
        "kind": "message",
        "role": role,
        "messageId": str(uuid.uuid4()),
        "parts": [{"kind": "text", "text": text}],
        "taskId": task["id"],
        "contextId": task.get("contextId"),
    }


def new_task(message: dict[str, Any], *, text: str, owner: str | None) -> Task:
    task: Task = {
        "id": str(uuid.uuid4()),
        "contextId": message.get("contextId") or str(uuid.uuid4()),
    }
    task.update({"kind": "task", "status": {"state": "submitted", "timestamp": STAMP}})
    task["history"] = [_message("user", text, task)]
    task[PRIVATE_KEY] = {"owner": owner, "input": {"text": text}}
    return task


def with_status(task: Task, state: str, text: str | None = None) -> Task:
    moved = copy.deepcopy(task)
    moved["status"] = {"state": state, "timestamp": STAMP}
    if text is not None:
        moved["status"]["message"] = _message("agent", text, moved)
    return moved


def completed(task: Task, text: str) -> Task:
    done = with_status(task, "completed")
    done["artifacts"] = [
        {
            "artifactId": str(uuid.uuid4()),
            "name": "result",
            "parts": [{"kind": "text", "text": text}],
        }
    ]
    done.setdefault("history", []).append(_message("agent", text, done))
    for key in ("pending", "transcript", "style", "answer"):  # a finished run needs none
        done.get(PRIVATE_KEY, {}).pop(key, None)
    return done


def input_required(
    task: Task, request: Any, *, transcript: list[dict[str, Any]], style: str
) -> Task:
    req = dataclasses.asdict(request) if dataclasses.is_dataclass(request) else dict(request)
    state = "auth-required" if req.get("kind") == "authorization" else "input-required"
    out = with_status(task, state, str(req.get("prompt") or "Input required"))
    out.setdefault(PRIVATE_KEY, {}).update(
        {"pending": req, "transcript": transcript, "style": style}
    )
    return out
