"""Push configs and their delivery state beside the Task, for the memory and
file stores: a JSON document per Task — in the process's memory for the
memory store; ``<dir>/.push/<the Task's file name>`` for the file store,
written atomically under the store's directory lock (so every process on the
machine sees one state, and a kill -9 loses at most the attempt in flight).

The document: ``{"configs": {<config id>: {url, token, ..., delivered_seq,
failures, next_attempt_at, disabled_at, lease_owner, lease_until, log}}}``,
with tokens and credentials sealed as in the database (:mod:`.secrets`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import weakref
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.utils import timezone

from ..lifecycle import read as read_private
from ..stores import FileTaskStore, TaskStore
from ..stores.base import parse_instant
from .book import Attempt

#: Attempts kept in a config's log.
LOG_KEPT = 50

_memory: weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]]] = weakref.WeakKeyDictionary()
_memory_lock = threading.RLock()


def key_of(task_id: str, config_id: str) -> str:
    return json.dumps([task_id, config_id])


def parse_key(key: str) -> tuple[str, str]:
    task_id, config_id = json.loads(key)
    return str(task_id), str(config_id)


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


class TaskDocs:
    """Read and write one Task's push document, under the store's lock."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        if isinstance(self.store, FileTaskStore):
            with self.store._locked():
                yield
        else:
            with _memory_lock:
                yield

    def _path(self, task_id: str) -> Path:
        assert isinstance(self.store, FileTaskStore)
        return self.store.dir / ".push" / self.store.path_for(task_id).name

    def read(self, task_id: str) -> dict[str, Any]:
        if isinstance(self.store, FileTaskStore):
            try:
                return dict(json.loads(self._path(task_id).read_text()))
            except (OSError, ValueError):
                return {"configs": {}}
        with _memory_lock:
            return json.loads(json.dumps(_memory.get(self.store, {}).get(task_id, {"configs": {}})))

    def write(self, task_id: str, doc: dict[str, Any]) -> None:
        if isinstance(self.store, FileTaskStore):
            target = self._path(task_id)
            target.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w") as out:
                json.dump(doc, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
            return
        with _memory_lock:
            _memory.setdefault(self.store, {})[task_id] = json.loads(json.dumps(doc))

    def task_ids(self) -> list[str]:
        if isinstance(self.store, FileTaskStore):
            found = []
            for path in (self.store.dir / ".push").glob("*.json"):
                with contextlib.suppress(OSError, ValueError):
                    configs = json.loads(path.read_text()).get("configs") or {}
                    found += [c["task_id"] for c in configs.values()][:1]
            return found
        with _memory_lock:
            return list(_memory.get(self.store, {}))


def _row(key: str, config: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(pk=key, **{k: v for k, v in config.items() if k != "log"})


class LocalBook:
    """The delivery state of a memory or file store's configs (``book.Book``)."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.docs = TaskDocs(store)

    def _change(self, key: str, change: Any) -> Any:
        task_id, config_id = parse_key(key)
        with self.docs.locked():
            doc = self.docs.read(task_id)
            config = doc["configs"].get(config_id)
            if config is None:
                return None
            result = change(config)
            self.docs.write(task_id, doc)
            return result

    def claim(self, key: Any, holder: str, until: datetime) -> Any | None:
        now = timezone.now()

        def take(config: dict[str, Any]) -> Any:
            lease = parse_instant(config.get("lease_until"))
            free = lease is None or lease < now or config.get("lease_owner") == holder
            due = (parse_instant(config.get("next_attempt_at")) or now) <= now
            if config.get("disabled_at") or not free or not due:
                return None
            config["lease_owner"], config["lease_until"] = holder, until.isoformat()
            return _row(key, config)

        return self._change(key, take)

    def pending(self, key: Any) -> bool:
        task_id, config_id = parse_key(key)
        config = self.docs.read(task_id)["configs"].get(config_id)
        task = self.store.get(task_id)
        return bool(config and task) and config["delivered_seq"] < read_private(task).seq

    def advance(
        self, key: Any, holder: str, seq: int, done: list[Attempt], until: datetime
    ) -> None:
        def move(config: dict[str, Any]) -> None:
            if config.get("lease_owner") != holder:
                return
            config.update(delivered_seq=seq, failures=0, next_attempt_at=None)
            config["lease_until"] = until.isoformat()
            _append(config, done)

        self._change(key, move)

    def release(self, key: Any, holder: str, **changes: Any) -> None:
        def give_up(config: dict[str, Any]) -> None:
            if config.get("lease_owner") != holder:
                return
            config.update(lease_owner="", lease_until=None)
            config.update({k: _iso(v) for k, v in changes.items()})

        self._change(key, give_up)

    def log(self, key: Any, row: Any, attempt: Attempt) -> None:
        self._change(key, lambda config: _append(config, [attempt]))

    def configs_of(self, task_id: str) -> list[Any]:
        configs = self.docs.read(task_id)["configs"]
        return [key_of(task_id, cid) for cid, c in configs.items() if not c.get("disabled_at")]

    def due(self, limit: int = 500) -> list[Any]:
        now = timezone.now()
        keys = []
        for task_id in self.docs.task_ids():
            task = self.store.get(task_id)
            seq = read_private(task).seq if task else 0
            for cid, c in self.docs.read(task_id)["configs"].items():
                lease = parse_instant(c.get("lease_until"))
                if (
                    not c.get("disabled_at")
                    and c["delivered_seq"] < seq
                    and (parse_instant(c.get("next_attempt_at")) or now) <= now
                    and (lease is None or lease < now)
                ):
                    keys.append(key_of(task_id, cid))
        return keys[:limit]

    def after_commit(self, fn: Any) -> None:
        fn()  # nothing to wait for


def _append(config: dict[str, Any], attempts: list[Attempt]) -> None:
    log = config.setdefault("log", [])
    for a in attempts:
        log.append(
            {
                "seq": a.seq,
                "notification_id": a.notification_id,
                "attempt": a.attempt,
                "outcome": a.outcome,
                "status": a.status,
                "error": a.error[:500],
                "next_attempt_at": _iso(a.next_attempt_at),
                "at": timezone.now().isoformat(),
            }
        )
    del log[:-LOG_KEPT]


__all__ = ["LocalBook", "TaskDocs", "key_of"]
