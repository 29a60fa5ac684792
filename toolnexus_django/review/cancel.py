"""Canceling a Task: any state but a terminal one moves to ``canceled``.

The move is compare-and-set, so a cancel racing the run's completion ends in
exactly one terminal state. A run in this process is stopped at once through
its cancel token; a run in another process finds out at its next lease
renewal (within a third of LEASE_SECONDS) and stops then. Either way its
outcome is dropped: a canceled Task never changes again.
"""

from __future__ import annotations

from .. import lifecycle
from ..fulfilment.leases import keeper
from ..lifecycle import states
from ..stores import TaskStore, get_task_store
from ..stores.base import Task, state_of


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
) -> Task:
    """Cancel ``task_id``; returns the stored canceled Task."""
    store = store or get_task_store()
    for _ in range(20):  # a Task that keeps moving under us is retried, bounded
        task = store.get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        if state_of(task) in states.TERMINAL:
            raise NotCancelable(task_id, state_of(task))
        moved = lifecycle.cancel(store, task, actor=actor, via=via)
        if moved is not None:
            run = keeper().get(task_id)
            if run is not None:
                run.handle.cancel()
            return moved.task
    raise RuntimeError(f"Task {task_id[:100]} kept changing; cancel gave up")
