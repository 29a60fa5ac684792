"""Waiting for a Task to settle (blocking sends), and the end of every wait
of a stopping process (blocking sends and streams alike).

A blocking send waits on the lifecycle's wake-ups (:mod:`..lifecycle.wakeups`)
until its Task is terminal or waits on a person, or BLOCKING_TIMEOUT passes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..conf import toolnexus_settings
from ..lifecycle import states, wakeups
from ..runtime.registry import Hook, Stage
from ..stores import TaskStore
from ..stores.base import Task, state_of

SETTLED = states.SETTLED

# -- shutdown ----------------------------------------------------------------------

stopping = threading.Event()


def stop_waiting() -> None:
    """End every blocking wait and stream of this process now (for a server
    that is shutting down: streams end, clients resubscribe)."""
    stopping.set()
    wakeups.wake_all()


def resume_waiting() -> None:
    stopping.clear()


#: runtime.stop() ends the waits first; runtime.start() lets them wait again.
Hook("blocking waits", Stage.WAITS, start=resume_waiting, stop=lambda _left: stop_waiting())


# -- blocking sends ----------------------------------------------------------------------


def wait_settled(store: TaskStore, task: Task, timeout: float | None = None) -> Task:
    """``task`` as soon as it is terminal or waiting on a person, else as it
    is when ``timeout`` (BLOCKING_TIMEOUT) runs out."""
    limit = float(toolnexus_settings.BLOCKING_TIMEOUT if timeout is None else timeout)
    deadline = time.monotonic() + limit
    current = task
    with wakeups.watch(store, task["id"]) as watch:
        # Read once after watching: a move before the watch began is seen too.
        current = store.get(task["id"]) or current
        while state_of(current) not in SETTLED and not stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if watch.wait(remaining):
                current = watch.news(current) or store.get(task["id"]) or current
    return current


async def await_settled(
    store: TaskStore,
    task: Task,
    run_sync: Callable[..., Awaitable[Any]],
    timeout: float | None = None,
) -> Task:
    """:func:`wait_settled` for a coroutine (it holds no thread while it waits)."""
    limit = float(toolnexus_settings.BLOCKING_TIMEOUT if timeout is None else timeout)
    deadline = time.monotonic() + limit
    with await wakeups.awatch(store, task["id"], run_sync) as watch:
        current = await run_sync(store.get, task["id"]) or task
        while state_of(current) not in SETTLED and not stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if await watch.wait_async(remaining):
                # A move in this process hands over the version it stored.
                current = watch.news(current) or await run_sync(store.get, task["id"]) or current
    return current
