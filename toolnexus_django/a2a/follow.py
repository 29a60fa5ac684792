"""Following a Task: blocking sends and SSE streams, on the Task's events.

Both wait on the lifecycle's wake-ups (:mod:`..lifecycle.wakeups`): a move
in this process wakes them at once, another process's move within one
``EVENT_POLL_INTERVAL`` (one poll per process, not per waiting request).
They read the Task's event log, so they see every transition — a state that
lasts a millisecond included — wherever the run happens.

A stream sends one message per event, each with an SSE ``id``: the event's
number for its status update (``"7"``), and ``"<n-1>.<k>"`` for the k-th
artifact update that comes with event n (``"6.1"``), and between two events
``"<n>.0.<k>"`` for the live updates of the run that started at event n (its
answer as it is written, its tool calls: :mod:`.liveevents`), so ids increase
within a Task. A client that reconnects with ``Last-Event-ID`` gets exactly
the messages after that id, then the live ones.

A waiting request (a blocking send, an open stream) holds one server thread
for as long as it waits. :data:`held` bounds how many may do so at once in one
process (``TOOLNEXUS["MAX_HELD_REQUESTS"]``, default 4), so waiting clients
can never take every thread away from the rest of the API.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle import live, states, wakeups
from ..lifecycle.events import Event
from ..stores import TaskStore
from ..stores.base import Task, state_of
from .dialects import Dialect, artifact_event, status_update, stream_task
from .held import HeldRequests as HeldRequests
from .held import Slot as Slot
from .held import held as held
from .liveevents import live_messages
from .waits import await_settled as await_settled
from .waits import resume_waiting as resume_waiting
from .waits import stop_waiting as stop_waiting
from .waits import stopping
from .waits import wait_settled as wait_settled

SETTLED = states.SETTLED

# -- streams ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One SSE message of a stream: its ``id`` and the JSON-RPC result."""

    id: str | None
    result: Any


@dataclass(frozen=True)
class Position:
    """Where a client is: every message of events up to ``seq`` delivered,
    the first ``live`` live updates of the run that started at event
    ``seq``, and the first ``artifacts`` artifact updates of event ``seq + 1``."""

    seq: int
    artifacts: int = 0
    live: int = 0


_EVENT_ID = re.compile(r"^\s*(\d{1,18})(?:\.(\d{1,6})(?:\.(\d{1,9}))?)?\s*$")


def position_of(last_event_id: str | None) -> Position | None:
    """The :class:`Position` a ``Last-Event-ID`` names (None: no header, or
    not one of this server's ids — then the stream starts afresh)."""
    if not last_event_id:
        return None
    match = _EVENT_ID.match(last_event_id)
    if match is None:
        return None
    if match[3] is not None:
        return Position(int(match[1]), live=int(match[3]))
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


def shown_after(shown: str | None, updates: Sequence[Any]) -> str | None:
    """The answer's text a client holds after ``updates`` (None: unknown)."""
    for update in updates:
        if "text" in update:
            text = str(update["text"])
            shown = text if update.get("reset") else None if shown is None else shown + text
    return shown


#: The moves that start a run (its live updates come after them).
RUN_STARTS = frozenset({"claim", "resume"})


#: What :meth:`Follower.read_all` found: events, the Task (when needed), the
#: live updates of the run at the position, those of the run the events began.
Found = tuple[list[Event], Task | None, list[Any], list[Any]]


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
        #: The answer's text as the client holds it, of the run at the
        #: position (None: unknown). The final artifact's rest goes as one
        #: more chunk when the run ended before its last ones were read.
        self.shown: str | None = None
        self._counted = after is None or after.live == 0

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

    def read_all(self, store: TaskStore, moved: bool = True) -> Found:
        """:meth:`read` (when ``moved``: the Task may have moved), the live
        updates after the position — read after the events: a run's last
        updates are made before its last move (and its feed outlives it) —
        and those of a run the events began."""
        known = self._count(store) if not self._counted else True
        events, current = self.read(store) if moved else ([], None)
        before: list[Any] = []
        if known and not self.position.artifacts:  # past them once at the next event's
            before = live.updates_after(store, self.task_id, *self._where())
        if not events or events[-1].to_state in SETTLED:
            return events, current, before, []
        # The run that a claim (or a resume's start) began may already have updates.
        return events, current, before, live.updates_after(store, self.task_id, events[-1].seq, 0)

    def _where(self) -> tuple[int, int]:
        return self.position.seq, self.position.live

    def _count(self, store: TaskStore) -> bool:
        """A reconnect: the text the client holds, from the run's updates up
        to its position — once the store has them all (another process's run
        writes them a batch at a time, after its own streams showed them)."""
        had = live.updates_after(store, self.task_id, self.position.seq, 0)
        if not had or int(had[-1].get("n") or 0) < self.position.live:
            return False
        self._counted = True
        self.shown = shown_after(None, had[: self.position.live])
        return True

    def read_here(self) -> Found | None:
        """:meth:`read_all` after a wake-up that told of live updates only,
        when the run is in this process (its feed is read in memory: no
        thread needed); None when :meth:`read` must be used."""
        feed = live.feeds().get(self.task_id)
        if feed is None or feed.seq != self.position.seq or self.position.artifacts:
            return None
        return [], None, feed.after(self.position.live), []

    def take(
        self,
        events: list[Event],
        current: Task | None,
        updates: Sequence[Any] = (),
        later: Sequence[Any] = (),
    ) -> list[Message]:
        """The messages for what :meth:`read_all` found — the live updates
        of the run at the position, the events, the updates of the run they
        began — and sets :attr:`done`."""
        task = current or self.first
        out = self._live(task, updates)
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
            if self.shown is not None and event.artifact_ids:
                out.extend(self._rest(task, event.artifact_ids[0]))
            out.extend(event_messages(event, task, self.dialect, skip))
            # A run starts: a stream that follows it from there holds none of
            # its answer yet (a reconnect may be replaying what it missed:
            # it gets the rest only once it is sure what it holds).
            self.position = Position(event.seq)
            self.shown = "" if event.kind in RUN_STARTS and self.after is None else None
            if event.to_state in SETTLED and event.kind not in states.UNSEEN:
                self.done = True
                break
        self.last_sent = time.monotonic()
        return out if self.done else out + self._live(task, later)

    def _live(self, task: Task, updates: Sequence[Any]) -> list[Message]:
        """The messages of live updates of the run at the position."""
        if not updates:
            return []
        seq = self.position.seq
        out = [Message(i, r) for i, r in live_messages(task, updates, self.dialect, seq)]
        self.position = Position(seq, live=int(updates[-1].get("n") or 0))
        self.shown = shown_after(self.shown, updates)
        self.last_sent = time.monotonic()
        return out

    def _rest(self, task: Task, artifact_id: str) -> list[Message]:
        """The final answer's text the client's chunks lack, as one more
        chunk (all of it when the stream read none before the run ended)."""
        if artifact_id != live.answer_artifact_id(self.task_id):
            return []  # not a streamed run's answer
        artifact = next(
            (a for a in task.get("artifacts") or () if a.get("artifactId") == artifact_id), None
        )
        parts = artifact.get("parts") if isinstance(artifact, dict) else None
        text = "".join(p.get("text", "") for p in parts or () if isinstance(p, dict))
        shown = self.shown or ""
        if len(text) <= len(shown) or not text.startswith(shown):
            return []
        n = self.position.live + 1
        update = {"n": n, "text": text[len(shown) :], "artifact": artifact_id, "reset": not shown}
        return [
            Message(i, r) for i, r in live_messages(task, [update], self.dialect, self.position.seq)
        ]

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
        watch.follow_live()
        yield from follower.opening()
        moved = True
        while not follower.done and not stopping.is_set():
            yield from follower.take(*follower.read_all(store, moved))
            if follower.done:
                return
            pause = follower.pause()
            moved = True  # after a keep-alive or a timeout: look again, as ever
            if pause is None:
                yield None
            elif not follower.done and watch.wait(pause):
                moved, came = watch.stirred()
                moved = moved or not came


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
        watch.follow_live()
        if until is not None:
            until.add_done_callback(watch.interrupt)
        message: Message | None  # an idle stream keeps none it sent (None after each)
        try:
            for message in follower.opening():
                yield message
            message = None
            # What happened since the caller read the Task: it may have moved.
            moved, came = True, False
            while not (follower.done or stopping.is_set() or _ended(until)):
                if moved or came:
                    # Live updates alone, of a run in this process: read in memory.
                    found = None if moved else follower.read_here()
                    if found is None:
                        found = await run_sync(follower.read_all, store, moved)
                    for message in follower.take(*found):
                        yield message
                    message = None
                    if follower.done:
                        return
                pause = follower.pause()
                if pause is None:
                    moved = came = False
                    yield None
                elif not follower.done:
                    moved = came = False
                    if await watch.wait_async(pause):
                        moved, came = watch.stirred()
                        moved = moved or not came
        finally:
            if until is not None:
                until.remove_done_callback(watch.interrupt)
