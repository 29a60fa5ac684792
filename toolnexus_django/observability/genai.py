"""The spans of one run: ``invoke_agent`` around it, ``chat`` per model call
and ``execute_tool`` per tool call, after OpenTelemetry's GenAI conventions.

toolnexus makes the HTTP calls; its client hooks say when each starts and
ends (``agent.hooks`` calls :func:`before_llm` and the others from the hooks it
wraps every run's client with). A run's open spans live in a context variable
set by :func:`run_span`: the hooks run inside the run's context, and outside
a traced run they return at once.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import spannames as names
from . import tracing


@dataclass
class RunSpans:
    """A traced run's open spans and what its model calls used so far."""

    run: Any
    provider: str
    chat: Any = None
    chat_began: float = 0.0
    first_chunk: bool = False
    tools: dict[str, Any] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    #: A streamed call reports the run's usage so far: what was seen before it.
    streamed_seen: tuple[int, int] = (0, 0)


_RUN: contextvars.ContextVar[RunSpans | None] = contextvars.ContextVar(
    "toolnexus_run_spans", default=None
)


@contextmanager
def run_span(
    task: Mapping[str, Any],
    *,
    stored: Mapping[str, Any] | None,
    agent: str,
    provider: str,
    owner: str | None,
    attempt: int,
    resumed: bool,
) -> Iterator[RunSpans | None]:
    """The ``invoke_agent {agent}`` span of one run of ``task``: a child of
    the request that started the Task (``stored["start"]``, a
    :func:`tracing.carrier`), linked to the decision that resumed it
    (``stored["answer"]``). Yields None when tracing is off."""
    if not tracing.recording():
        yield None
        return
    stored = stored or {}
    attributes = {
        names.OPERATION: "invoke_agent",
        names.PROVIDER: provider,
        names.AGENT_NAME: agent,
        names.CONVERSATION: task.get("contextId"),
        names.TASK_ID: task.get("id"),
        names.USER_ID: owner or "anonymous",
        names.ATTEMPT: attempt,
        names.RESUMED: resumed,
    }
    links = {"answer": stored.get("answer")} if resumed else {}
    with tracing.span(
        f"invoke_agent {agent}", attributes, parent=stored.get("start"), links=links
    ) as current:
        spans = RunSpans(current, provider)
        token = _RUN.set(spans)
        try:
            yield spans
        finally:
            _RUN.reset(token)
            _close_open(spans)


def end_run(spans: RunSpans | None, state: str) -> None:
    """Record the run's outcome (the Task's state after it) and its usage."""
    if spans is None:
        return
    tracing.note(
        spans.run,
        {
            names.TASK_STATE: names.task_state(state),
            names.INPUT_TOKENS: spans.input_tokens,
            names.OUTPUT_TOKENS: spans.output_tokens,
        },
    )
    waiting = state in ("input-required", "auth-required")
    for call in spans.tools.values():
        call.set_attribute(names.TOOL_WAITING, waiting)
        if not waiting:
            tracing.mark_failed(call, "interrupted")
        call.end()
    spans.tools.clear()
    if state == "failed":
        tracing.mark_failed(spans.run, "run_failed")


def _close_open(spans: RunSpans) -> None:
    """What a run left open (a model call that raised) ends with it, failed."""
    if spans.chat is not None:
        tracing.mark_failed(spans.chat, "interrupted")
        spans.chat.end()
        spans.chat = None
    for call in spans.tools.values():
        tracing.mark_failed(call, "interrupted")
        call.end()
    spans.tools.clear()


# -- from the client's hooks ------------------------------------------------------------


def before_llm(event: Mapping[str, Any], model: Any) -> None:
    """A model call starts: its ``chat {model}`` CLIENT span."""
    spans = _RUN.get()
    if spans is None:
        return
    from opentelemetry import trace

    if spans.chat is not None:  # the previous call never reported its end
        _close_open_chat(spans)
    model = model or event.get("model") or ""
    spans.chat = tracing.tracer().start_span(
        f"chat {model}".strip(),
        kind=trace.SpanKind.CLIENT,
        attributes={
            names.OPERATION: "chat",
            names.PROVIDER: spans.provider,
            names.REQUEST_MODEL: str(model),
        },
    )
    spans.chat_began, spans.first_chunk = time.monotonic(), False


def _close_open_chat(spans: RunSpans) -> None:
    tracing.mark_failed(spans.chat, "interrupted")
    spans.chat.end()
    spans.chat = None


def first_chunk() -> None:
    """A streamed model call's first text: its time to first chunk, in seconds."""
    spans = _RUN.get()
    if spans is None or spans.chat is None or spans.first_chunk:
        return
    spans.first_chunk = True
    spans.chat.set_attribute(names.FIRST_CHUNK, time.monotonic() - spans.chat_began)


def after_llm(event: Mapping[str, Any]) -> None:
    """A model call answered: its usage, finish reasons and model, and its end."""
    spans = _RUN.get()
    if spans is None or spans.chat is None:
        return
    response = event.get("response")
    response = response if isinstance(response, dict) else {}
    used_in, used_out = _usage(spans, response)
    spans.input_tokens += used_in
    spans.output_tokens += used_out
    tracing.note(
        spans.chat,
        {
            names.INPUT_TOKENS: used_in,
            names.OUTPUT_TOKENS: used_out,
            names.FINISH_REASONS: _finish_reasons(response) or None,
            names.RESPONSE_MODEL: response.get("model")
            if isinstance(response.get("model"), str)
            else None,
            names.RESPONSE_ID: response.get("id") if isinstance(response.get("id"), str) else None,
            names.REQUEST_STREAM: True if response.get("streamed") else None,
        },
    )
    spans.chat.end()
    spans.chat = None


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(spans: RunSpans, response: dict[str, Any]) -> tuple[int, int]:
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    used_in = _whole(usage.get("prompt_tokens")) or _whole(usage.get("input_tokens"))
    used_out = _whole(usage.get("completion_tokens")) or _whole(usage.get("output_tokens"))
    if response.get("streamed"):  # the run's sums so far: this call's is the difference
        seen_in, seen_out = spans.streamed_seen
        spans.streamed_seen = (used_in, used_out)
        return max(0, used_in - seen_in), max(0, used_out - seen_out)
    return used_in, used_out


def _finish_reasons(response: dict[str, Any]) -> list[str]:
    if isinstance(response.get("stop_reason"), str):  # anthropic
        return [response["stop_reason"]]
    choices = response.get("choices")
    if not isinstance(choices, list):
        return []
    return [c["finish_reason"] for c in choices if isinstance(c, dict) and c.get("finish_reason")]


def before_tool(event: Mapping[str, Any]) -> None:
    """A tool call starts: its ``execute_tool {name}`` INTERNAL span."""
    spans = _RUN.get()
    if spans is None:
        return
    name, call_id = str(event.get("name") or ""), str(event.get("id") or "")
    spans.tools[call_id] = tracing.tracer().start_span(
        f"execute_tool {name}",
        attributes={
            names.OPERATION: "execute_tool",
            names.TOOL_NAME: name,
            names.TOOL_CALL_ID: call_id,
            names.TOOL_TYPE: "function",
        },
    )


def after_tool(event: Mapping[str, Any]) -> None:
    """A tool call ended: a result marked as an error fails its span."""
    spans = _RUN.get()
    if spans is None:
        return
    call = spans.tools.pop(str(event.get("id") or ""), None)
    if call is None:
        return
    call.set_attribute(names.TOOL_WAITING, False)
    if getattr(event.get("result"), "is_error", False):
        tracing.mark_failed(call, "tool_error")
    call.end()


def own_tool_call(name: str, call_id: str) -> Callable[[Any, bool], None]:
    """A tool call a resume makes itself (no client hooks): its span starts
    now; ``ended(result, waiting)`` ends it — a call that waits for a person
    again stays open, and the run's end says so."""
    before_tool({"name": name, "id": call_id})

    def ended(result: Any, waiting: bool) -> None:
        if not waiting:
            after_tool({"id": call_id, "result": result})

    return ended
