"""The reviewers of a Task: who may review (the permission, segregation of
duties), and what the Task's review notes say of them — who holds it
(:func:`hold_of`), who approved it so far and how many approvals it needs
(four eyes). The moves that change those notes are :mod:`.holds` and
:mod:`.answering`.

Segregation of duties: a reviewer does not answer, as a reviewer, a Request
of a Task they sent themselves that only a reviewer may answer — the
requester of an approval never approves it, wherever the answer comes from
(the admin, bulk, four eyes, a hold, ``answer_task(..., user=...)``) —
unless ``REVIEW["ALLOW_SELF_APPROVAL"]``. Where the requester may answer (an
``input`` question, by default), they still may.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle import states
from ..lifecycle.requests import REQUESTER, AnswerRefused, answerers_of, halted_tool_name
from ..stores.base import Task, parse_instant

#: The permission that makes a user a reviewer.
ANSWER_PERMISSION = "toolnexus_django.answer_task"

#: Said to a reviewer who would answer their own Request.
OWN_REQUEST = "You sent this request, so another reviewer must answer it (segregation of duties)."

#: Where the private ``review`` notes keep a hold: now, and before the rename
#: (a reviewer's hold was a "claim"; that word is a worker's now).
HOLD_KEYS = ("hold", "claim")


# -- who may review -----------------------------------------------------------------------------


def is_reviewer(user: Any) -> bool:
    """Whether ``user`` may answer (and hold) Tasks as a reviewer."""
    return bool(user.is_active and user.has_perm(ANSWER_PERMISSION))


def reviewer_name(user: Any) -> str:
    """How a reviewer is named in holds, approvals and events."""
    return str(user.get_username())


def check_reviewer(user: Any, task: Task | None = None) -> None:
    """Refuse (``not-permitted``) a user who is not a reviewer; with
    ``task``, refuse (``own-request``) one who sent it, if only a reviewer
    may answer what it waits on (:func:`is_own_request`)."""
    if not is_reviewer(user):
        raise AnswerRefused("not-permitted", "You are not allowed to answer tasks.")
    if task is not None and is_own_request(user, task):
        raise AnswerRefused("own-request", OWN_REQUEST, task=task)


def is_own_request(user: Any, task: Task | None) -> bool:
    """Whether ``user`` sent ``task``, which waits on a Request only a
    reviewer may answer, while ``REVIEW["ALLOW_SELF_APPROVAL"]`` is off:
    then ``user`` may not answer it, nor hold it, as a reviewer."""
    private = lifecycle.read(task)
    if private.phase != states.WAITING or private.pending is None or private.owner is None:
        return False
    if str(getattr(user, "pk", None)) != private.owner:
        return False
    if toolnexus_settings.REVIEW["ALLOW_SELF_APPROVAL"]:
        return False
    return REQUESTER not in answerers_of(private)


# -- what the review notes say ------------------------------------------------------------------


def hold_seconds() -> float:
    return float(toolnexus_settings.REVIEW["HOLD_SECONDS"] or 0)


def hold_of(task: Task | None, now: datetime | None = None) -> dict[str, Any] | None:
    """Who holds ``task`` for review and since when (``{"by", "at"}``), or
    None — also when the hold is older than ``HOLD_SECONDS`` (it lapsed)."""
    review = lifecycle.read(task).review or {}
    hold = next((review[k] for k in HOLD_KEYS if isinstance(review.get(k), dict)), None)
    if hold is None or not hold.get("by"):
        return None
    since = parse_instant(str(hold.get("at") or ""))
    if since is None:
        return None
    if since + timedelta(seconds=hold_seconds()) <= (now or timezone.now()):
        return None
    return {"by": str(hold["by"]), "at": since}


def approvals_of(task: Task | None) -> list[dict[str, Any]]:
    """The approvals a four-eyes Request has so far (``{"by", "at", "comment"}``)."""
    review = lifecycle.read(task).review or {}
    return [a for a in review.get("approvals") or () if isinstance(a, dict)]


def approvals_needed(tool: str | None) -> int:
    """How many different reviewers must approve a Request of ``tool``
    (``REVIEW["APPROVALS"]``; 2 = four eyes)."""
    wanted = (toolnexus_settings.REVIEW["APPROVALS"] or {}).get(tool or "")
    try:
        return max(1, int(wanted or 1))
    except (TypeError, ValueError):
        return 1


def review_state(task: Task) -> dict[str, Any]:
    """Who holds the Task, and how many of the approvals it needs it has."""
    private = lifecycle.read(task)
    approvals = approvals_of(task)
    return {
        "holder": hold_of(task),
        "done": len(approvals),
        "approvals": approvals,
        "needed": approvals_needed(requesting_tool(private)),
    }


def requesting_tool(private: lifecycle.Private) -> str | None:
    """The tool whose Request the Task waits on: the call its transcript
    stopped in (what runs once approved), never another call sharing its id."""
    return halted_tool_name(private.halt, private.transcript, private.style or "")
