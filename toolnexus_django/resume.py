"""Durable resume: continue a suspended run from its transcript (SPEC §10).

A run that halted on a tool's pending ``Request`` left a transcript ending in
that tool's placeholder result. Given the ``Answer`` (which must echo the
Request's id):

1. the halted tool is re-executed once with ``ToolContext(answer=...)`` when
   ``ok``, or given a declined result when not;
2. the calls the same assistant turn made after it get their results;
3. the loop continues from the transcript — no new user turn, and the turns
   before the halt are not sent again as new work.

toolnexus 0.21 has no public "resume with an answer" on the client: ``run``
always appends a user turn. The workaround here: a ``before_llm`` hook that
replaces the first turn's messages with the completed transcript, on a
shallow copy of the process's client (hooks live on the client, which
concurrent runs share). Both transcript shapes — ``openai`` (tool messages)
and ``anthropic`` (tool_result blocks in a user message) — are handled.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import toolnexus
from toolnexus import Answer, Request, ToolContext, ToolResult, pending_of

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")


class ResumeError(Exception):
    """The transcript or the answer cannot be resumed (nothing changes)."""


@dataclass
class Call:
    id: str
    name: str
    args: dict[str, Any]


@dataclass
class Halt:
    """Where the run stopped: the halted call, and the later calls of its turn."""

    halted: Call
    later: list[Call] = field(default_factory=list)


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def find_halt(messages: list[dict[str, Any]], style: str) -> Halt:
    """Locate the halted call in a suspended transcript."""
    if style == "anthropic":
        return _find_halt_anthropic(messages)
    return _find_halt_openai(messages)


def _find_halt_openai(messages: list[dict[str, Any]]) -> Halt:
    # [..., assistant{tool_calls: [c1, c2, c3]}, tool(c1), tool(c2 = placeholder)]
    if not messages or messages[-1].get("role") != "tool":
        raise ResumeError("the transcript does not end on a tool result")
    halted_id = messages[-1].get("tool_call_id")
    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            calls = [
                Call(c["id"], c["function"]["name"], _args(c["function"].get("arguments")))
                for c in message["tool_calls"]
            ]
            break
    else:
        raise ResumeError("the transcript has no assistant turn calling tools")
    index = next((i for i, c in enumerate(calls) if c.id == halted_id), None)
    if index is None:
        raise ResumeError("the halted tool call is not in the last assistant turn")
    return Halt(calls[index], calls[index + 1 :])


def _find_halt_anthropic(messages: list[dict[str, Any]]) -> Halt:
    # [..., assistant{content: [tool_use u1, u2, u3]}, user{content: [result u1, result u2]}]
    if len(messages) < 2 or messages[-1].get("role") != "user":
        raise ResumeError("the transcript does not end on tool results")
    results = messages[-1].get("content")
    if not isinstance(results, list) or not results or results[-1].get("type") != "tool_result":
        raise ResumeError("the transcript does not end on a tool_result block")
    halted_id = results[-1].get("tool_use_id")
    assistant = messages[-2]
    uses = [
        Call(b["id"], b["name"], _args(b.get("input")))
        for b in assistant.get("content") or ()
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    index = next((i for i, c in enumerate(uses) if c.id == halted_id), None)
    if index is None:
        raise ResumeError("the halted tool_use is not in the last assistant turn")
    return Halt(uses[index], uses[index + 1 :])


def _result_entry(style: str, call: Call, result: ToolResult) -> dict[str, Any]:
    """A tool result in the transcript's own shape (as toolnexus writes it)."""
    if style == "anthropic":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": call.id,
            "content": result.output,
            "is_error": result.is_error,
        }
        if result.parts:
            block["parts"] = list(result.parts)
        return block
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id, "content": result.output}
    if result.parts:
        message["parts"] = list(result.parts)
        message["name"] = call.name
    return message


def _replace_last(messages: list[dict[str, Any]], style: str, entry: dict[str, Any]) -> None:
    if style == "anthropic":
        messages[-1]["content"][-1] = entry
    else:
        messages[-1] = entry


def _append(messages: list[dict[str, Any]], style: str, entry: dict[str, Any]) -> None:
    if style == "anthropic":
        messages[-1]["content"].append(entry)
    else:
        messages.append(entry)


def declined_result(request: Request, answer: Answer) -> ToolResult:
    """What the model sees when the person said no (or the Request expired)."""
    return ToolResult(output=f"{answer.reason or 'declined'}: {request.prompt}", is_error=True)


def _hooks_as_dict(hooks: Any) -> dict[str, Any]:
    if hooks is None:
        return {}
    if isinstance(hooks, Mapping):
        return dict(hooks)
    return {
        name: getattr(hooks, name) for name in HOOK_NAMES if callable(getattr(hooks, name, None))
    }


def _continuing_client(client: toolnexus.Client, messages: list[dict[str, Any]]) -> Any:
    """A shallow copy of ``client`` whose first turn sends ``messages`` as they are."""
    hooks = _hooks_as_dict(client.hooks)
    original_before = hooks.get("before_llm")

    async def before_llm(ev: dict[str, Any]) -> dict[str, Any] | None:
        override: dict[str, Any] | None = None
        if ev.get("turn") == 0:
            override = {"messages": messages}
            ev = {**ev, "messages": messages}
        if original_before is not None:
            theirs = original_before(ev)
            if hasattr(theirs, "__await__"):
                theirs = await theirs
            if theirs:
                override = {**(override or {}), **theirs}
        return override

    resumed = copy.copy(client)
    resumed.hooks = {**hooks, "before_llm": before_llm}
    return resumed


def _suspended(
    messages: list[dict[str, Any]], request: Request, template: Any
) -> toolnexus.RunResult:
    return toolnexus.RunResult(
        text=request.prompt,
        messages=messages,
        model=getattr(template, "model", "") or "",
        status="pending",
        pending=request,
    )


async def continue_run(
    client: toolnexus.Client,
    toolkit: toolnexus.Toolkit,
    *,
    transcript: list[dict[str, Any]],
    style: str,
    request: Request,
    answer: Answer,
    handle: Any = None,
) -> toolnexus.RunResult:
    """Resume a suspended run with ``answer``; returns the new ``RunResult``
    (done, pending again, or incomplete). Runs on the runtime's loop."""
    if answer.id != request.id:
        raise ResumeError(f"the answer is for {answer.id!r}, not the pending {request.id!r}")
    messages = copy.deepcopy(transcript)
    halt = find_halt(messages, style)

    if answer.ok:
        result = await toolkit.execute(
            halt.halted.name, halt.halted.args, ToolContext(answer=answer)
        )
        again = pending_of(result)
        if again is not None and again.id != request.id:
            # A second, different suspension: the Task waits again, on it.
            _replace_last(messages, style, _result_entry(style, halt.halted, _placeholder(again)))
            return _suspended(messages, again, client)
        if again is not None:
            # The same request again: never loop on it (as toolnexus's wait_for path does).
            result = ToolResult(output=f"unresolved: {request.prompt}", is_error=True)
    else:
        result = declined_result(request, answer)
    _replace_last(messages, style, _result_entry(style, halt.halted, result))

    for call in halt.later:
        later = await toolkit.execute(call.name, call.args)
        suspension = pending_of(later)
        if suspension is not None:
            _append(messages, style, _result_entry(style, call, _placeholder(suspension)))
            return _suspended(messages, suspension, client)
        _append(messages, style, _result_entry(style, call, later))

    # The prompt is never sent: the first turn's messages are replaced.
    cancel = handle.token() if handle is not None else None
    return await _continuing_client(client, messages).run("", toolkit, cancel=cancel)


def _placeholder(request: Request) -> ToolResult:
    # What toolnexus itself records in the slot of a halted call.
    return ToolResult(output=request.prompt, is_error=True)
