"""Reviewers' decisions in Django's admin log: every answer, claim, release
and bulk decision made in the admin is also a ``LogEntry`` on the Task, so
the admin index's "Recent actions" and the Task's History page show it.

(Expiry has no user, and ``LogEntry.user`` is required: an expired Request
shows in the decisions list and the Task's timeline instead.)
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.utils.text import Truncator

from ..models import TaskRecord

#: How each decision reads in the admin log.
VERBS = {
    "approve": "Approved",
    "decline": "Declined",
    "reply": "Replied to",
    "authorize": "Recorded the sign-in of",
    "claim": "Claimed",
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
