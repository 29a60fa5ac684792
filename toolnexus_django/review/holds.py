"""A reviewer holding the Task they look at, so a team does not answer the
same Task twice: :func:`hold_task`, :func:`release_task` (who holds it:
:func:`.reviewers.hold_of`).
(The word "claim" is a worker's: a run's lease.)

A hold is a move of the waiting Task that keeps its public state
(:func:`toolnexus_django.lifecycle.review_move`): recorded in the Task's
events (``review_hold``, ``review_release``), made by compare-and-set (two
reviewers at once: one wins), lapsing after ``REVIEW["HOLD_SECONDS"]``.
Holds guide people; they do not lock answers — an answer from code or A2A is
taken whoever holds the Task, and the admin asks a reviewer to confirm
before answering a Task someone else holds.

Tasks stored before the rename read the same: a hold kept as ``"claim"`` in
the private ``review`` notes holds (:data:`.reviewers.HOLD_KEYS`); its events
read as ``review_hold`` (:data:`toolnexus_django.lifecycle.events.RENAMED_KINDS`).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from .. import lifecycle
from ..lifecycle.requests import AnswerRefused
from ..stores import TaskStore, get_task_store
from ..stores.base import Task
from .reviewers import HOLD_KEYS, check_reviewer, hold_of, reviewer_name


def _held_by_other(task: Task, held: dict[str, Any]) -> AnswerRefused:
    return AnswerRefused("held", f"This task is being reviewed by {held['by']}.", task=task)


# -- the moves, on a Task read --------------------------------------------------------------


def start_hold(
    store: TaskStore, task: Task, *, reviewer: str, take_over: bool = False, via: str = "admin"
) -> lifecycle.Moved | None:
    """``reviewer`` holds the waiting ``task``: ``None`` when another writer
    moved it first (two reviewers at once: one wins). Refused
    (:class:`AnswerRefused` ``"held"``) while another reviewer's hold lasts,
    unless ``take_over``."""
    held = hold_of(task)
    if held is not None and held["by"] != reviewer and not take_over:
        raise _held_by_other(task, held)
    now = timezone.now().isoformat()
    detail: dict[str, Any] = {"decision": "hold"}
    if held is not None and held["by"] != reviewer:
        detail["took_over_from"] = held["by"]
    return lifecycle.review_move(
        store, task, "review_hold", {"hold": {"by": reviewer, "at": now}},
        actor=reviewer, via=via, detail=detail, drop=HOLD_KEYS,
    )  # fmt: skip


def end_hold(
    store: TaskStore, task: Task, *, reviewer: str, via: str = "admin"
) -> lifecycle.Moved | None:
    """``reviewer`` gives back their hold (or clears a lapsed one): ``None``
    when another writer moved the Task first. Refused (``"held"``) while
    another reviewer's hold lasts."""
    held = hold_of(task)
    if held is not None and held["by"] != reviewer:
        raise _held_by_other(task, held)
    return lifecycle.review_move(
        store, task, "review_release", {}, actor=reviewer, via=via,
        detail={"decision": "release"}, drop=HOLD_KEYS,
    )  # fmt: skip


# -- by Task id, as a user ------------------------------------------------------------------


def _waiting(store: TaskStore, task_id: str) -> Task:
    task = store.get(task_id)
    if task is None:
        raise AnswerRefused("not-found", f"Task not found: {task_id[:100]}")
    if lifecycle.phase_of(task) != lifecycle.states.WAITING:
        raise AnswerRefused("not-waiting", "This task is not waiting for a person.", task=task)
    return task


def hold_task(
    task_id: str, user: Any, *, take_over: bool = False, store: TaskStore | None = None
) -> Task:
    """``user`` holds the waiting Task: the Task as saved. Raises
    :class:`AnswerRefused` ``"held"`` naming who holds it (unless
    ``take_over``) — also when another reviewer's hold won the race — and
    ``"own-request"`` when ``user`` sent it and may not answer it."""
    check_reviewer(user)
    store = store or get_task_store()
    task = _waiting(store, task_id)
    check_reviewer(user, task)  # the requester does not review their own Request
    moved = start_hold(store, task, reviewer=reviewer_name(user), take_over=take_over)
    if moved is None:
        fresh = store.get(task_id) or task
        winner = hold_of(fresh)
        raise _held_by_other(fresh, winner or {"by": "someone else"})
    return moved.task


def release_task(task_id: str, user: Any, *, store: TaskStore | None = None) -> Task:
    """``user`` gives the Task back to the queue (ends their hold)."""
    check_reviewer(user)
    store = store or get_task_store()
    moved = end_hold(store, _waiting(store, task_id), reviewer=reviewer_name(user))
    if moved is None:
        raise AnswerRefused("changed", "This task changed meanwhile; look at it again.")
    return moved.task
