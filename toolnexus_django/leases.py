"""Leases: which worker runs a Task, and until when that claim holds.

A worker that takes a Task writes ``_private.lease = {"owner", "until"}`` in
the same compare-and-set that moves it to ``working``. While the run is alive
this process's :class:`LeaseKeeper` renews the lease every third of its
length (again by compare-and-set, so the run always holds the latest version
of its Task). If the Task changed under it — canceled, or taken over by
another worker after a stall — the renewal fails and the run is stopped.

A worker that dies stops renewing; once its lease has expired the recovery
sweep (:mod:`toolnexus_django.recovery`) gives the Task to a live worker.
"""

from __future__ import annotations

import copy
import logging
import os
import socket
import threading
import time
from datetime import timedelta
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from .a2a import shapes
from .conf import toolnexus_settings
from .runtime import RunHandle
from .stores import TaskStore
from .stores.base import parse_instant

logger = logging.getLogger("toolnexus_django.leases")


def worker_id() -> str:
    """Who holds a lease: host and process (stable for the life of the process)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def lease_seconds() -> float:
    return float(toolnexus_settings.LEASE_SECONDS)


def new_lease() -> dict[str, str]:
    until = timezone.now() + timedelta(seconds=lease_seconds())
    return {"owner": worker_id(), "until": until.isoformat()}


def lease_of(task: dict[str, Any]) -> dict[str, Any]:
    return (task.get(shapes.PRIVATE_KEY) or {}).get("lease") or {}


def lease_expired(task: dict[str, Any], now: Any = None) -> bool:
    """Whether a ``working`` Task's claim has lapsed (its worker stopped
    renewing). A working Task with no lease at all counts from its last
    status change."""
    now = now or timezone.now()
    until = parse_instant(lease_of(task).get("until"))
    if until is None:
        since = parse_instant((task.get("status") or {}).get("timestamp"))
        if since is None:
            return True
        until = since + timedelta(seconds=lease_seconds())
    return until <= now


class RunningRun:
    """A run in this process: its latest stored version and a way to stop it."""

    def __init__(self, store: TaskStore, version: dict[str, Any], handle: RunHandle) -> None:
        self.store = store
        self.version = version
        self.handle = handle
        self.lock = threading.Lock()
        self.lost = False
        self.due = time.monotonic() + lease_seconds() / 3

    @property
    def task_id(self) -> str:
        return str(self.version["id"])

    def renew(self) -> bool:
        """Extend the lease; stop the run if the Task is no longer ours."""
        with self.lock:
            if self.lost:
                return False
            renewed = copy.deepcopy(self.version)
            shapes.private(renewed)["lease"] = new_lease()
            try:
                won = self.store.compare_and_set(self.version, renewed)
            except Exception:  # a database hiccup: try again next beat
                logger.warning("Task %s: lease renewal failed", self.task_id, exc_info=True)
                return True
            if won:
                self.version = renewed
                self.due = time.monotonic() + lease_seconds() / 3
                return True
            self.lost = True
        current = self.store.get(self.task_id)
        logger.info(
            "Task %s changed under its run (now %s): stopping the run",
            self.task_id,
            shapes.state_of(current) or "gone",
        )
        self.handle.cancel()
        return False

    def settle(self, final: dict[str, Any]) -> bool:
        """Move the Task from the run's latest version to ``final``."""
        with self.lock:
            if self.lost:
                return False
            return self.store.compare_and_set(self.version, final)


class LeaseKeeper:
    """One per process: renews the leases of every run in it."""

    def __init__(self) -> None:
        self.runs: dict[str, RunningRun] = {}
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, run: RunningRun) -> None:
        with self._lock:
            self.runs[run.task_id] = run
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="toolnexus-leases", daemon=True
                )
                self._thread.start()

    def remove(self, run: RunningRun) -> None:
        with self._lock:
            if self.runs.get(run.task_id) is run:
                del self.runs[run.task_id]

    def get(self, task_id: str) -> RunningRun | None:
        with self._lock:
            return self.runs.get(task_id)

    def _loop(self) -> None:
        while True:
            # Tick often enough for the shortest lease; renew only what is due.
            time.sleep(min(1.0, max(0.02, lease_seconds() / 6)))
            now = time.monotonic()
            with self._lock:
                runs = [run for run in self.runs.values() if run.due <= now]
            if not runs:
                continue
            close_old_connections()
            try:
                for run in runs:
                    try:
                        run.renew()
                    except Exception:  # one bad renewal must not stop the others
                        logger.exception("Task %s: lease renewal failed", run.task_id)
            finally:
                close_old_connections()


_keeper_lock = threading.Lock()
_keeper: LeaseKeeper | None = None


def keeper() -> LeaseKeeper:
    """This process's lease keeper (a new one after a fork)."""
    global _keeper
    current = _keeper
    if current is None or current.pid != os.getpid():
        with _keeper_lock:
            if _keeper is None or _keeper.pid != os.getpid():
                _keeper = LeaseKeeper()
            current = _keeper
    return current


def release_runs() -> list[str]:
    """Give back the Tasks this process is still running (a graceful stop
    whose grace period ran out): each goes back to ``submitted`` — the
    attempt it used does not count — and its run is stopped. Live workers
    take them again (recovery re-enqueues submitted Tasks after
    REQUEUE_AFTER). Returns their ids."""
    released = []
    current = keeper()
    with current._lock:
        runs = list(current.runs.values())
    for run in runs:
        with run.lock:
            if run.lost:
                continue
            resuming = "resuming" in shapes.private(run.version)
            # A resume goes back to "answered, not yet resumed"; a first run
            # back to submitted.
            back = shapes.with_status(run.version, "working" if resuming else "submitted")
            section = shapes.private(back)
            section.pop("lease", None)
            if resuming:
                section["answer"] = section.pop("resuming")
            section["attempts"] = max(0, int(section.get("attempts") or 1) - 1)
            try:
                won = run.store.compare_and_set(run.version, back)
            except Exception:
                logger.exception("Task %s: could not be released", run.task_id)
                continue
            run.lost = True
        run.handle.cancel()
        if won:
            logger.info("Task %s: released by a stopping worker", run.task_id)
            released.append(run.task_id)
    return released
