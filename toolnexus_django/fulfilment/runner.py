"""One run of a Task: take it, run the model, record the outcome.

A run is a coroutine on the process's agent runtime loop. Its database work
(reading and taking the Task, writing the outcome, the conversation) is
short, and goes through ``db`` — the database threads for in-process runs
(:mod:`.runs`), the calling thread for a Django Tasks worker
(:func:`run_fulfilment`, :func:`run_resume`) — so while the model thinks the
run holds no thread and no database connection. While the run lasts its lease
is kept alive (:mod:`.leases`); its outcome is moved from the run's latest
version of the Task, so a change made meanwhile — a cancel — stands and the
outcome is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any

from django.db import InterfaceError, OperationalError, connections

from .. import lifecycle
from ..agent import conversations
from ..agent.conversations import get_conversation_store
from ..agent.replay import continue_run
from ..agent.runtime import RunHandle, get_runtime
from ..agent.transcript import halted_tool
from ..conf import toolnexus_settings
from ..lifecycle import states
from ..lifecycle.private import seq_of
from ..observability import metrics
from ..observability.logs import naming_task, note_task
from ..runtime.outages import log_exception
from ..stores import TaskStore, get_task_store
from ..stores.base import Task, state_of
from ..tools.context import running
from ..tools.offered import prepare_run
from .announcing import announce
from .callerthread import CallerThread
from .failures import Failure, failure_of, log_failure
from .leases import RunningRun, keeper, lease_seconds, worker_id
from .progress import RunProgress
from .runspans import traced_run

logger = logging.getLogger("toolnexus_django.fulfilment")

#: How long a finished run keeps trying to write its outcome while the
#: database is unreachable (a restart, a failover) before leaving the Task to
#: recovery (its lease expires and it runs again).
OUTAGE_PATIENCE = 60.0

#: Where a run does its database work: ``await db(fn, *args)``.
Db = Callable[..., Awaitable[Any]]
Work = Callable[[RunHandle, "RunProgress | None"], Awaitable[tuple[Any, str]]]


async def fulfil(task_id: str, store: TaskStore, db: Db, *, known: Task | None = None) -> str:
    """Run the submitted Task ``task_id`` (``known``: its version as stored, if
    the caller has it); returns the state it ended in. Never raises for a run
    that fails: the failure is recorded on the Task."""
    note_task(task_id)  # the run's log lines name it (its own context)
    db = naming_task(db, task_id)  # and its database work's
    runtime = get_runtime()
    prepare = partial(_prepare, runtime.toolkit)
    task, moved, prepared = await db(
        _take, store, task_id, states.QUEUED, lifecycle.claim, prepare, known
    )
    if task is None:
        logger.warning("Task %s vanished before it could run", task_id)
        return "missing"
    if lifecycle.phase_of(task) != states.QUEUED:
        logger.info("Task %s is %s, not submitted: nothing to run", task_id, state_of(task))
        return state_of(task)
    if moved is None:
        logger.info("Task %s was taken by another worker", task_id)
        return state_of(await db(store.get, task_id))
    claimed = moved.task

    async def work(handle: RunHandle, progress: RunProgress | None) -> tuple[Any, str]:
        if isinstance(prepared, Exception):
            raise prepared  # recorded as the run's failure
        history, run, toolkit = prepared
        with running(run):
            result = await runtime.arun(
                lifecycle.read(claimed).input_text,
                history=history,
                timeout=toolnexus_settings.RUN_TIMEOUT,
                handle=handle,
                toolkit=toolkit,
                on_event=progress.take if progress is not None else None,
            )
        return result, getattr(runtime.client, "style", "openai")

    return await traced_run(_run, store, claimed, work, db)


def _prepare(toolkit: Any, claimed: Task) -> tuple[Any, Any, Any]:
    """What a claimed run starts from: the conversation so far, the run's
    context and the tools its owner is offered."""
    private = lifecycle.read(claimed)
    owner = private.owner
    # A contextId the send made up has no conversation yet: nothing to read.
    context = None if private.new_context else claimed.get("contextId")
    history = conversations.load(get_conversation_store(), owner, context)
    run, offered = prepare_run(
        toolkit, task_id=claimed["id"], context_id=claimed.get("contextId"), owner_id=owner
    )
    return history, run, offered


async def resume(task_id: str, store: TaskStore, db: Db) -> str:
    """Resume the answered Task ``task_id`` from where its run stopped
    (:mod:`..agent.replay`); returns the state it ended in."""
    from toolnexus import Answer, Request

    note_task(task_id)
    db = naming_task(db, task_id)

    task, moved, _ = await db(_take, store, task_id, states.ANSWERED, lifecycle.start_resume)
    if task is None or lifecycle.phase_of(task) != states.ANSWERED:
        logger.info("Task %s has no answer waiting to be resumed", task_id)
        return state_of(task) if task else "missing"
    if moved is None:
        logger.info("Task %s is being resumed by another worker", task_id)
        return state_of(await db(store.get, task_id))
    private = lifecycle.read(moved.task)

    async def work(handle: RunHandle, progress: RunProgress | None) -> tuple[Any, str]:
        style = private.style or "openai"
        runtime = get_runtime()
        assert runtime.client is not None and runtime.toolkit is not None
        answer = Answer(**(private.answer or {}))
        run, toolkit = await db(
            prepare_run,
            runtime.toolkit,
            task_id=moved.task["id"],
            context_id=moved.task.get("contextId"),
            owner_id=private.owner,
            resumed=(answer, private.approved_by or ()),
        )
        with running(run):
            result = await runtime.acall(
                continue_run(
                    runtime.client,
                    toolkit,
                    transcript=private.transcript or [],
                    style=style,
                    request=Request(**(private.pending or {})),
                    answer=answer,
                    handle=handle,
                    on_event=progress.take if progress is not None else None,
                ),
                timeout=toolnexus_settings.RUN_TIMEOUT,
            )
        return result, style

    return await traced_run(_run, store, moved.task, work, db)


def _take(
    store: TaskStore,
    task_id: str,
    phase: str,
    move: Callable[..., Any],
    prepare: Callable[[Task], Any] | None = None,
    known: Task | None = None,
) -> tuple[Task | None, Any, Any]:
    """``task_id`` as stored (``known``, else read) and, when it is in
    ``phase``, ``move`` (a claim) made from it, then ``prepare`` of the
    claimed Task: (the Task, the move or None, what ``prepare`` gave or
    raised) — one trip to the database threads."""
    task = known if known is not None else store.get(task_id)
    if task is None or lifecycle.phase_of(task) != phase:
        return task, None, None
    moved = move(store, task, worker=worker_id())
    if moved is None and known is not None:  # it moved since: as without it
        return _take(store, task_id, phase, move, prepare)
    if moved is None or prepare is None:
        return task, moved, None
    try:
        return task, moved, prepare(moved.task)
    except Exception as exc:  # raised again in the run, where its failure is recorded
        return task, moved, exc


async def _run(store: TaskStore, claimed: Task, work: Work, db: Db) -> str:
    """Run ``work`` for a claimed Task with its lease kept alive, then record
    the outcome; a completed run's transcript becomes the conversation's."""
    handle = RunHandle()
    run = RunningRun(store, claimed, handle)
    lease_keeper = keeper()  # the one to leave, even once a stop replaced it
    lease_keeper.add(run)
    ended = metrics.run_started()  # in flight until ended(), which records its duration
    result: Any = None
    style = "openai"
    failure: Failure | None = None
    # Someone streams the Task: the run streams from the model (:mod:`.progress`).
    progress = None
    if lifecycle.read(claimed).streamed:
        progress = RunProgress(store, claimed["id"], seq_of(claimed), db)
    try:
        try:
            result, style = await work(handle, progress)
        except Exception as exc:
            failure = failure_of(exc)  # words on the wire; the exception in the log
            log_failure(logger, claimed["id"], failure, exc)
        if progress is not None:
            await progress.finish()
        # Still registered while the outcome is written (which may wait out a
        # database outage): its lease keeps being renewed and this process's
        # own sweep never takes the Task for a dead worker's.
        return await record_outcome(run, result, style, failure, db, progress)
    finally:
        lease_keeper.remove(run)
        ended()
        if progress is not None:
            progress.close()


def remember(task: Task, result: Any) -> None:
    """A completed run's transcript becomes its conversation's."""
    if state_of(task) != states.COMPLETED or result is None or not task.get("contextId"):
        return
    try:
        owner = lifecycle.owner_of(task)
        conversations.remember(
            get_conversation_store(), owner, task.get("contextId"), result.messages
        )
    except Exception:  # memory is a convenience: never fail a finished Task over it
        log_exception(logger, "Task %s: saving the conversation failed", task["id"])


# -- from a Django Tasks worker --------------------------------------------------------------


def _from_this_thread(
    run: Callable[[str, TaskStore, Db], Coroutine[Any, Any, str]],
    task_id: str,
    store: TaskStore | None,
) -> str:
    db = CallerThread()
    return db.serve(get_runtime().run_coroutine(run(task_id, store or get_task_store(), db)))


def run_fulfilment(task_id: str, store: TaskStore | None = None) -> str:
    """:func:`fulfil` from a thread (a Django Tasks worker's), which waits
    for the run and does its database work."""
    return _from_this_thread(fulfil, task_id, store)


def run_resume(task_id: str, store: TaskStore | None = None) -> str:
    """:func:`resume` from a thread (a Django Tasks worker's)."""
    return _from_this_thread(resume, task_id, store)


def fail_unstarted(task_id: str, store: TaskStore, exc: BaseException) -> str:
    """The run of ``task_id`` cannot even start (the agent runtime failed to
    start: a broken CLIENT or TOOLKIT): take the Task and fail it with the
    reason, so it is never left waiting for a run that will not come."""
    task = store.get(task_id)
    if task is None:
        return "missing"
    phase = lifecycle.phase_of(task)
    if phase == states.QUEUED:
        moved = lifecycle.claim(store, task, worker=worker_id())
    elif phase == states.ANSWERED:
        moved = lifecycle.start_resume(store, task, worker=worker_id())
    else:
        return state_of(task)
    if moved is None:
        return state_of(store.get(task_id))
    failure = failure_of(exc)
    log_failure(logger, task_id, failure, exc)
    failed = lifecycle.fail(store, moved.task, failure.reason, detail=failure.detail)
    if failed is None:
        return state_of(store.get(task_id))
    announce(failed.task, None)
    return state_of(failed.task)


def halted_tool_of(transcript: Any, style: str) -> Any:
    """The toolkit's Tool whose Request halted the run (its input schema is
    what a reviewer's edit is checked against), if this process has it."""
    name = halted_tool(transcript, style)
    toolkit = getattr(get_runtime(), "toolkit", None) if name else None
    return toolkit.get(name) if toolkit is not None and name else None


def outcome_move(
    result: Any, style: str, failure: Failure | None, progress: RunProgress | None = None
) -> Callable[..., Any]:
    """The lifecycle move a finished run makes from the Task's version
    (``progress``: a streamed run's, whose artifact id and first chunk it keeps)."""
    first_text_ms = progress.first_text_ms if progress is not None else None
    if failure is not None:
        return lambda store, task: lifecycle.fail(
            store, task, failure.reason, detail=failure.detail
        )
    if result.status == "pending" and result.pending is not None:
        tool = halted_tool_of(result.messages, style)
        return lambda store, task: lifecycle.suspend(
            store, task, result.pending, transcript=result.messages, style=style, tool=tool,
            usage=dict(result.usage or {}), turns=result.turns, first_text_ms=first_text_ms,
        )  # fmt: skip
    if result.status == "incomplete":
        reason = f"The run stopped at its {result.limit or 'turn'} limit without a final answer"
        usage = dict(result.usage or {})  # the turns it ran still count
        return lambda store, task: lifecycle.fail(store, task, reason, usage=usage)
    usage = dict(result.usage or {})
    artifact_id = progress.artifact_id if progress is not None else None
    return lambda store, task: lifecycle.complete(
        store, task, result.text or "", usage=usage, turns=result.turns,
        artifact_id=artifact_id, first_text_ms=first_text_ms,
    )  # fmt: skip


async def record_outcome(
    run: RunningRun,
    result: Any,
    style: str,
    failure: Failure | None,
    db: Db,
    progress: RunProgress | None = None,
) -> str:
    """Move the run's Task to its outcome (if the Task changed meanwhile —
    canceled, say — that change stands) and announce it; a streamed run's
    live updates are forgotten with it (its event says it all)."""
    task_id = run.task_id
    move = outcome_move(result, style, failure, progress)
    if progress is not None and progress.saved:
        run.forget_live = True
    try:
        moved = await _riding_out_outages(run, move, result, db)
    except (OperationalError, InterfaceError):
        # The database stayed away past OUTAGE_PATIENCE: the Task stays
        # working and, once its lease lapses, recovery runs it again.
        logger.error("Task %s: database unreachable; left to recovery", task_id)
        return states.WORKING
    except Exception as exc:
        # The outcome itself cannot be written (too large, say): record that
        # instead, so the Task is never left working.
        unsaved = failure_of(exc, what="The run's outcome could not be saved")
        log_failure(logger, task_id, unsaved, exc)
        moved = await _riding_out_outages(
            run,
            lambda store, task: lifecycle.fail(store, task, unsaved.reason, detail=unsaved.detail),
            result,
            db,
        )
    if moved is None:
        current = state_of(await db(run.store.get, task_id))
        logger.info("Task %s changed while it ran (now %s): outcome dropped", task_id, current)
        return current
    return state_of(moved.task)


def _close_connections() -> None:
    for conn in connections.all(initialized_only=True):
        conn.close()  # the next query opens a fresh connection


def _conclude(run: RunningRun, move: Callable[..., Any], result: Any) -> Any:
    """Make the run's last ``move``; once made, announce it and remember the
    conversation — one trip to the database threads for all three."""
    moved = run.make(move)
    if moved is not None:
        announce(moved.task, result)
        remember(moved.task, result)
    if run.forget_live:
        run.store.drop_live_updates(run.task_id)
    return moved


async def _riding_out_outages(
    run: RunningRun, move: Callable[..., Any], result: Any, db: Db
) -> Any:
    deadline = time.monotonic() + OUTAGE_PATIENCE
    pause = 0.2
    while True:
        try:
            return await db(_conclude, run, move, result)
        except (OperationalError, InterfaceError):
            if time.monotonic() + pause > deadline:
                raise
            logger.warning("Task %s: database unreachable; retrying in %.1fs", run.task_id, pause)
            await db(_close_connections)
            await asyncio.sleep(pause)
            # Never wait longer than a renewal period: when the database is
            # back, this write must beat other workers' recovery.
            pause = min(pause * 2, max(0.2, lease_seconds() / 3))
