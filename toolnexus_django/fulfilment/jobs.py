"""The ``fulfil`` and ``resume`` Django Tasks, and enqueueing them.

``SendMessage`` saves a ``submitted`` Task and, once the transaction commits,
enqueues its run; an answer enqueues its resume. By default the run is a
coroutine of this process (:mod:`.runs`, bounded by ``MAX_RUNS``); with
``TOOLNEXUS["TASK_BACKEND"]`` it is the Django Task :data:`fulfil` (or
:data:`resume`) on that backend, whose worker calls the same run
(:mod:`.runner`) from its thread.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.db import DatabaseError, connections, transaction

from ..compat import InvalidTaskBackendError, Task, task
from ..conf import toolnexus_settings
from ..runtime.outages import database_down, log_exception
from ..stores import DjangoTaskStore, TaskStore, get_task_store
from . import runner
from .runs import runs

logger = logging.getLogger("toolnexus_django.fulfilment")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _LateValidatedTask(Task):
    """A Task whose backend is checked when it is enqueued, not when declared."""

    def __post_init__(self) -> None:
        pass


def job(func: Callable[..., str]) -> Any:
    """Declare ``func`` a Django Task on TASK_BACKEND's alias (else "default").
    ``@task`` checks that alias exists at import time; a project whose TASKS
    has no such backend still imports — the in-process backend needs none,
    and a named backend is checked by the system checks (E008)."""
    alias = toolnexus_settings.TASK_BACKEND or "default"
    try:
        return task(backend=alias)(func)
    except InvalidTaskBackendError:
        # Every field spelled out: Django 6's Task has no defaults for them.
        return _LateValidatedTask(
            func=func,
            backend=alias,
            priority=0,
            queue_name="default",
            run_after=None,
            takes_context=False,
        )


@job
def fulfil(task_id: str) -> str:
    """Run one submitted Task to completed / failed / input-required."""
    return _unless_database_down(runner.run_fulfilment, task_id)


@job
def resume(task_id: str) -> str:
    """Continue one answered Task from where its run stopped."""
    return _unless_database_down(runner.run_resume, task_id)


#: What a job returns when the database was down: the Task is where it was.
LEFT_TO_RECOVERY = "left to recovery"


def _unless_database_down(run: Callable[[str], str], task_id: str) -> str:
    """``run(task_id)`` in a worker; a database that is down is a line in the
    log, not a failed job whose traceback the worker logs: the Task stays
    where it is (submitted, answered, or working until its lease lapses) and
    the sweep's recovery enqueues it again once the database is back."""
    _drop_old_connections()
    try:
        return run(task_id)
    except Exception as exc:
        if database_down(exc) is None:
            raise
        log_exception(logger, "Task %s: not run, left to recovery", task_id, exc=exc)
        return LEFT_TO_RECOVERY
    finally:
        _drop_old_connections()


def _drop_old_connections() -> None:
    """Around a job, what Django does around a request: close this thread's
    connections that are broken or past ``CONN_MAX_AGE``. Not every worker
    does it for its jobs (RQ's SimpleWorker runs them all on one thread:
    without this, one connection open for ever, and after a database restart
    a broken one for every later job). Never inside a transaction (the
    immediate backend runs the job in its caller's)."""
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            with suppress(DatabaseError):  # closing a broken connection may complain
                conn.close_if_unusable_or_obsolete()


# -- enqueueing ----------------------------------------------------------------------


def _enqueue(job: Any, task_id: str, store: TaskStore, known: dict[str, Any] | None = None) -> None:
    alias = toolnexus_settings.TASK_BACKEND
    if alias is not None:
        job.using(backend=alias).enqueue(task_id)
        return
    run = runner.fulfil if job is fulfil else runner.resume
    if known is not None and job is fulfil:
        run = functools.partial(runner.fulfil, known=known)
    try:
        runs().start(run, task_id, store)
    except Exception as exc:  # the agent runtime cannot start (a broken CLIENT, say)
        runner.fail_unstarted(task_id, store, exc)


#: Runs scheduled while :func:`held` is in effect, instead of enqueued.
_held: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar(
    "toolnexus_django_held_runs", default=None
)


@contextmanager
def held() -> Iterator[list[tuple[str, str]]]:
    """Enqueue nothing that the enclosed code schedules: collect it instead,
    as ``("fulfil" | "resume", task_id)``, for the caller to run itself
    (:mod:`toolnexus_django.testing` runs it on the test's thread)."""
    runs: list[tuple[str, str]] = []
    token = _held.set(runs)
    try:
        yield runs
    finally:
        _held.reset(token)


def _on_commit(
    store: TaskStore | None, job: Any, task_id: str, known: dict[str, Any] | None = None
) -> None:
    # Enqueue once the transaction that saved the Task commits (at once when
    # there is none), so a worker never looks for a row that is not there yet.
    store = store or get_task_store()
    using = store.using if isinstance(store, DjangoTaskStore) else None
    runs = _held.get()
    if runs is not None:
        name = "fulfil" if job is fulfil else "resume"
        transaction.on_commit(lambda: runs.append((name, task_id)), using=using)
        return
    transaction.on_commit(lambda: _enqueue(job, task_id, store, known), using=using)


def schedule_fulfilment(
    task_id: str, store: TaskStore | None = None, task: dict[str, Any] | None = None
) -> None:
    """Run the submitted Task ``task_id`` in the background; ``task``: the
    version just stored, which an in-process run claims from without reading
    it back (it reads the store when that version is outdated)."""
    _on_commit(store, fulfil, task_id, task)


def schedule_resume(task_id: str, store: TaskStore | None = None) -> None:
    """Resume the answered Task ``task_id`` in the background."""
    _on_commit(store, resume, task_id)
