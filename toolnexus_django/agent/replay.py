"""Replay: continue a suspended run from its transcript (SPEC §10 "Durable
resume"), once it is answered.

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
from typing import Any

import toolnexus
from toolnexus import Answer, Request, ToolContext, ToolResult, pending_of

from ..jsontree import copy_json
from ..observability import genai, metrics
from ..tools.context import CallIdentity, answered_call, calling
from .hooks import hooks_as_dict
from .streaming import OnEvent, streamed_run
from .transcript import Call, Halt, TranscriptError, find_halt


class ResumeError(Exception):
    """The answer cannot be resumed (nothing changes)."""


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


def _continuing_client(client: toolnexus.Client, messages: list[dict[str, Any]]) -> Any:
    """A shallow copy of ``client`` whose first turn sends ``messages`` as they are."""
    hooks = hooks_as_dict(client.hooks)
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
    on_event: OnEvent | None = None,
) -> toolnexus.RunResult:
    """Resume a suspended run with ``answer``; returns the new ``RunResult``
    (done, pending again, or incomplete). Runs on the runtime's loop;
    ``on_event``: it streams (:mod:`.streaming`), the calls it makes itself
    (the answered one, the later ones of its turn) told as toolnexus tells
    its own (``tool_call``, ``tool_result``)."""
    tell = on_event if on_event is not None else _untold
    if answer.id != request.id:
        raise ResumeError(f"the answer is for {answer.id!r}, not the pending {request.id!r}")
    messages = copy_json(transcript)  # never copy.deepcopy: a stored value may nest past it
    try:
        halt = find_halt(messages, style)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None

    result, again = await _answered(toolkit, halt, request, answer, tell)
    if again is not None:
        # A second, different suspension: the Task waits again, on it.
        _replace_last(messages, style, _result_entry(style, halt.halted, _placeholder(again)))
        return _suspended(messages, again, client)
    _replace_last(messages, style, _result_entry(style, halt.halted, result))

    for call in halt.later:
        # Made before the run stopped (toolnexus runs a turn's calls at once):
        # an atomic= one returns its recorded outcome instead of running again.
        _tell_call(tell, call)
        ended = genai.own_tool_call(call.name, call.id)  # its span, when traced
        with calling(_identity(halt, call)):
            later = await toolkit.execute(call.name, call.arguments)
        suspension = pending_of(later)
        ended(later, suspension is not None)
        if suspension is not None:
            metrics.tool_called(call.name, "waiting")
            tell({"type": "pending", "request": suspension})
            _append(messages, style, _result_entry(style, call, _placeholder(suspension)))
            return _suspended(messages, suspension, client)
        _tell_result(tell, call, later)
        _append(messages, style, _result_entry(style, call, later))

    # The prompt is never sent: the first turn's messages are replaced.
    cancel = handle.token() if handle is not None else None
    resumed = _continuing_client(client, messages)
    if on_event is None:
        return await resumed.run("", toolkit, cancel=cancel)
    return await streamed_run(
        resumed, "", toolkit, history=None, cancel=cancel, on_event=on_event, origin=client
    )


async def _answered(
    toolkit: toolnexus.Toolkit, halt: Halt, request: Request, answer: Answer, tell: OnEvent
) -> tuple[ToolResult, Request | None]:
    """The halted call's result once answered (run again with the answer
    when ``ok``), or the different Request it suspended on this time."""
    if not answer.ok:
        metrics.tool_called(halt.halted.name, "declined")  # the call never runs
        return declined_result(request, answer), None
    # current_run() in the answered call names the answer, its approvers
    # and the call: its turn and id key an atomic= call's recorded outcome.
    _tell_call(tell, halt.halted)
    ended = genai.own_tool_call(halt.halted.name, halt.halted.id)  # its span, when traced
    with answered_call(answer, _identity(halt, halt.halted)):
        result = await toolkit.execute(
            halt.halted.name, halt.halted.arguments, ToolContext(answer=answer)
        )
    again = pending_of(result)
    ended(result, again is not None)
    if again is not None and again.id != request.id:
        metrics.tool_called(halt.halted.name, "waiting")
        tell({"type": "pending", "request": again})
        return result, again
    if again is not None:
        # The same request again: never loop on it (as toolnexus's wait_for path does).
        result = ToolResult(output=f"unresolved: {request.prompt}", is_error=True)
    _tell_result(tell, halt.halted, result)
    return result, None


def _untold(event: dict[str, Any]) -> None:
    return None


def _tell_call(tell: OnEvent, call: Call) -> None:
    tell({"type": "tool_call", "id": call.id, "name": call.name, "args": call.arguments})


def _tell_result(tell: OnEvent, call: Call, result: ToolResult) -> None:
    # toolnexus counts the calls it runs; these calls the resume runs itself.
    metrics.tool_called(call.name, "error" if result.is_error else "ok")
    tell({"type": "tool_result", "id": call.id, "name": call.name, "is_error": result.is_error})


def _identity(halt: Halt, call: Call) -> CallIdentity:
    return CallIdentity(call.id, call.name, halt.message if halt.message >= 0 else None)


def _placeholder(request: Request) -> ToolResult:
    # What toolnexus itself records in the slot of a halted call.
    return ToolResult(output=request.prompt, is_error=True)
