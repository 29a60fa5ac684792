"""Live updates: what a stream shows between a running Task's moves — its
answer as the model writes it, and each tool call.

They belong to one run: the run that started at event ``seq`` (its claim, or
the start of a resume), numbered ``n`` = 1, 2, ... in order. Each is a dict:

- a chunk of the answer: ``{"n", "text", "artifact", "reset"}`` — ``artifact``
  the id the final answer's artifact will have; ``reset`` on the first chunk
  of each model turn (a turn that ends in tool calls is not the answer: the
  next turn's text replaces it);
- a tool call: ``{"n", "tool", "call", "status", "arguments"}`` — ``status``
  ``running``, then ``ok``, ``error`` or ``input-required``; ``arguments``
  bounded (:data:`ARGUMENTS_SHOWN` characters); never the tool's output.

The process that runs the Task keeps them in memory (a :class:`Feed`) for as
long as the run lasts, and wakes its own streams at once. For a Task someone
streams, on a store that keeps them (the django store), the run also writes
them in batches (:mod:`toolnexus_django.fulfilment.progress`) for streams
served by other processes, woken by NOTIFY or the poller (:mod:`.wakeups`).
The run's final event carries the whole answer, so none of this is ever
needed once the Task moved on: the rows are deleted when the run ends.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from typing import Any

from ..runtime.registry import PerProcess
from ..stores import TaskStore
from .wakeups import hub

#: Seconds a finished run's feed is kept (see :class:`Feeds`).
LINGER = 5.0

#: The most characters of a tool call's arguments a stream shows.
ARGUMENTS_SHOWN = 200

#: Derives a Task's answer artifact id from its id (a streamed run's chunks
#: and its final artifact share it, in every process and every segment).
_ARTIFACTS = uuid.UUID("6f0b5a52-3c1e-4d57-9a55-0b1e8b7c2d10")

Update = dict[str, Any]


def answer_artifact_id(task_id: str) -> str:
    """The id of a streamed Task's answer artifact."""
    return str(uuid.uuid5(_ARTIFACTS, task_id))


def shown_arguments(arguments: Any) -> Any:
    """A tool call's arguments as a stream shows them: the object when its
    JSON is short, else the start of its JSON and an ellipsis."""
    try:
        text = json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(arguments)
    if len(text) <= ARGUMENTS_SHOWN:
        return arguments if isinstance(arguments, dict) else text
    return text[:ARGUMENTS_SHOWN] + "…"


class Feed:
    """The live updates of one run, in this process: appended by the run
    (on its loop), read by streams (on theirs), under a lock."""

    __slots__ = ("_lock", "closed", "items", "seq", "task_id")

    def __init__(self, task_id: str, seq: int) -> None:
        self.task_id = task_id
        self.seq = seq
        self.items: list[Update] = []
        self.closed = False  # its run ended
        self._lock = threading.Lock()

    def add(self, update: Update) -> Update:
        """Number ``update``, keep it, wake the Task's streams; returns it."""
        with self._lock:
            update["n"] = len(self.items) + 1
            self.items.append(update)
        hub().live(self.task_id)
        return update

    def after(self, n: int) -> list[Update]:
        with self._lock:
            return self.items[n:]


class Feeds:
    """The runs of this process that have a feed, by Task id. A closed
    feed (its run ended) is kept :data:`LINGER` seconds more: a stream woken
    by the run's last move reads the updates made just before it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._feeds: dict[str, Feed] = {}
        self._closed: deque[tuple[float, Feed]] = deque()

    def open(self, task_id: str, seq: int) -> Feed:
        feed = Feed(task_id, seq)
        with self._lock:
            self._feeds[task_id] = feed
        return feed

    def close(self, feed: Feed) -> None:
        now = time.monotonic()
        feed.closed = True
        with self._lock:
            self._closed.append((now + LINGER, feed))
            while self._closed and self._closed[0][0] <= now:
                _, old = self._closed.popleft()
                if self._feeds.get(old.task_id) is old:
                    del self._feeds[old.task_id]

    def get(self, task_id: str) -> Feed | None:
        with self._lock:
            return self._feeds.get(task_id)

    def running(self, task_id: str) -> bool:
        """Whether a run of ``task_id`` has an open feed here."""
        feed = self.get(task_id)
        return feed is not None and not feed.closed


#: This process's feeds (new ones after a fork: the runs are this process's).
_feeds = PerProcess("live feeds", Feeds, reload=False)


def feeds() -> Feeds:
    return _feeds.get()


def runs_here(task_id: str) -> bool:
    """Whether a run of ``task_id`` is running in this process (with a feed)."""
    return feeds().running(task_id)


def updates_after(store: TaskStore, task_id: str, seq: int, after: int) -> list[Update]:
    """The live updates of the run of ``task_id`` that started at event
    ``seq``, numbered above ``after``: from this process's feed when the run
    is here, else from the store (when it keeps them)."""
    feed = feeds().get(task_id)
    if feed is not None and feed.seq == seq:
        return feed.after(after)
    if store.keeps_live_updates:
        return store.live_updates(task_id, seq, after)
    return []
