"""A model's answer as this app hands it to toolnexus: read, checked for the
shape toolnexus reads without checking, or refused in words.

A :class:`ModelAnswerError`'s message says what is wrong (it becomes the failed
Task's status message; the bytes that were wrong go to the log only).

What a model sends is also bounded here, where it is read, because every later
step keeps it: the transcript a suspended run resumes from, the Request a
reviewer answers, the prompt made of the call's arguments. An answer is
refused when it nests deeper than :data:`MAX_ANSWER_NESTING` or a tool call's
arguments deeper than :data:`MAX_ARGUMENT_NESTING`, when a number in it has
more than :data:`MAX_INTEGER_DIGITS` digits or is not a finite double, and when
two tool calls of its turn share an id.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..jsontree import depth

#: How deep a tool call's arguments may nest (the arguments object is level
#: 1). Real tools take a few levels; 32 leaves room for any schema a tool
#: declares and stays far under what broke: ``copy.deepcopy`` of a stored
#: Task overflowed at about 500 levels (fewer inside a request), ``json`` at
#: about 990, and schema checks and pages recurse over what is stored.
MAX_ARGUMENT_NESTING = 32

#: How deep the answer as a whole may nest: the envelope around a call's
#: arguments takes a few levels; the same bound as a request's body
#: (``a2a.jsonrpc.MAX_NESTING``). Anything nested ends up in the transcript.
MAX_ANSWER_NESTING = 64

#: The most digits an integer may have: a 64-bit integer has at most 20; past
#: them no tool means a count or an amount, and float() fails at 309 (a
#: 401-digit amount failed the run in the approval prompt's ``{amount:.2f}``).
MAX_INTEGER_DIGITS = 20


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


class _Unbounded(Exception):
    """A value past a bound, met while parsing (not a ValueError: JSON it is)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


TOO_DEEP = f"it is nested deeper than {MAX_ANSWER_NESTING} levels"
ARGUMENTS_TOO_DEEP = f"a tool call's arguments are nested deeper than {MAX_ARGUMENT_NESTING} levels"
TOO_MANY_DIGITS = f"a number in it has more than {MAX_INTEGER_DIGITS} digits"
NOT_FINITE = "a number in it is NaN, Infinity or too large for a double"


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _Unbounded(TOO_MANY_DIGITS)
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unbounded(NOT_FINITE)
    return value


def _constant(text: str) -> Any:
    raise _Unbounded(NOT_FINITE)


def _loads(text: str) -> Any:
    """``json.loads`` as toolnexus calls it, refusing numbers past the bounds;
    ValueError for what is not JSON."""
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:  # JSON, only deeper than this stack parses
        raise _Unbounded(TOO_DEEP) from None


def parse_answer(body: bytes, style: str) -> dict[str, Any]:
    """The model's answer as toolnexus reads it, or :class:`ModelAnswerUnreadable`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelAnswerUnreadable("it is not UTF-8 text") from exc
    try:
        data = _loads(text)
    except _Unbounded as exc:
        raise ModelAnswerUnreadable(exc.why) from None
    except ValueError as exc:
        raise ModelAnswerUnreadable("it is not JSON") from exc
    problem = (
        _anthropic_problem(data) if style == "anthropic" else _openai_problem(data)
    ) if isinstance(data, dict) else "it is not a JSON object"  # fmt: skip
    problem = problem or _bounds_problem(data, style)
    if problem:
        raise ModelAnswerUnreadable(problem)
    return data


def _calls(data: dict[str, Any], style: str) -> list[tuple[Any, Any]]:
    """(id, arguments as toolnexus parses them) of each tool call of the
    answer's turn (an answer whose shape was checked)."""
    if style == "anthropic":
        blocks = data.get("content") or ()
        return [(b.get("id"), b.get("input")) for b in blocks if b.get("type") == "tool_use"]
    calls = data["choices"][0]["message"].get("tool_calls") or ()
    return [(c.get("id"), c["function"].get("arguments")) for c in calls]


def _arguments(raw: Any) -> Any:
    """A call's arguments as toolnexus's ``_safe_json`` reads them: a dict
    as is, a string parsed (text that is not JSON is ``{}`` there)."""
    if not isinstance(raw, str):
        return raw
    try:
        return _loads(raw or "{}")
    except ValueError:
        return {}


def _bounds_problem(data: dict[str, Any], style: str) -> str | None:
    """What is past a bound in an answer of the right shape, or None (its
    calls first: anthropic's arguments are inside the answer, and the words
    should name them)."""
    seen: set[str] = set()
    for call_id, raw in _calls(data, style):
        # The transcript reader's reading of an id (agent/transcript.py).
        key = str(call_id or "")
        if key in seen:
            shown = key if len(key) <= 40 else key[:39] + "…"
            return f"two tool calls share the id '{shown}'"
        seen.add(key)
        try:
            arguments = _arguments(raw)
        except _Unbounded as exc:
            return ARGUMENTS_TOO_DEEP if exc.why == TOO_DEEP else exc.why
        if depth(arguments, MAX_ARGUMENT_NESTING) > MAX_ARGUMENT_NESTING:
            return ARGUMENTS_TOO_DEEP
    if depth(data, MAX_ANSWER_NESTING) > MAX_ANSWER_NESTING:
        return TOO_DEEP
    return None


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
