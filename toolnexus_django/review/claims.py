"""Reviewers claiming the Tasks they look at, so a team does not answer the
same Task twice: :func:`claim_task`, :func:`release_task`, :func:`holder`.

A claim is a move of the waiting Task that keeps its public state
(:func:`toolnexus_django.lifecycle.review_move`): recorded in the Task's
events, made by compare-and-set (two reviewers claiming at once: one wins),
lapsing after ``REVIEW["CLAIM_SECONDS"]``. Claims guide people; they do not
lock answers — an answer from code or A2A is taken whoever holds the Task,
and the admin asks a reviewer to confirm before answering a Task someone
else holds.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle.requests import AnswerRefused
from ..stores import TaskStore, get_task_store
from ..stores.base import Task, parse_instant
from .four_eyes import approvals_needed, approvals_of
from .reviewers import check_reviewer, reviewer_name


def claim_seconds() -> float:
    return float(toolnexus_settings.REVIEW["CLAIM_SECONDS"] or 0)


def claim_of(task: Task | None, now: datetime | None = None) -> dict[str, Any] | None:
    """Who holds ``task`` for review and since when (``{"by", "at"}``), or
    None — also when the claim is older than ``CLAIM_SECONDS`` (it lapsed)."""
    review = lifecycle.read(task).review or {}
    claim = review.get("claim")
    if not isinstance(claim, dict) or not claim.get("by"):
        return None
    since = parse_instant(str(claim.get("at") or ""))
    if since is None:
        return None
    if since + timedelta(seconds=claim_seconds()) <= (now or timezone.now()):
        return None
    return {"by": str(claim["by"]), "at": since}


def holder(task: Task | None, now: datetime | None = None) -> dict[str, Any] | None:
    """``{"by", "at"}`` of the reviewer holding ``task``, or None (a lapsed claim is none)."""
    return claim_of(task, now)


def review_state(task: Task) -> dict[str, Any]:
    """Who holds the Task, and how many of the approvals it needs it has."""
    halt = lifecycle.read(task).halt or {}
    approvals = approvals_of(task)
    return {
        "holder": holder(task),
        "done": len(approvals),
        "approvals": approvals,
        "needed": approvals_needed(halt.get("tool")),
    }


# -- the moves, on a Task read --------------------------------------------------------------


def claim_review(
    store: TaskStore, task: Task, *, reviewer: str, take_over: bool = False, via: str = "admin"
) -> lifecycle.Moved | None:
    """``reviewer`` claims the waiting ``task``: ``None`` when another writer
    moved it first (two reviewers claiming at once: one wins). Refused
    (:class:`AnswerRefused` ``"claimed"``) while another reviewer's claim
    holds, unless ``take_over``."""
    held = claim_of(task)
    if held is not None and held["by"] != reviewer and not take_over:
        raise AnswerRefused("claimed", f"This task is being reviewed by {held['by']}.", task=task)
    now = timezone.now().isoformat()
    detail: dict[str, Any] = {"decision": "claim"}
    if held is not None and held["by"] != reviewer:
        detail["took_over_from"] = held["by"]
    return lifecycle.review_move(
        store, task, "review_claim", {"claim": {"by": reviewer, "at": now}},
        actor=reviewer, via=via, detail=detail,
    )  # fmt: skip


def release_review(
    store: TaskStore, task: Task, *, reviewer: str, via: str = "admin"
) -> lifecycle.Moved | None:
    """``reviewer`` gives back their claim (or clears a lapsed one): ``None``
    when another writer moved the Task first. Refused (``"claimed"``) while
    another reviewer's claim holds."""
    held = claim_of(task)
    if held is not None and held["by"] != reviewer:
        raise AnswerRefused("claimed", f"This task is being reviewed by {held['by']}.", task=task)
    return lifecycle.review_move(
        store, task, "review_release", {}, actor=reviewer, via=via,
        detail={"decision": "release"}, drop=("claim",),
    )  # fmt: skip


# -- by Task id, as a user ------------------------------------------------------------------


def _waiting(store: TaskStore, task_id: str) -> Task:
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
    task = _waiting(store, task_id)
    check_reviewer(user, task)  # the requester does not review their own Request
    moved = claim_review(store, task, reviewer=reviewer_name(user), take_over=take_over)
    if moved is None:
        fresh = store.get(task_id) or task
        winner = claim_of(fresh)
        who = winner["by"] if winner else "someone else"
        raise AnswerRefused("claimed", f"This task is being reviewed by {who}.", task=fresh)
    return moved.task


def release_task(task_id: str, user: Any, *, store: TaskStore | None = None) -> Task:
    """``user`` gives the Task back to the queue."""
    check_reviewer(user)
    store = store or get_task_store()
    moved = release_review(store, _waiting(store, task_id), reviewer=reviewer_name(user))
    if moved is None:
        raise AnswerRefused("changed", "This task changed meanwhile; look at it again.")
    return moved.task
