"""Background fulfilment as a Django Task.

``SendMessage`` saves a ``submitted`` Task and, once the transaction commits,
enqueues :data:`fulfil` with the Task's id. Whichever Django Tasks backend runs
it — the app's in-process pool by default, or any backend named by
``TOOLNEXUS["TASK_BACKEND"]`` — calls :func:`run_fulfilment` in a worker: the
store is read and written there (never on the runtime's event loop), and only
the model run itself is handed to the process's :class:`AgentRuntime`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import (
    InterfaceError,
    OperationalError,
    connections,
    transaction,
)

from . import conversations
from .a2a import shapes
from .a2a.dialects import Dialect, render_task
from .backends import InProcessBackend
from .compat import InvalidTaskBackendError, Task, task
from .conf import toolnexus_settings
from .conversations import get_conversation_store
from .leases import RunningRun, keeper, lease_seconds, new_lease
from .review import answerers_for, tool_that_halted
from .runtime import RunDeadlineExceeded, RunHandle, get_runtime
from .signals import awaiting_human, run_finished
from .stores import PRIVATE_KEY, DjangoTaskStore, TaskStore, get_task_store

logger = logging.getLogger("toolnexus_django.tasks")

INPROCESS_ALIAS = "toolnexus"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _LateValidatedTask(Task):
    """A Task whose backend is checked when it is enqueued, not when declared."""

    def __post_init__(self) -> None:
        pass


def job(func: Callable[[str], str]) -> Any:
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
    return run_fulfilment(task_id)


@job
def resume(task_id: str) -> str:
    """Continue one answered Task from where its run stopped."""
    return run_resume(task_id)


def _claim(store: TaskStore, task: dict[str, Any], move: Any = None) -> dict[str, Any] | None:
    """Take ``task`` for a run in this process: ``working`` with this worker's
    lease and one more attempt, by compare-and-set (so one worker wins)."""
    claimed = shapes.with_status(task, "working")
    section = shapes.private(claimed)
    section["lease"] = new_lease()
    section["worker"] = section["lease"]["owner"]  # who ran it last, kept after the lease
    section["attempts"] = int(section.get("attempts") or 0) + 1
    if move is not None:
        move(section)
    return claimed if store.compare_and_set(task, claimed) else None


def _run_claimed(
    store: TaskStore, claimed: dict[str, Any], work: Any, *, remember_as: str | None
) -> str:
    """Run ``work(handle)`` for a claimed Task with its lease kept alive, then
    settle the outcome (unless the Task changed meanwhile — a cancel stands)."""
    handle = RunHandle()
    run = RunningRun(store, claimed, handle)
    keeper().add(run)
    result: Any = None
    try:
        result, style = work(handle)
        final = settle(claimed, result, style=style)
    except Exception as exc:
        logger.info("Task %s: run failed: %s", claimed["id"], exc, exc_info=True)
        final = shapes.failed(claimed, describe_failure(exc))
    try:
        # Still registered while the outcome is written (which may wait out a
        # database outage): its lease keeps being renewed and this process's
        # own sweep never takes the Task for a dead worker's.
        state = finish(run, final, result)
    finally:
        keeper().remove(run)
    if state == "completed" and result is not None and remember_as:
        try:
            conversations.remember(
                get_conversation_store(), shapes.owner_of(claimed), remember_as, result.messages
            )
        except Exception:  # memory is a convenience: never fail a finished Task over it
            logger.exception("Task %s: saving the conversation failed", claimed["id"])
    return state


def run_fulfilment(task_id: str, store: TaskStore | None = None) -> str:
    """Run the Task ``task_id``; returns the state it ended in. Never raises for
    a run that fails: the failure is recorded on the Task."""
    store = store or get_task_store()
    task = store.get(task_id)
    if task is None:
        logger.warning("Task %s vanished before it could run", task_id)
        return "missing"
    state = shapes.state_of(task)
    if state != "submitted":
        logger.info("Task %s is %s, not submitted: nothing to run", task_id, state)
        return state
    claimed = _claim(store, task)
    if claimed is None:
        logger.info("Task %s was taken by another worker", task_id)
        return shapes.state_of(store.get(task_id))
    logger.info("Task %s: submitted -> working (attempt %s)", task_id, _attempts(claimed))

    context_id = claimed.get("contextId")
    text = str((claimed.get(PRIVATE_KEY) or {}).get("input", {}).get("text") or "")

    def work(handle: RunHandle) -> tuple[Any, str]:
        runtime = get_runtime()
        history = conversations.load(get_conversation_store(), shapes.owner_of(claimed), context_id)
        result = runtime.run(
            text, history=history, timeout=toolnexus_settings.RUN_TIMEOUT, handle=handle
        )
        return result, getattr(runtime.client, "style", "openai")

    return _run_claimed(store, claimed, work, remember_as=context_id)


def run_resume(task_id: str, store: TaskStore | None = None) -> str:
    """Resume the answered Task ``task_id`` (see :mod:`toolnexus_django.resume`);
    returns the state it ended in."""
    from toolnexus import Answer, Request

    from .resume import continue_run

    store = store or get_task_store()
    task = store.get(task_id)
    section = (task or {}).get(PRIVATE_KEY) or {}
    if task is None or shapes.state_of(task) != "working" or "answer" not in section:
        logger.info("Task %s has no answer waiting to be resumed", task_id)
        return shapes.state_of(task) if task else "missing"
    claimed = _claim(store, task, move=lambda s: s.__setitem__("resuming", s.pop("answer")))
    if claimed is None:
        logger.info("Task %s is being resumed by another worker", task_id)
        return shapes.state_of(store.get(task_id))
    logger.info("Task %s: resuming after an answer", task_id)
    claimed_section = shapes.private(claimed)

    def work(handle: RunHandle) -> tuple[Any, str]:
        answer = Answer(**claimed_section["resuming"])
        request = Request(**claimed_section["pending"])
        style = str(claimed_section.get("style") or "openai")
        runtime = get_runtime()
        assert runtime.client is not None and runtime.toolkit is not None
        result = runtime.call(
            continue_run(
                runtime.client,
                runtime.toolkit,
                transcript=claimed_section.get("transcript") or [],
                style=style,
                request=request,
                answer=answer,
                handle=handle,
            ),
            timeout=toolnexus_settings.RUN_TIMEOUT,
        )
        return result, style

    return _run_claimed(store, claimed, work, remember_as=claimed.get("contextId"))


def _attempts(task: dict[str, Any]) -> int:
    return int((task.get(PRIVATE_KEY) or {}).get("attempts") or 0)


def finish(run: RunningRun, final: dict[str, Any], result: Any) -> str:
    """Move the run's Task to its outcome ``final`` (guarded: if the Task
    changed meanwhile — canceled, say — that change stands) and announce it."""
    task_id = run.task_id
    shapes.private(final).pop("lease", None)
    try:
        won = _settle_riding_out_outages(run, final)
    except (OperationalError, InterfaceError):
        # The database stayed away past OUTAGE_PATIENCE: the Task stays
        # working and, once its lease lapses, recovery runs it again.
        logger.error("Task %s: database unreachable; left to recovery", task_id)
        return "working"
    except Exception as exc:
        # The outcome itself cannot be written (too large, say): record that
        # instead, so the Task is never left working.
        logger.exception("Task %s: saving its outcome failed", task_id)
        final = shapes.failed(run.version, f"The outcome could not be saved: {exc}")
        shapes.private(final).pop("lease", None)
        won = _settle_riding_out_outages(run, final)
    if not won:
        current = shapes.state_of(run.store.get(task_id))
        logger.info("Task %s changed while it ran (now %s): outcome dropped", task_id, current)
        return current
    logger.info("Task %s: working -> %s", task_id, shapes.state_of(final))
    _notify(final, result)
    return shapes.state_of(final)


#: How long a finished run keeps trying to write its outcome while the
#: database is unreachable (a restart, a failover) before leaving the Task to
#: recovery (its lease expires and it runs again).
OUTAGE_PATIENCE = 60.0


def _settle_riding_out_outages(run: RunningRun, final: dict[str, Any]) -> bool:
    deadline = time.monotonic() + OUTAGE_PATIENCE
    pause = 0.2
    while True:
        try:
            return run.settle(final)
        except (OperationalError, InterfaceError):
            if time.monotonic() + pause > deadline:
                raise
            logger.warning("Task %s: database unreachable; retrying in %.1fs", run.task_id, pause)
            for conn in connections.all(initialized_only=True):
                conn.close()  # the next query opens a fresh connection
            time.sleep(pause)
            # Never wait longer than a renewal period: when the database is
            # back, this write must beat other workers' recovery.
            pause = min(pause * 2, max(0.2, lease_seconds() / 3))


def settle(task: dict[str, Any], result: Any, *, style: str) -> dict[str, Any]:
    """The Task a finished run leaves behind."""
    if result.status == "pending" and result.pending is not None:
        request = dataclasses.asdict(result.pending)
        answerers = answerers_for(request, tool_that_halted(result.messages, style))
        return shapes.input_required(
            task, request, transcript=result.messages, style=style, answerers=answerers
        )
    if result.status == "incomplete":
        return shapes.failed(
            task,
            f"The run stopped at its {result.limit or 'turn'} limit without a final answer",
        )
    done = shapes.completed(task, result.text or "")
    shapes.private(done)["usage"] = dict(result.usage or {})
    shapes.private(done)["turns"] = result.turns
    return done


def describe_failure(exc: BaseException) -> str:
    """A readable one-line reason for a failed run."""
    import toolnexus

    if isinstance(exc, RunDeadlineExceeded):
        return str(exc)
    if isinstance(exc, toolnexus.RunTimeout):
        return f"The model did not answer in time: {exc}"
    if isinstance(exc, toolnexus.RunCancelled):
        return "The run was cancelled"
    name = type(exc).__name__
    if name == "ProviderError":
        return f"The model call failed: {exc}"
    if isinstance(exc, OSError):
        return f"The model could not be reached: {exc}"
    return f"The run failed: {name}: {exc}"


def _notify(task: dict[str, Any], result: Any) -> None:
    state = shapes.state_of(task)
    public = render_task(task, Dialect.V03)
    responses = run_finished.send_robust(
        sender=run_finished, task_id=task["id"], state=state, task=public, result=result
    )
    if state in shapes.AWAITING_HUMAN:
        request = (task.get(PRIVATE_KEY) or {}).get("pending")
        responses += awaiting_human.send_robust(
            sender=awaiting_human, task_id=task["id"], task=public, request=request
        )
    for receiver, response in responses:
        if isinstance(response, Exception):
            logger.error("signal receiver %r raised %r", receiver, response)


# -- enqueueing ----------------------------------------------------------------

_backend_lock = threading.Lock()
_inprocess: InProcessBackend | None = None


def inprocess_backend() -> InProcessBackend:
    """The app's embedded backend for this process."""
    global _inprocess
    backend = _inprocess
    if backend is None:
        with _backend_lock:
            if _inprocess is None:
                _inprocess = InProcessBackend(
                    INPROCESS_ALIAS,
                    {"OPTIONS": {"THREADS": toolnexus_settings.WORKER_THREADS}},
                )
            backend = _inprocess
    return backend


def close_inprocess_backend(timeout: float | None = 0) -> bool:
    """Stop the embedded backend (waiting up to ``timeout`` for running jobs)."""
    global _inprocess
    with _backend_lock:
        backend, _inprocess = _inprocess, None
    return backend.close(timeout) if backend is not None else True


def _close_on_reload() -> None:
    close_inprocess_backend(timeout=0)


toolnexus_settings.on_reload(_close_on_reload)


def _enqueue(job: Any, task_id: str) -> None:
    alias = toolnexus_settings.TASK_BACKEND
    if alias is None:
        inprocess_backend().enqueue(job, [task_id], {})
    else:
        job.using(backend=alias).enqueue(task_id)


def _on_commit(store: TaskStore | None, job: Any, task_id: str) -> None:
    # Enqueue once the transaction that saved the Task commits (at once when
    # there is none), so a worker never looks for a row that is not there yet.
    store = store or get_task_store()
    using = store.using if isinstance(store, DjangoTaskStore) else None
    transaction.on_commit(lambda: _enqueue(job, task_id), using=using)


def schedule_fulfilment(task_id: str, store: TaskStore | None = None) -> None:
    """Run the submitted Task ``task_id`` in the background."""
    _on_commit(store, fulfil, task_id)


def schedule_resume(task_id: str, store: TaskStore | None = None) -> None:
    """Resume the answered Task ``task_id`` in the background."""
    _on_commit(store, resume, task_id)
