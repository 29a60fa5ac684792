"""The TaskStore contract every store implements.

A Task is a plain JSON-able dict keyed by ``task["id"]`` in the canonical
(toolnexus / A2A v0.3) shape. Besides the public fields it may carry a
``"_private"`` section (owner, the original input, the pending Request, the
transcript needed to resume): stores persist it like everything else, and the
wire layer never renders it (see :mod:`toolnexus_django.a2a.dialects`).

Like ``django.contrib.sessions.backends.base``: a small abstract base with the
sync methods a subclass must provide, and async twins that default to running
those off the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils.dateparse import parse_datetime

from ..conf import toolnexus_settings

Task = dict[str, Any]

#: Key of the server-side section of a stored Task; never sent on the wire.
PRIVATE_KEY = "_private"

#: The longest Task id any store accepts; longer ids are simply unknown.
MAX_ID_LENGTH = 255

#: States a Task never leaves: no store changes a Task once it is in one.
TERMINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected"})
#: States in which a run waits on a person.
AWAITING_HUMAN_STATES = frozenset({"input-required", "auth-required"})
#: The event kinds that are people's (and expiry's) decisions on a Task: the
#: admin's list of review decisions across Tasks. (``review_claim``: a
#: reviewer's hold, stored before it was named so.)
DECISION_KINDS = frozenset(
    {"answer", "expire", "cancel", "review_hold", "review_claim", "review_release",
     "review_approval"}
)  # fmt: skip


class DuplicateMessage(Exception):
    """A send repeats a ``messageId`` its owner already started a Task with
    (within ``IDEMPOTENCY_WINDOW``): ``task_id`` is that Task's."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"this message already started Task {task_id}")
        self.task_id = task_id


def message_key_of(task: Task | None) -> str | None:
    """The Task's message key (who sent which messageId), if it has one."""
    key = ((task or {}).get(PRIVATE_KEY) or {}).get("message_key")
    return key if isinstance(key, str) and key else None


def repeats_since() -> datetime | None:
    """Sends since when count as repeats (``IDEMPOTENCY_WINDOW`` seconds
    ago; None: for ever). Raises LookupError when repeats are not looked for
    (the window is 0)."""
    window = toolnexus_settings.IDEMPOTENCY_WINDOW
    if window is None:
        return None
    if float(window) <= 0:
        raise LookupError("IDEMPOTENCY_WINDOW is 0: sends are not deduplicated")
    return datetime.now(UTC) - timedelta(seconds=float(window))


class MessageIndex:
    """Which Task each message key started, and when (the memory and file
    stores, and custom stores: within one process). Use under a lock."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[str, datetime]] = {}

    def taken(self, key: str | None) -> str | None:
        """The id of the Task ``key`` started within the window, if any."""
        if key is None:
            return None
        try:
            since = repeats_since()
        except LookupError:
            return None
        held = self._keys.get(key)
        if held is None or (since is not None and held[1] < since):
            return None
        return held[0]

    def record(self, key: str | None, task_id: str) -> None:
        if key is not None:
            self._keys[key] = (task_id, datetime.now(UTC))


class TerminalTaskError(ValueError):
    """A save would change a Task that already reached a terminal state."""

    def __init__(self, task_id: str, state: str) -> None:
        super().__init__(f"Task {task_id[:100]} is {state}: a finished Task never changes")
        self.task_id = task_id
        self.state = state


def state_of(task: Task | None) -> str:
    return str(((task or {}).get("status") or {}).get("state") or "")


def revision_of(task: Task | None) -> int:
    """How many guarded transitions the Task has been through."""
    return int(((task or {}).get(PRIVATE_KEY) or {}).get("revision") or 0)


def same_version(stored: Task | None, expected: Task) -> bool:
    """Whether ``stored`` is still the version ``expected`` was read as."""
    return (
        stored is not None
        and state_of(stored) == state_of(expected)
        and revision_of(stored) == revision_of(expected)
    )


def bump_revision(expected: Task, new: Task) -> None:
    """Give ``new`` the revision after ``expected``'s (in place)."""
    new.setdefault(PRIVATE_KEY, {})["revision"] = revision_of(expected) + 1


Event = dict[str, Any]

#: Events a store without an event table keeps inline with each Task (the newest).
INLINE_EVENTS_KEPT = 100


def inline_events(task: Task | None) -> list[Event]:
    """The events a store keeps inside the Task (``_private.events``)."""
    events = ((task or {}).get(PRIVATE_KEY) or {}).get("events")
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def add_inline_event(new: Task, expected: Task | None, event: Event | None) -> None:
    """Carry ``expected``'s inline events over to ``new`` and append ``event``
    (in place), keeping the newest INLINE_EVENTS_KEPT."""
    events = inline_events(expected) if expected is not None else inline_events(new)
    if event is not None:
        events = [*events, event][-INLINE_EVENTS_KEPT:]
    if events:
        new.setdefault(PRIVATE_KEY, {})["events"] = events


@dataclass(frozen=True)
class TaskQuery:
    """Which of an owner's Tasks to list (ListTasks): newest activity first,
    ties by id descending, starting strictly after ``after`` (an
    ``(updated_at, id)`` cursor), at most ``limit``."""

    owner: str | None
    context_id: str | None = None
    state: str | None = None
    updated_after: datetime | None = None
    after: tuple[datetime, str] | None = None
    limit: int = 50


class TaskStore(ABC):
    """Pluggable Task persistence: ``get(id)`` and ``save(task)``.

    A custom store need only implement :meth:`get` and :meth:`save`;
    :meth:`aget` and :meth:`asave` run them in a worker thread by default.
    """

    @abstractmethod
    def get(self, id: str) -> Task | None:
        """The stored Task, or ``None`` when the id is unknown."""

    @abstractmethod
    def save(self, task: Task) -> None:
        """Persist ``task`` under ``task["id"]`` (insert or replace)."""

    def create(self, task: Task, event: Event | None = None) -> None:
        """Store a new Task with its first event — unless its message key is
        taken (:class:`DuplicateMessage`). This default keeps the event
        inline, in the Task (see :func:`inline_events`), and knows the
        message keys of this process only."""
        with self._transition_lock():
            index: MessageIndex = self.__dict__.setdefault("_message_index", MessageIndex())
            key = message_key_of(task)
            if (taken := index.taken(key)) is not None and self.get(taken) is not None:
                raise DuplicateMessage(taken)
            add_inline_event(task, None, event)
            self.save(task)
            index.record(key, task_id_of(task))

    def compare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        """Guarded transition: store ``new`` only if the stored Task is still
        ``expected`` (same state and revision) and not terminal, together with
        ``event`` (the transition's event) — both or neither. Returns whether
        it won; ``new`` gets the next revision. Two callers racing from the
        same version: exactly one wins, and only its event is kept.

        This default (for custom stores that implement only get/save) is atomic
        within one process and keeps events inline; the built-in stores
        override it with a database conditional UPDATE (and an event row in
        the same transaction), an OS file lock, or their own lock.
        """
        with self._transition_lock():
            stored = self.get(new["id"])
            if not same_version(stored, expected) or state_of(stored) in TERMINAL_STATES:
                return False
            bump_revision(expected, new)
            add_inline_event(new, stored, event)
            self.save(new)
            return True

    def events(self, task_id: str, after: int = 0) -> list[Event]:
        """The Task's events with ``seq`` greater than ``after``, oldest first
        (this default: those kept inline, the newest INLINE_EVENTS_KEPT)."""
        return [e for e in inline_events(self.get(task_id)) if int(e.get("seq") or 0) > after]

    def changes_since(self, cursor: Any) -> tuple[Any, Mapping[str, int] | AbstractSet[str]] | None:
        """``(new cursor, {Task id: seq of its newest event since cursor})``
        — one query that tells a process which Tasks moved anywhere and how
        far (a waiter already handed that seq by a move in its own process
        is not woken again); ``cursor=None`` asks for the current position
        only. A store may give a set of ids instead of the mapping (as
        before seqs were asked for): each then wakes its waiters to read the
        Task. None when the store cannot say (the caller then reads the
        Tasks it watches)."""
        return None

    #: Whether the store keeps a running Task's live updates (its answer as
    #: it is written, its tool calls) for streams served by other processes
    #: (:mod:`toolnexus_django.lifecycle.live`). Without: only the process
    #: that runs the Task streams them; elsewhere a stream shows the moves.
    keeps_live_updates = False

    def add_live_updates(self, task_id: str, seq: int, items: list[dict[str, Any]]) -> None:
        """Keep ``items`` (numbered by their ``n``) of the run that started
        at event ``seq``. Only called when :attr:`keeps_live_updates`."""
        raise NotImplementedError

    def live_updates(self, task_id: str, seq: int, after: int = 0) -> list[dict[str, Any]]:
        """The kept updates of the run that started at event ``seq``
        numbered above ``after``, in order."""
        return []

    def live_changes_since(self, cursor: Any) -> tuple[Any, dict[str, tuple[int, int]]] | None:
        """As :meth:`changes_since`, for live updates: ``(new cursor, {Task
        id: (seq, the newest update's number)})``; None when it keeps none."""
        return None

    def drop_live_updates(self, task_id: str) -> None:
        """Forget the Task's live updates (its run ended: its event says it all)."""
        return None

    def waiting_ids(self, expired_by: datetime | None = None) -> Iterable[str]:
        """Ids of Tasks waiting on a person — only those whose pending Request
        expired at or before ``expired_by`` when it is given. Used by the
        expiry sweep; a custom store that does not implement it simply takes
        no part in expiry."""
        return ()

    def stale_ids(
        self, now: datetime, *, submitted_before: datetime, unleased_before: datetime
    ) -> Iterable[str]:
        """Ids of Tasks a worker should look at again: ``working`` ones whose
        lease expired by ``now`` (or that have none and last moved before
        ``unleased_before``), and ``submitted`` ones not taken since
        ``submitted_before``. Used by recovery; a custom store that does not
        implement it takes no part in recovery."""
        return ()

    def _transition_lock(self) -> threading.Lock:
        lock: threading.Lock | None = self.__dict__.get("_cas_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_cas_lock", threading.Lock())
        return lock

    async def aget(self, id: str) -> Task | None:
        return await asyncio.to_thread(self.get, id)

    async def asave(self, task: Task) -> None:
        await asyncio.to_thread(self.save, task)

    async def acompare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        return await asyncio.to_thread(self.compare_and_set, expected, new, event)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def task_id_of(task: Any) -> str:
    """The id of a Task about to be saved, or a clear error."""
    if not isinstance(task, dict):
        raise TypeError(f"a Task is a dict, got {type(task).__name__}")
    tid = task.get("id")
    if not isinstance(tid, str) or not tid:
        raise ValueError("a Task needs a non-empty string 'id'")
    return tid


def parse_instant(value: Any) -> datetime | None:
    """An ISO 8601 instant (a Request's expiresAt, a lease's until, a status
    timestamp, a client's filter) as an aware datetime, read by Django's
    ``parse_datetime``; None when absent or unreadable — so an unreadable
    expiry never expires anything. Naive means UTC."""
    # What only parse_datetime's fallback pattern would take stays refused:
    # other scripts' digits, surrounding space (its "$" passes a newline).
    if not isinstance(value, str) or not value.isascii() or value != value.strip():
        return None
    try:
        moment = parse_datetime(value)
    except ValueError:  # well formed, but no such moment
        return None
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def request_expiry(task: Task | None) -> datetime | None:
    """When the pending Request of ``task`` expires, if it says."""
    pending = ((task or {}).get(PRIVATE_KEY) or {}).get("pending") or {}
    return parse_instant(pending.get("expiresAt"))


def pending_expired(task: Task, by: datetime) -> bool:
    """Whether ``task`` waits on a Request whose expiresAt is at or before ``by``."""
    deadline = request_expiry(task)
    return state_of(task) in AWAITING_HUMAN_STATES and deadline is not None and deadline <= by


def _moved_at(task: Task) -> datetime | None:
    return parse_instant((task.get("status") or {}).get("timestamp"))


def select_stale(
    tasks: Iterable[Task], now: datetime, submitted_before: datetime, unleased_before: datetime
) -> list[str]:
    stale = []
    for task in tasks:
        state = state_of(task)
        moved = _moved_at(task)
        if state == "submitted":
            if moved is None or moved <= submitted_before:
                stale.append(task["id"])
        elif state == "working":
            until = parse_instant(((task.get(PRIVATE_KEY) or {}).get("lease") or {}).get("until"))
            if (until is not None and until <= now) or (
                until is None and (moved is None or moved <= unleased_before)
            ):
                stale.append(task["id"])
    return stale


def select_waiting(tasks: Iterable[Task], expired_by: datetime | None) -> list[str]:
    return [
        t["id"]
        for t in tasks
        if state_of(t) in AWAITING_HUMAN_STATES
        and (expired_by is None or pending_expired(t, expired_by))
    ]
