"""Bounds on what a Task and a conversation store (pure functions).

A model may answer with megabytes, a tool may return them, and a long
conversation grows with every turn; what is stored is read back on every
GetTask, stream event and next turn. So:

- text longer than ``MAX_OUTPUT_CHARS`` is cut, with a visible marker saying
  how much was left out (:func:`cut_text`);
- a Task keeps its last ``MAX_HISTORY_MESSAGES`` messages (:func:`bound_history`);
- a remembered transcript keeps its system prompt and its last
  ``MAX_MEMORY_MESSAGES`` messages from a user turn on, each message's text
  cut the same way (:func:`bound_transcript`).
"""

from __future__ import annotations

from typing import Any

Messages = list[dict[str, Any]]


def cut_marker(total: int, kept: int) -> str:
    return f"\n\n[output truncated: {total:,} characters, the first {kept:,} are kept]"


def cut_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters; otherwise its first
    ``limit`` characters and the marker."""
    if len(text) <= limit:
        return text
    return text[:limit] + cut_marker(len(text), limit)


def bound_history(history: list[Any], limit: int) -> list[Any]:
    """The last ``limit`` messages of a Task's history."""
    return history if len(history) <= limit else history[-limit:]


def _cut_content(content: Any, limit: int) -> Any:
    if isinstance(content, str):
        return cut_text(content, limit)
    if isinstance(content, list):
        return [_cut_block(block, limit) for block in content]
    return content


def _cut_block(block: Any, limit: int) -> Any:
    if not isinstance(block, dict):
        return block
    out = block
    for key in ("text", "content"):  # text blocks; tool_result blocks
        value = block.get(key)
        cut = _cut_content(value, limit) if isinstance(value, (str, list)) else value
        if cut is not value and cut != value:
            out = {**out, key: cut}
    return out


def _is_user_turn(message: dict[str, Any]) -> bool:
    """A message that starts a turn: a user message that is not only tool
    results (anthropic carries those in user messages)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return True


def bound_transcript(messages: Messages, *, max_messages: int, max_chars: int) -> Messages:
    """A transcript fit to remember: leading system messages kept, then at
    most ``max_messages`` messages that start at a user turn (a tool result
    without its call would be refused by the model), each text cut."""
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    body = messages[head:]
    if len(body) > max_messages:
        tail = body[len(body) - max_messages :]
        start = next((i for i, m in enumerate(tail) if _is_user_turn(m)), len(tail))
        body = tail[start:]
    return [
        {**m, "content": _cut_content(m["content"], max_chars)} if "content" in m else m
        for m in (*messages[:head], *body)
    ]
