"""Tool calls within the process's database connection budget.

A sync tool runs on a thread; Django gives every thread its own connection
and keeps it until the thread closes it. toolnexus runs sync tools with
``asyncio.to_thread``, on threads that live on and never close theirs, so a
process's tool calls could hold as many connections as it ever had calls at
once (measured: 99 left open after 300 runs; 428 of 500 calls refused
"too many clients"). Here every tool call runs *within the budget*:

* a tool call's thread work — a sync tool's body, an async tool's async ORM
  queries (asgiref's thread-sensitive ``sync_to_async``), whatever it hands
  to ``asyncio.to_thread`` — runs on **one tool thread of its own**, taken
  from the ``TOOL_THREADS`` tool threads the first time the call needs a
  thread and handed back when the call ends. So at most ``TOOL_THREADS``
  calls of a process use the database at once; a call past them waits for a
  thread, it never fails for want of a connection;
* the call's work shares that thread, one piece at a time, and so one
  connection, as a request's does (a transaction, a server-side cursor of
  ``aiterator()``, stay on the connection that opened them);
* taking and handing back a thread are framed as Django frames a request:
  ``close_old_connections()``, so ``CONN_MAX_AGE`` and ``CONN_HEALTH_CHECKS``
  apply (with the default 0 the connection is closed when the call ends;
  with more, each tool thread keeps one open between calls);
* an async tool that never hands work to a thread (no ORM, an HTTP call)
  takes no tool thread and never waits for one.

Measured (benchmarks/RESULTS.md): a per-call thread of asgiref's making for
an async tool's ORM (the first design) leaked its connection with
``CONN_MAX_AGE`` > 0 (the thread ended, its connection stayed open until
garbage collection: 60 sessions in a process and 287 of 500 calls refused),
and a gate around whole calls held async tools that await other services
to ``TOOL_THREADS`` at a time even when they never touch the database.

So tool calls hold at most ``TOOL_THREADS`` connections per process, on top
of the app's own ``DATABASE_THREADS`` + :data:`OWN_CONNECTIONS`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.db import close_old_connections

from ..conf import toolnexus_settings
from ..runtime.registry import PerProcess, Stage
from ..runtime.threads import DaemonThreadPool, diverted_to, diverting_to

T = TypeVar("T")

#: The app's own connections beside its database threads: the lease keeper,
#: the wake-up poller, the sweep and the main thread. A process's budget is
#: DATABASE_THREADS + OWN_CONNECTIONS + TOOL_THREADS (docs/howto/production.md,
#: "Database connections").
OWN_CONNECTIONS = 4


def tool_threads() -> int:
    """How many tool calls of one process use threads (so database connections) at once."""
    return int(toolnexus_settings.TOOL_THREADS)


class ToolThreads(DaemonThreadPool):
    """The tool threads: never more than ``size`` (work past them waits
    queued). Work submitted outside any tool call is framed by
    ``close_old_connections()`` as a request is; inside a call it goes to
    that call's own thread (:class:`CallThread`)."""

    def __init__(self, size: int) -> None:
        # No elasticity: a hung call keeps its thread (and its connection
        # slot) rather than letting the pool grow past the budget.
        super().__init__(size, name="toolnexus-tool", ceiling=size)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        call = diverted_to()
        if call is not None and call is not self:
            return call.submit(fn, *args, **kwargs)
        return super().submit(_framed, functools.partial(fn, *args, **kwargs))

    def take(self, serve: Callable[[], None]) -> concurrent.futures.Future[None]:
        """Run ``serve`` on a tool thread, whatever the caller's diversion."""
        empty = contextvars.Context()  # no diversion, no run budget: a plain slot
        return empty.run(DaemonThreadPool.submit, self, serve)


def _framed(call: Callable[[], T]) -> T:
    close_old_connections()
    try:
        return call()
    finally:
        close_old_connections()


#: This process's tool threads (replaced when the TOOLNEXUS setting changes;
#: calls in flight finish on the old ones).
pool = PerProcess(
    "tool threads",
    lambda: ToolThreads(tool_threads()),
    close=lambda p: p.shutdown(wait=False),
    stage=Stage.TOOLS,
    stop=lambda p, left: p.shutdown(wait=True, timeout=left),
)

_END = object()


class CallThread(concurrent.futures.Executor):
    """The tool thread of one call: taken from the tool threads the first
    time the call hands work to a thread, kept until :meth:`shutdown` (the
    call's end). Its work runs there in order, one piece at a time, between
    ``close_old_connections()`` on taking and on handing back."""

    def __init__(self, threads: ToolThreads) -> None:
        self._threads = threads
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._taken: concurrent.futures.Future[None] | None = None
        self._ended = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if not self._ended:
                future: concurrent.futures.Future[Any] = concurrent.futures.Future()
                self._work.put((future, functools.partial(fn, *args, **kwargs)))
                if self._taken is None:
                    self._taken = self._threads.take(self._serve)
                return future
        # Work a call's leftover task hands over after the call ended: a
        # tool thread of its own, framed (it no longer belongs to the call).
        with diverting_to(self._threads):
            return self._threads.submit(fn, *args, **kwargs)

    def _serve(self) -> None:
        close_old_connections()
        try:
            while (item := self._work.get()) is not _END:
                future, call = item
                if future.set_running_or_notify_cancel():
                    try:
                        result = call()
                    except BaseException as exc:  # handed to whoever waits on it
                        future.set_exception(exc)
                    else:
                        future.set_result(result)
                del item, future, call
        finally:
            close_old_connections()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The call ended: hand the thread back once its work is done (never
        waits; asgiref calls this too when the call's context exits)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            taken = self._taken
        if taken is not None:
            self._work.put(_END)


async def in_tool_thread(fn: Callable[[], T]) -> T:
    """``fn()`` on a tool thread (the call's own inside a tool call), with
    the caller's context (its run); the caller waits without holding a thread."""
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool.get(), context.run, fn)


async def within_connection_budget(call: Callable[[], Awaitable[T]]) -> T:
    """Run one tool call (``call()``, a toolnexus tool's ``execute``) within
    the budget: whatever it hands to a thread (``asyncio.to_thread``, the
    async ORM) runs on one tool thread of its own, taken when first needed
    and handed back when the call ends."""
    if isinstance(diverted_to(), CallThread):
        return await call()  # a tool calling a tool: one call, one thread
    own = CallThread(pool.get())
    try:
        with diverting_to(own):
            async with _thread_sensitive(own):
                return await call()
    finally:
        own.shutdown()


def _thread_sensitive(executor: CallThread) -> Any:
    """asgiref's thread-sensitive ``sync_to_async`` (the async ORM) inside the
    call runs on ``executor``: ``ThreadSensitiveContext(executor=)`` where
    asgiref has it, else the same through its per-context executor map (an
    older asgiref then calls ``executor.shutdown()`` on exit: that only ends
    the call, which is ending anyway)."""
    from asgiref.sync import SyncToAsync, ThreadSensitiveContext

    if "executor" in inspect.signature(ThreadSensitiveContext).parameters:
        return ThreadSensitiveContext(executor=executor)

    class Registered(ThreadSensitiveContext):  # an asgiref without executor=
        async def __aenter__(self) -> Any:
            entered = await super().__aenter__()
            SyncToAsync.context_to_thread_executor[self] = executor
            return entered

    return Registered()
