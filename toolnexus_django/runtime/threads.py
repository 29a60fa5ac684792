"""A small pool of daemon worker threads, elastic for abandoned work.

``concurrent.futures.ThreadPoolExecutor`` joins its threads at interpreter exit,
so one model call that hangs would hang the process on shutdown (DESIGN §7).
This pool's threads are daemons: shutdown waits for them only as long as the
caller allows, then the process may leave.

A blocking call cannot be interrupted: when its run is over (past its
deadline, or canceled) the call keeps its thread until its own timeout. So
work is tagged with the :class:`RunBudget` it was submitted under (a context
variable, which ``asyncio.to_thread`` and ``run_in_executor`` carry), and work
whose budget is abandoned stops counting against ``max_workers``: the pool
starts another thread for the work behind it, up to a hard ``ceiling``.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import itertools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

_names = itertools.count(1)

#: The hard limit on threads is this many times ``max_workers``: abandoned
#: calls may hold that many threads at most, however many runs pile them up.
CEILING_FACTOR = 4


class RunBudget:
    """What one run may still spend: a deadline (monotonic seconds, or None)
    and whether the run was abandoned (timed out or canceled).

    :meth:`abandon` is what wakes the pools holding the run's work; a passed
    deadline alone only stops that work counting at the pool's next decision.
    """

    def __init__(self, timeout: float | None = None) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._lock = threading.Lock()
        self._abandoned = False
        self._listeners: list[Callable[[], None]] = []

    def remaining(self) -> float | None:
        """Seconds left before the deadline (negative once past), or None."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    @property
    def abandoned(self) -> bool:
        if self._abandoned:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def abandon(self) -> None:
        """Nobody waits for this run's work any more. Idempotent."""
        with self._lock:
            if self._abandoned:
                return
            self._abandoned = True
            listeners, self._listeners = self._listeners, []
        for listener in listeners:  # outside the lock: listeners take their own
            listener()

    def on_abandon(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once when the budget is abandoned (at once if it is)."""
        with self._lock:
            if not self._abandoned:
                if listener not in self._listeners:
                    self._listeners.append(listener)
                return
        listener()


_budget: contextvars.ContextVar[RunBudget | None] = contextvars.ContextVar(
    "toolnexus_run_budget", default=None
)


def current_budget() -> RunBudget | None:
    """The budget of the run this code belongs to, if any."""
    return _budget.get()


@contextmanager
def within_budget(budget: RunBudget | None) -> Iterator[None]:
    """Make ``budget`` the current one for the enclosed code (and for work
    it hands to a pool, or to tasks and threads that copy the context)."""
    token = _budget.set(budget)
    try:
        yield
    finally:
        try:
            _budget.reset(token)
        except ValueError:
            # A run's coroutine left unfinished when its loop closed is closed
            # later by the garbage collector, outside the context it ran in:
            # there is nothing of it to restore.
            pass


_diverted: contextvars.ContextVar[concurrent.futures.Executor | None] = contextvars.ContextVar(
    "toolnexus_diverted_to", default=None
)


def diverted_to() -> concurrent.futures.Executor | None:
    """Where the calling code's thread work goes instead of a pool (see :func:`diverting_to`)."""
    return _diverted.get()


@contextmanager
def diverting_to(executor: concurrent.futures.Executor) -> Iterator[None]:
    """Work the enclosed code hands to a :class:`DaemonThreadPool` (the runtime
    loop's default executor: ``asyncio.to_thread``) goes to ``executor``
    instead: a tool call's threads are the tool threads, whatever the tool
    uses to reach them."""
    token = _diverted.set(executor)
    try:
        yield
    finally:
        _diverted.reset(token)


class _Item(NamedTuple):
    future: concurrent.futures.Future[Any]
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    budget: RunBudget | None


@dataclass(frozen=True)
class PoolStats:
    threads: int  #: live worker threads
    abandoned: int  #: of them, running work whose budget is abandoned
    queued: int  #: work waiting for a thread


class DaemonThreadPool(concurrent.futures.ThreadPoolExecutor):
    """An executor whose workers are daemon threads, started on demand.

    At most ``max_workers`` threads run work that counts; threads stuck on
    abandoned work do not count, up to ``ceiling`` threads in all (default
    ``CEILING_FACTOR * max_workers``). A thread over ``max_workers`` exits as
    soon as its work ends.

    It subclasses ``ThreadPoolExecutor`` only because
    ``loop.set_default_executor`` accepts nothing else; ``submit`` and
    ``shutdown`` are its own and none of the parent's machinery runs.
    """

    def __init__(
        self, max_workers: int, name: str = "toolnexus-worker", *, ceiling: int | None = None
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        super().__init__(max_workers=1)
        self.max_workers = max_workers
        self.ceiling = max(max_workers, ceiling or CEILING_FACTOR * max_workers)
        self.name = name
        self.pid = os.getpid()
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[_Item] = deque()
        self._workers: set[threading.Thread] = set()
        self._running: dict[threading.Thread, RunBudget | None] = {}
        self._idle = 0  # threads waiting for work
        self._starting = 0  # threads started that have not taken work yet
        self._shutdown = False

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        diverted = _diverted.get()
        if diverted is not None and diverted is not self:
            return diverted.submit(fn, *args, **kwargs)
        budget = current_budget()
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._cond:
            if self._shutdown:
                raise RuntimeError(f"{self.name} pool is shut down")
            self._queue.append(_Item(future, fn, args, kwargs, budget))
            self._fill_locked()
        if budget is not None:
            # When the run is abandoned, its work here stops counting: make room.
            budget.on_abandon(self._rebalance)
        return future

    # -- capacity (all under self._cond) ---------------------------------------
    def _counted_locked(self) -> int:
        """Threads that count against max_workers: all but those on abandoned work."""
        stuck = sum(1 for b in self._running.values() if b is not None and b.abandoned)
        return len(self._workers) - stuck

    def _fill_locked(self) -> None:
        """Wake an idle thread for queued work, or start one while capacity allows."""
        if self._idle:
            self._cond.notify(min(self._idle, len(self._queue)))
        uncovered = len(self._queue) - self._idle - self._starting
        while (
            uncovered > 0
            and not self._shutdown
            and self._counted_locked() < self.max_workers
            and len(self._workers) < self.ceiling
        ):
            thread = threading.Thread(
                target=self._work, name=f"{self.name}-{next(_names)}", daemon=True
            )
            self._workers.add(thread)
            self._starting += 1
            thread.start()
            uncovered -= 1

    def _rebalance(self) -> None:
        with self._cond:
            self._fill_locked()

    def _next_locked(self) -> _Item | None:
        """The next item for the calling thread, or None when it should exit."""
        while True:
            if self._counted_locked() > self.max_workers:
                return None  # surplus: started while others were stuck, not needed now
            if self._queue:
                return self._queue.popleft()
            if self._shutdown:
                return None
            self._idle += 1
            self._cond.wait()
            self._idle -= 1

    # -- workers -------------------------------------------------------------------
    def _work(self) -> None:
        me = threading.current_thread()
        ran = False
        with self._cond:
            self._starting -= 1
        while True:
            with self._cond:
                if ran:  # done with the last item, in the same lock hold as taking
                    del self._running[me]  # the next: no one sees this thread twice
                item = self._next_locked()
                if item is None:
                    self._workers.discard(me)
                    return
                self._running[me] = item.budget
            ran = True
            future = item.future
            if future.set_running_or_notify_cancel():
                try:
                    result = item.fn(*item.args, **item.kwargs)
                except BaseException as exc:  # handed to whoever waits on the future
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                    del result
            del item, future  # drop the work's references while idle

    def shutdown(  # type: ignore[override]
        self, wait: bool = True, *, cancel_futures: bool = False, timeout: float | None = None
    ) -> bool:
        """Stop accepting work; queued work still runs unless ``cancel_futures``.
        With ``wait``, wait for the workers (at most ``timeout`` seconds);
        returns whether they all finished."""
        with self._cond:
            self._shutdown = True
            pending = list(self._queue) if cancel_futures else []
            if cancel_futures:
                self._queue.clear()
            threads = list(self._workers)
            self._cond.notify_all()
        for item in pending:
            item.future.cancel()
        if not wait:
            return False
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in threads:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)
        return not any(t.is_alive() for t in threads)

    def stats(self) -> PoolStats:
        with self._cond:
            counted = self._counted_locked()
            return PoolStats(len(self._workers), len(self._workers) - counted, len(self._queue))

    @property
    def busy(self) -> bool:
        return bool(self._queue)
