"""The periodic sweep: expired Requests answered, dead workers' Tasks recovered.

Who sweeps: every ``toolnexus_serve`` process runs a :class:`Housekeeper`
(every ``EXPIRY_SWEEP_INTERVAL`` seconds, first right at start-up, so a
restarted server picks up what its previous life left behind). Deployments
whose web processes are something else run ``manage.py toolnexus_sweep``
(once from cron, or ``--loop``). Sweeping in several processes at once is
harmless: every move is compare-and-set, so each Task is moved once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import close_old_connections
from django.utils import timezone
from toolnexus import Answer

from .. import lifecycle
from ..conf import toolnexus_settings
from ..runtime.outages import log_exception
from ..runtime.registry import PerProcess, Stage
from ..signals import task_answered
from ..stores import TaskStore, get_task_store
from ..stores.base import request_expiry
from .jobs import schedule_resume
from .recovery import recover

logger = logging.getLogger("toolnexus_django.fulfilment")


def expire_due(store: TaskStore | None = None, now: datetime | None = None) -> list[str]:
    """Answer every waiting Task whose Request expired with ``ok=False``,
    reason ``expired``; their runs resume with that. Returns their ids."""
    store = store or get_task_store()
    now = now or timezone.now()
    expired: list[str] = []
    for task_id in store.waiting_ids(expired_by=now):
        # Re-read: the answer must carry the pending Request's id.
        task = store.get(task_id)
        deadline = request_expiry(task)
        if task is None or deadline is None or deadline > now:
            continue
        try:
            moved = lifecycle.expire(store, task)
        except (lifecycle.AnswerRefused, lifecycle.IllegalMove):
            continue  # answered by someone else meanwhile: fine
        schedule_resume(task_id, store)
        pending = lifecycle.read(task).pending or {}
        answer = Answer(id=pending.get("id"), ok=False, reason="expired")
        task_answered.send_robust(
            sender=expire_due, task_id=task_id, answer=answer, event=moved.event
        )
        expired.append(task_id)
    return expired


#: More work each sweep does, added by the layers above (push deliveries).
EXTRA_SWEEPS: list[Callable[[], dict[str, Any]]] = []


def sweep_once() -> dict[str, Any]:
    """Answer expired Requests (ok=False, reason "expired"), recover Tasks
    whose worker died, then the :data:`EXTRA_SWEEPS`. Returns what it did."""
    expired = expire_due()
    for task_id in expired:
        logger.info("Task %s: its request expired; the run continues with that", task_id)
    done = {"expired": expired, **recover()}
    for extra in list(EXTRA_SWEEPS):
        try:
            done.update(extra())
        except Exception:  # one failing sweep must not stop the others
            log_exception(logger, "sweep %s failed", getattr(extra, "__qualname__", extra))
    return done


class Housekeeper:
    """A daemon thread calling :func:`sweep_once` every ``interval`` seconds."""

    def __init__(self, interval: float | None = None) -> None:
        self.interval = float(
            toolnexus_settings.EXPIRY_SWEEP_INTERVAL if interval is None else interval
        )
        self.stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Housekeeper:
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="toolnexus-sweep", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self.stopped.is_set():
            close_old_connections()
            try:
                sweep_once()
            except Exception:  # a bad sweep (or the database down) must not end the sweeping
                log_exception(logger, "sweep failed")
            finally:
                close_old_connections()
            self.stopped.wait(self.interval)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop sweeping (a sweep mid-query may finish within ``timeout``):
        whether the thread ended."""
        self.stopped.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True


#: This process's sweep thread: started by runtime.start() (its first sweep
#: at once), stopped first by runtime.stop() — no new recoveries while
#: stopping, though a sweep mid-query gets a second to finish.
sweeper = PerProcess(
    "sweep",
    lambda: Housekeeper().start(),
    reload=False,
    stage=Stage.SWEEP,
    eager=True,
    stop=lambda housekeeper, left: housekeeper.stop(timeout=min(1.0, left)),
)
