"""Short database work done for coroutines, on a bounded pool of threads.

The ORM is synchronous. A coroutine that needs it (the ASGI endpoint, a run
on the agent runtime's loop) hands the work to this pool with
:func:`run_sync` and waits without holding a thread of its own. The pool's
threads keep their connections between calls (persistent connections, like
``CONN_MAX_AGE`` but for the life of the thread), so ``DATABASE_THREADS`` is
the most connections this work holds at once: the process's connection
budget, whatever the number of open streams or runs.

Not asgiref's ``sync_to_async``: its default (thread-sensitive) executor is
one thread per process, which every request would queue on. Not a
``concurrent.futures`` executor either: a call here is one put on a C queue
and one ``call_soon_threadsafe`` back (profiled: the executor's Condition
and the future chaining were most of a hop's cost).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

from ..conf import toolnexus_settings
from .registry import PerProcess, Stage

T = TypeVar("T")

logger = logging.getLogger("toolnexus_django.dbthreads")

#: Set by ``toolnexus_serve --threads`` (before its workers fork).
threads_override: int | None = None


#: DATABASE_THREADS when the project does not set it and its default
#: database is SQLite, which takes one writer at a time: more threads only
#: queue on its lock (an end-to-end Task cost 15-30% more CPU with 16,
#: benchmarks/RESULTS.md, 2026-12-02).
SQLITE_THREADS = 4


def threads() -> int:
    """How many database threads (and so connections) this process uses."""
    if threads_override is not None:
        return threads_override
    if (
        "DATABASE_THREADS" not in toolnexus_settings.user_settings
        and connections[DEFAULT_DB_ALIAS].vendor == "sqlite"
    ):
        return SQLITE_THREADS
    return int(toolnexus_settings.DATABASE_THREADS)


_STOP = object()


class DatabaseThreads:
    """``size`` daemon threads taking work from one queue, started on demand."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("DATABASE_THREADS must be at least 1")
        self.size = size
        self.pid = os.getpid()
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    @property
    def waiting(self) -> int:
        """Work items not yet taken by a thread (metrics' queue depth; approximate)."""
        return self._work.qsize()

    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], args: Any) -> Any:
        future = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the database threads are closed")
            if self._idle:
                self._idle -= 1  # that thread takes this item
            elif len(self._threads) < self.size:
                thread = threading.Thread(
                    target=self._serve, name=f"toolnexus-db-{len(self._threads) + 1}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._work.put((loop, future, fn, args))
        return future

    def _serve(self) -> None:
        statements = _StatementCount()
        for alias in connections:
            connections[alias].execute_wrappers.append(statements)
        try:
            while (item := self._work.get()) is not _STOP:
                loop, future, fn, args = item
                try:
                    result = _call(fn, args, statements)
                except BaseException as exc:
                    loop.call_soon_threadsafe(_fail, future, exc)
                else:
                    loop.call_soon_threadsafe(_resolve, future, result)
                del item, loop, future, fn, args
                with self._lock:
                    self._idle += 1
        except RuntimeError:  # the caller's loop is closed: nobody waits any more
            pass
        finally:
            connections.close_all()

    def close(self, timeout: float | None = None) -> bool:
        """No more work; the threads finish what is queued, close their
        connections and exit (waited for up to ``timeout``)."""
        with self._lock:
            self._closed = True
            running = list(self._threads)
        for _ in running:
            self._work.put(_STOP)
        if os.getpid() != self.pid:
            return True
        for thread in running:
            thread.join(timeout)
        return not any(t.is_alive() for t in running)


class _StatementCount:
    """An execute wrapper counting the statements that went through."""

    def __init__(self) -> None:
        self.done = 0

    def __call__(self, execute: Callable[..., Any], *args: Any) -> Any:
        result = execute(*args)
        self.done += 1
        return result


def _close_connections() -> None:
    for conn in connections.all(initialized_only=True):
        conn.close()


def _call(fn: Callable[..., Any], args: Any, statements: _StatementCount) -> Any:
    """``fn(*args)`` on this thread's connections. A connection that broke
    while the thread waited (a database restart) fails on its first
    statement: then nothing was done, so the call runs again on a new one.
    A later failure is the caller's (the connection is closed for the next)."""
    statements.done = 0
    try:
        return fn(*args)
    except (OperationalError, InterfaceError):
        _close_connections()
        if statements.done:
            raise
    try:
        return fn(*args)
    except (OperationalError, InterfaceError):
        _close_connections()
        raise


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _make_pool() -> DatabaseThreads:
    return DatabaseThreads(threads())


#: This process's database threads (closed, and so their connections, when
#: settings change or the process stops: last, since every stage may write).
pool = PerProcess(
    "database threads",
    _make_pool,
    close=lambda p: p.close(timeout=0),
    stage=Stage.DATABASE,
    eager=True,
    stop=lambda p, left: p.close(timeout=2),
)


def close(timeout: float = 5.0) -> bool:
    """Stop this process's database threads, their connections closed
    (waiting up to ``timeout``); returns whether they all stopped."""
    current = pool.pop()
    return current.close(timeout=timeout) if current is not None else True


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a database thread; the caller's coroutine waits."""
    if kwargs:
        fn = functools.partial(fn, **kwargs)
    result: T = await pool.get().submit(asyncio.get_running_loop(), fn, args)
    return result
