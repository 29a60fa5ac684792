"""Recovery: Tasks whose worker died are run again; lost enqueues are redone.

- ``working`` with an expired lease (its worker stopped renewing — kill -9, a
  lost machine): ``requeue`` puts a first run back to ``submitted`` and a
  resume back to its answer waiting, and enqueues it again — at least once,
  counted in the run segment's attempts; after ``MAX_ATTEMPTS`` in one
  segment it is given up (``failed``, "The run was interrupted ..."). A
  segment is the first run, or a resume after an answer: a Task that stopped
  cleanly for people N times has had N+1 segments, each with the whole budget.
- ``working`` with an answer waiting and no worker for a lease's length (its
  resume was enqueued by a process that died first): requeued and enqueued.
- ``submitted`` and not taken for ``REQUEUE_AFTER`` seconds (the process died
  between the commit and the enqueue): enqueued again — unless its run waits
  for a slot in this process (``MAX_RUNS``). A Task enqueued twice
  still runs once: taking it is compare-and-set.
- ``input-required`` / ``auth-required`` Tasks hold no lease and are left alone.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle import states
from ..stores import TaskStore, get_task_store
from ..stores.base import state_of
from .announcing import announce
from .jobs import schedule_fulfilment, schedule_resume
from .leases import keeper, lease_expired, lease_seconds
from .runs import runs

logger = logging.getLogger("toolnexus_django.fulfilment")

interrupted_message = lifecycle.interrupted_message


def recover(store: TaskStore | None = None, now: datetime | None = None) -> dict[str, list[str]]:
    """One recovery pass; returns the ids it re-enqueued, resumed and failed."""
    store = store or get_task_store()
    now = now or timezone.now()
    done: dict[str, list[str]] = {"requeued": [], "resumed": [], "failed": []}
    stale = store.stale_ids(
        now,
        submitted_before=now - timedelta(seconds=float(toolnexus_settings.REQUEUE_AFTER)),
        unleased_before=now - timedelta(seconds=lease_seconds()),
    )
    for task_id in stale:
        if keeper().get(task_id) is not None or runs().holds(task_id):
            continue  # running (or waiting its turn) right here: not read at all
        task = store.get(task_id)
        if task is None:
            continue  # gone
        phase = lifecycle.phase_of(task)
        if phase == states.QUEUED:
            schedule_fulfilment(task_id, store)
            done["requeued"].append(task_id)
            continue
        if state_of(task) != states.WORKING or not lease_expired(task, now):
            continue
        if phase != states.ANSWERED and lifecycle.out_of_attempts(task):
            given_up = lifecycle.give_up(store, task)
            if given_up is not None:
                logger.warning("Task %s: %s", task_id, lifecycle.read(given_up.task).error)
                announce(given_up.task, None)
                done["failed"].append(task_id)
            continue
        moved = lifecycle.requeue(store, task)
        if moved is None:
            continue
        tries = lifecycle.read(task).segment_attempts
        if lifecycle.phase_of(moved.task) == states.ANSWERED:
            logger.info(
                "Task %s: its resume was interrupted (attempt %s); resuming again", task_id, tries
            )
            schedule_resume(task_id, store)
            done["resumed"].append(task_id)
        else:
            logger.info("Task %s: its worker died (attempt %s); running it again", task_id, tries)
            schedule_fulfilment(task_id, store)
            done["requeued"].append(task_id)
    return done
