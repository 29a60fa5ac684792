"""The one reader of toolnexus transcripts, in both shapes it writes.

- ``openai``: ``{"role": "assistant", "tool_calls": [{"id", "function":
  {"name", "arguments"}}]}`` then one ``{"role": "tool", "tool_call_id",
  "content"}`` per call;
- ``anthropic``: an assistant message whose ``content`` holds ``tool_use``
  blocks, then a user message holding ``tool_result`` blocks.

:func:`turns` reads either as role-labelled :class:`Turn` s (what the admin
shows); :func:`find_halt` finds where a suspended run stopped (what the
replay needs, and what tells which tool asked).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any


class TranscriptError(Exception):
    """The transcript does not end where a suspended run stops."""


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


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
        return json.dumps(self.args, ensure_ascii=False, default=str)


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
    """Where a suspended run stopped: the halted call, and the later calls of its turn."""

    halted: Call
    later: list[Call] = field(default_factory=list)


def parse_args(raw: Any) -> Any:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            return json.loads(raw or "{}")
        except ValueError:
            return raw
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


def find_halt(messages: Any, style: str) -> Halt:
    """The halted call of a suspended transcript (the call of its last tool
    result, in the last assistant turn that made calls) and the calls that
    turn made after it."""
    if not isinstance(messages, list):
        raise TranscriptError("the transcript is not a list of messages")
    _ends_on_results(messages, style)
    read = turns(messages, style)
    halted_id = read[-1].results[-1].call_id
    for turn in reversed(read[:-1]):
        if turn.calls:
            ids = [c.id for c in turn.calls]
            if halted_id not in ids:
                raise TranscriptError("the halted tool call is not in the last assistant turn")
            index = ids.index(halted_id)
            return Halt(turn.calls[index], turn.calls[index + 1 :])
    raise TranscriptError("the transcript has no assistant turn calling tools")


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


def with_arguments(messages: Any, style: str, call_id: str, arguments: dict[str, Any]) -> Any:
    """A copy of ``messages`` in which the tool call ``call_id`` has
    ``arguments`` (a reviewer's edit): the resumed run executes them, and the
    model reads the call it made as the one that ran."""
    out = copy.deepcopy(messages)
    for message in out if isinstance(out, list) else ():
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if style == "anthropic":
            for block in message.get("content") or ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    if block.get("id") == call_id:
                        block["input"] = copy.deepcopy(arguments)
                        return out
        else:
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and call.get("id") == call_id:
                    function = call.setdefault("function", {})
                    function["arguments"] = json.dumps(arguments, ensure_ascii=False)
                    return out
    raise TranscriptError(f"the transcript has no tool call {call_id!r}")
