"""A small pool of daemon worker threads.

``concurrent.futures.ThreadPoolExecutor`` joins its threads at interpreter exit,
so one model call that hangs would hang the process on shutdown (DESIGN §7).
This pool's threads are daemons: shutdown waits for them only as long as the
caller allows, then the process may leave.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

_SENTINEL = object()
_names = itertools.count(1)


class DaemonThreadPool(concurrent.futures.ThreadPoolExecutor):
    """An executor whose workers are daemon threads, started on demand.

    It subclasses ``ThreadPoolExecutor`` only because
    ``loop.set_default_executor`` accepts nothing else; ``submit`` and
    ``shutdown`` are its own and none of the parent's machinery runs.
    """

    def __init__(self, max_workers: int, name: str = "toolnexus-worker") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        super().__init__(max_workers=1)
        self.max_workers = max_workers
        self.name = name
        self.pid = os.getpid()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        with self._lock:
            if self._shutdown:
                raise RuntimeError(f"{self.name} pool is shut down")
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            self._queue.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._workers) < self.max_workers:
                thread = threading.Thread(
                    target=self._work, name=f"{self.name}-{next(_names)}", daemon=True
                )
                thread.start()
                self._workers.append(thread)
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _SENTINEL:
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # handed to whoever waits on the future
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del item, future, fn, args, kwargs
            self._idle.release()

    def shutdown(  # type: ignore[override]
        self, wait: bool = True, *, cancel_futures: bool = False, timeout: float | None = None
    ) -> bool:
        """Stop accepting work. With ``wait``, wait for the workers (at most
        ``timeout`` seconds); returns whether they all finished."""
        with self._lock:
            self._shutdown = True
            threads = list(self._workers)
        if cancel_futures:
            pending: list[Any] = []
            while True:
                try:
                    pending.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for item in pending:
                if item is not _SENTINEL:
                    item[0].cancel()
        for _ in threads:
            self._queue.put(_SENTINEL)
        if not wait:
            return False
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in threads:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)
        return not any(t.is_alive() for t in threads)

    @property
    def busy(self) -> bool:
        return not self._queue.empty()
