"""Reminders and escalations of Requests nearing expiry.

``TOOLNEXUS["REVIEW"]["REMIND_BEFORE"]`` seconds before a waiting Request
expires, the sweep e-mails ``REMIND_EMAILS`` (None: ``NOTIFY_EMAILS``)
and sends :data:`~toolnexus_django.signals.review_reminder`; ``ESCALATE_AFTER``
seconds after that reminder, if still unanswered, it e-mails
``ESCALATE_EMAILS`` and sends :data:`~toolnexus_django.signals.review_escalation`.

Each is sent once however many processes sweep: the sender is whoever records
it first (:func:`mark_sent`, a move of the waiting Task by compare-and-set);
the others see ``None`` and send nothing.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.mail import send_mail
from django.dispatch import Signal
from django.utils import timezone

from .. import lifecycle
from ..conf import toolnexus_settings
from ..runtime.outages import log_exception
from ..signals import review_escalation, review_reminder
from ..stores import TaskStore, get_task_store
from ..stores.base import Task, parse_instant, request_expiry
from .notifications import review_url

logger = logging.getLogger("toolnexus_django.notifications")


def _seconds(key: str) -> float | None:
    value = toolnexus_settings.REVIEW.get(key)
    return None if value is None else float(value)


def remind_due(store: TaskStore | None = None, now: datetime | None = None) -> dict[str, Any]:
    """Remind about (and escalate) the waiting Tasks whose Request expires
    soon; returns their ids. No work at all while ``REMIND_BEFORE`` is None."""
    before = _seconds("REMIND_BEFORE")
    if before is None:
        return {}
    after = _seconds("ESCALATE_AFTER")
    store = get_task_store() if store is None else store  # an empty store is falsy
    now = now or timezone.now()
    reminded: list[str] = []
    escalated: list[str] = []
    # Only Tasks expiring within the window: an escalation is due before
    # expiry too (or never — the Task is answered "expired" then).
    for task_id in store.waiting_ids(expired_by=now + timedelta(seconds=before)):
        task = store.get(task_id)
        deadline = request_expiry(task)
        if task is None or deadline is None or deadline <= now:
            continue  # expired: expire_due answers it, no "expires soon" mail
        review = lifecycle.read(task).review or {}
        if not review.get("reminded"):
            if now < deadline - timedelta(seconds=before):
                continue
            task = _mark(store, task, "remind", now)
            if task is None:
                continue  # another sweeper sent it, or the Task moved
            _announce(task, "remind", deadline)
            reminded.append(task_id)
            review = lifecycle.read(task).review or {}
        if after is None or review.get("escalated"):
            continue
        since = parse_instant(review.get("reminded"))
        if since is None or now < since + timedelta(seconds=after):
            continue
        task = _mark(store, task, "escalate", now)
        if task is not None:
            _announce(task, "escalate", deadline)
            escalated.append(task_id)
    return {"reminded": reminded, "escalated": escalated}


def mark_sent(
    store: TaskStore, task: Task, kind: str, *, at: datetime | None = None
) -> lifecycle.Moved | None:
    """The sweep's reminder (``kind="remind"``) or escalation (``"escalate"``)
    of ``task``: recorded once, as sent ``at`` (the sweep's clock; default
    now). Whoever's compare-and-set wins sends it; a ``None`` means another
    process did (or the Task moved)."""
    key = "reminded" if kind == "remind" else "escalated"
    if (lifecycle.read(task).review or {}).get(key):
        return None
    when = (at or timezone.now()).isoformat()
    return lifecycle.review_move(
        store, task, kind, {key: when}, actor="system", via="sweep",
        detail={"decision": kind},
    )  # fmt: skip


def _mark(store: TaskStore, task: Task, kind: str, now: datetime) -> Task | None:
    """The Task with ``kind`` recorded, if this process recorded it."""
    try:
        moved = mark_sent(store, task, kind, at=now)
    except lifecycle.IllegalMove:
        return None  # no longer waiting (answered, canceled) since it was read
    return None if moved is None else moved.task


def _announce(task: Task, kind: str, deadline: datetime) -> None:
    """The signal, then the e-mail: neither may touch the Task or stop the sweep."""
    task_id = str(task["id"])
    request = lifecycle.read(task).pending or {}
    signal: Signal = review_reminder if kind == "remind" else review_escalation
    responses = signal.send_robust(
        sender=remind_due,
        task_id=task_id,
        task=lifecycle.public_task(task),
        request=request,
        expires_at=deadline,
    )
    for receiver, response in responses:
        if isinstance(response, Exception):
            logger.error("signal receiver %r raised %r", receiver, response)
    review = toolnexus_settings.REVIEW
    if kind == "remind":
        emails = review.get("REMIND_EMAILS")
        recipients = list(review["NOTIFY_EMAILS"] if emails is None else emails)
    else:
        recipients = list(review.get("ESCALATE_EMAILS") or ())
    if not recipients:
        return
    subject, body = message(task_id, request, deadline, escalation=kind == "escalate")
    try:
        send_mail(subject, body, None, recipients)
    except Exception:  # mail trouble must never touch the Task
        log_exception(logger, "could not e-mail the %s of task %s", kind, task_id)


def message(
    task_id: str, request: dict[str, Any], deadline: datetime, *, escalation: bool
) -> tuple[str, str]:
    """The subject and body of a reminder (or escalation) e-mail."""
    kind = request.get("kind") or "input"
    prompt = str(request.get("prompt") or "")
    when = deadline.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if escalation:
        subject = f"[agent] Escalated, still waiting for {kind}: {prompt[:60]}"
        opening = f"Still nobody has answered this task ({kind}); it expires at {when}:"
    else:
        subject = f"[agent] Expires soon, waiting for {kind}: {prompt[:60]}"
        opening = f"A task waiting for a person ({kind}) expires at {when}:"
    lines = [opening, "", f"  {prompt}", "", f"Task: {task_id}", f"Expires: {deadline.isoformat()}"]
    link = review_url(task_id)
    if link:
        lines += ["", f"Review it here: {link}"]
    return subject, "\n".join(lines)
