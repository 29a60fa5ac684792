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

The loop is the same on every store; what it reads and writes about a
config goes through its store's :mod:`book <.book>` (the database, or
beside the Task for the memory and file stores).
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from typing import Any

from django.db import IntegrityError, InterfaceError, OperationalError, connections

from .. import lifecycle
from ..a2a.pushconfig import keeps_configs
from ..conf import toolnexus_settings
from ..fulfilment.jobs import job
from ..lifecycle.events import Event
from ..observability import metrics, tracing
from ..runtime.outages import log_exception
from ..runtime.registry import PerProcess, Stage
from ..runtime.threads import DaemonThreadPool
from ..stores import DjangoTaskStore, TaskStore, get_task_store
from . import sender
from .book import DELIVERED, DISABLED, GAVE_UP, REFUSED, RETRY, Attempt, Book, DatabaseBook, until
from .local import LocalBook
from .notify import notifications, send
from .records import check

logger = logging.getLogger("toolnexus_django.push")


def lease_seconds() -> float:
    """How long a worker holds a config while it delivers (renewed per
    event): past one call's timeout, so a live delivery keeps it, and short,
    so a dead worker's config is soon someone else's."""
    return 2 * float(toolnexus_settings.PUSH["TIMEOUT"]) + 5


#: The longest a ``Retry-After`` may put a retry off.
MAX_RETRY_AFTER = 3600.0
#: Events read per look at a config's log.
BATCH = 20

_pool_lock = threading.Lock()
_queued: set[Any] = set()


def holder_id() -> str:
    """Who delivers: unique per delivery (two threads of one process are two)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def book_for(store: TaskStore) -> Book | None:
    """Where ``store``'s configs keep their delivery state (None: nowhere)."""
    if isinstance(store, DjangoTaskStore):
        return DatabaseBook(store.using)
    return LocalBook(store) if keeps_configs(store) else None


def _store_and_book(key: Any, using: str) -> tuple[TaskStore, Book]:
    if isinstance(key, int):  # a database row
        return DjangoTaskStore(using), DatabaseBook(using)
    store = get_task_store()
    book = book_for(store)
    if book is None:
        raise LookupError(f"the task store {store!r} keeps no push configs")
    return store, book


# -- scheduling --------------------------------------------------------------------------


def _new_pool() -> DaemonThreadPool:
    with _pool_lock:
        _queued.clear()  # what a parent process had queued is not this one's
    return DaemonThreadPool(int(toolnexus_settings.PUSH["THREADS"]), name="toolnexus-push")


#: This process's delivering threads, made by its first delivery (kept across
#: settings changes); runtime.stop() lets deliveries in flight finish within
#: what is left of the grace.
_pool = PerProcess(
    "push pool",
    _new_pool,
    reload=False,
    stage=Stage.PUSH,
    stop=lambda pool, left: pool.shutdown(wait=True, timeout=left),
)


def _run_queued(key: Any, using: str) -> None:
    with _pool_lock:
        _queued.discard(key)
    try:
        deliver(key, using=using)
    except IntegrityError:
        # The config was deleted while it was being delivered: nothing to do.
        logger.info("push config %s was deleted during its delivery", key)
    except (OperationalError, InterfaceError):
        # A broken connection (a database restart): the next delivery opens anew.
        for conn in connections.all(initialized_only=True):
            conn.close()
        log_exception(logger, "push delivery of config %s", key, level=logging.WARNING)
    except Exception:
        log_exception(logger, "push delivery of config %s failed", key)
    finally:
        with _pool_lock:
            idle = not _queued
        if idle:
            # Nothing waits: give the connection back. Under load the next
            # delivery reuses it (a new connection per pass was 13 % of a
            # worker's time on PostgreSQL).
            for conn in connections.all(initialized_only=True):
                conn.close()


def _enqueue(keys: list[Any], using: str) -> None:
    alias = toolnexus_settings.TASK_BACKEND
    for key in keys:
        if alias is not None:
            deliver_push.using(backend=alias).enqueue(key, using)
            continue
        pool = _pool.get()
        with _pool_lock:
            if key in _queued:
                continue  # one delivery of this config is already waiting to start
            _queued.add(key)
        pool.submit(_run_queued, key, using)


def schedule_keys(book: Book, keys: list[Any]) -> None:
    """Deliver these configs' pending notifications, once what is being
    written is committed."""
    if keys:
        using = getattr(book, "using", "default")
        book.after_commit(lambda: _enqueue(list(keys), using))


def schedule(pks: list[int], *, using: str = "default") -> None:
    """Deliver these database configs' pending notifications, once the
    current transaction commits."""
    schedule_keys(DatabaseBook(using), pks)


def _later(delay: float, key: Any, using: str) -> None:
    timer = threading.Timer(max(0.0, delay), _enqueue, args=([key], using))
    timer.daemon = True
    timer.start()


@job
def deliver_push(config_key: Any, using: str = "default") -> str:
    """The Django Task that delivers one config's pending notifications."""
    return deliver(config_key, using=using)


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
    store = get_task_store()
    if isinstance(store, DjangoTaskStore) and not _any_configs(store.using):
        return
    book = book_for(store)
    if book is not None:
        schedule_keys(book, book.configs_of(task_id))


def sweep() -> dict[str, Any]:
    """Schedule every due config (the Housekeeper calls this)."""
    store = get_task_store()
    book = book_for(store)
    if book is None:
        return {}
    keys = book.due()
    if keys:
        _enqueue(keys, getattr(book, "using", "default"))
    return {"push_scheduled": keys}


# -- delivering --------------------------------------------------------------------------------


def retry_delay(failures: int, retry_after: float | None = None) -> float:
    """Seconds before the next try: doubling from RETRY_DELAY up to
    MAX_RETRY_DELAY, with jitter (half to all of it); at least Retry-After."""
    base = float(toolnexus_settings.PUSH["RETRY_DELAY"])
    cap = float(toolnexus_settings.PUSH["MAX_RETRY_DELAY"])
    delay = min(cap, base * 2 ** max(0, failures - 1)) * random.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER))
    return delay


def deliver(key: Any, *, using: str = "default") -> str:
    """Deliver config ``key``'s pending notifications, in order, until they
    are all delivered or one fails (then a retry is set). Returns what happened."""
    store, book = _store_and_book(key, using)
    holder = holder_id()
    outcome = "idle"
    while (row := book.claim(key, holder, until(lease_seconds()))) is not None:
        events = [Event.from_dict(e) for e in store.events(row.task_id, after=row.delivered_seq)]
        if not events:
            book.release(key, holder)
            # A move may have come between the look and the release: look again.
            if not book.pending(key):
                return outcome
            continue
        task = store.get(row.task_id) or {"id": row.task_id}
        for event in events[:BATCH]:
            done: list[Attempt] = []
            with tracing.push_span(row.task_id, event.to_state, task, lifecycle.read) as outcome_of:
                result = _deliver_event(book, key, row, task, event, holder, done, using)
                outcome_of(result)
            if result not in (DELIVERED, GAVE_UP):
                return result
            outcome = DELIVERED
            row.failures, row.delivered_seq = 0, event.seq
            book.advance(key, holder, event.seq, done, until(lease_seconds()))
    return outcome


def _deliver_event(
    book: Book,
    key: Any,
    row: Any,
    task: dict[str, Any],
    event: Event,
    holder: str,
    done: list[Attempt],
    using: str,
) -> str:
    """POST the event's notifications; the delivered ones' attempts go to
    ``done`` (written with the cursor), failures are logged at once."""
    timeout = float(toolnexus_settings.PUSH["TIMEOUT"])
    for notification_id, body in notifications(row, task, event):
        attempt = row.failures + 1
        try:
            target = check(row.url)
        except Exception as refused:  # the URL now resolves somewhere it may not go
            reason = f"the URL is no longer allowed: {refused}"
            _log(
                book, key, row, Attempt(event.seq, notification_id, attempt, REFUSED, None, reason)
            )
            _disable(book, key, row, holder, reason)
            return DISABLED
        reply = send(target, row, notification_id, body, timeout)
        if reply.delivered:
            done.append(Attempt(event.seq, notification_id, attempt, DELIVERED, reply.status))
            metrics.push_attempted(DELIVERED)
            logger.debug("push delivered: Task %s event %s", row.task_id, notification_id)
            continue
        outcome = _failed(book, key, row, holder, using, event.seq, notification_id, reply)
        if outcome != GAVE_UP:
            return outcome
    return DELIVERED


def _failed(
    book: Book,
    key: Any,
    row: Any,
    holder: str,
    using: str,
    seq: int,
    notification_id: str,
    reply: sender.Reply,
) -> str:
    """A notification the receiver did not take: skipped (GAVE_UP), retried
    later (RETRY) or the config disabled (DISABLED); logged either way."""
    attempt = row.failures + 1
    error = reply.error or _reply_text(reply)
    if reply.unsendable:  # it would fail the same way every time: disabled now
        reason = f"{error}; set the config again"
        book.log(key, row, Attempt(seq, notification_id, attempt, DISABLED, None, reason))
        metrics.push_attempted(DISABLED)
        _disable(book, key, row, holder, reason)  # its one log line
        return DISABLED
    if not reply.retryable:
        # The receiver refused it for good (a 4xx, a redirect): skip it.
        _log(
            book,
            key,
            row,
            Attempt(seq, notification_id, attempt, GAVE_UP, reply.status, error),
        )
        return GAVE_UP
    failures = row.failures + 1
    if failures >= int(toolnexus_settings.PUSH["MAX_ATTEMPTS"]):
        _log(
            book,
            key,
            row,
            Attempt(seq, notification_id, attempt, DISABLED, reply.status, error),
        )
        _disable(
            book, key, row, holder, f"{failures} deliveries failed in a row; the last: {error}"
        )
        return DISABLED
    delay = retry_delay(failures, reply.retry_after)
    when = until(delay)
    _log(
        book,
        key,
        row,
        Attempt(seq, notification_id, attempt, RETRY, reply.status, error, when),
    )
    book.release(key, holder, failures=failures, next_attempt_at=when)
    if toolnexus_settings.TASK_BACKEND is None:
        _later(delay, key, using)
    return RETRY


def _reply_text(reply: sender.Reply) -> str:
    text = reply.body[:300].decode("utf-8", "replace").strip()
    return f"HTTP {reply.status}" + (f": {text}" if text else "")


def _log(book: Book, key: Any, row: Any, attempt: Attempt) -> None:
    book.log(key, row, attempt)
    _report(row, attempt)


def _report(row: Any, attempt: Attempt) -> None:
    metrics.push_attempted(attempt.outcome)
    logger.log(
        logging.INFO if attempt.outcome == DELIVERED else logging.WARNING,
        "push %s of Task %s event %s to %s: %s%s",
        attempt.outcome,
        row.task_id,
        attempt.notification_id,
        row.url,
        attempt.status if attempt.status is not None else "-",
        f" ({attempt.error[:200]})" if attempt.error else "",
    )


def _disable(book: Book, key: Any, row: Any, holder: str, reason: str) -> None:
    from django.utils import timezone

    book.release(key, holder, disabled_at=timezone.now(), disabled_reason=reason[:2000])
    metrics.push_disabled()
    logger.warning("push config %s of Task %s disabled: %s", row.config_id, row.task_id, reason)


__all__ = [
    "book_for",
    "deliver",
    "deliver_push",
    "note_new_config",
    "notifications",
    "on_task_event",
    "schedule",
    "schedule_keys",
    "sweep",
]
