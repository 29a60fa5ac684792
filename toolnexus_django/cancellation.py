"""Canceling a Task: any state but a terminal one moves to ``canceled``.

The move is compare-and-set, so a cancel racing the run's completion ends in
exactly one terminal state. A run in this process is stopped at once through
its cancel token; a run in another process finds out at its next lease
renewal (within a third of LEASE_SECONDS) and stops then. Either way its
outcome is dropped: a canceled Task never changes again.
"""

from __future__ import annotations

import logging
from typing import Any

from .a2a import shapes
from .leases import keeper
from .stores import TaskStore, get_task_store

logger = logging.getLogger("toolnexus_django.cancellation")


class NotCancelable(Exception):
    """The Task already reached a terminal state (A2A error -32002)."""

    def __init__(self, task_id: str, state: str) -> None:
        super().__init__(f"Task {task_id[:100]} is {state}: it can no longer be canceled")
        self.state = state


class TaskNotFound(Exception):
    pass


def cancel_task(
    task_id: str,
    *,
    store: TaskStore | None = None,
    actor: str | None = None,
    via: str = "a2a",
) -> dict[str, Any]:
    """Cancel ``task_id``; returns the stored canceled Task."""
    store = store or get_task_store()
    for _ in range(20):  # a Task that keeps moving under us is retried, bounded
        task = store.get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        state = shapes.state_of(task)
        if state in shapes.TERMINAL:
            raise NotCancelable(task_id, state)
        canceled = shapes.with_status(task, "canceled", "The task was canceled")
        section = shapes.private(canceled)
        for key in (*shapes.SUSPENSION_KEYS, "lease"):
            section.pop(key, None)
        shapes.add_event(
            canceled,
            {"actor": actor, "via": via, "decision": "cancel", "from": state, "to": "canceled"},
        )
        if store.compare_and_set(task, canceled):
            run = keeper().get(task_id)
            if run is not None:
                run.handle.cancel()
            logger.info("Task %s: %s -> canceled", task_id, state)
            return canceled
    raise RuntimeError(f"Task {task_id[:100]} kept changing; cancel gave up")
