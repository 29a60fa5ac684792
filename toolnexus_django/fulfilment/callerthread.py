"""A run's database work on the thread that waits for the run (a Django
Tasks worker's): :class:`CallerThread`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
from collections.abc import Callable
from typing import Any


class CallerThread:
    """A run's database work, done on the thread that waits for the run: a
    Django Tasks worker's own thread (and connection, and transaction — the
    immediate backend runs inside the request's)."""

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()

    async def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._work.put((future, fn, args, kwargs))
        return await asyncio.wrap_future(future)

    def serve(self, outer: concurrent.futures.Future[Any]) -> Any:
        """Do the work handed over until ``outer`` (the run) is done; its result."""
        outer.add_done_callback(lambda _: self._work.put(None))
        while (item := self._work.get()) is not None:
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # handed to the run that asked
                    future.set_exception(exc)
            del item, future
        return outer.result()
