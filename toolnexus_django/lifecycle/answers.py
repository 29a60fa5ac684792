"""A person's moves on a Task, as the state machine makes them: an answer
taken (``waiting`` -> ``answered``), expire (the system's answer when time
ran out), cancel, and the moves that keep a waiting Task waiting (a
reviewer's hold or release, one approval of several, a reminder mark).

What an answer is travels as one command, :class:`Verdict`. Whether it may
be taken — who answers, the schema, an edit, four eyes — is the reviewer's
side (:mod:`toolnexus_django.review`), checked before the move; here the
answer is the move itself: legal from ``waiting``, for the pending Request,
made by compare-and-set with its event. One that cannot be made raises
:class:`.requests.AnswerRefused` (saying whether someone answered first)
and changes nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from toolnexus import Answer

from ..observability import tracing
from ..stores import TaskStore
from ..stores.base import Task, state_of
from . import states
from .events import SYSTEM, USER
from .moves import CANCELED_TEXT, Moved, append_history, begin, commit, set_status
from .private import read
from .requests import DECISIONS, REVIEWER, ROLES, AnswerRefused, already_answered
from .requests import SYSTEM as SYSTEM_ROLE


@dataclass(frozen=True)
class Verdict:
    """One answer to the Request a Task waits on, as a command: the Answer,
    the decision it records, and who gave it how.

    ``role``: ``"reviewer"`` (with ``user``, the reviewer's rules apply:
    the ``answer_task`` permission, not their own Request), ``"requester"``
    (the Task's owner over A2A) or ``"system"`` (expiry). ``actor`` names
    who answered (default: ``user``'s username). ``message``: an A2A user
    message for the history. ``arguments``: a reviewer's edit of the halted
    call's arguments, approved with it."""

    answer: Answer
    decision: str
    role: str = REVIEWER
    user: Any = None
    actor: str | None = None
    comment: str = ""
    via: str = "admin"
    message: dict[str, Any] | None = None
    arguments: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"unknown decision {self.decision!r}")
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}")

    @property
    def by(self) -> str | None:
        """Who answered: ``actor``, else the reviewing ``user``'s username."""
        if not self.actor and self.role == REVIEWER and self.user is not None:
            return str(self.user.get_username())
        return self.actor


@dataclass(frozen=True)
class Edit:
    """A reviewer's edit of the halted call: the transcript with the call's
    arguments replaced, and both versions of them (for the event)."""

    transcript: list[dict[str, Any]]
    before: dict[str, Any]
    after: dict[str, Any]


# -- cancel -----------------------------------------------------------------------------------


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


# -- answers ----------------------------------------------------------------------------------


def refuse_not_waiting(
    store: TaskStore, task: Task, request_id: str | None, *, moved_on: bool = False
) -> AnswerRefused:
    """Why ``task`` takes no answer (to ``request_id``): someone answered it
    first, or it does not wait at all."""
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


def waiting_on(store: TaskStore, task: Task, given: Answer) -> dict[str, Any]:
    """The pending Request ``given`` answers; refused when ``task`` does not
    wait, or waits on another Request (one answered already, say)."""
    private = read(task)
    pending = private.pending
    if private.phase != states.WAITING or pending is None:
        raise refuse_not_waiting(store, task, None)
    if given.id != pending.get("id"):
        earlier = refuse_not_waiting(store, task, given.id, moved_on=True)
        if earlier.reason == "already-answered":
            raise earlier
        raise AnswerRefused(
            "wrong-request",
            f"The answer is for request {str(given.id)[:100]!r}, but the task waits on "
            f"{pending.get('id')!r}.",
            task=task,
        )
    return pending


def take_answer(
    store: TaskStore,
    task: Task,
    verdict: Verdict,
    *,
    edit: Edit | None = None,
    approvers: tuple[str, ...] = (),
) -> Moved:
    """The waiting ``task`` takes ``verdict``: ``working`` with the answer
    waiting to be resumed (``edit``: with the edited call; ``approvers``:
    every reviewer of a four-eyes approval). Raises :class:`AnswerRefused`
    when it does not wait on the Request answered or another answer won the race."""
    pending = waiting_on(store, task, verdict.answer)
    given, actor = verdict.answer, verdict.by
    kind = "expire" if verdict.decision == "expire" else "answer"
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
    append_history(new, question, verdict.message)
    record_request_outcome(new, pending, verdict.decision)
    private.phase, private.answer = states.ANSWERED, dataclasses.asdict(given)
    answered_by = tracing.carrier()  # the resumed run links to this decision
    if answered_by:
        private.trace = {**(private.trace or {}), "answer": answered_by}
    # Who approved the call, for the tool that runs it (current_run().approved_by).
    approved = given.ok and verdict.role == REVIEWER and bool(actor)
    private.approved_by = (list(approvers) or [str(actor)]) if approved else None
    moved = commit(
        store, task, new, private, kind, actor=actor,
        actor_kind=SYSTEM if verdict.role == SYSTEM_ROLE else USER, via=verdict.via,
        detail=_detail(verdict, pending, edit, approvers),
    )  # fmt: skip
    if moved is None:
        raise refuse_not_waiting(store, store.get(task["id"]) or task, pending.get("id"))
    return moved


def _detail(
    verdict: Verdict, pending: dict[str, Any], edit: Edit | None, approvers: tuple[str, ...]
) -> dict[str, Any]:
    """The answer event's private part: the decision, never on the wire."""
    given = verdict.answer
    detail = {
        "decision": verdict.decision, "role": verdict.role, "ok": given.ok, "data": given.data,
        "reason": given.reason, "comment": verdict.comment, "request": pending.get("id"),
        "kind": pending.get("kind"),
    }  # fmt: skip
    if edit is not None:
        detail["arguments"] = {"before": edit.before, "after": edit.after}
    if approvers:
        detail["approvers"] = list(approvers)
    return detail


#: The outcome a decision shows on the wire (``metadata.requests``).
OUTCOMES = {
    "approve": "approved",
    "authorize": "approved",
    "decline": "declined",
    "expire": "expired",
    "reply": "answered",
    "message": "answered",
}


def record_request_outcome(task: Task, pending: dict[str, Any], decision: str) -> None:
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
    given = Answer(id=pending.get("id"), ok=False, reason="expired")
    return take_answer(
        store, task, Verdict(given, decision="expire", role=SYSTEM_ROLE, via="expiry")
    )


# -- moves that keep the Task waiting ---------------------------------------------------------


def review_move(
    store: TaskStore,
    task: Task,
    kind: str,
    change: dict[str, Any],
    *,
    actor: str,
    via: str,
    detail: dict[str, Any],
    drop: tuple[str, ...] = (),
) -> Moved | None:
    """A move of the waiting ``task`` that keeps its public state (a
    reviewer's hold or release, a first approval, a reminder mark): its
    private ``review`` notes without the keys ``drop``, with ``change``.
    Recorded as an event, never sent on the wire (:data:`.states.UNSEEN`);
    ``None`` when another writer moved the Task first."""
    new, private = begin(task, kind)
    review = {k: v for k, v in (private.review or {}).items() if k not in drop}
    private.review = {**review, **change}
    pending = private.pending or {}
    return commit(
        store, task, new, private, kind, actor=actor,
        actor_kind=SYSTEM if via == "sweep" else USER, via=via,
        detail={"request": pending.get("id"), "kind": pending.get("kind"), **detail},
    )  # fmt: skip
