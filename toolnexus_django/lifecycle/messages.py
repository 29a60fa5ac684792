"""The messages and parts a Task holds, in the canonical (toolnexus / A2A
v0.3) shape; the wire converts them at the edge."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from ..stores.base import Task


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


def answer_data(message: dict[str, Any]) -> dict[str, Any]:
    """The Answer data a continuing message carries: its data parts merged,
    else its text as ``{"output": text}`` (toolnexus's ``answer_output`` key)."""
    data: dict[str, Any] = {}
    found = False
    for part in message.get("parts") or ():
        if (
            isinstance(part, dict)
            and part.get("kind") == "data"
            and isinstance(part.get("data"), dict)
        ):
            data.update(part["data"])
            found = True
    return data if found else {"output": message_text(message)}


def has_answer(message: dict[str, Any]) -> bool:
    """Whether a continuing message carries anything to answer with."""
    parts = message.get("parts") or ()
    return any(isinstance(p, dict) and p.get("kind") == "data" for p in parts) or bool(
        message_text(message).strip()
    )


def message_key(owner: str | None, message_id: Any) -> str | None:
    """Who sent which ``messageId``: the key a repeated send is recognised by
    (idempotent sends). The same messageId from two owners is two keys; a
    message without a messageId has none."""
    from urllib.parse import quote

    if not isinstance(message_id, str) or not message_id:
        return None
    tag = "-" if owner in (None, "") else "u:" + quote(str(owner), safe="")
    return f"{tag}/{message_id}"
