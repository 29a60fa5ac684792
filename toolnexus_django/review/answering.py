"""Answering a Task that waits on a person — from the admin, an A2A message,
or code — and handing it back to the background to resume.

:func:`answer_task` is the one door: the lifecycle's ``answer`` move checks
that whoever answers may answer this Request, that the Answer echoes it and
that its data satisfies the Request's ``data.schema``, and moves the Task
``input-required``/``auth-required`` -> ``working`` by compare-and-set (two
reviewers at once: exactly one wins) with its event; the resume is enqueued
once the transaction commits. The run never happens in the answering request.
"""

from __future__ import annotations

from typing import Any

from toolnexus import Answer

from .. import lifecycle
from ..fulfilment.jobs import schedule_resume
from ..lifecycle.requests import (
    ANSWER_PERMISSION,
    DECISIONS,
    REQUESTER,
    REVIEWER,
    AnswerRefused,
    answerers_for,
    check_answer_data,
    normalize_answerers,
)
from ..signals import task_answered
from ..stores import TaskStore, get_task_store
from ..stores.base import Task


def answer_task(
    task_id: str,
    answer: Answer,
    *,
    decision: str,
    role: str = REVIEWER,
    user: Any = None,
    actor: str | None = None,
    comment: str = "",
    via: str = "admin",
    message: dict[str, Any] | None = None,
    store: TaskStore | None = None,
    arguments: dict[str, Any] | None = None,
) -> Task:
    """Take ``answer`` for the waiting Task ``task_id``; returns the Task as
    saved (``working``). Raises :class:`AnswerRefused` and changes nothing when
    the Task is unknown, not waiting, already answered, the Answer does not
    echo the pending Request's id, ``role`` may not answer this Request, or
    the Answer's data breaks the Request's schema.

    ``role``: who answers — ``"reviewer"`` (the default for code on the
    server; with ``user``, that user must hold the ``answer_task``
    permission), ``"requester"`` (the Task's owner over A2A) or ``"system"``
    (expiry). ``message`` (an A2A user message) is added to the history.
    ``arguments``: the halted call's arguments as the reviewer edited them.

    A tool that needs several approvals (``REVIEW["APPROVALS"]``) returns the
    Task still waiting after each approval but the last; only the last one
    resumes the run."""
    store = store or get_task_store()
    task = store.get(task_id)
    if task is None:
        raise AnswerRefused("not-found", f"Task not found: {task_id[:100]}")
    moved = lifecycle.answer(
        store,
        task,
        answer,
        decision=decision,
        role=role,
        user=user,
        actor=actor,
        comment=comment,
        via=via,
        message=message,
        arguments=arguments,
    )
    if moved.event is None or moved.event["kind"] not in ("answer", "expire"):
        return moved.task  # one approval of several: the Task keeps waiting
    schedule_resume(task_id, store)
    task_answered.send_robust(sender=answer_task, task_id=task_id, answer=answer, event=moved.event)
    return moved.task


__all__ = [
    "ANSWER_PERMISSION",
    "DECISIONS",
    "REQUESTER",
    "REVIEWER",
    "AnswerRefused",
    "answer_task",
    "answerers_for",
    "check_answer_data",
    "normalize_answerers",
]
