"""This process's in-process runs: coroutines on the agent runtime's loop.

A run waiting on its model is a coroutine: it holds no thread of its own
(toolnexus makes the blocking HTTP call on the runtime's IO pool, sized to
``MAX_RUNS``) and no database connection (its short database work — taking
the Task, writing the outcome — goes to the database threads,
:mod:`..runtime.dbthreads`). At most ``MAX_RUNS`` run at once; a run past the bound
waits its turn here, its Task still ``submitted`` (or answered), and starts
as soon as a slot frees — it is never refused and never enqueued again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..agent.runtime import get_runtime
from ..conf import toolnexus_settings
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from ..runtime.registry import PerProcess, Stage
from ..stores import TaskStore

logger = logging.getLogger("toolnexus_django.fulfilment")

#: A run: ``(task_id, store, db)`` -> the state it ended in.
RunFn = Callable[[str, TaskStore, Callable[..., Awaitable[Any]]], Awaitable[str]]


@dataclass(eq=False)
class QueuedRun:
    """One enqueued run: waiting for a slot, then running."""

    task_id: str
    started: bool = False
    future: concurrent.futures.Future[str] | None = field(default=None, repr=False)


class Runs:
    """The runs of this process, bounded by ``MAX_RUNS``."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = int(limit if limit is not None else toolnexus_settings.MAX_RUNS)
        self._lock = threading.Lock()
        self._queued: set[QueuedRun] = set()
        #: How many of them are each Task's: ``holds`` asks it, once per stale
        #: Task per sweep (a scan of thousands of queued runs, each time, was
        #: most of an idle worker's CPU with 10,000 Tasks waiting their turn).
        self._held: Counter[str] = Counter()
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self.closed = False
        self._start_by: float | None = None  # closing: no run starts after this

    def start(self, run: RunFn, task_id: str, store: TaskStore) -> QueuedRun:
        """Enqueue ``run`` for ``task_id`` (from any thread); it starts when a slot is free."""
        queued = QueuedRun(task_id)
        with self._lock:
            if self.closed:
                raise RuntimeError("this process's runs are closed (it is stopping)")
            self._queued.add(queued)
            self._held[task_id] += 1
        try:
            queued.future = get_runtime().run_coroutine(self._run_when_admitted(queued, run, store))
        except BaseException:
            self._forget(queued)
            raise
        queued.future.add_done_callback(lambda _: self._forget(queued))
        return queued

    def _forget(self, queued: QueuedRun) -> None:
        with self._lock:
            if queued in self._queued:
                self._queued.discard(queued)
                self._held[queued.task_id] -= 1
                if not self._held[queued.task_id]:
                    del self._held[queued.task_id]

    def _semaphore(self) -> asyncio.Semaphore:
        # Made on (and for) the runtime's loop; a new runtime, a new one.
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.limit))
        return self._slots[1]

    async def _run_when_admitted(self, queued: QueuedRun, run: RunFn, store: TaskStore) -> str:
        slots = self._semaphore()
        async with slots:
            if self._start_by is not None and time.monotonic() >= self._start_by:
                return "not started"  # the Task stays where it is, for recovery
            queued.started = True
            try:
                return await run(queued.task_id, store, run_sync)
            except Exception:  # a database that is down: one line (recovery runs it again)
                log_exception(logger, "Task %s: the run raised", queued.task_id)
                return "error"

    # -- looking on ----------------------------------------------------------------------

    def waiting(self) -> list[str]:
        """Ids of the Tasks whose runs wait for a slot."""
        with self._lock:
            return [t.task_id for t in self._queued if not t.started]

    def running(self) -> list[str]:
        with self._lock:
            return [t.task_id for t in self._queued if t.started]

    def holds(self, task_id: str) -> bool:
        """Whether a run of ``task_id`` is enqueued or running here."""
        with self._lock:
            return task_id in self._held

    # -- stopping ------------------------------------------------------------------------

    def close(self, timeout: float | None = 0) -> bool:
        """Take no more runs, and wait (at most ``timeout`` s) for the ones
        enqueued: a run that has not started by then never does (its Task
        stays where it is, for recovery). Returns whether they all finished."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self._lock:
            self.closed = True
            self._start_by = deadline
            pending = list(self._queued)
        for queued in pending:
            if queued.future is None:
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                queued.future.result(left)
            except concurrent.futures.TimeoutError:
                return not any(t.started and not t.future.done() for t in pending if t.future)
            except BaseException:  # it ended (cancelled with the runtime, say)
                pass
        return True


def _make() -> Runs:
    return Runs()


#: This process's runs (new ones after a fork, and when settings change).
_runs = PerProcess(
    "in-process runs",
    _make,
    close=lambda r: r.close(0),
    stage=Stage.RUNS,
    stop=lambda r, left: r.close(left),
)


def runs() -> Runs:
    return _runs.get()


def close_runs(timeout: float | None = 0) -> bool:
    """Stop taking runs in this process; wait (at most ``timeout`` s) for the
    running ones. Returns whether they all finished."""
    current = _runs.pop()
    return current.close(timeout) if current is not None else True


__all__ = ["QueuedRun", "Runs", "close_runs", "runs"]
