"""Ending waits whose Request expired, without anyone opening the admin.

Who sweeps: every ``toolnexus_serve`` process runs :class:`ExpirySweeper`
(every ``EXPIRY_SWEEP_INTERVAL`` seconds); deployments whose web processes
are something else run ``manage.py toolnexus_expire`` (once, from cron, or
``--loop``). Sweeping twice is harmless: answering is compare-and-set, so an
expired Request is answered once.
"""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections

from .conf import toolnexus_settings
from .review import expire_due

logger = logging.getLogger("toolnexus_django.expiry")


def sweep_once() -> list[str]:
    """Answer every expired Request (ok=False, reason "expired"); their runs
    resume in the background. Returns the ids of the Tasks it answered."""
    expired = expire_due()
    for task_id in expired:
        logger.info("Task %s: its request expired; the run continues with that", task_id)
    return expired


class ExpirySweeper:
    """A daemon thread calling :func:`sweep_once` every ``interval`` seconds."""

    def __init__(self, interval: float | None = None) -> None:
        self.interval = float(
            toolnexus_settings.EXPIRY_SWEEP_INTERVAL if interval is None else interval
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> ExpirySweeper:
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="toolnexus-expiry", daemon=True
            )
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            close_old_connections()
            try:
                sweep_once()
            except Exception:  # a bad sweep must not end the sweeping
                logger.exception("expiry sweep failed")
            finally:
                close_old_connections()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
