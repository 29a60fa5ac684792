"""The app's embedded Django Tasks backend: a thread pool inside the process.

No broker and no extra process: ``enqueue`` hands the job to a daemon worker
thread and returns at once. It is an ordinary Django Tasks backend, so it can
also be named in ``settings.TASKS``::

    TASKS = {"default": {"BACKEND": "toolnexus_django.backends.InProcessBackend",
                         "OPTIONS": {"THREADS": 8}}}

and replaced by any other backend (django-tasks-db's DatabaseBackend with
``db_worker``, an RQ backend, ...) through ``TOOLNEXUS["TASK_BACKEND"]``
without code changes. Results live in memory only (``supports_get_result`` is
False): the Task store, not the job result, is the record of a run.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from ..compat import (
    BaseTaskBackend,
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
    task_enqueued,
    task_finished,
    task_started,
)
from ..runtime.outages import log_exception
from ..runtime.threads import DaemonThreadPool

logger = logging.getLogger(__name__)

DEFAULT_THREADS = 8


class InProcessBackend(BaseTaskBackend):
    supports_async_task = True
    supports_get_result = False
    supports_defer = False
    supports_priority = False

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.threads = int(self.options.get("THREADS", DEFAULT_THREADS))
        self.worker_id = f"{os.uname().nodename}:{os.getpid()}:{alias}"
        self._pool: DaemonThreadPool | None = None
        self._lock = threading.Lock()

    @property
    def pool(self) -> DaemonThreadPool:
        # Built on first use, and again in a forked child: threads do not
        # survive fork(), so a pool inherited from the parent is useless.
        pool = self._pool
        if pool is None or pool.pid != os.getpid():
            with self._lock:
                pool = self._pool
                if pool is None or pool.pid != os.getpid():
                    pool = self._pool = DaemonThreadPool(self.threads, name=f"tnx-{self.alias}")
        return pool

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        self.validate_task(task)
        result: TaskResult = TaskResult(
            task=task,
            id=uuid.uuid4().hex,
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        self.pool.submit(self._execute, result)
        return result

    def _execute(self, result: TaskResult) -> None:
        # Worker threads keep their own DB connections: drop stale ones before
        # and close after, as Django does around a request.
        close_old_connections()
        try:
            now = timezone.now()
            object.__setattr__(result, "status", TaskResultStatus.RUNNING)
            object.__setattr__(result, "started_at", now)
            object.__setattr__(result, "last_attempted_at", now)
            result.worker_ids.append(self.worker_id)
            task_started.send(type(self), task_result=result)
            try:
                value = result.task.call(*result.args, **result.kwargs)
            except BaseException as exc:
                log_exception(logger, "Task %s (%s) raised", result.id, result.task.name, exc=exc)
                result.errors.append(
                    TaskError(exception_class_path=_path(type(exc)), traceback=_tb(exc))
                )
                object.__setattr__(result, "status", TaskResultStatus.FAILED)
            else:
                object.__setattr__(result, "_return_value", value)
                object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
            object.__setattr__(result, "finished_at", timezone.now())
            task_finished.send(type(self), task_result=result)
        finally:
            close_old_connections()

    def close(self, timeout: float | None = None) -> bool:
        """Stop accepting jobs and wait up to ``timeout`` for running ones."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None or pool.pid != os.getpid():
            return True
        return pool.shutdown(wait=True, timeout=timeout)


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _tb(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
