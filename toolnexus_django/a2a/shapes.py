"""Canonical Task shapes (toolnexus / A2A v0.3): how a Task is built and moved
from state to state. Stores keep exactly this; dialects convert at the edge."""

from __future__ import annotations

import copy
import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

from ..bounds import bound_history, bound_transcript, cut_text
from ..conf import toolnexus_settings
from ..stores.base import AWAITING_HUMAN_STATES, PRIVATE_KEY, TERMINAL_STATES, Task

TERMINAL = TERMINAL_STATES
AWAITING_HUMAN = AWAITING_HUMAN_STATES
#: Keys of the private section that only matter while a run is suspended.
SUSPENSION_KEYS = ("pending", "transcript", "style", "answer", "resuming")


def now_iso() -> str:
    """RFC 3339 UTC timestamp with milliseconds and a zone (``...Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    return str(uuid.uuid4())


def text_part(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def agent_message(
    text: str, *, task: Task, extra_parts: tuple[dict[str, Any], ...] = ()
) -> dict[str, Any]:
    return {
        "kind": "message",
        "role": "agent",
        "messageId": new_id(),
        "parts": [text_part(text), *extra_parts],
        "taskId": task["id"],
        "contextId": task.get("contextId"),
    }


def max_output_chars() -> int:
    return int(toolnexus_settings.MAX_OUTPUT_CHARS)


def append_history(task: Task, *messages: dict[str, Any]) -> None:
    """Add ``messages`` to the Task's history, keeping its last
    MAX_HISTORY_MESSAGES (in place)."""
    history = [*(task.get("history") or ()), *messages]
    task["history"] = bound_history(history, int(toolnexus_settings.MAX_HISTORY_MESSAGES))


def message_text(message: dict[str, Any]) -> str:
    """The text of a message: its text parts joined by newlines. Parts with
    ``kind: "text"`` (toolnexus, v0.3) and kind-less ``{"text": ...}`` parts
    (v1.0) both count."""
    texts = []
    for part in message.get("parts") or ():
        if not isinstance(part, dict):
            continue
        if part.get("kind", "text") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def private(task: Task) -> dict[str, Any]:
    """The server-side section of ``task`` (created if missing)."""
    return task.setdefault(PRIVATE_KEY, {})


def owner_of(task: Task) -> str | None:
    owner = (task.get(PRIVATE_KEY) or {}).get("owner")
    return None if owner is None else str(owner)


def state_of(task: Task | None) -> str:
    return str(((task or {}).get("status") or {}).get("state") or "")


def user_message(message: dict[str, Any], *, task: Task) -> dict[str, Any]:
    """An incoming user message as the Task's history keeps it."""
    return {
        "kind": "message",
        "role": "user",
        "messageId": str(message.get("messageId") or new_id())[:255],
        "parts": [p for p in message.get("parts") or () if isinstance(p, dict)],
        "taskId": task["id"],
        "contextId": task.get("contextId"),
    }


def new_task(message: dict[str, Any], *, text: str, owner: str | None) -> Task:
    """A ``submitted`` Task for an incoming user message."""
    tid = new_id()
    context_id = message.get("contextId")
    if not isinstance(context_id, str) or not context_id:
        context_id = new_id()
    first = user_message(message, task={"id": tid, "contextId": context_id})
    return {
        "id": tid,
        "contextId": context_id,
        "kind": "task",
        "status": {"state": "submitted", "timestamp": now_iso()},
        "history": [first],
        PRIVATE_KEY: {"owner": owner, "input": {"text": text}},
    }


def with_status(
    task: Task,
    state: str,
    text: str | None = None,
    *,
    extra_parts: tuple[dict[str, Any], ...] = (),
) -> Task:
    """A copy of ``task`` in ``state`` (with an agent status message if ``text``)."""
    moved = copy.deepcopy(task)
    status: dict[str, Any] = {"state": state, "timestamp": now_iso()}
    if text is not None:
        status["message"] = agent_message(text, task=moved, extra_parts=extra_parts)
    moved["status"] = status
    return moved


def completed(task: Task, text: str) -> Task:
    """Done with the run's final ``text`` (cut at MAX_OUTPUT_CHARS)."""
    text = cut_text(text, max_output_chars())
    done = with_status(task, "completed")
    done["artifacts"] = [{"artifactId": new_id(), "name": "result", "parts": [text_part(text)]}]
    append_history(done, agent_message(text, task=done))
    for key in SUSPENSION_KEYS:
        private(done).pop(key, None)
    return done


#: The longest failure reason kept (a provider's error page can be huge).
MAX_REASON_CHARS = 2000


def failed(task: Task, reason: str) -> Task:
    reason = cut_text(reason, MAX_REASON_CHARS)
    out = with_status(task, "failed", reason)
    private(out)["error"] = reason
    for key in ("answer", "resuming"):
        private(out).pop(key, None)
    return out


def add_event(task: Task, event: dict[str, Any]) -> None:
    """Append to the Task's audit trail (who did what, when, from which state)."""
    private(task).setdefault("audit", []).append({"at": now_iso(), **event})


#: Said on the wire while a Request waits for a reviewer (the requester may not answer).
REVIEWER_NOTE = "A reviewer must answer this request; the task waits until one does."


def request_part(req: dict[str, Any], answerers: tuple[str, ...]) -> dict[str, Any]:
    """What the requester may know of a pending Request, as a data part of
    the status message: its kind, who may answer it, the schema an answer
    must satisfy and when it expires — never its id or its other data."""
    public: dict[str, Any] = {"kind": req.get("kind") or "input", "answeredBy": list(answerers)}
    data = req.get("data")
    if isinstance(data, dict) and data.get("schema") is not None:
        public["schema"] = data["schema"]
    if req.get("expiresAt"):
        public["expiresAt"] = req["expiresAt"]
    return {"kind": "data", "data": {"request": public}}


def input_required(
    task: Task,
    request: Any,
    *,
    transcript: list[dict[str, Any]],
    style: str,
    answerers: tuple[str, ...] = ("reviewer",),
) -> Task:
    """Suspended on a toolnexus pending ``Request``: the prompt (and, with
    :func:`request_part`, what an answer must look like) goes on the wire;
    the Request and the transcript needed to resume stay server-side. A
    Request of kind ``authorization`` puts the Task in ``auth-required``."""
    if dataclasses.is_dataclass(request) and not isinstance(request, type):
        req = dataclasses.asdict(request)
    else:
        req = dict(request)
    state = "auth-required" if req.get("kind") == "authorization" else "input-required"
    prompt = cut_text(str(req.get("prompt") or "Input required"), max_output_chars())
    extra = (text_part(REVIEWER_NOTE),) if "requester" not in answerers else ()
    out = with_status(task, state, prompt, extra_parts=(*extra, request_part(req, answerers)))
    section = private(out)
    for key in ("answer", "resuming"):
        section.pop(key, None)
    section["pending"] = req
    # Each message's text bounded; never trimmed in count (resume needs the halt).
    section["transcript"] = bound_transcript(
        transcript, max_messages=len(transcript), max_chars=max_output_chars()
    )
    section["style"] = style
    return out
