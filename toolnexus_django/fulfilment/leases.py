"""Leases: which worker runs a Task, and until when that claim holds.

A worker that takes a Task gets its lease (who, until when) in the same
compare-and-set that moves it to ``working`` (``lifecycle.claim``). While the
run is alive this process's :class:`LeaseKeeper` renews the lease every third
of its length: for the django store, every due lease of the process in one
UPDATE per beat (``renew_leases``: no move, so the run's version of its Task
stays current); for other stores by compare-and-set, one per run (the run
then holds the new version). If the Task changed under it — canceled, or
taken over by another worker after a stall — the renewal fails and the run
is stopped.

A worker that dies stops renewing; once its lease has expired the recovery
sweep (:mod:`.recovery`) gives the Task to a live worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from .. import lifecycle
from ..agent.runtime import RunHandle
from ..conf import toolnexus_settings
from ..runtime.outages import log_exception
from ..runtime.registry import PerProcess, Stage
from ..stores import TaskStore
from ..stores.base import Task, parse_instant, state_of

logger = logging.getLogger("toolnexus_django.fulfilment")


def worker_id() -> str:
    """Who holds a lease: host and process (stable for the life of the process)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def lease_seconds() -> float:
    return float(toolnexus_settings.LEASE_SECONDS)


def lease_expired(task: Task, now: Any = None) -> bool:
    """Whether a ``working`` Task's claim has lapsed (its worker stopped
    renewing). A working Task with no lease counts from its last status change."""
    now = now or timezone.now()
    lease = lifecycle.read(task).lease
    until = lease.expires() if lease is not None else None
    if until is None:
        since = parse_instant((task.get("status") or {}).get("timestamp"))
        if since is None:
            return True
        until = since + timedelta(seconds=lease_seconds())
    return until <= now


class RunningRun:
    """A run in this process: its latest stored version and a way to stop it."""

    def __init__(self, store: TaskStore, version: Task, handle: RunHandle) -> None:
        self.store = store
        self.version = version
        self.handle = handle
        self.lock = threading.Lock()
        self.lost = False
        self.done = False  # its last move is made
        #: Its live updates are in the store: forget them with its last move.
        self.forget_live = False
        self.due = time.monotonic() + lease_seconds() / 3

    @property
    def task_id(self) -> str:
        return str(self.version["id"])

    def renew(self) -> bool:
        """Extend the lease; stop the run if the Task is no longer ours."""
        with self.lock:
            if self.lost:
                return False
            try:
                moved = lifecycle.renew(self.store, self.version)
            except Exception:  # a database hiccup: try again next beat
                log_exception(
                    logger, "Task %s: lease renewal failed", self.task_id, level=logging.WARNING
                )
                return True
            if moved is not None:
                self.version = moved.task
                self.renewed()
                return True
            self.lost = True
        self._stop()
        return False

    def renewed(self) -> None:
        self.due = time.monotonic() + lease_seconds() / 3

    def lose(self) -> None:
        """The Task is no longer this run's (a batched renewal missed it)."""
        with self.lock:
            if self.lost or self.done:
                return  # (a renewal that raced the run's own last move)
            self.lost = True
        self._stop()

    def _stop(self) -> None:
        current = self.store.get(self.task_id)
        logger.info(
            "Task %s changed under its run (now %s): stopping the run",
            self.task_id,
            state_of(current) or "gone",
        )
        self.handle.cancel()

    def make(self, move: Callable[[TaskStore, Task], Any]) -> Any:
        """Make ``move`` from the run's latest version (None if it was lost)."""
        with self.lock:
            if self.lost:
                return None
            moved = move(self.store, self.version)
            if moved is not None:
                self.done = True
            return moved


class LeaseKeeper:
    """One per process: renews the leases of every run in it."""

    def __init__(self) -> None:
        self.runs: dict[str, RunningRun] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def add(self, run: RunningRun) -> None:
        with self._lock:
            self.runs[run.task_id] = run
            if not self._stopped.is_set() and (self._thread is None or not self._thread.is_alive()):
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

    def all(self) -> list[RunningRun]:
        with self._lock:
            return list(self.runs.values())

    def _loop(self) -> None:
        # Tick often enough for the shortest lease; renew only what is due.
        while not self._stopped.wait(min(1.0, max(0.02, lease_seconds() / 6))):
            now = time.monotonic()
            with self._lock:
                runs = [run for run in self.runs.values() if run.due <= now]
            if not runs:
                continue
            close_old_connections()
            try:
                renew_all(runs)
            except Exception:  # (stopping a lost run reads its Task): keep renewing the others
                log_exception(logger, "renewing leases failed")
            finally:
                close_old_connections()

    def release(self) -> list[str]:
        """Give back the Tasks this process is still running (a graceful stop
        whose grace period ran out): each goes back to where a worker can take
        it — a first run to ``submitted``, a resume to ``working`` with its
        answer waiting — the attempt it used does not count, and its run is
        stopped. Live workers take them again (recovery re-enqueues them).
        Returns their ids."""
        released = []
        for run in self.all():
            with run.lock:
                if run.lost:
                    continue
                try:
                    moved = lifecycle.release(run.store, run.version)
                except Exception:
                    log_exception(logger, "Task %s: could not be released", run.task_id)
                    continue
                run.lost = True
            run.handle.cancel()
            if moved is not None:
                logger.info("Task %s: released by a stopping worker", run.task_id)
                released.append(run.task_id)
        return released

    def stop(self, timeout: float) -> bool:
        """At a stop, once the runs had their grace: hand back the runs still
        going (rather than leave them 'working' until their leases expire:
        another worker, or this server's next life, runs them), then stop
        renewing. Returns whether the renewing thread ended in time."""
        released = self.release()
        if released:
            logger.warning(
                "worker %s: the grace period ended with runs still going; released %d "
                "Task(s) to be run again: %s",
                os.getpid(),
                len(released),
                ", ".join(released),
            )
        self._stopped.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True


def renew_all(runs: list[RunningRun]) -> None:
    """Renew the leases of ``runs``: one UPDATE per store that can batch
    (``renew_leases``), else one compare-and-set per run."""
    by_store: dict[int, list[RunningRun]] = {}
    for run in runs:
        by_store.setdefault(id(run.store), []).append(run)
    for group in by_store.values():
        batch = getattr(group[0].store, "renew_leases", None)
        if batch is None:
            for run in group:
                try:
                    run.renew()
                except Exception:  # one bad renewal must not stop the others
                    log_exception(logger, "Task %s: lease renewal failed", run.task_id)
            continue
        until = timezone.now() + timedelta(seconds=lease_seconds())
        try:
            renewed = batch(worker_id(), [run.task_id for run in group], until)
        except Exception:  # a database hiccup: try again next beat
            log_exception(
                logger, "lease renewal of %d run(s) failed", len(group), level=logging.WARNING
            )
            continue
        for run in group:
            if run.task_id in renewed:
                run.renewed()
            else:
                run.lose()


#: This process's lease keeper (a new one after a fork; kept across settings
#: changes; stopped by runtime.stop() after the runs had their grace).
_keeper = PerProcess(
    "lease keeper",
    LeaseKeeper,
    reload=False,
    stage=Stage.LEASES,
    stop=lambda keeper, left: keeper.stop(timeout=max(0.5, left)),
)


def keeper() -> LeaseKeeper:
    return _keeper.get()


def release_runs() -> list[str]:
    """Give back the Tasks this process is still running (:meth:`LeaseKeeper.release`)."""
    return keeper().release()


__all__ = [
    "LeaseKeeper",
    "RunningRun",
    "keeper",
    "lease_expired",
    "lease_seconds",
    "release_runs",
    "worker_id",
]
