"""Where a config's delivery state lives — its cursor, failures, next attempt,
lease and log: the database for the django store (:class:`DatabaseBook`), or
beside the Task for the memory and file stores (:mod:`.local`).

:mod:`.delivery` runs the same loop on either; a *key* names one config
(the row's pk in the database, ``"<task id>/<config id>"`` beside the Task).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

DELIVERED = "delivered"
RETRY = "retry"
GAVE_UP = "gave-up"
REFUSED = "refused"
DISABLED = "disabled"


@dataclass(frozen=True)
class Attempt:
    """One delivery attempt, for the log."""

    seq: int
    notification_id: str
    attempt: int
    outcome: str
    status: int | None = None
    error: str = ""
    next_attempt_at: datetime | None = None


class Book(Protocol):
    """A store's delivery state. ``row`` objects have the PushConfig fields
    the loop reads: task_id, config_id, url, token, auth_scheme, credentials,
    dialect, delivered_seq, failures."""

    def claim(self, key: Any, holder: str, until: datetime) -> Any | None:
        """The config, now held by ``holder``; None when it is not free, due
        and enabled (or is gone)."""

    def pending(self, key: Any) -> bool:
        """Whether its Task has events past the config's cursor."""

    def advance(
        self, key: Any, holder: str, seq: int, done: list[Attempt], until: datetime
    ) -> None:
        """Event ``seq`` is delivered: the cursor moves there, with its log."""

    def release(self, key: Any, holder: str, **changes: Any) -> None:
        """Give the config up (``failures``, ``next_attempt_at``,
        ``disabled_at``, ``disabled_reason`` may change with it)."""

    def log(self, key: Any, row: Any, attempt: Attempt) -> None: ...

    def configs_of(self, task_id: str) -> list[Any]:
        """The keys of the Task's enabled configs."""

    def due(self, limit: int = 500) -> list[Any]:
        """Keys of enabled configs with something to deliver now, not held."""

    def after_commit(self, fn: Any) -> None:
        """Run ``fn`` once what is being written is committed."""


class DatabaseBook:
    """``PushConfig`` / ``PushDelivery`` rows (the django store)."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    @property
    def configs(self) -> Any:
        from ..models import PushConfig

        return PushConfig.objects.using(self.using)

    def claim(self, key: Any, holder: str, until: datetime) -> Any | None:
        now = timezone.now()
        claimed = (
            self.configs.filter(pk=key, disabled_at__isnull=True)
            .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_owner=holder))
            .update(lease_owner=holder, lease_until=until)
        )
        return self.configs.filter(pk=key).first() if claimed == 1 else None

    def pending(self, key: Any) -> bool:
        fresh = self.configs.filter(pk=key).values_list("delivered_seq", "task__event_seq")
        return bool(fresh) and fresh[0][0] < fresh[0][1]

    def advance(
        self, key: Any, holder: str, seq: int, done: list[Attempt], until: datetime
    ) -> None:
        from ..models import PushDelivery

        # The event's delivered log and the cursor in one write.
        with transaction.atomic(using=self.using):
            PushDelivery.objects.using(self.using).bulk_create([self._row(key, a) for a in done])
            self.configs.filter(pk=key, lease_owner=holder).update(
                delivered_seq=seq, failures=0, next_attempt_at=None, lease_until=until
            )

    def release(self, key: Any, holder: str, **changes: Any) -> None:
        self.configs.filter(pk=key, lease_owner=holder).update(
            lease_owner="", lease_until=None, **changes
        )

    def _row(self, key: Any, attempt: Attempt) -> Any:
        from ..models import PushDelivery

        return PushDelivery(
            config_id=key,
            seq=attempt.seq,
            notification_id=attempt.notification_id[:64],
            attempt=attempt.attempt,
            outcome=attempt.outcome,
            status_code=attempt.status,
            error=attempt.error[:2000],
            next_attempt_at=attempt.next_attempt_at,
        )

    def log(self, key: Any, row: Any, attempt: Attempt) -> None:
        self._row(key, attempt).save(using=self.using)

    def configs_of(self, task_id: str) -> list[Any]:
        return list(
            self.configs.filter(task_id=task_id, disabled_at__isnull=True).values_list(
                "pk", flat=True
            )
        )

    def due(self, limit: int = 500) -> list[Any]:
        now = timezone.now()
        return list(
            self.configs.filter(disabled_at__isnull=True, delivered_seq__lt=F("task__event_seq"))
            .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .values_list("pk", flat=True)[:limit]
        )

    def after_commit(self, fn: Any) -> None:
        transaction.on_commit(fn, using=self.using)


def until(seconds: float) -> datetime:
    return timezone.now() + timedelta(seconds=seconds)


__all__ = ["Attempt", "Book", "DatabaseBook"]
