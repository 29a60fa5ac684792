"""Answering a Task that waits on a person — from the admin, an A2A message,
or expiry — and handing it back to the background to resume.

:func:`answer_task` is the one door: it checks the Answer against the pending
Request, moves the Task ``input-required``/``auth-required`` -> ``working`` by
compare-and-set (two reviewers at once: exactly one wins), records the
decision in the Task's audit trail, and enqueues the resume once the
transaction commits. The run itself never happens in the answering request.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any

from django.utils import timezone
from toolnexus import Answer

from .a2a import shapes
from .signals import task_answered
from .stores import TaskStore, get_task_store
from .stores.base import request_expiry

logger = logging.getLogger("toolnexus_django.review")

#: What a decision can be, in the audit trail.
DECISIONS = ("approve", "decline", "reply", "authorize", "message", "expire")


class AnswerRefused(Exception):
    """The answer was not taken; nothing changed. ``reason`` is one of
    ``not-found``, ``not-waiting``, ``wrong-request``, ``already-answered``."""

    def __init__(self, reason: str, message: str, *, task: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.task = task


def pending_request(task: dict[str, Any]) -> dict[str, Any] | None:
    return (task.get(shapes.PRIVATE_KEY) or {}).get("pending")


def section_audit(task: dict[str, Any]) -> list[dict[str, Any]]:
    return list((task.get(shapes.PRIVATE_KEY) or {}).get("audit") or ())


def last_answer(task: dict[str, Any]) -> dict[str, Any] | None:
    """The most recent answer event of the Task's audit trail, if any."""
    for event in reversed((task.get(shapes.PRIVATE_KEY) or {}).get("audit") or ()):
        if event.get("decision") in DECISIONS:
            return event
    return None


def _refuse_not_waiting(task: dict[str, Any]) -> AnswerRefused:
    state = shapes.state_of(task)
    previous = last_answer(task)
    if previous is not None:
        who = previous.get("actor") or previous.get("via") or "someone"
        return AnswerRefused(
            "already-answered",
            f"This task was already answered ({previous.get('decision')}) by {who} "
            f"at {previous.get('at')}; it is now {state}.",
            task=task,
        )
    return AnswerRefused(
        "not-waiting", f"This task is {state}: it is not waiting for an answer.", task=task
    )


def answer_task(
    task_id: str,
    answer: Answer,
    *,
    decision: str,
    actor: str | None = None,
    comment: str = "",
    via: str = "admin",
    message: dict[str, Any] | None = None,
    store: TaskStore | None = None,
) -> dict[str, Any]:
    """Take ``answer`` for the waiting Task ``task_id``; returns the Task as
    saved (``working``). Raises :class:`AnswerRefused` and changes nothing when
    the Task is unknown, not waiting, already answered, or the Answer does not
    echo the pending Request's id. ``message`` (an A2A user message) is added
    to the Task's history."""
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}")
    store = store or get_task_store()
    task = store.get(task_id)
    if task is None:
        raise AnswerRefused("not-found", f"Task not found: {task_id[:100]}")
    state = shapes.state_of(task)
    pending = pending_request(task)
    if state not in shapes.AWAITING_HUMAN or pending is None:
        raise _refuse_not_waiting(task)
    if answer.id != pending.get("id"):
        answered = [e for e in section_audit(task) if e.get("request") == answer.id]
        if answered:
            who = answered[-1].get("actor") or answered[-1].get("via") or "someone"
            raise AnswerRefused(
                "already-answered",
                f"That request was already answered ({answered[-1].get('decision')}) by {who} "
                f"at {answered[-1].get('at')}; the task now waits on another one.",
                task=task,
            )
        raise AnswerRefused(
            "wrong-request",
            f"The answer is for request {str(answer.id)[:100]!r}, but the task waits on "
            f"{pending.get('id')!r}.",
            task=task,
        )

    working = shapes.with_status(task, "working")
    question = (task.get("status") or {}).get("message")
    if question is not None:
        # The agent's question leaves the status for the history (as A2A's
        # own task managers do), so the history reads as the conversation.
        working.setdefault("history", []).append(question)
    if message is not None:
        working.setdefault("history", []).append(message)
    section = shapes.private(working)
    section["answer"] = dataclasses.asdict(answer)
    event = {
        "actor": actor,
        "via": via,
        "decision": decision,
        "ok": answer.ok,
        "data": answer.data,
        "reason": answer.reason,
        "comment": comment,
        "request": pending.get("id"),
        "kind": pending.get("kind"),
        "from": state,
        "to": "working",
    }
    shapes.add_event(working, event)
    if not store.compare_and_set(task, working):
        current = store.get(task_id) or task
        raise _refuse_not_waiting(current)
    logger.info("Task %s: %s -> working (%s by %s)", task_id, state, decision, actor or via)

    from .tasks import schedule_resume

    schedule_resume(task_id, store)
    task_answered.send_robust(sender=answer_task, task_id=task_id, answer=answer, event=event)
    return working


# -- expiry ----------------------------------------------------------------------


def expire_due(store: TaskStore | None = None, now: datetime | None = None) -> list[str]:
    """Answer every waiting Task whose Request expired with ``ok=False``,
    reason ``expired``; their runs resume with that. Returns their ids."""
    store = store or get_task_store()
    now = now or timezone.now()
    expired: list[str] = []
    for task_id in store.waiting_ids(expired_by=now):
        task = store.get(task_id)
        pending = pending_request(task or {})
        deadline = request_expiry(task)
        if task is None or pending is None or deadline is None or deadline > now:
            continue
        answer = Answer(id=pending["id"], ok=False, reason="expired")
        try:
            answer_task(task_id, answer, decision="expire", via="expiry", store=store)
        except AnswerRefused:
            continue  # answered by someone else meanwhile: fine
        expired.append(task_id)
    return expired
