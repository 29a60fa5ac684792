"""Live updates between a running Task's moves: kept by the django store for
other processes, woken like moves (but only for streams), told apart on the
wake-up channel, and rendered as a stream's chunks and tool calls with ids
that resume exactly (toolnexus_django/lifecycle/live.py, a2a/liveevents.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from a2a.compat.v0_3 import types as v03

from toolnexus_django import lifecycle
from toolnexus_django.a2a.dialects import Dialect
from toolnexus_django.a2a.follow import Follower, Position, position_of
from toolnexus_django.a2a.liveevents import grouped, live_messages
from toolnexus_django.lifecycle import live, wakeups
from toolnexus_django.lifecycle.payloads import parse_live_payload, parse_payload
from toolnexus_django.stores import DjangoTaskStore, InMemoryTaskStore
from toolnexus_django.stores.base import Task

ARTIFACT = "a-1"


def chunk(n: int, text: str, *, reset: bool = False) -> dict[str, Any]:
    return {"n": n, "text": text, "artifact": ARTIFACT, "reset": reset}


def tool(n: int, status: str, **extra: Any) -> dict[str, Any]:
    return {"n": n, "tool": "file_expense", "call": "c-1", "status": status, **extra}


def working(store: Any) -> Task:
    message = {"messageId": str(uuid.uuid4()), "role": "user"}
    message["parts"] = [{"kind": "text", "text": "file my claim"}]
    task = lifecycle.submit(store, message, owner=None, text="file my claim").task
    claimed = lifecycle.claim(store, task, worker="w-1")
    assert claimed is not None
    return claimed.task


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[wakeups.Hub]:
    class Beats(wakeups.Hub):
        def _start_poller(self) -> None:
            pass

    beats = Beats()
    monkeypatch.setattr(wakeups, "hub", lambda: beats)
    monkeypatch.setattr(live, "hub", lambda: beats)
    yield beats


# -- the wake-up channel --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "move", "updates"),
    [
        ("t-1:7", ("t-1", 7), None),
        ("t-1:7.12", None, ("t-1", 7, 12)),
        ("urn:x:t:7.3", None, ("urn:x:t", 7, 3)),  # an id may hold ":"
        ("t-1:7.", None, None),
        ("t-1:.3", None, None),
        ("probe 4f2a", None, None),
    ],
)
def test_a_notification_is_a_move_or_live_updates_or_neither(
    payload: str, move: Any, updates: Any
) -> None:
    assert parse_payload(payload) == move
    assert parse_live_payload(payload) == updates


# -- waking ----------------------------------------------------------------------------------


def test_live_updates_wake_streams_and_never_blocking_waits(hub: wakeups.Hub) -> None:
    store = InMemoryTaskStore()
    task = working(store)
    with wakeups.watch(store, task["id"]) as blocking, wakeups.watch(store, task["id"]) as stream:
        stream.follow_live()
        feed = live.feeds().open(task["id"], lifecycle.read(task).seq)
        try:
            feed.add(chunk(0, "Filed"))
        finally:
            live.feeds().close(feed)
        assert stream.wait(0) and stream.stirred() == (False, True)
        assert not blocking.wait(0)
        assert stream.stirred() == (False, False)  # told once
        lifecycle.complete(store, task, "Filed.")
        assert stream.wait(0) and stream.stirred() == (True, False)
        assert blocking.wait(0)


# -- the django store ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_django_store_keeps_a_runs_updates_for_other_processes() -> None:
    store = DjangoTaskStore()
    task = working(store)
    tid, seq = task["id"], lifecycle.read(task).seq
    assert store.keeps_live_updates
    start = store.live_changes_since(None)
    assert start is not None
    store.add_live_updates(tid, seq, [chunk(1, "Filed", reset=True), chunk(2, " claim")])
    store.add_live_updates(tid, seq, [tool(3, "running", arguments={"amount": 42})])
    store.add_live_updates(tid, seq - 1, [chunk(1, "an earlier run's")])
    assert [u["n"] for u in store.live_updates(tid, seq)] == [1, 2, 3]
    assert [u["n"] for u in store.live_updates(tid, seq, after=1)] == [2, 3]
    assert store.live_updates(tid, seq, after=3) == []
    found = store.live_changes_since(start[0])
    assert found is not None and found[1] == {tid: (seq, 3)}
    assert store.live_changes_since(found[0]) == (found[0], {})
    store.drop_live_updates(tid)
    assert store.live_updates(tid, seq) == [] and store.live_updates(tid, seq - 1) == []


def test_other_stores_keep_none() -> None:
    store = InMemoryTaskStore()
    assert not store.keeps_live_updates
    assert store.live_updates("t", 1) == [] and store.live_changes_since(None) is None


# -- on the wire -----------------------------------------------------------------------------


def test_chunks_of_one_turn_read_together_go_as_one() -> None:
    updates = [
        chunk(1, "Let me", reset=True),
        chunk(2, " check."),
        tool(3, "running"),
        chunk(4, "Filed", reset=True),
        chunk(5, " EXP-1."),
    ]
    joined = list(grouped(updates))
    assert [(u["n"], u.get("text")) for u in joined] == [
        (2, "Let me check."),
        (3, None),
        (5, "Filed EXP-1."),
    ]
    assert [u.get("reset") for u in joined] == [True, None, True]


def test_v03_messages_are_the_sdks_events_with_resumable_ids() -> None:
    task = {"id": "t-1", "contextId": "ctx"}
    updates = [chunk(1, "Filed", reset=True), tool(2, "running", arguments={"amount": 42})]
    out = list(live_messages(task, [updates[0]], Dialect.V03, 4))
    out += list(live_messages(task, [updates[1]], Dialect.V03, 4))
    assert [i for i, _ in out] == ["4.0.1", "4.0.2"]
    first, second = (r for _, r in out)
    for result in (first, second):
        v03.SendStreamingMessageSuccessResponse.model_validate({"id": 1, "result": result})
    assert first["kind"] == "artifact-update" and first["append"] is False
    assert first["lastChunk"] is False and first["artifact"]["artifactId"] == ARTIFACT
    assert second["kind"] == "status-update" and second["final"] is False
    assert second["status"]["state"] == "working"
    text, data = second["status"]["message"]["parts"]
    assert text["text"] == 'Calling file_expense {"amount": 42}'
    assert data["data"] == {
        "tool": "file_expense",
        "callId": "c-1",
        "status": "running",
        "arguments": {"amount": 42},
    }


def test_v10_messages_carry_append_and_the_tool() -> None:
    task = {"id": "t-1", "contextId": "ctx"}
    updates = [chunk(1, " more"), tool(2, "input-required")]
    (_, append), (_, status) = live_messages(task, updates, Dialect.V10, 4)
    assert append["artifactUpdate"]["append"] is True
    assert append["artifactUpdate"]["lastChunk"] is False
    assert append["artifactUpdate"]["artifact"]["parts"] == [{"text": " more"}]
    update = status["statusUpdate"]
    assert update["status"]["state"] == "TASK_STATE_WORKING"
    assert update["status"]["message"]["parts"][0]["text"] == "file_expense: waiting for a person"


@pytest.mark.parametrize(
    ("header", "position"),
    [
        ("7", Position(7)),
        ("6.1", Position(6, 1)),
        ("7.0.12", Position(7, live=12)),
        ("7.0.x", None),
        ("7.1.2.3", None),
    ],
)
def test_a_last_event_id_names_a_position(header: str, position: Position | None) -> None:
    assert position_of(header) == position


def test_a_follower_resumes_after_the_update_it_was_given(hub: wakeups.Hub) -> None:
    store = InMemoryTaskStore()
    task = working(store)
    seq = lifecycle.read(task).seq
    feed = live.feeds().open(task["id"], seq)
    try:
        for update in (chunk(0, "a", reset=True), chunk(0, "b"), chunk(0, "c")):
            feed.add(update)
        follower = Follower(task, Dialect.V03, after=Position(seq, live=1))
        assert follower.opening() == []
        found = follower.read_all(store)
        messages = follower.take(*found)
        assert [m.id for m in messages] == [f"{seq}.0.3"]
        assert messages[0].result["artifact"]["parts"][0]["text"] == "bc"
        assert messages[0].result["append"] is True
        assert follower.position == Position(seq, live=3)
        assert follower.read_here() == ([], None, [], [])
    finally:
        live.feeds().close(feed)
    done = lifecycle.complete(store, store.get(task["id"]) or task, "abc")
    assert done is not None
    messages = follower.take(*follower.read_all(store))
    assert [m.result["kind"] for m in messages] == ["artifact-update", "status-update"]
    assert messages[0].result["artifact"]["parts"][0]["text"] == "abc"
    assert follower.done
