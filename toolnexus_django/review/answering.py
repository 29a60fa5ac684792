"""Answering a Task that waits on a person — from the admin, an A2A message,
or code — and handing it back to the background to resume.

An answer is a :class:`~toolnexus_django.lifecycle.Verdict`. :func:`answer`
applies the reviewer's rules to it — who may answer this Request, that its
data satisfies the Request's ``data.schema``, an edit of the call, four eyes
— and makes the lifecycle's move (``input-required``/``auth-required`` ->
``working``, by compare-and-set: two reviewers at once, exactly one wins,
with its event). :func:`decide_task` is the one door by Task id: it also
enqueues the resume once the transaction commits and sends
``task_answered``; :func:`answer_task` is its keyword form (public API). The
run never happens in the answering request.

Four eyes, per tool: ``REVIEW["APPROVALS"] = {"pay_supplier": 2}`` makes
that tool's Requests wait for two different reviewers' approvals before the
run resumes. Each approval but the last is a ``review_approval`` move
(:func:`first_approval`): the Task keeps waiting, its approvals so far in the
private ``review`` notes, and whoever held it no longer does.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from toolnexus import Answer

from .. import lifecycle
from ..fulfilment.jobs import schedule_resume
from ..lifecycle import Verdict
from ..lifecycle.requests import (
    REVIEWER,
    SYSTEM,
    AnswerRefused,
    answerers_for,
    check_answer_data,
    halted_tool_name,
    invalid,
    not_allowed_message,
)
from ..observability import spannames as names
from ..observability import tracing
from ..signals import task_answered
from ..stores import TaskStore, get_task_store
from ..stores.base import Task, state_of
from .edits import edited_transcript
from .reviewers import HOLD_KEYS, approvals_needed, approvals_of, check_reviewer


def answer(store: TaskStore, task: Task, verdict: Verdict) -> lifecycle.Moved:
    """:func:`take_verdict`, inside its span when TRACING is on."""
    if not tracing.recording():
        return take_verdict(store, task, verdict)
    attributes = {
        names.TASK_ID: task.get("id"),
        names.CONVERSATION: task.get("contextId"),
        names.DECISION: verdict.decision,
        names.DECISION_ROLE: verdict.role,
        names.USER_ID: verdict.by,
    }
    started = (lifecycle.read(task).trace or {}).get("start")
    with tracing.span(f"review {verdict.decision}", attributes, links={"start": started}) as span:
        moved = take_verdict(store, task, verdict)
        tracing.note(span, {names.TASK_STATE: names.task_state(state_of(moved.task))})
        return moved


def take_verdict(store: TaskStore, task: Task, verdict: Verdict) -> lifecycle.Moved:
    """Take ``verdict`` for the waiting ``task``: ``working`` with the answer
    waiting to be resumed. Raises :class:`AnswerRefused`, changing nothing,
    when a reviewing ``user`` may not answer it (no permission, their own
    Request), the Task is not waiting, the Answer does not echo the pending
    Request, the role may not answer it, its data breaks the schema, the
    edit cannot be taken, or another answer won the race. A tool that needs
    more than one approval (``REVIEW["APPROVALS"]``) keeps waiting until that
    many different reviewers approved: the move returned is then a
    ``review_approval``, the Task still waiting."""
    if verdict.role == REVIEWER and verdict.user is not None:
        check_reviewer(verdict.user, task)  # also: not their own Request (segregation of duties)
    given = verdict.answer
    pending = lifecycle.waiting_on(store, task, given)
    private = lifecycle.read(task)
    tool = halted_tool_name(private.halt, private.transcript, private.style or "")
    if verdict.role != SYSTEM:
        allowed = answerers_for(pending, tool)
        if verdict.role not in allowed:
            raise AnswerRefused("not-allowed", not_allowed_message(allowed), task=task)
    violations = check_answer_data(pending, given)
    if violations:
        raise invalid("The answer does not match the request's schema", violations, task)
    edit = None
    if verdict.arguments is not None:
        edit = edited_transcript(private, given, verdict.arguments, role=verdict.role)
    needed = approvals_needed(tool) if given.ok else 1
    if needed <= 1:
        return lifecycle.take_answer(store, task, verdict, edit=edit)
    approvers = approvers_with(task, needed, verdict.role, verdict.by, edit is not None)
    if len(approvers) >= needed:
        return lifecycle.take_answer(store, task, verdict, edit=edit, approvers=approvers)
    moved = first_approval(
        store, task, reviewer=str(verdict.by), comment=verdict.comment, needed=needed,
        via=verdict.via,
    )  # fmt: skip
    if moved is None:
        raise lifecycle.refuse_not_waiting(store, store.get(task["id"]) or task, pending.get("id"))
    return moved


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
        drop=HOLD_KEYS,
    )  # fmt: skip


def decide_task(task_id: str, verdict: Verdict, *, store: TaskStore | None = None) -> Task:
    """Take ``verdict`` for the waiting Task ``task_id`` (:func:`answer`);
    returns the Task as saved — ``working``, its resume enqueued once the
    transaction commits, or still waiting after one approval of several.
    Raises :class:`AnswerRefused` and changes nothing when the Task is
    unknown or the answer is refused."""
    store = store or get_task_store()
    task = store.get(task_id)
    if task is None:
        raise AnswerRefused("not-found", f"Task not found: {task_id[:100]}")
    moved = answer(store, task, verdict)
    if moved.event is None or moved.event["kind"] not in ("answer", "expire"):
        return moved.task  # one approval of several: the Task keeps waiting
    schedule_resume(task_id, store)
    task_answered.send_robust(
        sender=answer_task, task_id=task_id, answer=verdict.answer, event=moved.event
    )
    return moved.task


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
    resumes the run. The keyword form of :func:`decide_task` (the fields of
    :class:`~toolnexus_django.lifecycle.Verdict`)."""
    verdict = Verdict(
        answer, decision=decision, role=role, user=user, actor=actor, comment=comment, via=via,
        message=message, arguments=arguments,
    )  # fmt: skip
    return decide_task(task_id, verdict, store=store)
