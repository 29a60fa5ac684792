"""How a stream shows a run's live updates (:mod:`..lifecycle.live`), in each dialect.

- The answer as it is written: ``TaskArtifactUpdateEvent``\\ s on one artifact
  id (the one the final answer will have), ``lastChunk: false``. The first
  chunk of each model turn is ``append: false`` — it starts the artifact
  (the official a2a-sdk client drops an append to an artifact it has not
  seen), and a turn that ended in tool calls was not the answer — the rest
  ``append: true``. The run's final event then carries the whole answer,
  ``append: false, lastChunk: true`` (ADK's convention): a client that
  missed a chunk still ends with the right text.
- Each tool call: a ``working`` ``TaskStatusUpdateEvent`` whose message names
  the tool, says where it is (running, ok, error, waiting for a person) and,
  as it starts, its bounded arguments — a text part for people, a data part
  for programs. Never its output.

Chunks read together (a stream catching up after a reconnect) go as one.
Every message's SSE id is ``<seq>.0.<n>``: after event ``seq``'s messages,
before the next event's, in the order of the updates.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from ..lifecycle.live import Update
from ..lifecycle.messages import now_iso, text_part
from ..stores.base import Task
from .dialects import Dialect, artifact_event, status_update

#: What a tool call's status says to a person, by its ``status``.
TOOL_WORDS = {
    "running": "Calling {tool}",
    "ok": "{tool}: done",
    "error": "{tool}: failed",
    "input-required": "{tool}: waiting for a person",
}


def live_id(seq: int, n: int) -> str:
    """The SSE id of the message for update ``n`` of the run that started at event ``seq``."""
    return f"{seq}.0.{n}"


def grouped(updates: Sequence[Update]) -> Iterator[Update]:
    """``updates`` with each run of consecutive chunks of one turn joined
    (the joined chunk has the last one's ``n``)."""
    text: Update | None = None
    for update in updates:
        if "text" in update and text is not None and not update.get("reset"):
            text = {**text, "text": text["text"] + update["text"], "n": update["n"]}
            continue
        if text is not None:
            yield text
            text = None
        if "text" in update:
            text = update
        else:
            yield update
    if text is not None:
        yield text


def chunk_event(task: Task, update: Update, dialect: Dialect) -> dict[str, Any]:
    """A TaskArtifactUpdateEvent carrying one chunk of the answer."""
    artifact = {
        "artifactId": str(update.get("artifact") or ""),
        "name": "result",
        "parts": [text_part(str(update.get("text") or ""))],
    }
    return artifact_event(task, artifact, dialect, append=not update.get("reset"), last=False)


def tool_message(task: Task, update: Update, seq: int) -> dict[str, Any]:
    """The agent's message naming a tool call and where it is."""
    tool, status = str(update.get("tool") or ""), str(update.get("status") or "")
    words = TOOL_WORDS.get(status, "{tool}: " + status).format(tool=tool)
    data: dict[str, Any] = {"tool": tool, "callId": update.get("call") or "", "status": status}
    if "arguments" in update:
        data["arguments"] = update["arguments"]
        shown = update["arguments"]
        words += " " + (shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False))
    return {
        "kind": "message",
        "role": "agent",
        "messageId": f"{task['id']}:{live_id(seq, int(update.get('n') or 0))}",
        "parts": [text_part(words), {"kind": "data", "data": data}],
        "taskId": task["id"],
        "contextId": task.get("contextId"),
    }


def live_messages(
    task: Task, updates: Sequence[Update], dialect: Dialect, seq: int
) -> Iterator[tuple[str, Any]]:
    """(SSE id, result) for each of ``updates`` of the run that started at event ``seq``."""
    for update in grouped(updates):
        n = int(update.get("n") or 0)
        if "text" in update:
            yield live_id(seq, n), chunk_event(task, update, dialect)
        else:
            message = tool_message(task, update, seq)
            status = {"state": "working", "message": message, "timestamp": now_iso()}
            yield live_id(seq, n), status_update(task, status, dialect, final=False)
