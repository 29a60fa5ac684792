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
from abc import ABC, abstractmethod
from typing import Any

Task = dict[str, Any]

#: Key of the server-side section of a stored Task; never sent on the wire.
PRIVATE_KEY = "_private"

#: The longest Task id any store accepts; longer ids are simply unknown.
MAX_ID_LENGTH = 255


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

    async def aget(self, id: str) -> Task | None:
        return await asyncio.to_thread(self.get, id)

    async def asave(self, task: Task) -> None:
        await asyncio.to_thread(self.save, task)

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
