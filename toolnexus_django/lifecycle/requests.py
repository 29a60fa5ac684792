"""Requests a run waits on: who may answer one, what an answer must look
like, and what the requester may know of it.

Who may answer (``TOOLNEXUS["ANSWERERS"]``, by Request kind): a *reviewer* —
the admin, or code acting for a user with the ``answer_task`` permission —
and/or the *requester* — the Task's owner, by an A2A message carrying the
taskId. Approvals and authorizations default to reviewers only, so the peer
whose tool asked for a person's approval cannot grant it itself. A tool
narrows or widens this for its own Requests through
``TOOLNEXUS["TOOL_ANSWERERS"]`` or, where the operator did not decide, a
``data["answerers"]`` of the Request. The system (expiry) always may.

Which reviewer may answer (the permission, segregation of duties) is the
reviewer's side: :mod:`toolnexus_django.review.reviewers`.

Every answer's data is checked against the Request's ``data.schema``; a
decline, and an approval that carries no data, are valid whatever it says.
"""

from __future__ import annotations

import logging
from typing import Any

from toolnexus import Answer

from ..agent.transcript import halted_tool
from ..conf import toolnexus_settings
from ..schemas import violations_of
from .messages import text_part
from .private import Private

logger = logging.getLogger("toolnexus_django.lifecycle")

REVIEWER = "reviewer"
REQUESTER = "requester"
SYSTEM = "system"
#: Who answers: a reviewer, the requester, or the system (expiry).
ROLES = (REVIEWER, REQUESTER, SYSTEM)
ANSWERER_ROLES = (REVIEWER, REQUESTER)

#: What a decision can be.
DECISIONS = ("approve", "decline", "reply", "authorize", "message", "expire")

#: Said on the wire while a Request waits for a reviewer (the requester may not answer).
REVIEWER_NOTE = "A reviewer must answer this request; the task waits until one does."


class AnswerRefused(Exception):
    """The answer was not taken; nothing changed. ``reason`` is one of
    ``not-found``, ``not-waiting``, ``wrong-request``, ``already-answered``,
    ``not-permitted`` (a reviewer without the permission), ``own-request``
    (a reviewer answering a Request of their own Task that only a reviewer
    may answer), ``not-allowed`` (this role may not answer this Request),
    ``invalid`` (the data breaks the Request's schema: ``violations`` says
    how), ``already-approved`` (a four-eyes Request this reviewer approved
    already), or, for reviewers' holds, ``held`` (another reviewer holds
    it) and ``changed`` (the Task moved meanwhile)."""

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


def invalid(what: str, violations: list[dict[str, str]], task: Any = None) -> AnswerRefused:
    """The refusal of data that breaks a schema: ``what`` does not match, and
    the first few ways how."""
    said = "; ".join(f"{v['path']}: {v['message']}" for v in violations[:3])
    return AnswerRefused("invalid", f"{what}: {said}", task=task, violations=violations)


def answerers_of(private: Private) -> tuple[str, ...]:
    """Who may answer the Request ``private`` waits on (its halted tool's rules)."""
    tool = halted_tool_name(private.halt, private.transcript, private.style or "")
    return answerers_for(private.pending or {}, tool)


def normalize_answerers(value: Any) -> tuple[str, ...] | None:
    """``"reviewer"`` / ``"requester"`` / a list of them, as a tuple
    (reviewer first); None for anything else."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        return None
    if not all(isinstance(i, str) and i in ANSWERER_ROLES for i in items):
        return None
    return tuple(sorted(set(items), reverse=True))


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


def schema_of(pending: dict[str, Any]) -> Any:
    data = pending.get("data")
    return data.get("schema") if isinstance(data, dict) else None


def check_answer_data(pending: dict[str, Any], answer: Answer) -> list[dict[str, str]]:
    """How ``answer``'s data breaks the Request's ``data.schema`` (empty when
    it does not). A decline, and an approval carrying no data, are valid
    whatever the schema says."""
    schema = schema_of(pending)
    if schema is None or not answer.ok or answer.data is None:
        return []
    return violations_of(answer.data, schema)


def request_part(req: dict[str, Any], answerers: tuple[str, ...]) -> dict[str, Any]:
    """What the requester may know of a pending Request, as a data part of
    the status message: its kind, who may answer it, the schema an answer
    must satisfy and when it expires — never its id or its other data."""
    public: dict[str, Any] = {"kind": req.get("kind") or "input", "answeredBy": list(answerers)}
    schema = schema_of(req)
    if schema is not None:
        public["schema"] = schema
    if req.get("expiresAt"):
        public["expiresAt"] = req["expiresAt"]
    return {"kind": "data", "data": {"request": public}}


def status_parts(req: dict[str, Any], answerers: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """The parts after the prompt in a waiting Task's status message."""
    note = (text_part(REVIEWER_NOTE),) if REQUESTER not in answerers else ()
    return (*note, request_part(req, answerers))


def tool_that_halted(transcript: Any, style: str) -> str | None:
    """The name of the tool whose Request stopped the run with ``transcript``."""
    return halted_tool(transcript, style)


def halted_tool_name(halt: dict[str, Any] | None, transcript: Any, style: str) -> str | None:
    """The halted tool's name: the call the transcript stopped in (what a
    resume runs), else as suspension recorded it (``halt``). The transcript
    comes first: a halt recorded from a turn whose calls shared an id (before
    those were refused) may name another call of that turn, and who answers
    and how many approve go by the tool that runs."""
    found = tool_that_halted(transcript, style)
    if found:
        return found
    recorded = (halt or {}).get("tool")
    return str(recorded) if recorded else None


def already_answered(event: dict[str, Any], state: str, *, moved_on: bool = False) -> str:
    """The one way someone is told another answered first: ``moved_on`` when
    the Task has since stopped on a newer Request."""
    private = event.get("private") or {}
    who = event.get("actor") or event.get("via") or "someone"
    said = f"({private.get('decision')}) by {who} at {event.get('at')}"
    if moved_on:
        return f"That request was already answered {said}; the task now waits on another one."
    return f"This task was already answered {said}; it is now {state}."
