"""One notification's request: its bodies in the config's dialect, its
headers (event id, token, Authorization, signature), and the POST — built
and sent without raising, whatever a stored config or Task holds."""

from __future__ import annotations

from typing import Any

from ..a2a.dialects import Dialect, render_task
from ..a2a.follow import event_messages
from ..lifecycle import states
from ..lifecycle.events import Event
from ..lifecycle.public import public_status
from ..strictjson import dumps
from . import secrets, sender, signing
from .ssrf import Target


def notifications(row: Any, task: dict[str, Any], event: Event) -> list[tuple[str, Any]]:
    """(id, body) of each notification ``event`` makes in the config's dialect:
    v1.0 the StreamResponses a stream would send (artifact updates, then the
    status update); v0.3 and toolnexus the Task as the event left it."""
    if event.kind in states.UNSEEN:
        return []  # a reviewer's move: the Task's public side is as it was
    if row.dialect == Dialect.V10.value:
        return [(str(m.id), m.result) for m in event_messages(event, task, Dialect.V10)]
    rendered = render_task(task, Dialect.V03)
    rendered["status"] = public_status(event.status, str(task["id"]))
    return [(str(event.seq), rendered)]


def headers_for(row: Any, notification_id: str) -> dict[str, str]:
    headers = {"X-A2A-Event-Id": notification_id}
    token = secrets.unseal(row.token)
    if token:
        headers["X-A2A-Notification-Token"] = token
    credentials = secrets.unseal(row.credentials)
    if row.auth_scheme and credentials:
        headers["Authorization"] = f"{row.auth_scheme} {credentials}"
    return headers


def send(target: Target, row: Any, notification_id: str, body: Any, timeout: float) -> sender.Reply:
    """POST one notification. Nothing raises: an error building it is its
    Reply's error, a failure of this config like any other (counted, retried,
    logged in one line) — never an exception that leaves the config leased."""
    try:
        payload = dumps(body)
        headers = headers_for(row, notification_id)
        signature = signing.sign(row.task_id, notification_id, payload)
        if signature is not None:
            headers[signing.HEADER] = signature
    except Exception as exc:
        error = f"the notification could not be built: {type(exc).__name__}: {exc}"
        return sender.Reply(None, error=error[:500])
    return sender.post(target, payload, headers, timeout)


__all__ = ["headers_for", "notifications", "send"]
