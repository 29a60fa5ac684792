"""Tool calls within the process's database connection budget.

A sync tool runs on a thread; Django gives every thread its own connection
and keeps it until the thread closes it. toolnexus runs sync tools with
``asyncio.to_thread``, on threads that live on and never close theirs, so a
process's tool calls could hold as many connections as it ever had calls at
once (measured: 99 left open after 300 runs; 219 of 500 calls refused
"too many clients"). Here every tool call runs *within the budget*:

* at most ``TOOL_THREADS`` calls of this process run at once — past it a
  call waits its turn, it never fails for want of a connection;
* a sync tool's body runs on one of ``TOOL_THREADS`` tool threads, which
  treat each call as Django treats a request: ``close_old_connections()``
  before and after (so ``CONN_MAX_AGE`` and ``CONN_HEALTH_CHECKS`` apply;
  with the default 0 the connection is closed when the call ends);
* an async tool's body runs in a ``ThreadSensitiveContext`` of its own, so
  its async ORM queries share one thread (and one connection) for the call,
  closed when the call ends. (Runs start in a context of their own —
  ``AgentRuntime.submit`` — so no request's context is inherited, which
  would pin every run's queries to that request's thread for ever.)

So tool calls hold at most ``TOOL_THREADS`` connections per process, on top
of the ``DATABASE_THREADS`` the app's own work uses, and none between calls.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.db import close_old_connections

from ..conf import toolnexus_settings
from ..registry import PerProcess
from ..threads import DaemonThreadPool, diverting_to

T = TypeVar("T")


def tool_threads() -> int:
    """How many tool calls (and so database connections for tools) one process runs at once."""
    return int(toolnexus_settings.TOOL_THREADS)


class ToolThreads(DaemonThreadPool):
    """The tool threads: never more than ``size`` (a call past them waits
    queued), each call framed by ``close_old_connections()`` as a request is."""

    def __init__(self, size: int) -> None:
        # No elasticity: a hung call keeps its thread (and its connection
        # slot) rather than letting the pool grow past the budget.
        super().__init__(size, name="toolnexus-tool", ceiling=size)
        #: One gate per event loop that calls tools (in practice the runtime's).
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return super().submit(_framed, functools.partial(fn, *args, **kwargs))

    def gate(self) -> asyncio.Semaphore:
        """The running loop's limit on tool calls in flight."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.max_workers)
        return gate


def _framed(call: Callable[[], T]) -> T:
    close_old_connections()
    try:
        return call()
    finally:
        close_old_connections()


#: This process's tool threads (replaced when the TOOLNEXUS setting changes;
#: calls in flight finish on the old ones).
pool = PerProcess(
    "tool threads", lambda: ToolThreads(tool_threads()), close=lambda p: p.shutdown(wait=False)
)


async def in_tool_thread(fn: Callable[[], T]) -> T:
    """``fn()`` on a tool thread, with the caller's context (its run, its
    budget); the caller waits without holding a thread."""
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool.get(), context.run, fn)


async def within_budget(call: Callable[[], Awaitable[T]]) -> T:
    """Run one tool call (``call()``, a toolnexus tool's ``execute``) within
    the budget: it waits for a slot; whatever it hands to ``asyncio.to_thread``
    goes to the tool threads; its async ORM work shares one thread, whose
    connection is closed when the call ends."""
    from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async

    threads = pool.get()
    async with threads.gate():
        with diverting_to(threads):
            async with ThreadSensitiveContext() as ours:
                try:
                    return await call()
                finally:
                    # Only if the call's async ORM work made that thread (and
                    # a connection on it): close it there, as a request's end does.
                    if ours in SyncToAsync.context_to_thread_executor:
                        await sync_to_async(close_old_connections)()
