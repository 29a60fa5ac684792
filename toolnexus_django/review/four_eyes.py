"""Four eyes, per tool: ``REVIEW["APPROVALS"] = {"pay_supplier": 2}`` makes
that tool's Requests wait for two different reviewers' approvals before the
run resumes. Each approval but the last is a ``review_approval`` move: the
Task keeps waiting, its approvals so far in the private ``review`` notes,
and whoever held it no longer does."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle.requests import REVIEWER, AnswerRefused
from ..stores import TaskStore
from ..stores.base import Task
from .holds import STORED_AS, hold_of


def approvals_of(task: Task | None) -> list[dict[str, Any]]:
    """The approvals a four-eyes Request has so far (``{"by", "at", "comment"}``)."""
    review = lifecycle.read(task).review or {}
    return [a for a in review.get("approvals") or () if isinstance(a, dict)]


def approvals_needed(tool: str | None) -> int:
    """How many different reviewers must approve a Request of ``tool``."""
    wanted = (toolnexus_settings.REVIEW["APPROVALS"] or {}).get(tool or "")
    try:
        return max(1, int(wanted or 1))
    except (TypeError, ValueError):
        return 1


def review_state(task: Task) -> dict[str, Any]:
    """Who holds the Task, and how many of the approvals it needs it has."""
    halt = lifecycle.read(task).halt or {}
    approvals = approvals_of(task)
    return {
        "holder": hold_of(task),
        "done": len(approvals),
        "approvals": approvals,
        "needed": approvals_needed(halt.get("tool")),
    }


def approvers_with(
    task: Task, needed: int, role: str, actor: str | None, editing: bool
) -> tuple[str, ...]:
    """The approvers of a four-eyes Request once ``actor``'s approval counts;
    refuses an approval that cannot count."""
    if role != REVIEWER or not actor:
        raise AnswerRefused(
            "not-allowed", f"This request needs {needed} reviewers' approvals.", task=task
        )
    earlier = [str(a.get("by")) for a in approvals_of(task)]
    if actor in earlier:
        raise AnswerRefused(
            "already-approved",
            f"You already approved this request; it needs {needed} different reviewers.",
            task=task,
        )
    if editing:
        raise AnswerRefused(
            "invalid",
            "The arguments of a call that needs several approvals cannot be edited: "
            "every reviewer must approve the same call.",
            task=task,
        )
    return (*earlier, actor)


def first_approval(
    store: TaskStore, task: Task, *, reviewer: str, comment: str, needed: int, via: str
) -> lifecycle.Moved | None:
    """One more approval of a Request that needs ``needed`` (four eyes): the
    Task keeps waiting; ``None`` when another writer moved it first."""
    approvals = approvals_of(task)
    entry = {"by": reviewer, "at": timezone.now().isoformat(), "comment": comment}
    return lifecycle.review_move(
        store, task, "review_approval", {"approvals": [*approvals, entry]},
        actor=reviewer, via=via,
        detail={"decision": "approve", "comment": comment,
                "approvals": len(approvals) + 1, "needed": needed},
        drop=STORED_AS,
    )  # fmt: skip
