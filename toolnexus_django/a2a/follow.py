"""Following a Task through the store: blocking sends and SSE streams.

Both poll the configured store — never an in-process queue — so they see a run
that happens in another thread, another process or another machine. Polling
starts at 50 ms and backs off to 500 ms (and starts fast again after each
change), so a waiting request costs at most two cheap primary-key reads a
second.

A waiting request (a blocking send, an open stream) holds one server thread
for as long as it waits. :data:`held` bounds how many may do so at once in one
process (``TOOLNEXUS["MAX_HELD_REQUESTS"]``, default 4), so waiting clients
can never take every thread away from the rest of the API.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from ..conf import toolnexus_settings
from ..stores import TaskStore
from ..stores.base import Task
from . import shapes
from .dialects import Dialect, artifact_event, status_event, stream_task

#: States a send waits for and a stream ends on: terminal, or waiting on a person.
SETTLED = shapes.TERMINAL | shapes.AWAITING_HUMAN


def backoff(first: float = 0.05, factor: float = 1.5, cap: float = 0.5) -> Iterator[float]:
    delay = first
    while True:
        yield delay
        delay = min(cap, delay * factor)


# -- shutdown ----------------------------------------------------------------------

_stopping = threading.Event()


def stop_waiting() -> None:
    """End every blocking wait and stream of this process at its next poll
    (for a server that is shutting down: streams end, clients resubscribe)."""
    _stopping.set()


def resume_waiting() -> None:
    _stopping.clear()


# -- held requests -------------------------------------------------------------------


class HeldRequests:
    """How many requests of this process are waiting on a Task right now."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def hold(self) -> Slot | None:
        """A slot, or None when MAX_HELD_REQUESTS are already waiting."""
        limit = toolnexus_settings.MAX_HELD_REQUESTS
        with self._lock:
            if limit is not None and self._count >= int(limit):
                return None
            self._count += 1
        return Slot(self)

    def _release(self) -> None:
        with self._lock:
            self._count = max(0, self._count - 1)


class Slot:
    """One held request; :meth:`release` is idempotent."""

    def __init__(self, owner: HeldRequests) -> None:
        self._owner: HeldRequests | None = owner

    def release(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            owner._release()

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


held = HeldRequests()


# -- waiting -------------------------------------------------------------------------


def wait_settled(store: TaskStore, task: Task, timeout: float | None = None) -> Task:
    """``task`` as soon as the store shows it terminal or waiting on a person,
    else as it is when ``timeout`` (BLOCKING_TIMEOUT) runs out."""
    limit = float(toolnexus_settings.BLOCKING_TIMEOUT if timeout is None else timeout)
    deadline = time.monotonic() + limit
    current = task
    delays = backoff()
    while shapes.state_of(current) not in SETTLED:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or _stopping.wait(min(next(delays), remaining)):
            break
        current = store.get(task["id"]) or current
    return current


def _status_key(task: Task) -> tuple[str, Any]:
    message = (task.get("status") or {}).get("message") or {}
    return shapes.state_of(task), message.get("messageId")


def follow(
    store: TaskStore,
    first: Task,
    dialect: Dialect,
    *,
    history_length: int | None = None,
) -> Iterator[Any]:
    """The events of a stream, rendered for ``dialect``: ``first`` (the Task),
    then an artifact-update per new artifact and a status-update per change of
    state, until the Task is terminal or waits on a person. ``None`` items
    ask for a keep-alive. Ends after STREAM_MAX_SECONDS in any case."""
    max_seconds = float(toolnexus_settings.STREAM_MAX_SECONDS)
    heartbeat = max(0.05, float(toolnexus_settings.STREAM_HEARTBEAT))
    yield stream_task(first, dialect, history_length=history_length)
    if shapes.state_of(first) in SETTLED:
        return
    seen = {a.get("artifactId") for a in first.get("artifacts") or ()}
    last = _status_key(first)
    last_sent = time.monotonic()
    deadline = last_sent + max_seconds
    delays = backoff()
    while True:
        now = time.monotonic()
        if now >= deadline:
            return
        if now - last_sent >= heartbeat:
            yield None
            last_sent = time.monotonic()
            continue
        pause = min(next(delays), deadline - now, last_sent + heartbeat - now)
        if _stopping.wait(max(0.0, pause)):
            return
        current = store.get(first["id"])
        if current is None:
            return
        events = []
        for artifact in current.get("artifacts") or ():
            if artifact.get("artifactId") not in seen:
                seen.add(artifact.get("artifactId"))
                events.append(artifact_event(current, artifact, dialect))
        settled = shapes.state_of(current) in SETTLED
        key = _status_key(current)
        if key != last or settled:
            last = key
            events.append(status_event(current, dialect, final=settled))
        if events:
            yield from events
            last_sent = time.monotonic()
            delays = backoff()
        if settled:
            return
