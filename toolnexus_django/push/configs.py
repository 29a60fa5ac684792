"""A Task's push notification configs in the database (the django store)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from ..a2a.pushconfig import (
    MAX_CONFIGS_PER_TASK,
    PushConfigSpec,
    PushURLRefused,
    StoredPushConfig,
)
from ..conf import toolnexus_settings
from . import secrets
from .locks import lock_configs, lock_task
from .ssrf import RefusedURL, check_url


def check(url: str) -> Any:
    """The checked target of ``url`` (raises :class:`PushURLRefused`)."""
    try:
        return check_url(url, toolnexus_settings.PUSH["ALLOWED_HOSTS"] or ())
    except RefusedURL as refused:
        raise PushURLRefused(str(refused)) from None


def config_values(
    owner: str | None, spec: PushConfigSpec, dialect: str, start: int
) -> dict[str, Any]:
    """A new (or replaced) config's fields, its secrets sealed, enabled, its
    notifications starting after event ``start`` — for every store."""
    return {
        "owner": owner or "",
        "dialect": dialect,
        "url": spec.url,
        "token": secrets.seal(spec.token),
        "auth_scheme": spec.scheme,
        "credentials": secrets.seal(spec.credentials),
        "delivered_seq": start,
        "failures": 0,
        "next_attempt_at": None,
        "disabled_at": None,
        "disabled_reason": "",
    }


def stored(row: Any) -> StoredPushConfig:
    """A config as the wire shows it (``row``: a PushConfig, or any object
    with its fields)."""
    return StoredPushConfig(
        task_id=row.task_id,
        config_id=row.config_id,
        url=row.url,
        token=secrets.unseal(row.token),
        scheme=row.auth_scheme,
        dialect=row.dialect,
        disabled=row.disabled_at is not None,
    )


class DatabasePushConfigs:
    """The configs of the django store's Tasks (``a2a.pushconfig.PushConfigs``)."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    @property
    def rows(self) -> Any:
        from ..models import PushConfig

        return PushConfig.objects.using(self.using)

    def check(self, spec: PushConfigSpec) -> None:
        check(spec.url)

    def create(
        self, task_id: str, owner: str | None, spec: PushConfigSpec, dialect: str, *, after: int
    ) -> StoredPushConfig:
        if after >= 0 and spec.config_id is None:
            row = self._first(task_id, owner, spec, dialect, after)
        else:
            row = self._set(task_id, owner, spec, dialect, after)
        from .delivery import note_new_config, schedule

        note_new_config()
        schedule([row.pk], using=self.using)
        return stored(row)

    def _first(
        self, task_id: str, owner: str | None, spec: PushConfigSpec, dialect: str, after: int
    ) -> Any:
        """A send's inline config: the new Task's first, so one INSERT (no
        lock, no count, no id to replace)."""
        return self.rows.create(
            task_id=task_id,
            config_id=str(uuid.uuid4()),
            **config_values(owner, spec, dialect, after),
        )

    def _set(
        self, task_id: str, owner: str | None, spec: PushConfigSpec, dialect: str, after: int
    ) -> Any:
        config_id = spec.config_id or str(uuid.uuid4())
        with transaction.atomic(using=self.using):
            # The lock order (push.locks): the Task, then its configs by id.
            seq = lock_task(self.using, task_id)
            if seq is None:
                raise LookupError(f"no Task {task_id}")
            ids = dict(lock_configs(self.rows.filter(task_id=task_id), "config_id", "pk"))
            if len(ids) >= MAX_CONFIGS_PER_TASK and config_id not in ids:
                raise ValueError(f"a Task has at most {MAX_CONFIGS_PER_TASK} push configs")
            values = config_values(owner, spec, dialect, seq if after < 0 else min(after, seq))
            if config_id in ids:
                self.rows.filter(pk=ids[config_id]).update(**values, updated_at=timezone.now())
                return self.rows.get(pk=ids[config_id])
            return self.rows.create(task_id=task_id, config_id=config_id, **values)

    def get(self, task_id: str, config_id: str | None) -> StoredPushConfig | None:
        rows = self.rows.filter(task_id=task_id)
        row = rows.filter(config_id=config_id).first() if config_id else rows.first()
        return stored(row) if row is not None else None

    def list(self, task_id: str) -> list[StoredPushConfig]:
        return [stored(row) for row in self.rows.filter(task_id=task_id)]

    def delete(self, task_id: str, config_id: str) -> bool:
        # The lock order (push.locks): the Task, then the config; a delivery
        # logging an attempt for it then waits, and fails quietly (its config
        # is gone) instead of this delete failing on the row it added.
        with transaction.atomic(using=self.using):
            if lock_task(self.using, task_id) is None:
                return False
            pks = lock_configs(self.rows.filter(task_id=task_id, config_id=config_id))
            if not pks:
                return False
            self.rows.filter(pk__in=pks).delete()
        return True
