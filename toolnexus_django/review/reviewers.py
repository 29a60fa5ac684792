"""Who reviews: the permission that makes a user a reviewer, how a reviewer
is named, and segregation of duties.

A reviewer does not answer, as a reviewer, a Request of a Task they sent
themselves that only a reviewer may answer — the requester of an approval
never approves it, wherever the answer comes from (the admin, bulk, four
eyes, a hold, ``answer_task(..., user=...)``) — unless
``REVIEW["ALLOW_SELF_APPROVAL"]``. Where the requester may answer (an
``input`` question, by default), they still may.
"""

from __future__ import annotations

from typing import Any

from .. import lifecycle
from ..conf import toolnexus_settings
from ..lifecycle import states
from ..lifecycle.requests import REQUESTER, AnswerRefused, answerers_of
from ..stores.base import Task

#: The permission that makes a user a reviewer.
ANSWER_PERMISSION = "toolnexus_django.answer_task"

#: Said to a reviewer who would answer their own Request.
OWN_REQUEST = "You sent this request, so another reviewer must answer it (segregation of duties)."


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
