"""The default store: a thread-safe map that lives as long as the process."""

from __future__ import annotations

import threading
from datetime import datetime

from ..jsontree import copy_json
from .base import (
    TERMINAL_STATES,
    DuplicateMessage,
    Event,
    MessageIndex,
    Task,
    TaskStore,
    TerminalTaskError,
    add_inline_event,
    bump_revision,
    message_key_of,
    same_version,
    select_stale,
    select_waiting,
    state_of,
    task_id_of,
)


class InMemoryTaskStore(TaskStore):
    """Tasks in a dict guarded by a lock; copies in and out, so a caller that
    mutates its dict after ``save`` (or the one ``get`` returned) cannot change
    what is stored."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._messages = MessageIndex()

    def get(self, id: str) -> Task | None:
        with self._lock:
            task = self._tasks.get(id)
        return copy_json(task) if task is not None else None

    def save(self, task: Task) -> None:
        tid = task_id_of(task)
        snapshot = copy_json(task)
        with self._lock:
            stored = self._tasks.get(tid)
            if state_of(stored) in TERMINAL_STATES:
                raise TerminalTaskError(tid, state_of(stored))
            self._tasks[tid] = snapshot

    def create(self, task: Task, event: Event | None = None) -> None:
        tid = task_id_of(task)
        key = message_key_of(task)
        add_inline_event(task, None, event)
        snapshot = copy_json(task)
        with self._lock:
            if (taken := self._messages.taken(key)) is not None and taken in self._tasks:
                raise DuplicateMessage(taken)
            if state_of(self._tasks.get(tid)) in TERMINAL_STATES:
                raise TerminalTaskError(tid, state_of(self._tasks.get(tid)))
            self._tasks[tid] = snapshot
            self._messages.record(key, tid)

    def compare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        tid = task_id_of(new)
        with self._lock:
            stored = self._tasks.get(tid)
            if not same_version(stored, expected) or state_of(stored) in TERMINAL_STATES:
                return False
            bump_revision(expected, new)
            add_inline_event(new, stored, event)
            self._tasks[tid] = copy_json(new)
            return True

    def waiting_ids(self, expired_by: datetime | None = None) -> list[str]:
        with self._lock:
            tasks = list(self._tasks.values())
        return select_waiting(tasks, expired_by)

    def stale_ids(
        self, now: datetime, *, submitted_before: datetime, unleased_before: datetime
    ) -> list[str]:
        with self._lock:
            tasks = list(self._tasks.values())
        return select_stale(tasks, now, submitted_before, unleased_before)

    # Nothing here blocks: no need for a thread hop.
    async def aget(self, id: str) -> Task | None:
        return self.get(id)

    async def asave(self, task: Task) -> None:
        self.save(task)

    async def acompare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        return self.compare_and_set(expected, new, event)

    def __len__(self) -> int:
        with self._lock:
            return len(self._tasks)
