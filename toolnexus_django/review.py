"""Answering a Task that waits on a person — from the admin, an A2A message,
or expiry — and handing it back to the background to resume.

:func:`answer_task` is the one door: it checks that whoever answers may
answer this Request (:func:`answerers_for`), that the Answer echoes the
pending Request and that its data satisfies the Request's ``data.schema``,
moves the Task ``input-required``/``auth-required`` -> ``working`` by
compare-and-set (two reviewers at once: exactly one wins), records the
decision in the Task's audit trail, and enqueues the resume once the
transaction commits. The run itself never happens in the answering request.

Who may answer (``TOOLNEXUS["ANSWERERS"]``, by Request kind): a *reviewer* —
the admin, or code acting for a user with the ``answer_task`` permission —
and/or the *requester* — the Task's owner, by an A2A message carrying the
taskId. Approvals and authorizations default to reviewers only, so the peer
whose tool asked for a person's approval cannot grant it itself. A tool
narrows or widens this for its own Requests through
``TOOLNEXUS["TOOL_ANSWERERS"]`` or, where the operator did not decide, a
``data["answerers"]`` of the Request. Expiry always may.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any

from django.utils import timezone
from toolnexus import Answer

from .a2a import shapes
from .conf import toolnexus_settings
from .schemas import violations_of
from .signals import task_answered
from .stores import TaskStore, get_task_store
from .stores.base import request_expiry

logger = logging.getLogger("toolnexus_django.review")

#: What a decision can be, in the audit trail.
DECISIONS = ("approve", "decline", "reply", "authorize", "message", "expire")

#: The permission that makes a user a reviewer.
ANSWER_PERMISSION = "toolnexus_django.answer_task"

REVIEWER = "reviewer"
REQUESTER = "requester"
#: Who answers: a reviewer, the requester, or the system (expiry).
ROLES = (REVIEWER, REQUESTER, "system")
ANSWERER_ROLES = (REVIEWER, REQUESTER)


class AnswerRefused(Exception):
    """The answer was not taken; nothing changed. ``reason`` is one of
    ``not-found``, ``not-waiting``, ``wrong-request``, ``already-answered``,
    ``not-permitted`` (a reviewer without the permission), ``not-allowed``
    (this role may not answer this Request) or ``invalid`` (the data breaks
    the Request's schema: ``violations`` says how)."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        task: dict[str, Any] | None = None,
        violations: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.task = task
        self.violations = violations or []


def normalize_answerers(value: Any) -> tuple[str, ...] | None:
    """``"reviewer"`` / ``"requester"`` / a list of them, as a sorted tuple;
    None for anything else."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        return None
    if not all(isinstance(i, str) and i in ANSWERER_ROLES for i in items):
        return None
    return tuple(sorted(set(items), reverse=True))  # ("reviewer", "requester")


def answerers_for(pending: dict[str, Any], tool: str | None = None) -> tuple[str, ...]:
    """Who may answer ``pending`` (made by ``tool``): TOOL_ANSWERERS for the
    tool, else the Request's own ``data["answerers"]``, else ANSWERERS for
    its kind (``"*"`` for any other kind); reviewers only when nothing says."""
    by_tool = toolnexus_settings.TOOL_ANSWERERS or {}
    if tool is not None and tool in by_tool:
        chosen = normalize_answerers(by_tool[tool])
        if chosen is not None:
            return chosen
    data = pending.get("data")
    if isinstance(data, dict) and "answerers" in data:
        chosen = normalize_answerers(data["answerers"])
        if chosen is not None:
            return chosen
        logger.warning("Request %s: data.answerers %r ignored", pending.get("id"), data)
    by_kind = toolnexus_settings.ANSWERERS or {}
    kind = str(pending.get("kind") or "")
    for key in (kind, "*"):
        if key in by_kind:
            chosen = normalize_answerers(by_kind[key])
            if chosen is not None:
                return chosen
    return (REVIEWER,)


def pending_schema(pending: dict[str, Any]) -> Any:
    data = pending.get("data")
    return data.get("schema") if isinstance(data, dict) else None


def check_answer_data(pending: dict[str, Any], answer: Answer) -> list[dict[str, str]]:
    """How ``answer``'s data breaks the Request's ``data.schema`` (empty when
    it does not). A decline, and an approval carrying no data, are valid
    whatever the schema says."""
    schema = pending_schema(pending)
    if schema is None or not answer.ok or answer.data is None:
        return []
    return violations_of(answer.data, schema)


def not_allowed_message(allowed: tuple[str, ...]) -> str:
    if allowed == (REVIEWER,):
        return (
            "A reviewer must answer this request (in the admin review queue); "
            "the task keeps waiting for one."
        )
    return (
        "Only the requester (the peer that sent the task, by a message carrying its "
        "taskId) may answer this request."
    )


def pending_request(task: dict[str, Any]) -> dict[str, Any] | None:
    return (task.get(shapes.PRIVATE_KEY) or {}).get("pending")


def tool_that_halted(transcript: Any, style: str) -> str | None:
    """The name of the tool whose Request stopped the run with ``transcript``."""
    from .resume import ResumeError, find_halt

    try:
        return find_halt(transcript or [], style).halted.name
    except (ResumeError, KeyError, IndexError, TypeError, AttributeError):
        return None


def halted_tool(task: dict[str, Any]) -> str | None:
    """The name of the tool whose Request the Task waits on."""
    section = task.get(shapes.PRIVATE_KEY) or {}
    return tool_that_halted(section.get("transcript"), str(section.get("style") or "openai"))


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
    role: str = REVIEWER,
    user: Any = None,
    actor: str | None = None,
    comment: str = "",
    via: str = "admin",
    message: dict[str, Any] | None = None,
    store: TaskStore | None = None,
) -> dict[str, Any]:
    """Take ``answer`` for the waiting Task ``task_id``; returns the Task as
    saved (``working``). Raises :class:`AnswerRefused` and changes nothing when
    the Task is unknown, not waiting, already answered, the Answer does not
    echo the pending Request's id, ``role`` may not answer this Request, or
    the Answer's data breaks the Request's schema.

    ``role``: who answers — ``"reviewer"`` (the default for code on the
    server; with ``user``, that user must hold the ``answer_task``
    permission), ``"requester"`` (the Task's owner over A2A) or ``"system"``
    (expiry). ``message`` (an A2A user message) is added to the history."""
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}")
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    if role == REVIEWER and user is not None:
        if not (user.is_active and user.has_perm(ANSWER_PERMISSION)):
            raise AnswerRefused("not-permitted", "You are not allowed to answer tasks.")
        actor = actor or user.get_username()
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

    if role != "system":
        allowed = answerers_for(pending, halted_tool(task))
        if role not in allowed:
            raise AnswerRefused("not-allowed", not_allowed_message(allowed), task=task)
    violations = check_answer_data(pending, answer)
    if violations:
        raise AnswerRefused(
            "invalid",
            "The answer does not match the request's schema: "
            + "; ".join(f"{v['path']}: {v['message']}" for v in violations[:3]),
            task=task,
            violations=violations,
        )

    working = shapes.with_status(task, "working")
    question = (task.get("status") or {}).get("message")
    # The agent's question leaves the status for the history (as A2A's own
    # task managers do), so the history reads as the conversation.
    shapes.append_history(working, *(m for m in (question, message) if m is not None))
    section = shapes.private(working)
    section["answer"] = dataclasses.asdict(answer)
    event = {
        "actor": actor,
        "via": via,
        "decision": decision,
        "role": role,
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
            answer_task(
                task_id, answer, decision="expire", role="system", via="expiry", store=store
            )
        except AnswerRefused:
            continue  # answered by someone else meanwhile: fine
        expired.append(task_id)
    return expired
