"""Small helpers and constants shared by the tests.

Tasks in a given state are made with the lifecycle's own verbs
(:func:`task_in`), so a test's Task is one the app could have made, with the
events it would have recorded."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from toolnexus_django import lifecycle
from toolnexus_django.lifecycle.messages import text_part
from toolnexus_django.stores import TaskStore, get_task_store
from toolnexus_django.stores.base import Task

#: TOOL_ANSWERERS that lets the requester answer the demo's expense approval
#: (by default a reviewer must): for tests of continuing a Task over A2A
#: that use the expense scenario.
REQUESTER_APPROVES: dict[str, Any] = {"file_expense": ["requester", "reviewer"]}

WORKER = "test-host:1"
EXPENSE_TEXT = "file an expense of 12.5 for a taxi"


def suspend(rpc: Any, fake: Any, text: str = EXPENSE_TEXT, *, then: str | None = None) -> Task:
    """Send ``text`` for real and wait until its run stops on a Request; the
    waiting Task (as GetTask shows it). ``then``: script the model to call
    ``file_expense`` first and to answer ``then`` once resumed."""
    if then is not None:
        from tests.fakes import Text, ToolCall

        fake.push(ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}), Text(then))
    waiting = rpc.wait(rpc.send(text)["id"])
    assert waiting["status"]["state"] in ("input-required", "auth-required"), waiting
    return waiting


#: A transcript stopped on one call of ``tool`` (openai shape).
def halted_transcript(tool: str = "file_expense", call_id: str = "c1") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [{"id": call_id, "function": {"name": tool, "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "?"},
    ]


def approval(request_id: str = "approve-1", **data: Any) -> dict[str, Any]:
    return {"id": request_id, "kind": "approval", "prompt": "Approve?", "data": data or None}


def task_in(
    state: str,
    *,
    text: str = "x",
    owner: str | None = None,
    store: TaskStore | None = None,
    request: Any = None,
    transcript: list[dict[str, Any]] | None = None,
    style: str = "openai",
    result: str = "done",
    context_id: str | None = None,
    tool: Any = None,
) -> Task:
    """A stored Task driven by the lifecycle into ``state``: ``submitted``,
    ``working`` (claimed by :data:`WORKER`), ``input-required`` /
    ``auth-required`` (suspended on ``request``), ``completed`` (with
    ``result``), ``failed`` or ``canceled``. ``tool``: the halted toolnexus
    Tool a suspension records (its schema is what an edit is checked against)."""
    store = store or get_task_store()
    message: dict[str, Any] = {"role": "user", "parts": [text_part(text)]}
    if context_id:
        message["contextId"] = context_id
    task = lifecycle.submit(store, message, owner=owner, text=text).task
    if state == "submitted":
        return task
    if state == "canceled":
        return _moved(lifecycle.cancel(store, task, actor=owner, via="a2a"))
    task = _moved(lifecycle.claim(store, task, worker=WORKER))
    if state == "working":
        return task
    if state in ("input-required", "auth-required"):
        req = request or approval()
        if dataclasses.is_dataclass(req) and not isinstance(req, type):
            req = dataclasses.asdict(req)
        if state == "auth-required":
            req = {**req, "kind": "authorization"}
        return _moved(
            lifecycle.suspend(
                store,
                task,
                req,
                transcript=halted_transcript() if transcript is None else transcript,
                style=style,
                tool=tool,
            )
        )
    if state == "completed":
        return _moved(lifecycle.complete(store, task, result))
    if state == "failed":
        return _moved(lifecycle.fail(store, task, result))
    raise ValueError(f"no way to {state!r}")


def _moved(moved: lifecycle.Moved | None) -> Task:
    assert moved is not None, "the move lost a race nobody else runs"
    return moved.task


def private_of(task_or_id: Task | str, store: TaskStore | None = None) -> lifecycle.Private:
    """The typed private section of a Task (read from the store by id)."""
    task = (
        (store or get_task_store()).get(task_or_id) if isinstance(task_or_id, str) else task_or_id
    )
    assert task is not None, f"no task {task_or_id!r}"
    return lifecycle.read(task)


def pending_id(task_id: str, store: TaskStore | None = None) -> str:
    """The id of the Request the Task waits on."""
    pending = private_of(task_id, store).pending
    assert pending is not None, f"task {task_id} waits on nothing"
    return str(pending["id"])


def events_of(task_id: str, store: TaskStore | None = None) -> list[dict[str, Any]]:
    return (store or get_task_store()).events(task_id)


def decisions_of(task_id: str, store: TaskStore | None = None) -> list[dict[str, Any]]:
    """The answer and cancel events of a Task (what used to be its audit
    trail), each with its private detail merged in (decision, actor, ...)."""
    return [
        {**e, **(e.get("private") or {}), "from": e["from_state"], "to": e["to_state"]}
        for e in events_of(task_id, store)
        if e["kind"] in ("answer", "expire", "cancel")
    ]


def assert_event_log(task_id: str, store: TaskStore | None = None) -> list[dict[str, Any]]:
    """The Task's events are contiguous from 1, each move starts where the one
    before left the Task, and the last leaves it in its stored state."""
    store = store or get_task_store()
    events = store.events(task_id)
    task = store.get(task_id)
    assert task is not None
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), events
    assert events[0]["kind"] == "submit" and events[0]["from_state"] == ""
    for before, after in itertools.pairwise(events):
        assert after["from_state"] == before["to_state"], (before, after)
    assert events[-1]["to_state"] == task["status"]["state"]
    assert private_of(task).seq == len(events)
    return events
