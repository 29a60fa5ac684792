"""One run of a Task, in a worker: take it, run the model, record the outcome.

The store is read and written here (never on the runtime's event loop); only
the model run itself is handed to the process's agent runtime. While the run
lasts its lease is kept alive (:mod:`.leases`); its outcome is moved from the
run's latest version of the Task, so a change made meanwhile — a cancel —
stands and the outcome is dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, OperationalError, connections

from .. import lifecycle
from ..agent import conversations
from ..agent.conversations import get_conversation_store
from ..agent.runtime import RunDeadlineExceeded, RunHandle, get_runtime
from ..conf import toolnexus_settings
from ..lifecycle import states
from ..signals import awaiting_human, run_finished
from ..stores import TaskStore, get_task_store
from ..stores.base import Task, state_of
from .leases import RunningRun, keeper, lease_seconds, worker_id

logger = logging.getLogger("toolnexus_django.fulfilment")

#: How long a finished run keeps trying to write its outcome while the
#: database is unreachable (a restart, a failover) before leaving the Task to
#: recovery (its lease expires and it runs again).
OUTAGE_PATIENCE = 60.0

Work = Callable[[RunHandle], tuple[Any, str]]


def run_fulfilment(task_id: str, store: TaskStore | None = None) -> str:
    """Run the submitted Task ``task_id``; returns the state it ended in. Never
    raises for a run that fails: the failure is recorded on the Task."""
    store = store or get_task_store()
    task = store.get(task_id)
    if task is None:
        logger.warning("Task %s vanished before it could run", task_id)
        return "missing"
    if lifecycle.phase_of(task) != states.QUEUED:
        logger.info("Task %s is %s, not submitted: nothing to run", task_id, state_of(task))
        return state_of(task)
    moved = lifecycle.claim(store, task, worker=worker_id())
    if moved is None:
        logger.info("Task %s was taken by another worker", task_id)
        return state_of(store.get(task_id))
    claimed = moved.task
    private = lifecycle.read(claimed)

    def work(handle: RunHandle) -> tuple[Any, str]:
        runtime = get_runtime()
        history = conversations.load(
            get_conversation_store(), private.owner, claimed.get("contextId")
        )
        result = runtime.run(
            private.input_text,
            history=history,
            timeout=toolnexus_settings.RUN_TIMEOUT,
            handle=handle,
        )
        return result, getattr(runtime.client, "style", "openai")

    return _run(store, claimed, work)


def run_resume(task_id: str, store: TaskStore | None = None) -> str:
    """Resume the answered Task ``task_id`` from where its run stopped
    (:mod:`..agent.replay`); returns the state it ended in."""
    from toolnexus import Answer, Request

    from ..agent.replay import continue_run

    store = store or get_task_store()
    task = store.get(task_id)
    if task is None or lifecycle.phase_of(task) != states.ANSWERED:
        logger.info("Task %s has no answer waiting to be resumed", task_id)
        return state_of(task) if task else "missing"
    moved = lifecycle.start_resume(store, task, worker=worker_id())
    if moved is None:
        logger.info("Task %s is being resumed by another worker", task_id)
        return state_of(store.get(task_id))
    private = lifecycle.read(moved.task)

    def work(handle: RunHandle) -> tuple[Any, str]:
        style = private.style or "openai"
        runtime = get_runtime()
        assert runtime.client is not None and runtime.toolkit is not None
        result = runtime.call(
            continue_run(
                runtime.client,
                runtime.toolkit,
                transcript=private.transcript or [],
                style=style,
                request=Request(**(private.pending or {})),
                answer=Answer(**(private.answer or {})),
                handle=handle,
            ),
            timeout=toolnexus_settings.RUN_TIMEOUT,
        )
        return result, style

    return _run(store, moved.task, work)


def _run(store: TaskStore, claimed: Task, work: Work) -> str:
    """Run ``work`` for a claimed Task with its lease kept alive, then record
    the outcome; a completed run's transcript becomes the conversation's."""
    handle = RunHandle()
    run = RunningRun(store, claimed, handle)
    keeper().add(run)
    result: Any = None
    style = "openai"
    failure: str | None = None
    try:
        result, style = work(handle)
    except Exception as exc:
        logger.info("Task %s: run failed: %s", claimed["id"], exc, exc_info=True)
        failure = describe_failure(exc)
    try:
        # Still registered while the outcome is written (which may wait out a
        # database outage): its lease keeps being renewed and this process's
        # own sweep never takes the Task for a dead worker's.
        state = record_outcome(run, result, style, failure)
    finally:
        keeper().remove(run)
    if state == states.COMPLETED and result is not None and claimed.get("contextId"):
        try:
            owner = lifecycle.owner_of(claimed)
            conversations.remember(
                get_conversation_store(), owner, claimed.get("contextId"), result.messages
            )
        except Exception:  # memory is a convenience: never fail a finished Task over it
            logger.exception("Task %s: saving the conversation failed", claimed["id"])
    return state


def outcome_move(result: Any, style: str, failure: str | None) -> Callable[..., Any]:
    """The lifecycle move a finished run makes from the Task's version."""
    if failure is not None:
        return lambda store, task: lifecycle.fail(store, task, failure)
    if result.status == "pending" and result.pending is not None:
        return lambda store, task: lifecycle.suspend(
            store, task, result.pending, transcript=result.messages, style=style
        )
    if result.status == "incomplete":
        reason = f"The run stopped at its {result.limit or 'turn'} limit without a final answer"
        return lambda store, task: lifecycle.fail(store, task, reason)
    usage = dict(result.usage or {})
    return lambda store, task: lifecycle.complete(
        store, task, result.text or "", usage=usage, turns=result.turns
    )


def record_outcome(run: RunningRun, result: Any, style: str, failure: str | None) -> str:
    """Move the run's Task to its outcome (if the Task changed meanwhile —
    canceled, say — that change stands) and announce it."""
    task_id = run.task_id
    move = outcome_move(result, style, failure)
    try:
        moved = _riding_out_outages(run, move)
    except (OperationalError, InterfaceError):
        # The database stayed away past OUTAGE_PATIENCE: the Task stays
        # working and, once its lease lapses, recovery runs it again.
        logger.error("Task %s: database unreachable; left to recovery", task_id)
        return states.WORKING
    except Exception as exc:
        # The outcome itself cannot be written (too large, say): record that
        # instead, so the Task is never left working.
        logger.exception("Task %s: saving its outcome failed", task_id)
        reason = f"The outcome could not be saved: {exc}"
        moved = _riding_out_outages(run, lambda store, task: lifecycle.fail(store, task, reason))
    if moved is None:
        current = state_of(run.store.get(task_id))
        logger.info("Task %s changed while it ran (now %s): outcome dropped", task_id, current)
        return current
    announce(moved.task, result)
    return state_of(moved.task)


def _riding_out_outages(run: RunningRun, move: Callable[..., Any]) -> Any:
    deadline = time.monotonic() + OUTAGE_PATIENCE
    pause = 0.2
    while True:
        try:
            return run.make(move)
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


def announce(task: Task, result: Any) -> None:
    """The signals of a finished run (``run_finished``, ``awaiting_human``)."""
    state = state_of(task)
    public = lifecycle.public_task(task)
    responses = run_finished.send_robust(
        sender=run_finished, task_id=task["id"], state=state, task=public, result=result
    )
    if state in states.AWAITING_HUMAN:
        request = lifecycle.read(task).pending
        responses += awaiting_human.send_robust(
            sender=awaiting_human, task_id=task["id"], task=public, request=request
        )
    for receiver, response in responses:
        if isinstance(response, Exception):
            logger.error("signal receiver %r raised %r", receiver, response)
