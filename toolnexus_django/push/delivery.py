"""Delivering a Task's events to its push configs: in order, at least once.

Each config follows its Task's event log from ``delivered_seq``: the next
event's notifications are POSTed (:mod:`.sender`) and the cursor moves on
only once the receiver took them (2xx) — or refused them for good (another
4xx, a redirect: that event is skipped and logged). A failure that may pass
(no connection, a timeout, a 5xx, a 429) is retried after a growing delay
with jitter (``Retry-After`` honoured), and after ``MAX_ATTEMPTS``
consecutive failures the config is disabled, with the reason logged as a
delivery. One worker at a time delivers a config (a lease on its row), so
its notifications keep their order whichever process delivers.

Who delivers: a move schedules its Task's enabled configs (the ``task_event``
signal); by default a small pool of threads in this process does it, with
``TOOLNEXUS["TASK_BACKEND"]`` the Django Task :data:`deliver_push` on that
backend (``db_worker``). The sweep schedules what is due (a retry, or events
a dead process left undelivered), so a crash loses nothing.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

from django.db import (
    InterfaceError,
    OperationalError,
    connections,
    transaction,
)
from django.db.models import F, Q
from django.utils import timezone

from ..a2a.dialects import Dialect, render_task
from ..a2a.follow import event_messages
from ..conf import toolnexus_settings
from ..fulfilment.jobs import job
from ..lifecycle.events import Event
from ..lifecycle.public import public_status
from ..strictjson import dumps
from ..threads import DaemonThreadPool
from . import secrets, sender, signing
from .configs import check, push_setting

logger = logging.getLogger("toolnexus_django.push")


def lease_seconds() -> float:
    """How long a worker holds a config while it delivers (renewed per
    event): past one call's timeout, so a live delivery keeps it, and short,
    so a dead worker's config is soon someone else's."""
    return 2 * float(push_setting("TIMEOUT")) + 5


#: The longest a ``Retry-After`` may put a retry off.
MAX_RETRY_AFTER = 3600.0
#: Events read per look at a config's log.
BATCH = 20

_pool: DaemonThreadPool | None = None
_pool_lock = threading.Lock()
_queued: set[int] = set()


def holder_id() -> str:
    """Who delivers: unique per delivery (two threads of one process are two)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


# -- scheduling --------------------------------------------------------------------------


def _pool_for_this_process() -> DaemonThreadPool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            _pool = DaemonThreadPool(int(push_setting("THREADS")), name="toolnexus-push")
            _queued.clear()
        return _pool


def _run_queued(pk: int, using: str) -> None:
    with _pool_lock:
        _queued.discard(pk)
    try:
        deliver(pk, using=using)
    except (OperationalError, InterfaceError):
        # A broken connection (a database restart): the next delivery opens anew.
        for conn in connections.all(initialized_only=True):
            conn.close()
        logger.warning("push delivery of config %s: database unreachable", pk, exc_info=True)
    except Exception:
        logger.exception("push delivery of config %s failed", pk)
    finally:
        with _pool_lock:
            idle = not _queued
        if idle:
            # Nothing waits: give the connection back. Under load the next
            # delivery reuses it (a new connection per pass was 13 % of a
            # worker's time on PostgreSQL).
            for conn in connections.all(initialized_only=True):
                conn.close()


def _enqueue(pks: list[int], using: str) -> None:
    alias = toolnexus_settings.TASK_BACKEND
    for pk in pks:
        if alias is not None:
            deliver_push.using(backend=alias).enqueue(pk, using)
            continue
        pool = _pool_for_this_process()
        with _pool_lock:
            if pk in _queued:
                continue  # one delivery of this config is already waiting to start
            _queued.add(pk)
        pool.submit(_run_queued, pk, using)


def schedule(pks: list[int], *, using: str = "default") -> None:
    """Deliver these configs' pending notifications, once the current
    transaction commits."""
    if pks:
        transaction.on_commit(lambda: _enqueue(list(pks), using), using=using)


def _later(delay: float, pk: int, using: str) -> None:
    timer = threading.Timer(max(0.0, delay), _enqueue, args=([pk], using))
    timer.daemon = True
    timer.start()


@job
def deliver_push(config_pk: int, using: str = "default") -> str:
    """The Django Task that delivers one config's pending notifications."""
    return deliver(int(config_pk), using=using)


# -- after each move -----------------------------------------------------------------------

_any = {"checked": 0.0, "value": True}


def _any_configs(using: str) -> bool:
    # At most one look a second whether any config exists: a project that
    # never uses push notifications pays nothing per move.
    from ..models import PushConfig

    now = time.monotonic()
    if now - _any["checked"] > 1.0:
        _any["value"] = PushConfig.objects.using(using).filter(disabled_at__isnull=True).exists()
        _any["checked"] = now
    return bool(_any["value"])


def note_new_config() -> None:
    _any["value"], _any["checked"] = True, time.monotonic()


def on_task_event(sender: Any, task_id: str, event: dict[str, Any], **kwargs: Any) -> None:
    """``task_event`` receiver: schedule the Task's enabled configs."""
    from ..models import PushConfig
    from ..stores import DjangoTaskStore, get_task_store

    store = get_task_store()
    if not isinstance(store, DjangoTaskStore) or not _any_configs(store.using):
        return
    pks = list(
        PushConfig.objects.using(store.using)
        .filter(task_id=task_id, disabled_at__isnull=True)
        .values_list("pk", flat=True)
    )
    schedule(pks, using=store.using)


def due(using: str = "default", limit: int = 500) -> list[int]:
    """Enabled configs with something to deliver now, not being delivered."""
    from ..models import PushConfig

    now = timezone.now()
    return list(
        PushConfig.objects.using(using)
        .filter(disabled_at__isnull=True, delivered_seq__lt=F("task__event_seq"))
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .values_list("pk", flat=True)[:limit]
    )


def sweep() -> dict[str, Any]:
    """Schedule every due config (the Housekeeper calls this)."""
    from ..stores import DjangoTaskStore, get_task_store

    store = get_task_store()
    if not isinstance(store, DjangoTaskStore):
        return {}
    pks = due(store.using)
    if pks:
        _enqueue(pks, store.using)
    return {"push_scheduled": pks}


# -- delivering --------------------------------------------------------------------------------


def _claim(pk: int, using: str, holder: str) -> bool:
    from ..models import PushConfig

    now = timezone.now()
    return (
        PushConfig.objects.using(using)
        .filter(pk=pk, disabled_at__isnull=True)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_owner=holder))
        .update(lease_owner=holder, lease_until=now + timedelta(seconds=lease_seconds()))
        == 1
    )


def _release(pk: int, using: str, holder: str, **changes: Any) -> None:
    from ..models import PushConfig

    PushConfig.objects.using(using).filter(pk=pk, lease_owner=holder).update(
        lease_owner="", lease_until=None, **changes
    )


def notifications(row: Any, task: dict[str, Any], event: Event) -> list[tuple[str, Any]]:
    """(id, body) of each notification ``event`` makes in the config's dialect:
    v1.0 the StreamResponses a stream would send (artifact updates, then the
    status update); v0.3 and toolnexus the Task as the event left it."""
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


def retry_delay(failures: int, retry_after: float | None = None) -> float:
    """Seconds before the next try: doubling from RETRY_DELAY up to
    MAX_RETRY_DELAY, with jitter (half to all of it); at least Retry-After."""
    base = float(push_setting("RETRY_DELAY"))
    cap = float(push_setting("MAX_RETRY_DELAY"))
    delay = min(cap, base * 2 ** max(0, failures - 1)) * random.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER))
    return delay


def deliver(pk: int, *, using: str = "default") -> str:
    """Deliver config ``pk``'s pending notifications, in order, until they are
    all delivered or one fails (then a retry is set). Returns what happened."""
    from ..models import PushConfig, PushDelivery
    from ..stores import DjangoTaskStore

    store = DjangoTaskStore(using)
    holder = holder_id()
    outcome = "idle"
    while _claim(pk, using, holder):
        row = PushConfig.objects.using(using).filter(pk=pk).first()
        if row is None:
            return "deleted"
        events = [Event.from_dict(e) for e in store.events(row.task_id, after=row.delivered_seq)]
        events = events[:BATCH]
        if not events:
            _release(pk, using, holder)
            # A move may have come between the look and the release: look again.
            fresh = (
                PushConfig.objects.using(using)
                .filter(pk=pk)
                .values_list("delivered_seq", "task__event_seq")
            )
            if not fresh or fresh[0][0] >= fresh[0][1]:
                return outcome
            continue
        task = store.get(row.task_id) or {"id": row.task_id}
        for event in events:
            done: list[Any] = []
            result = _deliver_event(row, task, event, using, holder, done)
            if result != "delivered" and result != "gave-up":
                return result
            outcome = "delivered"
            row.failures, row.delivered_seq = 0, event.seq
            # The event's delivered log and the cursor in one write.
            with transaction.atomic(using=using):
                PushDelivery.objects.using(using).bulk_create(done)
                PushConfig.objects.using(using).filter(pk=pk, lease_owner=holder).update(
                    delivered_seq=event.seq,
                    failures=0,
                    next_attempt_at=None,
                    lease_until=timezone.now() + timedelta(seconds=lease_seconds()),
                )
    return outcome


def _deliver_event(
    row: Any, task: dict[str, Any], event: Event, using: str, holder: str, done: list[Any]
) -> str:
    """POST the event's notifications; the delivered ones' log rows go to
    ``done`` (written with the cursor), failures are logged at once."""
    from ..models import PushDelivery

    timeout = float(push_setting("TIMEOUT"))
    for notification_id, body in notifications(row, task, event):
        attempt = row.failures + 1
        try:
            target = check(row.url)
        except Exception as refused:  # the URL now resolves somewhere it may not go
            reason = f"the URL is no longer allowed: {refused}"
            _log(row, event, notification_id, attempt, PushDelivery.Outcome.REFUSED, None, reason)
            _disable(row, using, holder, reason)
            return "disabled"
        payload = dumps(body)
        headers = headers_for(row, notification_id)
        signature = signing.sign(row.task_id, notification_id, payload)
        if signature is not None:
            headers[signing.HEADER] = signature
        reply = sender.post(target, payload, headers, timeout)
        if reply.delivered:
            done.append(
                PushDelivery(
                    config=row,
                    seq=event.seq,
                    notification_id=notification_id[:64],
                    attempt=attempt,
                    outcome=PushDelivery.Outcome.DELIVERED,
                    status_code=reply.status,
                )
            )
            logger.debug("push delivered: Task %s event %s", row.task_id, notification_id)
            continue
        error = reply.error or _reply_text(reply)
        if not reply.retryable:
            # The receiver refused it for good (a 4xx, a redirect): skip it.
            _log(
                row,
                event,
                notification_id,
                attempt,
                PushDelivery.Outcome.GAVE_UP,
                reply.status,
                error,
            )
            continue
        failures = row.failures + 1
        if failures >= int(push_setting("MAX_ATTEMPTS")):
            reason = f"{failures} deliveries failed in a row; the last: {error}"
            _log(
                row,
                event,
                notification_id,
                attempt,
                PushDelivery.Outcome.DISABLED,
                reply.status,
                error,
            )
            _disable(row, using, holder, reason)
            return "disabled"
        delay = retry_delay(failures, reply.retry_after)
        when = timezone.now() + timedelta(seconds=delay)
        _log(
            row,
            event,
            notification_id,
            attempt,
            PushDelivery.Outcome.RETRY,
            reply.status,
            error,
            when,
        )
        _release(row.pk, using, holder, failures=failures, next_attempt_at=when)
        if toolnexus_settings.TASK_BACKEND is None:
            _later(delay, row.pk, using)
        return "retry"
    return "delivered"


def _reply_text(reply: sender.Reply) -> str:
    text = reply.body[:300].decode("utf-8", "replace").strip()
    return f"HTTP {reply.status}" + (f": {text}" if text else "")


def _log(
    row: Any,
    event: Event,
    notification_id: str,
    attempt: int,
    outcome: str,
    status: int | None,
    error: str = "",
    next_attempt_at: Any = None,
) -> None:
    from ..models import PushDelivery

    PushDelivery.objects.using(row._state.db or "default").create(
        config=row,
        seq=event.seq,
        notification_id=notification_id[:64],
        attempt=attempt,
        outcome=outcome,
        status_code=status,
        error=error[:2000],
        next_attempt_at=next_attempt_at,
    )
    level = logging.INFO if outcome == "delivered" else logging.WARNING
    logger.log(
        level,
        "push %s of Task %s event %s to %s: %s%s",
        outcome,
        row.task_id,
        notification_id,
        row.url,
        status if status is not None else "-",
        f" ({error[:200]})" if error else "",
    )


def _disable(row: Any, using: str, holder: str, reason: str) -> None:
    _release(row.pk, using, holder, disabled_at=timezone.now(), disabled_reason=reason[:2000])
    logger.warning("push config %s of Task %s disabled: %s", row.config_id, row.task_id, reason)


__all__ = ["deliver", "deliver_push", "due", "notifications", "on_task_event", "schedule", "sweep"]
