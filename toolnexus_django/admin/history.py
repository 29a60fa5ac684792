"""Reviewers' decisions in Django's admin log: every answer, hold, release
and bulk decision made in the admin is also a ``LogEntry`` on the Task, so
the admin index's "Recent actions" and the Task's History page show it.

An expiry is the system's, and ``LogEntry.user`` is required: it is logged
as the user ``REVIEW["EXPIRY_LOG_USER"]`` names (say a "review-bot" account),
and not at all when that is None (it still shows in the decisions list and the
Task's timeline).
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.utils.text import Truncator

from .. import lifecycle
from ..conf import toolnexus_settings
from ..models import TaskRecord
from ..signals import task_answered
from ..stores import get_task_store

#: How each decision reads in the admin log.
VERBS = {
    "expire": "Expired",
    "approve": "Approved",
    "decline": "Declined",
    "reply": "Replied to",
    "authorize": "Recorded the sign-in of",
    "hold": "Held",
    "release": "Released",
    "take_over": "Took over",
    "first_approval": "Gave the first approval of",
}


def decision_message(decision: str, prompt: Any, *, comment: str = "", bulk: bool = False) -> str:
    """``Approved “Approve an expense claim…” in bulk — comment: “…”``."""
    what = Truncator(str(prompt or "")).chars(80)
    said = f"{VERBS.get(decision, decision.capitalize())} “{what}”"
    if bulk:
        said += " in bulk"
    if comment:
        said += f" — comment: “{Truncator(comment).chars(120)}”"
    return said


def log_decision(user: Any, task_ids: list[str], message: str | dict[str, str]) -> None:
    """One admin ``LogEntry`` per Task of ``task_ids`` (a dict: a message per
    Task). The decision is also the entry's object name, so "Recent actions"
    (which shows only that, linked to the Task) reads as what was decided."""
    tasks = list(TaskRecord.objects.filter(pk__in=task_ids).only("id"))
    if not tasks:
        return
    content_type = ContentType.objects.get_for_model(TaskRecord, for_concrete_model=False)
    LogEntry.objects.bulk_create(
        [
            LogEntry(
                user_id=user.pk,
                content_type_id=content_type.pk,
                object_id=str(task.pk),
                object_repr=Truncator(said).chars(200),
                action_flag=CHANGE,
                change_message=said,
            )
            for task in tasks
            for said in [message if isinstance(message, str) else message.get(task.pk, "")]
        ]
    )


def log_expiry(sender: Any, *, task_id: str, event: Any = None, **kwargs: Any) -> None:
    """``task_answered`` receiver: an expired Request in the admin log, as
    ``REVIEW["EXPIRY_LOG_USER"]``."""
    name = toolnexus_settings.REVIEW.get("EXPIRY_LOG_USER")
    if not name or not event or event.get("kind") != "expire":
        return
    from django.contrib.auth import get_user_model

    user = get_user_model()._default_manager.filter(**{get_user_model().USERNAME_FIELD: name})
    found = user.first()
    if found is None:
        return
    reviewed = lifecycle.read(get_task_store().get(task_id)).reviewed or {}
    prompt = (reviewed.get("pending") or {}).get("prompt") or task_id
    log_decision(found, [task_id], decision_message("expire", prompt) + " (not answered in time)")


task_answered.connect(log_expiry, dispatch_uid="toolnexus_django.admin.log_expiry")
