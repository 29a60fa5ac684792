"""A person's moves on a Task: answer (and expire, the system's answer when
time ran out) and cancel.

``answer`` is where the trust model's rules about Requests are enforced: who
may answer (:func:`.requests.answerers_for`), that the Answer echoes the
pending Request, and that its data satisfies the Request's schema; a refused
answer raises :class:`.requests.AnswerRefused` and changes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from toolnexus import Answer

from ..stores import TaskStore
from ..stores.base import Task, state_of
from . import states
from .edits import edited_transcript
from .events import SYSTEM, USER
from .moves import CANCELED_TEXT, Moved, append_history, begin, commit, set_status
from .private import read
from .requests import (
    DECISIONS,
    REVIEWER,
    ROLES,
    AnswerRefused,
    already_answered,
    answerers_for,
    check_answer_data,
    check_reviewer,
    halted_tool_name,
    invalid,
    not_allowed_message,
)
from .requests import (
    SYSTEM as SYSTEM_ROLE,
)
from .reviewing import approvals_needed, approvals_of, first_approval

# -- a person's moves --------------------------------------------------------------------------


def cancel(store: TaskStore, task: Task, *, actor: str | None, via: str) -> Moved | None:
    """Any non-terminal Task to ``canceled``; a canceled Task never changes again."""
    new, private = begin(task, "cancel")
    set_status(new, states.CANCELED, CANCELED_TEXT)
    private.drop_suspension()
    private.phase, private.lease = states.DONE, None
    return commit(
        store, task, new, private, "cancel", actor=actor, actor_kind=USER, via=via,
        detail={"decision": "cancel"},
    )  # fmt: skip


def _refuse_not_waiting(
    store: TaskStore, task: Task, request_id: str | None, *, moved_on: bool = False
) -> AnswerRefused:
    state = state_of(task)
    answered = [
        e
        for e in store.events(task["id"])
        if e.get("kind") in ("answer", "expire")
        and (request_id is None or (e.get("private") or {}).get("request") == request_id)
    ]
    if answered:
        said = already_answered(answered[-1], state, moved_on=moved_on)
        return AnswerRefused("already-answered", said, task=task)
    return AnswerRefused(
        "not-waiting", f"This task is {state}: it is not waiting for an answer.", task=task
    )


def answer(
    store: TaskStore,
    task: Task,
    given: Answer,
    *,
    decision: str,
    role: str = REVIEWER,
    user: Any = None,
    actor: str | None = None,
    comment: str = "",
    via: str = "admin",
    message: dict[str, Any] | None = None,
    arguments: dict[str, Any] | None = None,
) -> Moved:
    """Take ``given`` for the waiting ``task``: ``working`` with the answer
    waiting to be resumed. Raises :class:`AnswerRefused`, changing nothing,
    when the Task is not waiting, the Answer does not echo the pending
    Request, ``role`` may not answer it, its data breaks the schema, or
    another answer won the race.

    ``role``: ``"reviewer"`` (with ``user``, that user must hold the
    ``answer_task`` permission and, for a Request only a reviewer may answer,
    not be the Task's owner: :func:`.requests.is_own_request`),
    ``"requester"`` or ``"system"`` (expiry).
    ``message`` (an A2A user message) joins the history. ``arguments``: a
    reviewer's edit of the halted tool call's arguments, approved with it
    (:func:`.edits.edited_transcript`). A tool that needs more than one
    approval (``REVIEW["APPROVALS"]``) keeps waiting until that many
    different reviewers approved: the move returned is then a
    ``review_approval``, the Task still waiting."""
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}")
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    if role == REVIEWER and user is not None:
        check_reviewer(user, task)  # also: not their own Request (segregation of duties)
        actor = actor or user.get_username()
    private = read(task)
    pending = private.pending
    if private.phase != states.WAITING or pending is None:
        raise _refuse_not_waiting(store, task, None)
    if given.id != pending.get("id"):
        earlier = _refuse_not_waiting(store, task, given.id, moved_on=True)
        if earlier.reason == "already-answered":
            raise earlier
        raise AnswerRefused(
            "wrong-request",
            f"The answer is for request {str(given.id)[:100]!r}, but the task waits on "
            f"{pending.get('id')!r}.",
            task=task,
        )
    tool = halted_tool_name(private.halt, private.transcript, private.style or "")
    if role != SYSTEM_ROLE:
        allowed = answerers_for(pending, tool)
        if role not in allowed:
            raise AnswerRefused("not-allowed", not_allowed_message(allowed), task=task)
    violations = check_answer_data(pending, given)
    if violations:
        raise invalid("The answer does not match the request's schema", violations, task)
    edit = None
    if arguments is not None:
        edit = edited_transcript(private, pending, given, arguments, role=role)
    needed = approvals_needed(tool) if given.ok else 1
    approvers: list[str] = []
    if needed > 1:
        approvers = _check_approver(task, needed, role, actor, edit is not None)
        if len(approvers) < needed:
            moved = first_approval(
                store, task, reviewer=str(actor), comment=comment, needed=needed, via=via
            )
            if moved is None:
                raise _refuse_not_waiting(store, store.get(task["id"]) or task, pending.get("id"))
            return moved
    kind = "expire" if decision == "expire" else "answer"
    new, private = begin(task, kind)
    private.review = None
    if edit is not None:
        private.transcript = edit.transcript
    # What was decided on, kept for the read-only review page once the run ends.
    private.reviewed = {
        "pending": pending, "halt": private.halt, "transcript": private.transcript,
        "style": private.style,
    }  # fmt: skip
    question = (task.get("status") or {}).get("message")
    set_status(new, states.WORKING)
    # The agent's question leaves the status for the history (as A2A's own
    # task managers do), so the history reads as the conversation.
    append_history(new, question, message)
    record_outcome(new, pending, decision)
    private.phase, private.answer = states.ANSWERED, dataclasses.asdict(given)
    # Who approved the call, for the tool that runs it (current_run().approved_by).
    approved = given.ok and role == REVIEWER and bool(actor)
    private.approved_by = (approvers or [str(actor)]) if approved else None
    detail = {
        "decision": decision,
        "role": role,
        "ok": given.ok,
        "data": given.data,
        "reason": given.reason,
        "comment": comment,
        "request": pending.get("id"),
        "kind": pending.get("kind"),
    }
    if edit is not None:
        detail["arguments"] = {"before": edit.before, "after": edit.after}
    if approvers:
        detail["approvers"] = approvers
    actor_kind = SYSTEM if role == SYSTEM_ROLE else USER
    moved = commit(
        store, task, new, private, kind, actor=actor, actor_kind=actor_kind, via=via, detail=detail
    )
    if moved is None:
        raise _refuse_not_waiting(store, store.get(task["id"]) or task, pending.get("id"))
    return moved


def _check_approver(
    task: Task, needed: int, role: str, actor: str | None, editing: bool
) -> list[str]:
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
    return [*earlier, actor]


#: The outcome a decision shows on the wire (``metadata.requests``).
OUTCOMES = {
    "approve": "approved",
    "authorize": "approved",
    "decline": "declined",
    "expire": "expired",
    "reply": "answered",
    "message": "answered",
}


def record_outcome(task: Task, pending: dict[str, Any], decision: str) -> None:
    """Add the Request's outcome to the Task's public ``metadata.requests``:
    which Request, of what kind, how it ended and when — never who decided
    (that stays in the event's private part)."""
    found = task.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    outcomes = [o for o in metadata.get("requests") or () if isinstance(o, dict)]
    outcomes.append(
        {
            "id": pending.get("id"),
            "kind": pending.get("kind"),
            "outcome": OUTCOMES[decision],
            "at": (task.get("status") or {}).get("timestamp"),
        }
    )
    task["metadata"] = {**metadata, "requests": outcomes}


def expire(store: TaskStore, task: Task) -> Moved:
    """The Request's expiresAt passed: answered ``ok=False``, reason ``expired``."""
    pending = read(task).pending or {}
    return answer(
        store,
        task,
        Answer(id=pending.get("id"), ok=False, reason="expired"),
        decision="expire",
        role=SYSTEM_ROLE,
        via="expiry",
    )
