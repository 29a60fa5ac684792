"""The optional built-in e-mail when a Task starts waiting on a person.

Set ``TOOLNEXUS["REVIEW"]["NOTIFY_EMAILS"]`` (a list of addresses) and
``TOOLNEXUS["REVIEW"]["BASE_URL"]`` (the site's absolute base URL, for the link);
mail goes through Django's mail framework (EMAIL_BACKEND, DEFAULT_FROM_EMAIL).
For anything else — chat, a pager — connect a receiver to
:data:`toolnexus_django.signals.awaiting_human` yourself.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.mail import send_mail
from django.urls import NoReverseMatch, reverse

from ..conf import toolnexus_settings
from ..runtime.outages import log_exception

logger = logging.getLogger("toolnexus_django.notifications")


def review_url(task_id: str) -> str | None:
    """The absolute URL of the Task's review page, if it can be built."""
    base = toolnexus_settings.REVIEW["BASE_URL"]
    try:
        path = reverse("admin:toolnexus_django_awaitinghumantask_review", args=[task_id])
    except NoReverseMatch:
        return None
    return f"{str(base).rstrip('/')}{path}" if base else path


def email_reviewers(
    sender: Any, *, task_id: str, task: dict[str, Any], request: Any, **kwargs: Any
) -> None:
    recipients = list(toolnexus_settings.REVIEW["NOTIFY_EMAILS"] or ())
    if not recipients:
        return
    request = request or {}
    kind = request.get("kind") or "input"
    prompt = request.get("prompt") or ""
    link = review_url(task_id)
    lines = [
        f"A task is waiting for a person ({kind}):",
        "",
        f"  {prompt}",
        "",
        f"Task: {task_id}",
    ]
    if request.get("expiresAt"):
        lines.append(f"Expires: {request['expiresAt']}")
    if link:
        lines += ["", f"Review it here: {link}"]
    subject = f"[agent] Waiting for {kind}: {prompt[:60]}"
    try:
        send_mail(subject, "\n".join(lines), None, recipients)
    except Exception:  # mail trouble must never touch the Task
        log_exception(logger, "could not e-mail reviewers about task %s", task_id)
