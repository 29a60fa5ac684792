"""The moves of a Task's run: submit, claim, start_resume, renew, suspend,
complete, fail — and, when its worker is gone, release, requeue, give_up.

Each checks that the move is legal from the Task's phase
(:data:`.states.MOVES`), makes it by compare-and-set through the store
together with its event, wakes whatever waits for the Task in this process,
and returns a :class:`.moves.Moved` (the new Task and its event) — or
``None`` when another writer moved the Task first (the caller re-reads and
decides). An illegal move raises :class:`.states.IllegalMove`.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ..agent.transcript import TranscriptError, find_halt, last_skill
from ..bounds import bound_transcript, cut_text
from ..conf import toolnexus_settings
from ..observability import tracing
from ..signals import task_event
from ..stores import TaskStore
from ..stores.base import Task
from . import states, wakeups
from .events import SYSTEM, USER, WORKER, Event
from .messages import agent_message, message_key, new_id, now_iso, text_part, user_message
from .moves import (
    MAX_REASON_CHARS,
    Moved,
    append_history,
    begin,
    commit,
    interrupted_message,
    max_output_chars,
    new_lease,
    set_status,
)
from .private import Private, read, write
from .public import public_status
from .requests import answerers_for, status_parts

logger = logging.getLogger("toolnexus_django.lifecycle")


# -- a new Task -------------------------------------------------------------------------


def submit(
    store: TaskStore,
    message: dict[str, Any],
    *,
    owner: str | None,
    text: str,
    via: str = "a2a",
    streamed: bool = False,
) -> Moved:
    """A ``submitted`` Task for an incoming user message, stored with its
    first event; returned as stored (a fast worker may already move it).
    Raises :class:`~toolnexus_django.stores.DuplicateMessage` when ``owner``
    already started a Task with this ``messageId`` within
    ``IDEMPOTENCY_WINDOW``: a repeated send makes no second Task.
    ``streamed``: sent by a streaming method (its runs stream: :mod:`.live`)."""
    tid = new_id()
    context_id = message.get("contextId")
    new_context = not isinstance(context_id, str) or not context_id
    if new_context:
        context_id = new_id()
    task: Task = {"id": tid, "contextId": context_id, "kind": "task"}
    task["status"] = {"state": states.SUBMITTED, "timestamp": now_iso()}
    task["history"] = [user_message(message, task=task)]
    private = Private(owner=owner, input_text=text, phase=states.QUEUED, seq=1)
    private.new_context = new_context
    private.streamed = streamed and toolnexus_settings.STREAM_LIVE_UPDATES is True
    started_by = tracing.carrier()  # its runs continue this request's trace
    if started_by:
        private.trace = {"start": started_by}
    if toolnexus_settings.IDEMPOTENCY_WINDOW != 0:
        private.message_key = message_key(owner, message.get("messageId"))
    write(task, private)
    event = Event(
        task_id=tid,
        seq=1,
        kind="submit",
        from_state="",
        to_state=states.SUBMITTED,
        at=task["status"]["timestamp"],
        actor=owner or "",
        actor_kind=USER,
        via=via,
        public={"status": public_status(task["status"], tid)},
    ).as_dict()
    store.create(task, event)
    wakeups.moved(store, task)
    logger.info("Task %s: submitted (submit)", tid)
    task_event.send_robust(sender=TaskStore, task_id=tid, event=event)
    return Moved(task, event)


# -- a worker's moves ---------------------------------------------------------------------


def claim(store: TaskStore, task: Task, *, worker: str) -> Moved | None:
    """A worker takes a submitted Task: ``working`` with its lease, one more
    attempt of its first run segment."""
    new, private = begin(task, "claim")
    set_status(new, states.WORKING)
    private.phase, private.lease, private.worker = states.RUNNING, new_lease(worker), worker
    private.start_attempt()
    return commit(
        store, task, new, private, "claim", actor=worker, actor_kind=WORKER, via="worker",
        detail=_attempt(private),
    )  # fmt: skip


def start_resume(store: TaskStore, task: Task, *, worker: str) -> Moved | None:
    """A worker takes an answered Task to resume its run: one more attempt of
    the segment its answer started (a requeued resume's earlier tries count)."""
    new, private = begin(task, "resume")
    set_status(new, states.WORKING)
    private.phase, private.lease, private.worker = states.RESUMING, new_lease(worker), worker
    private.start_attempt()
    return commit(
        store, task, new, private, "resume", actor=worker, actor_kind=WORKER, via="worker",
        detail=_attempt(private),
    )  # fmt: skip


def _attempt(private: Private) -> dict[str, int]:
    """A run's start: its attempt in all, and in its run segment (the budget's)."""
    return {"attempt": private.attempts, "segment_attempt": private.segment_attempts}


def renew(store: TaskStore, task: Task) -> Moved | None:
    """Extend the running worker's lease (not a transition: no event)."""
    new, private = begin(task, "renew")
    holder = private.lease.owner if private.lease else private.worker
    if not holder:  # a leased phase always names its worker; never renew for nobody
        raise states.IllegalMove("renew", str(task.get("id")), task["status"]["state"], "unheld")
    private.lease = new_lease(holder)
    return commit(store, task, new, private, "renew")


def suspend(
    store: TaskStore,
    task: Task,
    request: Any,
    *,
    transcript: list[dict[str, Any]],
    style: str,
    tool: Any = None,
    usage: dict[str, Any] | None = None,
    turns: int | None = None,
    first_text_ms: int | None = None,
) -> Moved | None:
    """The run stopped on a toolnexus pending Request: ``input-required``
    (``auth-required`` for kind ``authorization``) with the prompt and what an
    answer must look like on the wire; the Request and the transcript stay
    server-side, with the halted ``tool`` (a toolnexus ``Tool``, when the
    toolkit has it): its name, source and input schema, for review."""
    new, private = begin(task, "suspend")
    if dataclasses.is_dataclass(request) and not isinstance(request, type):
        req = dataclasses.asdict(request)
    else:
        req = dict(request)
    halt = halt_of(tool, transcript, style)
    name = halt["tool"] or None
    answerers = answerers_for(req, name)
    state = states.AUTH_REQUIRED if req.get("kind") == "authorization" else states.INPUT_REQUIRED
    prompt = cut_text(str(req.get("prompt") or "Input required"), max_output_chars())
    set_status(new, state, prompt, status_parts(req, answerers))
    worker = private.lease.owner if private.lease else ""
    private.phase, private.lease, private.answer = states.WAITING, None, None
    private.approved_by = None
    private.pending = req
    # The run record: what this run (up to its suspension) used.
    private.usage, private.turns, private.first_text_ms = usage, turns, first_text_ms
    private.add_usage(usage)  # the Task's sum, over all its runs
    # Each message's text bounded; never trimmed in count (resume needs the halt).
    private.transcript = bound_transcript(
        transcript, max_messages=len(transcript), max_chars=max_output_chars()
    )
    private.style = style
    private.halt = halt
    private.review = None
    private.end_segment()  # a clean stop: its resume gets the whole attempt budget
    return commit(
        store, task, new, private, "suspend", actor=worker, actor_kind=WORKER, via="worker",
        detail={"request": req.get("id"), "kind": req.get("kind"), "tool": name},
    )  # fmt: skip


def halt_of(tool: Any, transcript: Any, style: str) -> dict[str, Any]:
    """What the review queue knows of the halted call: the tool's name and
    arguments, its source and input schema (when the toolkit has it), the
    skill the run loaded last."""
    schema = getattr(tool, "input_schema", None)
    try:
        halted = find_halt(transcript, style).halted
        name, arguments = halted.name, halted.arguments
    except TranscriptError:
        name, arguments = "", {}
    return {
        "tool": name,
        "arguments": arguments,
        "source": str(getattr(tool, "source", "") or ""),
        "schema": schema if isinstance(schema, dict) else None,
        "skill": last_skill(transcript, style) or "",
    }


def complete(
    store: TaskStore,
    task: Task,
    text: str,
    *,
    usage: dict[str, Any] | None = None,
    turns: int | None = None,
    artifact_id: str | None = None,
    first_text_ms: int | None = None,
) -> Moved | None:
    """Done: the run's final text (cut at MAX_OUTPUT_CHARS) is the Task's
    artifact (``artifact_id``: the one its streamed chunks named) and the
    last message of its history."""
    new, private = begin(task, "complete")
    text = cut_text(text, max_output_chars())
    set_status(new, states.COMPLETED)
    artifact_id = artifact_id or new_id()
    new["artifacts"] = [{"artifactId": artifact_id, "name": "result", "parts": [text_part(text)]}]
    append_history(new, agent_message(text, task=new))
    worker = private.lease.owner if private.lease else ""
    private.drop_suspension()
    private.end_segment()
    private.phase, private.lease, private.usage, private.turns = states.DONE, None, usage, turns
    private.first_text_ms = first_text_ms
    private.add_usage(usage)
    return commit(
        store, task, new, private, "complete", actor=worker, actor_kind=WORKER, via="worker",
        artifacts=(artifact_id,),
    )  # fmt: skip


def fail(
    store: TaskStore,
    task: Task,
    reason: str,
    *,
    kind: str = "fail",
    actor: str | None = None,
    actor_kind: str = WORKER,
    via: str = "worker",
    detail: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
) -> Moved | None:
    """Failed, with a readable reason as the status message (public: words,
    never an exception's text); ``detail`` (the exception, say) stays in the
    event's private detail. ``usage``: what the failed run used, when known
    (added to the Task's token sum)."""
    new, private = begin(task, kind)
    reason = cut_text(reason, MAX_REASON_CHARS)
    set_status(new, states.FAILED, reason)
    if actor is None:
        actor = private.lease.owner if private.lease else ""
    private.drop_suspension()
    if kind == "fail":  # the run's own end; a give-up keeps the count it gave up at
        private.end_segment()
    private.phase, private.lease, private.error = states.DONE, None, reason
    private.add_usage(usage)
    return commit(
        store, task, new, private, kind, actor=actor, actor_kind=actor_kind, via=via,
        detail={"error": reason, **(detail or {})},
    )  # fmt: skip


# -- when a worker is gone -------------------------------------------------------------------


def _back(task: Task, kind: str, *, refund: bool) -> tuple[Task, Private]:
    """A leased Task back to where a worker can take it: a first run to
    ``submitted``, a resume to ``working`` with its answer waiting."""
    new, private = begin(task, kind)
    resuming = private.phase in (states.RESUMING, states.ANSWERED)
    set_status(new, states.WORKING if resuming else states.SUBMITTED)
    private.phase = states.ANSWERED if resuming else states.QUEUED
    private.lease = None
    if refund:
        private.refund_attempt()
    return new, private


def release(store: TaskStore, task: Task) -> Moved | None:
    """A stopping worker gives its run back; the attempt does not count."""
    new, private = _back(task, "release", refund=True)
    worker = read(task).lease
    return commit(
        store, task, new, private, "release", actor=worker.owner if worker else "",
        actor_kind=WORKER, via="shutdown",
    )  # fmt: skip


def requeue(store: TaskStore, task: Task) -> Moved | None:
    """The worker's lease lapsed (it died): run it again elsewhere."""
    new, private = _back(task, "requeue", refund=False)
    return commit(
        store, task, new, private, "requeue", actor="system", actor_kind=SYSTEM, via="recovery",
        detail={"attempts": private.attempts, "segment_attempts": private.segment_attempts},
    )  # fmt: skip


def out_of_attempts(task: Task) -> bool:
    """Whether the run segment under way has started ``MAX_ATTEMPTS`` runs:
    once its lease lapses, it is given up rather than run again. Attempts of
    earlier segments (the first run and resumes that ended cleanly, on a
    Request) never count against a later one."""
    return read(task).segment_attempts >= int(toolnexus_settings.MAX_ATTEMPTS)


def give_up(store: TaskStore, task: Task) -> Moved | None:
    """The lease lapsed once too often (MAX_ATTEMPTS in one run segment):
    failed, saying how many attempts were interrupted — each of the
    segment's (a clean end would have started a new segment; a released run
    is refunded)."""
    attempts = read(task).segment_attempts
    return fail(
        store, task, interrupted_message(attempts), kind="give_up", actor="system",
        actor_kind=SYSTEM, via="recovery",
    )  # fmt: skip
