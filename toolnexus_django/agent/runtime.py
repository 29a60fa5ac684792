"""The per-process agent runtime: the toolkit and the model client, owned by one
long-lived event loop on a thread of its own.

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
import concurrent.futures
import contextvars
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import toolnexus
from django.core.exceptions import ImproperlyConfigured

from ..conf import TOOLKIT_KEYS, import_path, setting_name, toolnexus_settings
from ..runtime.registry import PerProcess, Stage
from ..runtime.threads import DaemonThreadPool, RunBudget, current_budget, within_budget
from ..tools import budgeted
from .transport import AbandonedCall as AbandonedCall  # where it was defined before
from .transport import BoundedTransport, BudgetedTransport

logger = logging.getLogger(__name__)

T = TypeVar("T")

CLIENT_STYLES = ("openai", "anthropic")

#: How long start-up (building the toolkit: MCP servers, skills) may take.
START_TIMEOUT = 60.0
#: Threads for toolnexus's blocking HTTP calls (``asyncio.to_thread``), at
#: least; the pool is sized to MAX_RUNS when that is larger, so every run in
#: flight can wait on its model at once. Calls of runs that are over (timed
#: out, canceled) do not count; the pool may hold up to
#: ``threads.CEILING_FACTOR`` times as many threads for them.
IO_THREADS = 32


def io_threads() -> int:
    return max(IO_THREADS, int(toolnexus_settings.MAX_RUNS))


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


class RunHandle:
    """Lets another thread stop one run: toolnexus runs take an
    ``asyncio.Event`` as their cancel token, which must be made (and set) on
    the runtime's loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._budgets: list[RunBudget] = []
        self.cancelled = False

    def token(self) -> asyncio.Event:
        """The run's cancel token (call on the runtime's loop, inside the run)."""
        # Taken inside the run's AgentRuntime.call: remember that run's budget,
        # so a cancel also frees the IO capacity its abandoned model call holds.
        budget = current_budget()
        with self._lock:
            if budget is not None and budget not in self._budgets:
                self._budgets.append(budget)
            if self._event is None:
                self._loop = asyncio.get_running_loop()
                self._event = asyncio.Event()
                if self.cancelled:
                    self._event.set()
            event, cancelled = self._event, self.cancelled
        if cancelled and budget is not None:
            budget.abandon()
        return event

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            loop, event, budgets = self._loop, self._event, list(self._budgets)
        if loop is not None and event is not None and not loop.is_closed():
            loop.call_soon_threadsafe(event.set)
        for budget in budgets:
            budget.abandon()


class RunDeadlineExceeded(Exception):
    """A run outlived the ``timeout`` its caller allowed (``RUN_TIMEOUT``)."""

    def __init__(self, timeout: float | None) -> None:
        super().__init__(f"The run took longer than RUN_TIMEOUT ({timeout}s)")
        self.timeout = timeout


class AgentRuntime:
    """The toolkit and client of this process, on one event loop thread."""

    def __init__(
        self,
        toolkit_factory: Callable[[], Awaitable[toolnexus.Toolkit]] = build_toolkit,
        client_factory: Callable[[], toolnexus.Client] = build_client,
        *,
        io_threads: int | None = None,
    ) -> None:
        self._toolkit_factory = toolkit_factory
        self._io_threads = io_threads
        self._client_factory = client_factory
        self.toolkit: toolnexus.Toolkit | None = None
        self.client: toolnexus.Client | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._io: DaemonThreadPool | None = None

    # -- life cycle ------------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT) -> AgentRuntime:
        self._thread = threading.Thread(target=self._main, name="toolnexus-runtime", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the agent runtime did not start within {timeout:.0f}s")
        if self._error is not None:
            raise self._error
        return self

    def _main(self) -> None:
        loop = new_event_loop()
        # toolnexus runs its blocking HTTP calls with asyncio.to_thread; daemon
        # threads keep a hung model call from hanging interpreter exit.
        self._io = DaemonThreadPool(self._io_threads or io_threads(), name="toolnexus-io")
        loop.set_default_executor(self._io)
        asyncio.set_event_loop(loop)
        self.loop = loop
        try:
            loop.run_until_complete(self._setup())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            try:
                loop.run_until_complete(self._teardown())
            except Exception:  # closing must not mask the reason we stopped
                logger.exception("closing the toolkit failed")
            loop.close()

    async def _setup(self) -> None:
        self.toolkit = await self._toolkit_factory()
        made = self._client_factory()
        self.client = await made if inspect.isawaitable(made) else made

    async def _teardown(self) -> None:
        if self.toolkit is not None:
            await asyncio.wait_for(self.toolkit.close(), timeout=5)

    @property
    def alive(self) -> bool:
        return (
            self._thread is not None
            and self._thread.is_alive()
            and self.pid == os.getpid()
            and self._error is None
        )

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self.loop, self._thread
        if loop is None or thread is None or not thread.is_alive() or self.pid != os.getpid():
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if self._io is not None:
            self._io.shutdown(wait=False)

    # -- running ---------------------------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on the runtime's loop in a context of its own (see :func:`_isolated`)."""
        if self.loop is None or not self.alive:
            coro.close()
            raise RuntimeError("the agent runtime is not running")
        return asyncio.run_coroutine_threadsafe(_isolated(coro), self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the runtime's loop and wait (at most ``timeout`` s).

        The coroutine runs within a :class:`RunBudget` of ``timeout``: model
        calls it makes are clamped to it (:class:`BudgetedTransport`), and
        once this returns or raises, whatever it left running on the IO pool
        no longer counts against the pool's size."""
        budget = RunBudget(timeout)
        try:
            future = self.submit(_within(budget, coro))
        except RuntimeError:
            coro.close()  # never started: no "never awaited" warning
            raise
        try:
            return future.result(timeout)
        except Exception as exc:
            if not future.done():  # still running at the deadline
                future.cancel()
                raise RunDeadlineExceeded(timeout) from None
            left = budget.remaining()
            if left is not None and left <= 0:
                # It failed at its deadline: a model call the clamp cut short
                # (a socket timeout) racing the wait above. Same outcome.
                raise RunDeadlineExceeded(timeout) from exc
            raise  # the run's own error (toolnexus.RunTimeout is a TimeoutError)
        finally:
            budget.abandon()  # nobody waits for the run's work any more

    async def acall(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """:meth:`call` for a coroutine already on the runtime's loop (a run
        of the in-process core): the same budget and deadline, no thread held."""
        budget = RunBudget(timeout)
        task = asyncio.ensure_future(_within(budget, coro))
        try:
            done, _ = await asyncio.wait((task,), timeout=timeout)
            if not done:  # still running at the deadline
                task.cancel()
                raise RunDeadlineExceeded(timeout)
            try:
                return task.result()
            except Exception as exc:
                left = budget.remaining()
                if left is not None and left <= 0:
                    # A model call the clamp cut short at the deadline: same outcome.
                    raise RunDeadlineExceeded(timeout) from exc
                raise
        except asyncio.CancelledError:
            task.cancel()  # the run itself was stopped (the runtime closing)
            raise
        finally:
            budget.abandon()

    async def arun(
        self,
        text: str,
        *,
        history: list[dict[str, Any]] | None = None,
        timeout: float | None = None,
        handle: RunHandle | None = None,
        toolkit: Any = None,
    ) -> toolnexus.RunResult:
        """:meth:`run` for a coroutine on the runtime's loop; ``toolkit``: the
        run's view of the process's toolkit (the tools its owner may use)."""
        return await self.acall(self._agent_run(text, history, handle, toolkit), timeout)

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
        return self.call(self._agent_run(text, history, handle, None), timeout)

    async def _agent_run(
        self,
        text: str,
        history: list[dict[str, Any]] | None,
        handle: RunHandle | None,
        toolkit: Any,
    ) -> toolnexus.RunResult:
        assert self.client is not None
        cancel = handle.token() if handle is not None else None
        tools = toolkit if toolkit is not None else self.toolkit
        return await self.client.run(text, tools, history=history, cancel=cancel)


async def _isolated(coro: Coroutine[Any, Any, T]) -> T:
    # Nothing of the submitting thread's context variables: a request's asgiref
    # thread-sensitive context would pin the run's async ORM calls to its thread.
    return await asyncio.create_task(coro, context=contextvars.Context())


async def _within(budget: RunBudget, coro: Coroutine[Any, Any, T]) -> T:
    # Set inside the run's own task (a copy of the context): to_thread and
    # run_in_executor, called from here, see it; nothing outside the run does.
    with within_budget(budget):
        return await coro


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (its cross-thread wake-ups and
    timers cost less: every run's database work comes back that way), else
    asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


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
