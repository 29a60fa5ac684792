"""The one reader of toolnexus transcripts, in both shapes it writes.

- ``openai``: ``{"role": "assistant", "tool_calls": [{"id", "function":
  {"name", "arguments"}}]}`` then one ``{"role": "tool", "tool_call_id",
  "content"}`` per call;
- ``anthropic``: an assistant message whose ``content`` holds ``tool_use``
  blocks, then a user message holding ``tool_result`` blocks.

:func:`turns` reads either as role-labelled :class:`Turn` s (what the admin
shows); :func:`find_halt` finds where a suspended run stopped (what the
replay needs, and what tells which tool asked).

Stored transcripts are read whatever they hold: a value nested deeper than
Python's recursive walkers go is read (and shown) without recursion
(:mod:`..jsontree`), and a turn whose calls repeat an id is read by position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..jsontree import copy_json, depth, dumps_shown
from .modelanswer import MAX_ANSWER_NESTING


class TranscriptError(Exception):
    """The transcript does not end where a suspended run stops."""


def pretty_json(value: Any) -> str:
    return dumps_shown(value, indent=2, ensure_ascii=False)


@dataclass
class Call:
    """A tool call: ``args`` as written (parsed JSON, or the raw text when it
    is not JSON); :attr:`arguments` is what a tool is executed with."""

    id: str
    name: str
    args: Any

    @property
    def arguments(self) -> dict[str, Any]:
        return self.args if isinstance(self.args, dict) else {}

    @property
    def args_json(self) -> str:
        return self.args if isinstance(self.args, str) else pretty_json(self.args)

    @property
    def args_inline(self) -> str:
        if isinstance(self.args, str):
            return self.args
        return dumps_shown(self.args, ensure_ascii=False)


@dataclass
class Result:
    call_id: str
    name: str
    content: str
    is_error: bool = False
    halted: bool = False


@dataclass
class Turn:
    """One message of a transcript, whatever its shape."""

    role: str  # system | user | assistant | tool
    texts: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # unknown blocks, as JSON


@dataclass
class Halt:
    """Where a suspended run stopped: the halted call, and the later calls of
    its turn; ``message`` is the index of that turn's assistant message in
    the transcript, ``index`` the halted call's place among its calls."""

    halted: Call
    later: list[Call] = field(default_factory=list)
    message: int = -1
    index: int = -1


def parse_args(raw: Any) -> Any:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw or "{}")
        except (ValueError, RecursionError):  # deeper than this stack parses: as text
            return raw
        # Deeper than any answer read today: as text too, whatever this Python
        # parses (3.11's json gives out near 1,000 levels, 3.13's far deeper).
        return raw if depth(parsed, MAX_ANSWER_NESTING) > MAX_ANSWER_NESTING else parsed
    return raw if raw is not None else {}


def _content_text(content: Any) -> tuple[list[str], list[str]]:
    """(texts, other blocks as JSON) of a message content: a string or a list."""
    if content is None:
        return [], []
    if isinstance(content, str):
        return ([content] if content else []), []
    if not isinstance(content, list):
        return [], [pretty_json(content)]
    texts: list[str] = []
    other: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif isinstance(part, str):
            texts.append(part)
        else:
            other.append(pretty_json(part))
    return texts, other


def _openai_turns(messages: list[Any]) -> list[Turn]:
    names: dict[str, str] = {}
    out: list[Turn] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "?")
        texts, other = _content_text(message.get("content"))
        if role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            name = names.get(call_id, str(message.get("name") or ""))
            out.append(Turn("tool", results=[Result(call_id, name, "\n".join(texts))], other=other))
            continue
        turn = Turn(role, texts=texts, other=other)
        for raw in message.get("tool_calls") or ():
            if not isinstance(raw, dict):
                continue
            function = raw.get("function") or {}
            call = Call(
                str(raw.get("id") or ""),
                str(function.get("name") or "?"),
                parse_args(function.get("arguments")),
            )
            names[call.id] = call.name
            turn.calls.append(call)
        out.append(turn)
    return out


def _anthropic_turns(messages: list[Any]) -> list[Turn]:
    names: dict[str, str] = {}
    out: list[Turn] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "?")
        content = message.get("content")
        if not isinstance(content, list):
            texts, other = _content_text(content)
            out.append(Turn(role, texts=texts, other=other))
            continue
        turn = Turn(role)
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                turn.texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                call = Call(
                    str(block.get("id") or ""),
                    str(block.get("name") or "?"),
                    parse_args(block.get("input")),
                )
                names[call.id] = call.name
                turn.calls.append(call)
            elif kind == "tool_result":
                call_id = str(block.get("tool_use_id") or "")
                texts, other = _content_text(block.get("content"))
                turn.results.append(
                    Result(
                        call_id,
                        names.get(call_id, ""),
                        "\n".join(texts + other),
                        is_error=bool(block.get("is_error")),
                    )
                )
            else:
                turn.other.append(pretty_json(block))
        if turn.results and not (turn.texts or turn.calls or turn.other):
            turn.role = "tool"  # a user message that only carries tool results
        out.append(turn)
    return out


def turns(messages: Any, style: str) -> list[Turn]:
    """A transcript as role-labelled turns; the last tool result (where a
    suspended run stopped) is marked ``halted``."""
    if not isinstance(messages, list):
        return []
    out = _anthropic_turns(messages) if style == "anthropic" else _openai_turns(messages)
    for turn in reversed(out):
        if turn.results:
            turn.results[-1].halted = True
            break
    return out


def _ends_on_results(messages: list[Any], style: str) -> None:
    last = messages[-1] if messages else None
    if not isinstance(last, dict):
        raise TranscriptError("the transcript does not end on a tool result")
    if style == "anthropic":
        content = last.get("content")
        if (
            last.get("role") != "user"
            or not isinstance(content, list)
            or not content
            or not isinstance(content[-1], dict)
            or content[-1].get("type") != "tool_result"
        ):
            raise TranscriptError("the transcript does not end on a tool_result block")
    elif last.get("role") != "tool":
        raise TranscriptError("the transcript does not end on a tool result")


def _calls_message(messages: list[Any], style: str) -> int:
    """The index of the assistant message whose calls the transcript's last
    tool results answer (they follow it directly, as toolnexus writes them)."""
    at = len(messages) - 1
    if style != "anthropic":
        while at >= 0 and isinstance(messages[at], dict) and messages[at].get("role") == "tool":
            at -= 1
    else:
        at -= 1
    if at < 0 or not isinstance(messages[at], dict) or messages[at].get("role") != "assistant":
        raise TranscriptError("the tool results do not follow an assistant turn calling tools")
    return at


def find_halt(messages: Any, style: str) -> Halt:
    """The halted call of a suspended transcript and the calls its turn made
    after it. toolnexus records a turn's results in the order of its calls
    and stops at the first halt, so the halted call is the one in the place
    of the last result — by position, not by id: a turn whose calls share an
    id (refused from a model since, but maybe stored) still names the call
    that stopped the run, never another with its id."""
    if not isinstance(messages, list):
        raise TranscriptError("the transcript is not a list of messages")
    _ends_on_results(messages, style)
    at = _calls_message(messages, style)
    read = turns(messages[at:], style)
    calls = read[0].calls
    results = [r for turn in read[1:] for r in turn.results]
    if not calls:
        raise TranscriptError("the transcript has no assistant turn calling tools")
    if len(results) > len(calls) or any(
        r.call_id != c.id for r, c in zip(results, calls, strict=False)
    ):
        raise TranscriptError("the tool results do not answer the calls of the last assistant turn")
    index = len(results) - 1
    return Halt(calls[index], calls[index + 1 :], message=at, index=index)


def halted_tool(messages: Any, style: str) -> str | None:
    """The name of the tool whose Request stopped the run (None if unreadable)."""
    try:
        return find_halt(messages, style).halted.name
    except TranscriptError:
        return None


#: The toolnexus tool that loads a SKILL.md skill (its ``name`` argument).
SKILL_TOOL = "skill"


def last_skill(messages: Any, style: str) -> str | None:
    """The skill the run loaded last (its call of toolnexus's ``skill`` tool)."""
    for turn in reversed(turns(messages, style)):
        for call in reversed(turn.calls):
            if call.name == SKILL_TOOL and isinstance(call.arguments.get("name"), str):
                return str(call.arguments["name"])
    return None


def with_arguments(messages: Any, style: str, halt: Halt, arguments: dict[str, Any]) -> Any:
    """A copy of ``messages`` in which the halted call (``halt``, as
    :func:`find_halt` found it in ``messages``) has ``arguments`` (a
    reviewer's edit): the resumed run executes them, and the model reads the
    call it made as the one that ran."""
    out = copy_json(messages)
    message = out[halt.message] if isinstance(out, list) and 0 <= halt.message < len(out) else {}
    if style == "anthropic":
        content = message.get("content") if isinstance(message, dict) else None
        calls = [b for b in content or () if isinstance(b, dict) and b.get("type") == "tool_use"]
    else:
        found = message.get("tool_calls") if isinstance(message, dict) else None
        calls = [c for c in found or () if isinstance(c, dict)]
    call = calls[halt.index] if 0 <= halt.index < len(calls) else None
    if call is None or str(call.get("id") or "") != halt.halted.id:
        raise TranscriptError(f"the halted call {halt.halted.id!r} is not where it was found")
    if style == "anthropic":
        call["input"] = copy_json(arguments)
    else:
        function = call.get("function")
        if not isinstance(function, dict):
            function = call["function"] = {}
        function["arguments"] = json.dumps(arguments, ensure_ascii=False)
    return out
