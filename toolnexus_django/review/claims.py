"""Reviewers claiming the Tasks they look at, so a team does not answer the
same Task twice: :func:`claim_task`, :func:`release_task`, :func:`holder`.

A claim is a lifecycle move (:mod:`..lifecycle.reviewing`): recorded in the
Task's events, made by compare-and-set, lapsing after
``REVIEW["CLAIM_SECONDS"]``. Claims guide people; they do not lock answers —
an answer from code or A2A is taken whoever holds the Task, and the admin
asks a reviewer to confirm before answering a Task someone else holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import lifecycle
from ..lifecycle.requests import AnswerRefused, check_reviewer
from ..stores import TaskStore, get_task_store
from ..stores.base import Task


def reviewer_name(user: Any) -> str:
    """How a reviewer is named in claims, approvals and events."""
    return str(user.get_username())


def _task(store: TaskStore, task_id: str) -> Task:
    task = store.get(task_id)
    if task is None:
        raise AnswerRefused("not-found", f"Task not found: {task_id[:100]}")
    if lifecycle.phase_of(task) != lifecycle.states.WAITING:
        raise AnswerRefused("not-waiting", "This task is not waiting for a person.", task=task)
    return task


def claim_task(
    task_id: str, user: Any, *, take_over: bool = False, store: TaskStore | None = None
) -> Task:
    """``user`` claims the waiting Task: the Task as saved. Raises
    :class:`AnswerRefused` ``"claimed"`` naming who holds it (unless
    ``take_over``) — also when another reviewer's claim won the race — and
    ``"own-request"`` when ``user`` sent it and may not answer it."""
    check_reviewer(user)
    store = store or get_task_store()
    task = _task(store, task_id)
    check_reviewer(user, task)  # the requester does not review their own Request
    moved = lifecycle.claim_review(store, task, reviewer=reviewer_name(user), take_over=take_over)
    if moved is None:
        fresh = store.get(task_id) or task
        winner = lifecycle.claim_of(fresh)
        who = winner["by"] if winner else "someone else"
        raise AnswerRefused("claimed", f"This task is being reviewed by {who}.", task=fresh)
    return moved.task


def release_task(task_id: str, user: Any, *, store: TaskStore | None = None) -> Task:
    """``user`` gives the Task back to the queue."""
    check_reviewer(user)
    store = store or get_task_store()
    moved = lifecycle.release_review(store, _task(store, task_id), reviewer=reviewer_name(user))
    if moved is None:
        raise AnswerRefused("changed", "This task changed meanwhile; look at it again.")
    return moved.task


def holder(task: Task | None, now: datetime | None = None) -> dict[str, Any] | None:
    """``{"by", "at"}`` of the reviewer holding ``task``, or None (a lapsed claim is none)."""
    return lifecycle.claim_of(task, now)
