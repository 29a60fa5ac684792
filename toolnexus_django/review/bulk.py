"""One decision for many Tasks: the queue's "Approve selected" and "Decline
selected". Each Task is answered on its own, through :func:`.decide_task`
(its own event, its own compare-and-set): a Task that changed meanwhile — answered,
held by another reviewer, moved on to another Request — is reported,
never overwritten."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolnexus import Answer

from .. import lifecycle
from ..lifecycle import Verdict
from ..lifecycle.requests import AnswerRefused, schema_of
from ..schemas import violations_of
from ..stores import TaskStore, get_task_store
from .answering import decide_task
from .reviewers import hold_of, reviewer_name

BULK_DECISIONS = ("approve", "decline")


def decidable_in_bulk(pending: dict[str, Any] | None) -> bool:
    """Whether one decision fits this Request without data of its own: an
    approval always (an approval carrying no data is valid whatever its
    schema); another kind only when its schema asks for nothing."""
    pending = pending or {}
    if pending.get("kind") == "approval":
        return True
    if pending.get("kind") == "authorization":
        return False
    schema = schema_of(pending)
    return isinstance(schema, dict) and not violations_of({}, schema)


@dataclass
class BulkResult:
    answered: list[str] = field(default_factory=list)
    #: (task id, why it was left alone)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Tasks that took one of several approvals and still wait (four eyes).
    approved_once: list[str] = field(default_factory=list)


def decide_many(
    task_ids: list[str],
    decision: str,
    user: Any,
    *,
    comment: str = "",
    store: TaskStore | None = None,
) -> BulkResult:
    """Answer each of ``task_ids`` with ``decision`` ("approve" or "decline")
    as ``user``, with one ``comment`` for all."""
    if decision not in BULK_DECISIONS:
        raise ValueError(f"not a bulk decision: {decision!r}")
    store = store or get_task_store()
    me = reviewer_name(user)
    result = BulkResult()
    for task_id in task_ids:
        task = store.get(task_id)
        private = lifecycle.read(task)
        pending = private.pending or {}
        if task is None or private.phase != lifecycle.states.WAITING:
            result.skipped.append((task_id, "it is no longer waiting for a person"))
            continue
        if not decidable_in_bulk(pending):
            result.skipped.append((task_id, "its request needs an answer of its own"))
            continue
        held = hold_of(task)
        if held is not None and held["by"] != me:
            result.skipped.append((task_id, f"it is being reviewed by {held['by']}"))
            continue
        ok = decision == "approve"
        answer = Answer(id=pending.get("id"), ok=ok, reason=None if ok else "declined")
        verdict = Verdict(answer, decision, user=user, comment=comment, via="admin-bulk")
        try:
            saved = decide_task(task_id, verdict, store=store)
        except AnswerRefused as refused:
            result.skipped.append((task_id, str(refused)))
            continue
        if lifecycle.phase_of(saved) == lifecycle.states.WAITING:
            result.approved_once.append(task_id)
        else:
            result.answered.append(task_id)
    return result
