"""The runtime loop: one long-lived event loop on a thread of its own, with
a daemon IO pool as its default executor, taking coroutines from any thread.

A toolkit with MCP servers is bound to the loop that created it, so every run
in a process goes through one loop (DESIGN §7): :class:`LoopThread` is that
loop; :class:`..agent.runtime.AgentRuntime` builds the toolkit and the model
client on it. Work handed over runs within a :class:`.threads.RunBudget`
(its deadline), and a :class:`RunHandle` stops one run from another thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any, Self, TypeVar

from ..conf import toolnexus_settings
from .threads import DaemonThreadPool, RunBudget, current_budget, within_budget

logger = logging.getLogger("toolnexus_django.agent.runtime")

T = TypeVar("T")

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


class LoopThread:
    """An event loop on a thread of its own; :meth:`_setup` and
    :meth:`_teardown` run on it first and last."""

    def __init__(self, *, io_threads: int | None = None) -> None:
        self._io_threads = io_threads
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._io: DaemonThreadPool | None = None

    # -- life cycle ------------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT) -> Self:
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
                _cancel_pending(loop)
                loop.run_until_complete(self._teardown())
            except Exception:  # closing must not mask the reason we stopped
                logger.exception("closing the toolkit failed")
            loop.close()

    async def _setup(self) -> None:
        """Runs on the loop before it takes work (the agent builds its toolkit)."""

    async def _teardown(self) -> None:
        """Runs on the loop once it stopped (the agent closes its toolkit)."""

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
    def run_coroutine(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
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
            future = self.run_coroutine(_within(budget, coro))
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
            if inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                coro.close()  # stopped before it began: no "never awaited" warning


#: How long the runs still on the loop when it stops get to end once canceled.
CANCEL_TIMEOUT = 2.0


def _cancel_pending(loop: asyncio.AbstractEventLoop, timeout: float = CANCEL_TIMEOUT) -> None:
    """Cancel what is still running on the stopped ``loop`` and let it end
    (at most ``timeout`` s) before the loop closes: a run left pending would
    otherwise end later, from the garbage collector or a finishing IO thread,
    against a closed loop ("Event loop is closed")."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.wait(pending, timeout=timeout))
    for task in pending:
        if task.done() and not task.cancelled() and task.exception() is not None:
            error = task.exception()
            logger.debug("a run ended with an error as the runtime stopped", exc_info=error)


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
