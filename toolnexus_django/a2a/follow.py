"""Following a Task: blocking sends and SSE streams, on the Task's events.

Both wait on the lifecycle's wake-ups (:mod:`..lifecycle.wakeups`): a move
in this process wakes them at once, another process's move within one
``EVENT_POLL_INTERVAL`` (one poll per process, not per waiting request).
They read the Task's event log, so they see every transition — a state that
lasts a millisecond included — wherever the run happens.

A stream sends one message per event, each with an SSE ``id``: the event's
number for its status update (``"7"``), and ``"<n-1>.<k>"`` for the k-th
artifact update that comes with event n (``"6.1"``), so ids increase within a
Task. A client that reconnects with ``Last-Event-ID`` gets exactly the
messages after that id, then the live ones.

A waiting request (a blocking send, an open stream) holds one server thread
for as long as it waits. :data:`held` bounds how many may do so at once in one
process (``TOOLNEXUS["MAX_HELD_REQUESTS"]``, default 4), so waiting clients
can never take every thread away from the rest of the API.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle import states, wakeups
from ..lifecycle.events import Event
from ..stores import TaskStore
from ..stores.base import Task, state_of
from .dialects import Dialect, artifact_event, status_update, stream_task

SETTLED = states.SETTLED

# -- shutdown ----------------------------------------------------------------------

_stopping = threading.Event()


def stop_waiting() -> None:
    """End every blocking wait and stream of this process now (for a server
    that is shutting down: streams end, clients resubscribe)."""
    _stopping.set()
    wakeups.wake_all()


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
        while state_of(current) not in SETTLED and not _stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if watch.wait(remaining):
                current = store.get(task["id"]) or current
    return current


# -- streams ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One SSE message of a stream: its ``id`` and the JSON-RPC result."""

    id: str | None
    result: Any


@dataclass(frozen=True)
class Position:
    """Where a client is: every message of events up to ``seq`` delivered,
    and the first ``artifacts`` artifact updates of event ``seq + 1``."""

    seq: int
    artifacts: int = 0


_EVENT_ID = re.compile(r"^\s*(\d{1,18})(?:\.(\d{1,6}))?\s*$")


def position_of(last_event_id: str | None) -> Position | None:
    """The :class:`Position` a ``Last-Event-ID`` names (None: no header, or
    not one of this server's ids — then the stream starts afresh)."""
    if not last_event_id:
        return None
    match = _EVENT_ID.match(last_event_id)
    if match is None:
        return None
    return Position(int(match[1]), int(match[2] or 0))


def _messages(event: Event, task: Task, dialect: Dialect, skip: int) -> Iterator[Message]:
    """The SSE messages of one event: an artifact update per artifact it
    added (from the Task: artifacts never change once added), then its status."""
    artifacts = {a.get("artifactId"): a for a in task.get("artifacts") or () if isinstance(a, dict)}
    for k, artifact_id in enumerate(event.artifact_ids, start=1):
        if k <= skip or artifact_id not in artifacts:
            continue
        message = artifact_event(task, artifacts[artifact_id], dialect)
        yield Message(f"{event.seq - 1}.{k}", message)
    final = event.to_state in SETTLED
    yield Message(str(event.seq), status_update(task, event.status, dialect, final=final))


def follow(
    store: TaskStore,
    first: Task,
    dialect: Dialect,
    *,
    history_length: int | None = None,
    after: Position | None = None,
) -> Iterator[Message | None]:
    """The messages of a stream, rendered for ``dialect``. Without ``after``:
    ``first`` (the Task as the caller read it), then one message per later
    event, until an event leaves the Task terminal or waiting on a person.
    With ``after`` (from ``Last-Event-ID``): exactly the messages after it,
    then the live ones, until such an event. ``None`` items ask for a
    keep-alive comment. Ends after STREAM_MAX_SECONDS in any case."""
    max_seconds = float(toolnexus_settings.STREAM_MAX_SECONDS)
    heartbeat = max(0.05, float(toolnexus_settings.STREAM_HEARTBEAT))
    task_id = first["id"]
    with wakeups.watch(store, task_id) as watch:
        if after is None:
            seq = lifecycle.read(first).seq
            yield Message(
                str(seq) if seq else None,
                stream_task(first, dialect, history_length=history_length),
            )
            if state_of(first) in SETTLED:
                return
            position = Position(seq)
        else:
            position = after
        last_sent = time.monotonic()
        deadline = last_sent + max_seconds
        while not _stopping.is_set():
            events = [Event.from_dict(e) for e in store.events(task_id, after=position.seq)]
            if events:
                current = store.get(task_id) or first
                if events[0].seq > position.seq + 1:
                    # The store no longer keeps the events asked for (stores
                    # without an event table keep the newest): start afresh.
                    events = []
                    yield Message(str(lifecycle.read(current).seq), stream_task(current, dialect))
                    if state_of(current) in SETTLED:
                        return
                    position = Position(lifecycle.read(current).seq)
                for event in events:
                    skip = position.artifacts if event.seq == position.seq + 1 else 0
                    yield from _messages(event, current, dialect, skip)
                    position = Position(event.seq)
                    last_sent = time.monotonic()
                    if event.to_state in SETTLED:
                        return
            elif after is not None and state_of(store.get(task_id)) in states.TERMINAL:
                return  # nothing more will ever come
            now = time.monotonic()
            if now >= deadline:
                return
            if now - last_sent >= heartbeat:
                yield None
                last_sent = time.monotonic()
                continue
            watch.wait(max(0.0, min(deadline - now, last_sent + heartbeat - now)))
