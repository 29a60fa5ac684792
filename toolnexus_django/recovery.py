"""Recovery: Tasks whose worker died are run again; lost enqueues are redone.

- ``working`` with an expired lease (its worker stopped renewing — kill -9, a
  lost machine): back to ``submitted`` and enqueued again, or, if it was
  resuming after an answer, its answer is put back and the resume enqueued
  again — at least once, counted in ``attempts``; after ``MAX_ATTEMPTS`` it
  ends ``failed`` with a message that says the run was interrupted.
- ``submitted`` and not taken for ``REQUEUE_AFTER`` seconds (the process died
  between the commit and the enqueue): enqueued again. A Task enqueued twice
  still runs once: taking it is compare-and-set.
- ``input-required`` / ``auth-required`` Tasks hold no lease and are left alone.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from .a2a import shapes
from .conf import toolnexus_settings
from .leases import keeper, lease_expired, lease_seconds
from .stores import TaskStore, get_task_store

logger = logging.getLogger("toolnexus_django.recovery")


def interrupted_message(attempts: int) -> str:
    times = "once" if attempts == 1 else f"{attempts} times"
    return (
        f"The run was interrupted: its worker stopped before finishing ({times}), "
        "so the task was given up"
    )


def recover(store: TaskStore | None = None, now: datetime | None = None) -> dict[str, list[str]]:
    """One recovery pass; returns the ids it re-enqueued, resumed and failed."""
    from .tasks import _notify, schedule_fulfilment, schedule_resume

    store = store or get_task_store()
    now = now or timezone.now()
    done: dict[str, list[str]] = {"requeued": [], "resumed": [], "failed": []}
    stale = store.stale_ids(
        now,
        submitted_before=now - timedelta(seconds=float(toolnexus_settings.REQUEUE_AFTER)),
        unleased_before=now - timedelta(seconds=lease_seconds()),
    )
    for task_id in stale:
        task = store.get(task_id)
        if task is None or keeper().get(task_id) is not None:
            continue  # gone, or running right here
        state = shapes.state_of(task)
        if state == "submitted":
            schedule_fulfilment(task_id, store)
            done["requeued"].append(task_id)
            continue
        if state != "working" or not lease_expired(task, now):
            continue
        section = task.get(shapes.PRIVATE_KEY) or {}
        attempts = int(section.get("attempts") or 0)
        answer = section.get("resuming") or section.get("answer")
        if attempts >= int(toolnexus_settings.MAX_ATTEMPTS):
            final = shapes.failed(task, interrupted_message(attempts))
            shapes.private(final).pop("lease", None)
            if store.compare_and_set(task, final):
                logger.warning("Task %s: %s", task_id, interrupted_message(attempts))
                _notify(final, None)
                done["failed"].append(task_id)
        elif answer is not None:
            again = shapes.with_status(task, "working")
            again_section = shapes.private(again)
            again_section.pop("lease", None)
            again_section.pop("resuming", None)
            again_section["answer"] = answer
            if store.compare_and_set(task, again):
                logger.info("Task %s: its worker died while resuming; resuming again", task_id)
                schedule_resume(task_id, store)
                done["resumed"].append(task_id)
        else:
            again = shapes.with_status(task, "submitted")
            shapes.private(again).pop("lease", None)
            if store.compare_and_set(task, again):
                logger.info(
                    "Task %s: its worker died (attempt %s); running it again", task_id, attempts
                )
                schedule_fulfilment(task_id, store)
                done["requeued"].append(task_id)
    return done
