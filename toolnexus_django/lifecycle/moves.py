"""The machinery every move shares: check the move is legal from the Task's
phase, build the next version, make it by compare-and-set with its event,
wake the Task's waiters, log it and send ``task_event``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from ..bounds import bound_history
from ..conf import toolnexus_settings
from ..jsontree import copy_json
from ..signals import task_event
from ..stores import TaskStore
from ..stores.base import Task, state_of
from . import states, wakeups
from .events import SYSTEM, Event
from .messages import agent_message, now_iso
from .private import Lease, Private, read, write
from .public import public_status

logger = logging.getLogger("toolnexus_django.lifecycle")

#: The longest failure reason kept (a provider's error page can be huge).
MAX_REASON_CHARS = 2000
CANCELED_TEXT = "The task was canceled"


@dataclass(frozen=True)
class Moved:
    """A move that was made: the Task as stored, and its event (None for renew)."""

    task: Task
    event: dict[str, Any] | None


def max_output_chars() -> int:
    return int(toolnexus_settings.MAX_OUTPUT_CHARS)


def new_lease(worker: str) -> Lease:
    until = timezone.now() + timedelta(seconds=float(toolnexus_settings.LEASE_SECONDS))
    return Lease(worker, until.isoformat())


def interrupted_message(attempts: int) -> str:
    times = "once" if attempts == 1 else f"{attempts} times"
    return (
        f"The run was interrupted: its worker stopped before finishing ({times}), "
        "so the task was given up"
    )


def begin(task: Task, kind: str) -> tuple[Task, Private]:
    private = read(task)
    if private.phase not in states.MOVES[kind]:
        raise states.IllegalMove(kind, str(task.get("id")), state_of(task), private.phase)
    # Not copy.deepcopy: it overflowed on a stored tool argument 600 lists
    # deep, and a Task nobody can answer or cancel must never be.
    return copy_json(task), private


def set_status(
    task: Task, state: str, text: str | None = None, extra: tuple[dict[str, Any], ...] = ()
) -> None:
    status: dict[str, Any] = {"state": state, "timestamp": now_iso()}
    if text is not None:
        status["message"] = agent_message(text, task=task, extra_parts=extra)
    task["status"] = status


def append_history(task: Task, *messages: dict[str, Any] | None) -> None:
    history = [*(task.get("history") or ()), *(m for m in messages if m is not None)]
    task["history"] = bound_history(history, int(toolnexus_settings.MAX_HISTORY_MESSAGES))


def commit(
    store: TaskStore,
    expected: Task,
    new: Task,
    private: Private,
    kind: str,
    *,
    actor: str | None = None,
    actor_kind: str = SYSTEM,
    via: str = "",
    detail: dict[str, Any] | None = None,
    artifacts: tuple[str, ...] = (),
) -> Moved | None:
    """Move ``expected`` to ``new`` with the event of ``kind`` (none for renew)."""
    recorded = kind != "renew"
    if recorded:
        private.seq += 1
    write(new, private)
    event = None
    if recorded:
        public: dict[str, Any] = {"status": public_status(new.get("status"), new["id"])}
        if artifacts:
            public["artifacts"] = list(artifacts)
        event = Event(
            task_id=new["id"],
            seq=private.seq,
            kind=kind,
            from_state=state_of(expected),
            to_state=state_of(new),
            at=str((new.get("status") or {}).get("timestamp") or now_iso()),
            actor=str(actor or ""),
            actor_kind=actor_kind,
            via=via,
            public=public,
            private=detail or {},
        ).as_dict()
    if not store.compare_and_set(expected, new, event):
        return None
    wakeups.moved(store, new)
    if event is not None:
        logger.info(
            "Task %s: %s -> %s (%s)", new["id"], event["from_state"], event["to_state"], kind
        )
        task_event.send_robust(sender=TaskStore, task_id=new["id"], event=event)
    return Moved(new, event)
