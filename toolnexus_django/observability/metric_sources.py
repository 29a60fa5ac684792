"""Where the metrics' counts come from (:mod:`.metrics` keeps them).

- :func:`count_move` (the ``task_event`` signal, every move of a Task):
  Tasks started and finished, decisions, expiries, reminders, escalations,
  lease takeovers and attempts exhausted — each move is one event, sent once,
  in the process that made it.
- :func:`count_mcp_call` (the ``mcp_called`` signal): MCP ``tools/call``s.
- :func:`measuring` (the model client's ``on_metric`` sink, which toolnexus
  feeds one event per model call and per tool call): each model call's
  duration, outcome and tokens, each tool call's outcome — failed calls and
  calls that wait for a person too, which its hooks never see.

The app's ``ready()`` connects the receivers only when ``METRICS`` is set
(:func:`follow_setting`).
"""

from __future__ import annotations

from typing import Any

from ..conf import toolnexus_settings
from . import metrics


def count_move(sender: Any, task_id: str, event: dict[str, Any], **kwargs: Any) -> None:
    private = event.get("private")
    decision = private.get("decision") if isinstance(private, dict) else None
    metrics.task_moved(
        str(event.get("kind") or ""),
        str(event.get("from_state") or ""),
        str(event.get("to_state") or ""),
        decision,
    )


def count_mcp_call(sender: Any, call: dict[str, Any], **kwargs: Any) -> None:
    metrics.mcp_called(call.get("tool"), str(call.get("outcome") or ""))


def follow_setting() -> None:
    """From the app's ``ready()``: connect the receivers now if ``METRICS``
    is set, else once a settings change sets it (tests, ``override_settings``)."""
    connect_when_on()
    toolnexus_settings.on_reload(connect_when_on)


def connect_when_on() -> None:
    # The raw setting, not toolnexus_settings: a reload hook must not fill
    # its cache while the settings are still changing.
    from django.conf import settings

    raw = getattr(settings, "TOOLNEXUS", None)
    if not isinstance(raw, dict) or raw.get("METRICS") in (None, False):
        return
    from ..signals import mcp_called, task_event

    task_event.connect(count_move, dispatch_uid="toolnexus_django.metrics.task_event")
    mcp_called.connect(count_mcp_call, dispatch_uid="toolnexus_django.metrics.mcp_called")


def measuring(their: Any) -> Any:
    """The client's ``on_metric`` sink with this app's counting ahead of
    ``their`` own (the project's, or None): each model call's duration,
    outcome and tokens, each tool call's outcome. ``their`` itself when
    metrics are off."""
    if not metrics.switched_on():
        return their

    def on_metric(event: dict[str, Any]) -> None:
        try:
            count(event)
        finally:
            if their is not None:
                their(event)

    return on_metric


def count(event: dict[str, Any]) -> None:
    """One of toolnexus's metric events: ``llm`` (a model call: status, ms,
    prompt and completion tokens) or ``tool`` (a call: is_error, pending)."""
    kind = event.get("event")
    if kind == "llm":
        ms = event.get("ms")
        metrics.model_called(
            str(event.get("status") or "ok"),
            ms / 1000.0 if isinstance(ms, (int, float)) else None,
            _tokens(event.get("prompt_tokens")),
            _tokens(event.get("completion_tokens")),
        )
    elif kind == "tool":
        outcome = "waiting" if event.get("pending") else "error" if event.get("is_error") else "ok"
        metrics.tool_called(event.get("tool"), outcome)


def _tokens(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
