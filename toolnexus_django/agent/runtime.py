"""The per-process agent runtime: the toolkit and the model client, owned by
the runtime loop (:class:`..runtime.loop.LoopThread`), one long-lived event
loop on a thread of its own.

A toolkit with MCP servers is bound to the loop that created it, so every run
in this process goes through the same loop. Callers are ordinary (sync) worker
threads: they hand a coroutine over with :meth:`AgentRuntime.call` and block
on the result. The ORM is never touched on the loop — stores are read and
written by the worker threads around a run.

The runtime starts lazily, on the first run in a process (never in
``AppConfig.ready()``: migrate and every management command import the app),
and again after a fork.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import toolnexus
from django.core.exceptions import ImproperlyConfigured

from ..conf import TOOLKIT_KEYS, import_path, setting_name, toolnexus_settings
from ..runtime.loop import IO_THREADS as IO_THREADS
from ..runtime.loop import START_TIMEOUT as START_TIMEOUT
from ..runtime.loop import LoopThread
from ..runtime.loop import RunDeadlineExceeded as RunDeadlineExceeded
from ..runtime.loop import RunHandle as RunHandle
from ..runtime.loop import io_threads as io_threads
from ..runtime.loop import new_event_loop as new_event_loop
from ..runtime.registry import PerProcess, Stage
from ..tools import budgeted
from .hooks import naming_calls
from .streaming import OnEvent, streamed_run
from .transport import AbandonedCall as AbandonedCall  # where it was defined before
from .transport import BoundedTransport, BudgetedTransport

logger = logging.getLogger(__name__)

CLIENT_STYLES = ("openai", "anthropic")


def skills_dirs(toolkit_setting: Any = None) -> list[str]:
    """The SKILL.md directories the toolkit is built from (for the Agent Card)."""
    cfg = toolnexus_settings.TOOLKIT if toolkit_setting is None else toolkit_setting
    if not isinstance(cfg, dict):
        return []
    value = cfg.get("skills_dir")
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


async def build_toolkit(setting: Any = None) -> toolnexus.Toolkit:
    """Build the toolkit from ``TOOLNEXUS["TOOLKIT"]`` (a dict of options or a
    factory / dotted path to one)."""
    cfg = toolnexus_settings.TOOLKIT if setting is None else setting
    if not isinstance(cfg, dict):
        factory = import_path(cfg, setting_name("TOOLKIT"))
        made = factory()
        if inspect.isawaitable(made):
            made = await made
        return made
    # Plain native tools get the connection budget that toolnexus_django.tool has.
    tools = [
        budgeted(import_path(t, setting_name("TOOLKIT", "tools", i)))
        for i, t in enumerate(cfg.get("tools") or ())
    ]
    extra = {k: v for k, v in cfg.items() if k not in TOOLKIT_KEYS}
    dirs = skills_dirs(cfg)
    return await toolnexus.create_toolkit(
        skills_dir=(dirs or None),
        mcp_config=cfg.get("mcp_config"),
        builtins=bool(cfg.get("builtins", False)),
        extra_tools=tools,
        **extra,
    )


def build_client(setting: Any = None) -> toolnexus.Client:
    """Build the model client from ``TOOLNEXUS["CLIENT"]`` (a dict of
    ``create_client`` options or a factory / dotted path to one)."""
    cfg = toolnexus_settings.CLIENT if setting is None else setting
    if not isinstance(cfg, dict):
        return import_path(cfg, setting_name("CLIENT"))()
    options = {k: v for k, v in cfg.items() if v is not None}
    if not options.get("base_url") or not options.get("model"):
        raise ImproperlyConfigured(
            'TOOLNEXUS["CLIENT"] needs "base_url" and "model" (or a dotted path to a '
            "factory that returns a toolnexus Client)"
        )
    if options.get("style", "openai") not in CLIENT_STYLES:
        raise ImproperlyConfigured(f'TOOLNEXUS["CLIENT"]["style"] must be one of {CLIENT_STYLES}')
    inner = options.get("http_transport")
    if inner is None or type(inner) is toolnexus.UrllibTransport:
        # toolnexus's own transport reads whole bodies: read them bounded.
        limit = int(toolnexus_settings.MAX_MODEL_RESPONSE_BYTES)
        inner = BoundedTransport(limit, options.get("style", "openai"))
    options["http_transport"] = BudgetedTransport(inner)
    return toolnexus.create_client(**options)


class AgentRuntime(LoopThread):
    """The toolkit and client of this process, on the runtime loop."""

    def __init__(
        self,
        toolkit_factory: Callable[[], Awaitable[toolnexus.Toolkit]] = build_toolkit,
        client_factory: Callable[[], toolnexus.Client] = build_client,
        *,
        io_threads: int | None = None,
    ) -> None:
        super().__init__(io_threads=io_threads)
        self._toolkit_factory = toolkit_factory
        self._client_factory = client_factory
        self.toolkit: toolnexus.Toolkit | None = None
        self.client: toolnexus.Client | None = None

    async def _setup(self) -> None:
        self.toolkit = await self._toolkit_factory()
        made = self._client_factory()
        client = await made if inspect.isawaitable(made) else made
        # Each tool call knows its call id (current_run().call_id), however made.
        self.client = naming_calls(client) if client is not None else None

    async def _teardown(self) -> None:
        if self.toolkit is not None:
            await asyncio.wait_for(self.toolkit.close(), timeout=5)

    async def arun(
        self,
        text: str,
        *,
        history: list[dict[str, Any]] | None = None,
        timeout: float | None = None,
        handle: RunHandle | None = None,
        toolkit: Any = None,
        on_event: OnEvent | None = None,
    ) -> toolnexus.RunResult:
        """:meth:`run` for a coroutine on the runtime's loop; ``toolkit``: the
        run's view of the process's toolkit (the tools its owner may use);
        ``on_event``: the run streams from the model, each of toolnexus's
        stream events handed to it (:mod:`.streaming`)."""
        run = self._agent_run(text, history, handle, toolkit, on_event)
        return await self.acall(run, timeout)

    def run(
        self,
        text: str,
        *,
        history: list[dict[str, Any]] | None = None,
        timeout: float | None = None,
        handle: RunHandle | None = None,
    ) -> toolnexus.RunResult:
        """One agent run of ``text`` through the client loop with the toolkit;
        ``handle`` can stop it from another thread."""
        return self.call(self._agent_run(text, history, handle, None, None), timeout)

    async def _agent_run(
        self,
        text: str,
        history: list[dict[str, Any]] | None,
        handle: RunHandle | None,
        toolkit: Any,
        on_event: OnEvent | None,
    ) -> toolnexus.RunResult:
        assert self.client is not None
        cancel = handle.token() if handle is not None else None
        tools = toolkit if toolkit is not None else self.toolkit
        if on_event is not None:
            return await streamed_run(
                self.client, text, tools, history=history, cancel=cancel, on_event=on_event
            )
        return await self.client.run(text, tools, history=history, cancel=cancel)


def _start() -> AgentRuntime:
    runtime = AgentRuntime().start()
    logger.info("toolnexus runtime started in process %s", os.getpid())
    return runtime


#: This process's runtime: started on first use, again after a fork, stopped
#: when settings change.
_runtime = PerProcess(
    "agent runtime",
    _start,
    close=lambda r: r.stop(timeout=2),
    stage=Stage.LOOP,
    # The loop stops at once; what takes time is closing the toolkit (MCP).
    stop=lambda r, left: r.stop(timeout=min(5.0, max(0.5, left))),
)


def get_runtime() -> AgentRuntime:
    """This process's runtime, started on first use (and again if it died)."""
    runtime = _runtime.get()
    if not runtime.alive:
        if _runtime.discard(runtime):
            runtime.stop(timeout=1)
        runtime = _runtime.get()
    return runtime


def shutdown_runtime(timeout: float = 5.0) -> None:
    """Stop this process's runtime, if one is running."""
    runtime = _runtime.pop()
    if runtime is not None:
        runtime.stop(timeout)
