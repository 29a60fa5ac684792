"""Waking whatever waits for a Task (blocking sends, streams) when it moves.

- In this process, every move wakes the Task's watchers at once
  (:func:`notify`, called by the verbs after their compare-and-set) and
  hands them the version it stored, so a waiter need not read it back
  (:meth:`Watch.news`).
- Moves made by other processes are found by one poller thread per process,
  started while anything watches: every ``EVENT_POLL_INTERVAL`` seconds it
  asks the store which Tasks have new events, and the newest one's seq (the
  django store: one indexed query on the event table, whatever the number of
  watchers) or, for a store that cannot say, reads each watched Task once.
  So a waiting request costs no query of its own, and another process's move
  arrives within one interval. The poller finds this process's moves too: a
  Watch already handed that seq by the local move ignores it (an event's seq
  is the Task's seq after its move, so a higher one is news from elsewhere).
- On PostgreSQL (the django store) each move also NOTIFYs, and the poller
  keeps this process's one listener running (:mod:`.listener`): another
  process's move wakes the waiters as it commits. While the listener is
  healthy the poller only beats every ``EVENT_FALLBACK_POLL_INTERVAL`` (a
  safety net); when it (re)connects, the poller beats at once to catch up
  with what moved before it listened; when it is lost, the poller goes back
  to ``EVENT_POLL_INTERVAL``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from django.db import connections

from ..conf import toolnexus_settings
from ..runtime.outages import log_exception
from ..runtime.registry import PerProcess
from ..stores import TaskStore
from ..stores.base import Task
from . import listener
from .private import read
from .watches import Watch

logger = logging.getLogger("toolnexus_django.lifecycle")


class Hub:
    """The watchers of this process, and the poller that finds other
    processes' moves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: dict[str, set[Watch]] = {}
        self._stores: dict[int, TaskStore] = {}
        self._seen: dict[str, int] = {}
        self._cursors: dict[int, Any] = {}
        # Streams following live updates, and where each store's updates stand.
        self._live_watches = 0
        self._live_cursors: dict[int, Any] = {}
        self._poller: threading.Thread | None = None
        # Set to have the poller beat at once (the listener connected, or was lost).
        self._kick = threading.Event()

    def needs_query(self, store: TaskStore) -> bool:
        """Whether :meth:`watch` of ``store`` will query it (only the first
        watch of a store does: to learn where its event log stands)."""
        return id(store) not in self._cursors

    def watch(self, store: TaskStore, task_id: str) -> Watch:
        watch = Watch(self, task_id)
        key = id(store)
        changes = None
        if key not in self._cursors:
            # Where the event log stands now, so the poller's first look finds
            # what moved after this watch began (the watcher itself reads
            # the Task once after watching, which covers what came before).
            changes = store.changes_since(None)
        with self._lock:  # with the watch: a poller ending meanwhile clears the cursors
            if changes is not None:
                self._cursors.setdefault(key, changes[0])
            self._watches.setdefault(task_id, set()).add(watch)
            self._stores[key] = store
            if self._poller is None or not self._poller.is_alive():
                self._start_poller()
        return watch

    def _start_poller(self) -> None:
        self._poller = threading.Thread(target=self._poll, name="toolnexus-wakeups", daemon=True)
        self._poller.start()

    def unwatch(self, watch: Watch) -> None:
        with self._lock:
            watchers = self._watches.get(watch.task_id)
            if watchers is not None:
                watchers.discard(watch)
                if not watchers:
                    del self._watches[watch.task_id]
                    self._seen.pop(watch.task_id, None)

    def notify(self, task_id: str, task: Task | None = None, seq: int | None = None) -> None:
        """Wake ``task_id``'s watchers; ``task``: the version just stored by
        a move in this process (never changed afterwards: the next move
        copies it), None when the Task moved elsewhere — to ``seq`` (its
        newest event) when the poller knows it."""
        with self._lock:
            watchers = list(self._watches.get(task_id, ()))
        for watch in watchers:
            watch._wake(task, seq)

    def live(self, task_id: str) -> None:
        """``task_id``'s run has new live updates: wake the streams that follow them."""
        with self._lock:
            watchers = list(self._watches.get(task_id, ())) if self._live_watches else ()
        for watch in watchers:
            watch._wake_live()

    def count_live(self, delta: int) -> None:
        with self._lock:
            self._live_watches = max(0, self._live_watches + delta)

    def wake_all(self) -> None:
        """Wake every watcher (a server stopping ends its waits)."""
        with self._lock:
            watchers = [w for ws in self._watches.values() for w in ws]
        for watch in watchers:
            watch._wake()

    @property
    def watching(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._watches.values())

    # -- other processes' moves ------------------------------------------------------

    def kick(self) -> None:
        """Have the poller beat at once (the listener connected or was lost)."""
        self._kick.set()

    def _poll(self) -> None:
        # The poller keeps its connection from beat to beat, as the database
        # threads do (a new one every beat was a connection setup five times
        # a second); it is closed after an error, and when the poller stops.
        try:
            while True:
                self._listen()
                self._next_beat()
                try:
                    if not self.beat():
                        return
                except Exception:  # a database hiccup: try again next beat, connected anew
                    log_exception(logger, "polling for task events failed", level=logging.WARNING)
                    connections.close_all()
        finally:
            with self._lock:
                replaced = self._poller is not None  # a new watch started another poller
            if not replaced:
                listener.stop_listening()
            connections.close_all()

    def _listen(self) -> None:
        """Keep this process's listener running for the first watched store
        whose moves notify (a no-op while one runs)."""
        with self._lock:
            stores = list(self._stores.values())
        for store in stores:
            alias = listener.listened_alias(store)
            if alias is not None:
                listener.listen(alias, self._heard, self.kick, self._heard_live)
                return

    def _heard(self, task_id: str, seq: int) -> None:
        self.notify(task_id, seq=seq)

    def _heard_live(self, task_id: str, seq: int, last: int) -> None:
        self.live(task_id)

    def _next_beat(self) -> None:
        """Wait for the next beat: ``EVENT_POLL_INTERVAL``, stretched to
        ``EVENT_FALLBACK_POLL_INTERVAL`` while the listener hears every
        watched store; at once when kicked."""
        interval = float(toolnexus_settings.EVENT_POLL_INTERVAL)
        began = time.monotonic()
        while not self._kick.wait(interval):
            fallback = float(toolnexus_settings.EVENT_FALLBACK_POLL_INTERVAL)
            if not self._all_heard() or time.monotonic() - began >= fallback:
                return
        self._kick.clear()

    def _all_heard(self) -> bool:
        """Whether the listener is healthy and every watched store's moves
        reach it (so polling is only the safety net)."""
        alias = listener.heard_alias()
        if alias is None:
            return False
        with self._lock:
            if not self._watches:
                return False  # the beat that ends the poller comes an interval after the last
            stores = list(self._stores.values())
        return all(listener.listened_alias(store) == alias for store in stores)

    def beat(self) -> bool:
        """One look at the watched stores: wake the watchers of the Tasks
        that moved. False (the poller ends) when nothing is watched."""
        with self._lock:
            if not self._watches:
                self._poller = None
                self._cursors.clear()
                self._live_cursors.clear()
                self._stores.clear()
                return False
            stores = list(self._stores.values())
            watched = set(self._watches)
            live = self._live_watches > 0
        for store in stores:
            for task_id, seq in self._moved_in(store, watched).items():
                self.notify(task_id, seq=seq)
            if live and store.keeps_live_updates and not self._heard_from(store):
                for task_id in self._live_in(store, watched):
                    self.live(task_id)
        return True

    @staticmethod
    def _heard_from(store: TaskStore) -> bool:
        """Whether this process's listener hears ``store``'s rows as they commit."""
        alias = listener.heard_alias()
        return alias is not None and listener.listened_alias(store) == alias

    def _live_in(self, store: TaskStore, watched: set[str]) -> set[str]:
        """The watched Tasks with live updates since the last look (the
        first look only learns where the store's updates stand)."""
        key = id(store)
        cursor = self._live_cursors.get(key)
        changes = store.live_changes_since(cursor)
        if changes is None:
            return set()
        self._live_cursors[key] = changes[0]
        return set() if cursor is None else changes[1].keys() & watched

    def _moved_in(self, store: TaskStore, watched: set[str]) -> dict[str, int | None]:
        """The watched Tasks that moved, each with its newest event's seq
        (None: a custom store that tells only ids)."""
        key = id(store)
        cursor = self._cursors.get(key)
        changes = store.changes_since(cursor)
        if changes is not None:
            self._cursors[key] = changes[0]
            if cursor is None:
                return {}
            found = changes[1]
            if isinstance(found, Mapping):
                return {t: int(found[t]) for t in found.keys() & watched}
            return dict.fromkeys(set(found) & watched)
        moved: dict[str, int | None] = {}
        for task_id in watched:
            seq = read(store.get(task_id)).seq
            with self._lock:
                before = self._seen.get(task_id)
                self._seen[task_id] = seq
            # A Task seen for the first time counts as moved: its watcher
            # looks once more (unless a local move handed it that seq)
            # rather than miss a move.
            if seq != before:
                moved[task_id] = seq
        return moved


#: This process's watchers (a new hub after a fork; kept across settings changes).
_hub = PerProcess("wake-up hub", Hub, reload=False)


def hub() -> Hub:
    return _hub.get()


def watch(store: TaskStore, task_id: str) -> Watch:
    """Start watching ``task_id`` (close the Watch when done)."""
    return hub().watch(store, task_id)


async def awatch(store: TaskStore, task_id: str, run_sync: Any) -> Watch:
    """:func:`watch` from a coroutine: on ``run_sync``'s thread only when
    watching queries the store (the first watch of a store in this process)."""
    if hub().needs_query(store):
        watched: Watch = await run_sync(watch, store, task_id)
        return watched
    return watch(store, task_id)


def moved(store: TaskStore, task: Task) -> None:
    """A move in this process stored ``task``: wake its watchers and hand
    them that version — unless the move is inside a transaction, which may
    yet roll back (then they read the store, as for another process's move)."""
    using = getattr(store, "using", None)
    pending = isinstance(using, str) and connections[using].in_atomic_block
    notify(task["id"], None if pending else task)


def notify(task_id: str, task: Task | None = None) -> None:
    """``task_id`` moved (to ``task``, when this process stored it): wake its
    watchers in this process."""
    hub().notify(task_id, task)


def wake_all() -> None:
    """Wake every watcher of this process (a stopping server ends its waits)."""
    hub().wake_all()
