"""A Task's push notification configs as the wire sets and reads them: in the
database (the django store), or beside the Task (the memory and file stores)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from django.db import transaction
from django.utils import timezone

from ..a2a.pushconfig import (
    MAX_CONFIGS_PER_TASK,
    PushConfigSpec,
    StoredPushConfig,
)
from ..lifecycle import read as read_private
from ..stores import TaskStore
from .delivery import note_new_config, schedule, schedule_keys
from .local import LocalBook, TaskDocs, key_of
from .locks import lock_configs, lock_task
from .records import check, config_values, stored


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


class LocalPushConfigs:
    """A memory or file store's configs on the wire (``a2a.pushconfig.PushConfigs``)."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.docs = TaskDocs(store)
        self.book = LocalBook(store)

    def check(self, spec: PushConfigSpec) -> None:
        check(spec.url)

    def create(
        self, task_id: str, owner: str | None, spec: PushConfigSpec, dialect: str, *, after: int
    ) -> StoredPushConfig:
        config_id = spec.config_id or str(uuid.uuid4())
        task = self.store.get(task_id)
        seq = read_private(task).seq if task else 0
        with self.docs.locked():
            doc = self.docs.read(task_id)
            configs = doc["configs"]
            if len(configs) >= MAX_CONFIGS_PER_TASK and config_id not in configs:
                raise ValueError(f"a Task has at most {MAX_CONFIGS_PER_TASK} push configs")
            configs[config_id] = {
                "task_id": task_id,
                "config_id": config_id,
                **config_values(owner, spec, dialect, seq if after < 0 else min(after, seq)),
                "lease_owner": "",
                "lease_until": None,
                "log": [],
            }
            self.docs.write(task_id, doc)
        schedule_keys(self.book, [key_of(task_id, config_id)])
        return self._stored(configs[config_id])

    @staticmethod
    def _stored(config: dict[str, Any]) -> StoredPushConfig:
        return stored(SimpleNamespace(**config))

    def get(self, task_id: str, config_id: str | None) -> StoredPushConfig | None:
        configs = self.docs.read(task_id)["configs"]
        if config_id is None:
            return self._stored(next(iter(configs.values()))) if configs else None
        return self._stored(configs[config_id]) if config_id in configs else None

    def list(self, task_id: str) -> list[StoredPushConfig]:
        return [self._stored(c) for c in self.docs.read(task_id)["configs"].values()]

    def delete(self, task_id: str, config_id: str) -> bool:
        with self.docs.locked():
            doc = self.docs.read(task_id)
            if doc["configs"].pop(config_id, None) is None:
                return False
            self.docs.write(task_id, doc)
            return True


__all__ = ["DatabasePushConfigs", "LocalPushConfigs"]
