"""A run inside its ``invoke_agent`` span (TRACING): the span continues the
trace of the request that started the Task — stored with it, so a run in
another process, or a resume hours later, continues it too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .. import lifecycle
from ..agent.runtime import get_runtime
from ..conf import toolnexus_settings
from ..lifecycle import states
from ..observability import genai, tracing
from ..stores import TaskStore
from ..stores.base import Task

Run = Callable[[TaskStore, Task, Any, Any], Awaitable[str]]


async def traced_run(run: Run, store: TaskStore, claimed: Task, work: Any, db: Any) -> str:
    """``run(store, claimed, work, db)`` (the runner's), in its span when TRACING is on."""
    if not tracing.recording():
        return await run(store, claimed, work, db)
    private = lifecycle.read(claimed)
    with genai.run_span(
        claimed,
        stored=private.trace,
        agent=str((toolnexus_settings.AGENT or {}).get("name") or ""),
        provider=getattr(get_runtime().client, "style", None) or "openai",
        owner=private.owner,
        attempt=private.attempts,
        resumed=private.phase == states.RESUMING,
    ) as spans:
        state = await run(store, claimed, work, db)
        genai.end_run(spans, state)
        return state
