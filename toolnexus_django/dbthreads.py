"""Short database work done for coroutines, on a bounded pool of threads.

The ORM is synchronous. A coroutine that needs it (the ASGI endpoint, a run
on the agent runtime's loop) hands the work to this pool with
:func:`run_sync` and waits without holding a thread of its own. The pool's
threads keep their connections between calls (persistent connections, like
``CONN_MAX_AGE`` but for the life of the thread), so ``DATABASE_THREADS`` is
the most connections this work holds at once: the process's connection
budget, whatever the number of open streams or runs.

Not asgiref's ``sync_to_async``: its default (thread-sensitive) executor is
one thread per process, which every request would queue on.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import InterfaceError, OperationalError, connections

from .conf import toolnexus_settings
from .registry import PerProcess
from .threads import DaemonThreadPool

T = TypeVar("T")


#: Set by ``toolnexus_serve --threads`` (before its workers fork).
threads_override: int | None = None


def threads() -> int:
    """How many database threads (and so connections) this process uses."""
    if threads_override is not None:
        return threads_override
    return int(toolnexus_settings.DATABASE_THREADS)


def _make_pool() -> DaemonThreadPool:
    # A thread closes its connections as it exits (the pool closing).
    return DaemonThreadPool(threads(), name="toolnexus-db", on_exit=connections.close_all)


#: This process's database threads (closed, and so their connections, when
#: settings change or the process stops).
pool = PerProcess("database threads", _make_pool, close=lambda p: p.shutdown(wait=False))


def close(timeout: float = 5.0) -> bool:
    """Stop this process's database threads, their connections closed
    (waiting up to ``timeout``); returns whether they all stopped."""
    current = pool.pop()
    return current.shutdown(wait=True, timeout=timeout) if current is not None else True


def _call(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    try:
        return fn(*args, **kwargs)
    except (OperationalError, InterfaceError):
        # A broken connection (a database restart): the next call opens a new one.
        for conn in connections.all(initialized_only=True):
            conn.close()
        raise


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a database thread; the caller's coroutine waits."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool.get(), functools.partial(_call, fn, args, kwargs))
