"""The hooks this app adds to toolnexus's client, beside a project's own.

toolnexus's ``ToolContext`` does not say which call of the model a tool
call is; its hooks do (``before_llm`` sees the messages the model's answer
follows, ``before_tool`` the call's ``id`` and ``name``). The runtime's client
names each call in the run's context (:func:`..tools.context.name_call`), so
a tool reads its call (``current_run().call_id``, ``turn``) and its
idempotency key however it is called.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from typing import Any

import toolnexus

from ..observability import genai
from ..observability.metric_sources import measuring
from ..tools.context import name_call, note_turn

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")


def hooks_as_dict(hooks: Any) -> dict[str, Any]:
    """A client's hooks (a mapping, or an object with hook methods) as a dict."""
    if hooks is None:
        return {}
    if isinstance(hooks, Mapping):
        return dict(hooks)
    return {
        name: getattr(hooks, name) for name in HOOK_NAMES if callable(getattr(hooks, name, None))
    }


def naming_calls(client: toolnexus.Client) -> toolnexus.Client:
    """A shallow copy of ``client`` whose hooks name each tool call in the
    run's context: ``before_llm`` notes where the model's answer goes in the
    transcript (after the project's own hook, which may replace the
    messages), ``before_tool`` names the call before the project's own. When
    the run is traced, the wrapped hooks also make its ``chat`` and
    ``execute_tool`` spans (:mod:`..observability.genai`)."""
    hooks = hooks_as_dict(client.hooks)
    their_llm, their_tool = hooks.get("before_llm"), hooks.get("before_tool")
    their_after_llm, their_after_tool = hooks.get("after_llm"), hooks.get("after_tool")

    async def before_llm(event: dict[str, Any]) -> Any:
        override = await _call(their_llm, event)
        sent = (override or {}).get("messages")
        note_turn(sent if sent is not None else event.get("messages") or [])
        genai.before_llm(event, (override or {}).get("model"))  # a no-op unless traced
        return override

    async def after_llm(event: dict[str, Any]) -> Any:
        genai.after_llm(event)
        return await _call(their_after_llm, event)

    async def before_tool(event: dict[str, Any]) -> Any:
        name_call(event)
        genai.before_tool(event)
        override = await _call(their_tool, event)
        given = (override or {}).get("result")
        if given is not None and toolnexus.pending_of(given) is None:
            genai.after_tool({**event, "result": given})  # short-circuited: no after_tool
        return override

    async def after_tool(event: dict[str, Any]) -> Any:
        override = await _call(their_after_tool, event)
        given = (override or {}).get("result")
        genai.after_tool({**event, "result": given} if given is not None else event)
        return override

    named = copy.copy(client)
    named.hooks = {
        **hooks,
        "before_llm": before_llm,
        "after_llm": after_llm,
        "before_tool": before_tool,
        "after_tool": after_tool,
    }
    # Metrics count toolnexus's own per-call events (failed calls too).
    named.on_metric = measuring(client.on_metric)
    return named


async def _call(hook: Any, event: dict[str, Any]) -> Any:
    if hook is None:
        return None
    made = hook(event)
    return await made if inspect.isawaitable(made) else made
