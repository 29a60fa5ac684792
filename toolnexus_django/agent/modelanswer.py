"""A model's answer as this app hands it to toolnexus: read, checked for the
shape toolnexus reads without checking, or refused in words.

A :class:`ModelAnswerError`'s message says what is wrong (it becomes the failed
Task's status message; the bytes that were wrong go to the log only).
"""

from __future__ import annotations

import json
from typing import Any


class ModelAnswerError(Exception):
    """A model's answer this app does not hand to toolnexus; ``str()`` says
    what is wrong, in words fit for the Task's public status message."""


class ModelAnswerTooLarge(ModelAnswerError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"The model's answer was larger than {limit} bytes")
        self.limit = limit


class ModelAnswerUnreadable(ModelAnswerError):
    def __init__(self, why: str) -> None:
        super().__init__(f"The model's answer could not be read ({why})")
        self.why = why


def parse_answer(body: bytes, style: str) -> dict[str, Any]:
    """The model's answer as toolnexus reads it, or :class:`ModelAnswerUnreadable`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelAnswerUnreadable("it is not UTF-8 text") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ModelAnswerUnreadable("it is not JSON") from exc
    problem = (
        _anthropic_problem(data) if style == "anthropic" else _openai_problem(data)
    ) if isinstance(data, dict) else "it is not a JSON object"  # fmt: skip
    if problem:
        raise ModelAnswerUnreadable(problem)
    return data


# What toolnexus 0.21's client reads from an answer without checking (its
# _run_openai / _run_anthropic and _add_usage): anything else there raised a
# TypeError, KeyError or AttributeError inside its loop.


def _usage_problem(usage: Any, keys: tuple[str, ...]) -> str | None:
    if usage is None:
        return None
    if not isinstance(usage, dict) or not all(
        isinstance(usage.get(k), int | float | None) and not isinstance(usage.get(k), bool)
        for k in keys
    ):
        return "its usage is not token counts"
    return None


def _openai_problem(data: dict[str, Any]) -> str | None:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "it has no choices"
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return "its first choice has no message"
    if not isinstance(message.get("content"), str | None):
        return "its message's content is not text"
    calls = message.get("tool_calls")
    if calls is not None and not (
        isinstance(calls, list)
        and all(
            isinstance(c, dict)
            and "id" in c
            and isinstance(c.get("function"), dict)
            and isinstance(c["function"].get("name"), str)
            for c in calls
        )
    ):
        return "its tool calls are malformed"
    return _usage_problem(data.get("usage"), ("prompt_tokens", "completion_tokens", "total_tokens"))


def _anthropic_problem(data: dict[str, Any]) -> str | None:
    content = data.get("content")
    if content is not None and not (
        isinstance(content, list) and all(isinstance(b, dict) for b in content)
    ):
        return "its content is not a list of blocks"
    for block in content or ():
        if block.get("type") == "text" and not isinstance(block.get("text", ""), str):
            return "a text block holds no text"
        if block.get("type") == "tool_use" and not (
            isinstance(block.get("name"), str)
            and "id" in block
            and isinstance(block.get("input"), dict | None)
        ):
            return "its tool calls are malformed"
    return _usage_problem(data.get("usage"), ("input_tokens", "output_tokens"))
