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

import asyncio
import re
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle import states, wakeups
from ..lifecycle.events import Event
from ..runtime.registry import Hook, Stage
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


#: runtime.stop() ends the waits first; runtime.start() lets them wait again.
Hook("blocking waits", Stage.WAITS, start=resume_waiting, stop=lambda _left: stop_waiting())


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
                current = watch.news(current) or store.get(task["id"]) or current
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


def event_messages(event: Event, task: Task, dialect: Dialect, skip: int = 0) -> Iterator[Message]:
    """The SSE messages of one event: an artifact update per artifact it
    added (from the Task: artifacts never change once added), then its status.
    A reviewer's move (:data:`~..lifecycle.states.UNSEEN`) sends nothing."""
    if event.kind in states.UNSEEN:
        return
    artifacts = {a.get("artifactId"): a for a in task.get("artifacts") or () if isinstance(a, dict)}
    for k, artifact_id in enumerate(event.artifact_ids, start=1):
        if k <= skip or artifact_id not in artifacts:
            continue
        message = artifact_event(task, artifacts[artifact_id], dialect)
        yield Message(f"{event.seq - 1}.{k}", message)
    final = event.to_state in SETTLED
    yield Message(str(event.seq), status_update(task, event.status, dialect, final=final))


def _ended(until: asyncio.Future[Any] | None) -> bool:
    return until is not None and until.done()


def _skeleton(task: Task) -> Task:
    """What an event's message needs of a Task it cannot read any more."""
    return {k: task[k] for k in ("id", "contextId", "kind") if k in task}


class Follower:
    """One stream's progress through its Task's events: what to send next,
    and when it is over. The drivers — :func:`follow` (a thread waits) and
    :func:`afollow` (a coroutine waits) — do the reading and the waiting."""

    def __init__(
        self,
        first: Task,
        dialect: Dialect,
        *,
        history_length: int | None = None,
        after: Position | None = None,
    ) -> None:
        self.first = first
        self.task_id = str(first["id"])
        self.dialect = dialect
        self.history_length = history_length
        self.after = after
        self.position = after or Position(lifecycle.read(first).seq)
        self.done = False
        now = time.monotonic()
        self.heartbeat = max(0.05, float(toolnexus_settings.STREAM_HEARTBEAT))
        self.deadline = now + float(toolnexus_settings.STREAM_MAX_SECONDS)
        self.last_sent = now

    def opening(self) -> list[Message]:
        """Without ``after``: the Task as the caller read it. Either way the
        Task is let go of after this: what comes next renders the Task read
        with the events; only its ids stay, for a Task gone from the store
        (an idle stream keeps no copy of its Task: issue 32's 10,000)."""
        first, self.first = self.first, _skeleton(self.first)
        if self.after is not None:
            return []
        seq = self.position.seq
        task = stream_task(first, self.dialect, history_length=self.history_length)
        self.done = state_of(first) in SETTLED
        return [Message(str(seq) if seq else None, task)]

    def read(self, store: TaskStore) -> tuple[list[Event], Task | None]:
        """What the store has after the position (the Task too, when needed)."""
        events = [Event.from_dict(e) for e in store.events(self.task_id, after=self.position.seq)]
        current = store.get(self.task_id) if events or self.after is not None else None
        return events, current

    def take(self, events: list[Event], current: Task | None) -> list[Message]:
        """The messages for what :meth:`read` found; sets :attr:`done`."""
        out: list[Message] = []
        task = current or self.first
        if not events:
            if self.after is not None and state_of(current) in states.TERMINAL:
                self.done = True  # nothing more will ever come
            return out
        if events[0].seq > self.position.seq + 1:
            # The store no longer keeps the events asked for (stores without
            # an event table keep the newest): start afresh from the Task.
            seq = lifecycle.read(task).seq
            out.append(Message(str(seq), stream_task(task, self.dialect)))
            self.position = Position(seq)
            self.done = state_of(task) in SETTLED
            events = []
        for event in events:
            skip = self.position.artifacts if event.seq == self.position.seq + 1 else 0
            out.extend(event_messages(event, task, self.dialect, skip))
            self.position = Position(event.seq)
            if event.to_state in SETTLED and event.kind not in states.UNSEEN:
                self.done = True
                break
        self.last_sent = time.monotonic()
        return out

    def pause(self) -> float | None:
        """Seconds to wait for a move; None: send a keep-alive now; 0 after
        the deadline (the stream ends)."""
        now = time.monotonic()
        if now >= self.deadline:
            self.done = True
            return 0.0
        if now - self.last_sent >= self.heartbeat:
            self.last_sent = now
            return None
        return max(0.0, min(self.deadline - now, self.last_sent + self.heartbeat - now))


def follow(
    store: TaskStore,
    first: Task,
    dialect: Dialect,
    *,
    history_length: int | None = None,
    after: Position | None = None,
) -> Iterator[Message | None]:
    """The messages of a stream, rendered for ``dialect``, from a thread.
    Without ``after``: ``first`` (the Task as the caller read it), then one
    message per later event, until an event leaves the Task terminal or
    waiting on a person. With ``after`` (from ``Last-Event-ID``): exactly the
    messages after it, then the live ones, until such an event. ``None``
    items ask for a keep-alive comment. Ends after STREAM_MAX_SECONDS in any
    case."""
    follower = Follower(first, dialect, history_length=history_length, after=after)
    del first  # the follower lets it go once it has sent it
    with wakeups.watch(store, follower.task_id) as watch:
        yield from follower.opening()
        while not follower.done and not _stopping.is_set():
            yield from follower.take(*follower.read(store))
            if follower.done:
                return
            pause = follower.pause()
            if pause is None:
                yield None
            elif not follower.done:
                watch.wait(pause)


async def afollow(
    store: TaskStore,
    first: Task,
    dialect: Dialect,
    run_sync: Callable[..., Awaitable[Any]],
    *,
    history_length: int | None = None,
    after: Position | None = None,
    until: asyncio.Future[Any] | None = None,
) -> AsyncGenerator[Message | None, None]:
    """:func:`follow` for a coroutine: it waits holding no thread; the
    store is read with ``run_sync`` (on a thread pool) once as it begins,
    then only when a wake-up says the Task moved. A quiet stream's
    keep-alive reads nothing: 1,000 of them re-read their events twice a
    heartbeat (133 reads a second), and what a wake-up misses the poller's
    beat finds (:mod:`toolnexus_django.lifecycle.wakeups`).

    ``until``: a future of this loop whose end ends the stream at once (its
    client went away), even mid-wait — so the one who reads the messages
    need not race each step against it (a task per message)."""
    follower = Follower(first, dialect, history_length=history_length, after=after)
    del first  # the follower lets it go once it has sent it
    with await wakeups.awatch(store, follower.task_id, run_sync) as watch:
        if until is not None:
            until.add_done_callback(watch.interrupt)
        message: Message | None  # an idle stream keeps none it sent (None after each)
        try:
            for message in follower.opening():
                yield message
            message = None
            moved = True  # what happened since the caller read the Task
            while not (follower.done or _stopping.is_set() or _ended(until)):
                if moved:
                    for message in follower.take(*await run_sync(follower.read, store)):
                        yield message
                    message = None
                    if follower.done:
                        return
                pause = follower.pause()
                if pause is None:
                    moved = False
                    yield None
                elif not follower.done:
                    moved = await watch.wait_async(pause)
        finally:
            if until is not None:
                until.remove_done_callback(watch.interrupt)


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
        while state_of(current) not in SETTLED and not _stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if await watch.wait_async(remaining):
                # A move in this process hands over the version it stored.
                current = watch.news(current) or await run_sync(store.get, task["id"]) or current
    return current
