"""What the run path costs the database: a move in this process hands its
waiters the version it stored (no read back), and a run makes two trips to
the database threads — one to take and prepare it, one to conclude it."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.db import connections, transaction

from tests.conftest import wait_until
from tests.counting import CountingStore
from tests.fakes import FakeLLM, Text
from toolnexus_django import lifecycle
from toolnexus_django.a2a import follow
from toolnexus_django.agent.runtime import get_runtime
from toolnexus_django.fulfilment import runner
from toolnexus_django.lifecycle import wakeups
from toolnexus_django.stores import DjangoTaskStore
from toolnexus_django.stores.base import Task, state_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_other_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The poller's beat finds this process's moves in the event log too; a
    beat between a move's commit and its hand-over has the waiter read once
    more — whenever a test outlasts a beat, as on PostgreSQL. These tests are
    about local moves: the poller finds nothing (its own tests are in
    tests/lifecycle/test_wakeups.py)."""
    monkeypatch.setattr(wakeups.Hub, "_moved_in", lambda self, store, watched: {})


def submitted(store: DjangoTaskStore) -> Task:
    message = {"messageId": str(uuid.uuid4()), "role": "user", "parts": [{"kind": "text"}]}
    message["parts"][0]["text"] = "file my claim"
    return lifecycle.submit(store, message, owner=None, text="file my claim").task


def test_a_local_move_hands_its_version_to_the_waiters() -> None:
    store = DjangoTaskStore()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        claimed = lifecycle.claim(store, task, worker="w-1")
        assert claimed is not None
        assert watch.wait(0)
        assert watch.news(task) is claimed.task  # newer than the waiter's: taken as is
        lifecycle.renew(store, claimed.task)  # no event, same seq: nothing newer
        assert watch.news(claimed.task) is claimed.task
        assert watch.news(claimed.task) is None  # nothing told since: read the store


def test_a_move_inside_a_transaction_or_elsewhere_is_read_from_the_store() -> None:
    store = DjangoTaskStore()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        with transaction.atomic():
            claimed = lifecycle.claim(store, task, worker="w-1")
        assert claimed is not None and watch.wait(0)
        assert watch.news(task) is None  # it might have rolled back
        lifecycle.complete(store, claimed.task, "done")
        wakeups.notify(task["id"])  # as the poller does for another process's move
        assert watch.news(claimed.task) is None


def test_a_blocking_wait_reads_the_task_once_when_its_run_is_local(settings: Any) -> None:
    # The local hand-over alone: on PostgreSQL this process's listener may hear
    # a move's NOTIFY before the mover hands its version over, and the waiter
    # then reads the store (benchmarks/RESULTS.md: 0.24-0.5 reads per blocking
    # send); that race is the listener's, not what this test counts.
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "EVENT_LISTENER": False}
    from toolnexus_django.lifecycle import listener

    listening = listener._listening.peek()
    assert listening is None or listening.close(5), "an earlier test's listener still runs"
    store = CountingStore()
    task = submitted(store)

    def run() -> None:
        try:
            wait_until(lambda: wakeups.hub().watching == 1, timeout=10, what="the waiter")
            claimed = lifecycle.claim(store, task, worker="w-1")
            assert claimed is not None
            lifecycle.complete(store, claimed.task, "filed")
        finally:
            connections.close_all()

    mover = threading.Thread(target=run)
    mover.start()
    try:
        done = follow.wait_settled(store, task, timeout=10)
    finally:
        mover.join(10)
    assert state_of(done) == "completed"
    assert done == DjangoTaskStore().get(task["id"])
    assert store.gets == 1  # once after watching; each move handed its version over


def test_a_run_makes_two_trips_to_the_database_threads(configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm, store="django")
    fake_llm.push(Text("filed: EXP-1"))
    store = DjangoTaskStore()
    task = submitted(store)

    class Trips(runner.CallerThread):
        count = 0

        async def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return await super().__call__(fn, *args, **kwargs)

    db = Trips()
    state = db.serve(get_runtime().run_coroutine(runner.fulfil(task["id"], store, db)))
    assert state == "completed"
    assert db.count == 2
    stored = store.get(task["id"])
    assert stored is not None and stored["artifacts"][0]["parts"][0]["text"] == "filed: EXP-1"
    assert [e["kind"] for e in store.events(task["id"])] == ["submit", "claim", "complete"]


def test_a_run_claims_from_the_version_handed_over_without_reading_it(
    configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.push(Text("filed: EXP-1"), Text("filed: EXP-2"))
    store = CountingStore()
    task = submitted(store)
    db = runner.CallerThread()
    run = runner.fulfil(task["id"], store, db, known=task)
    assert db.serve(get_runtime().run_coroutine(run)) == "completed"
    assert store.gets == 0  # claimed from the submitted version as handed over

    # An outdated version (the Task moved since): its claim loses, the run
    # reads the Task and claims from that, as without it.
    task = submitted(store)
    outdated = {**task, "_private": {**task["_private"], "revision": -1}}
    run = runner.fulfil(task["id"], store, db, known=outdated)
    assert db.serve(get_runtime().run_coroutine(run)) == "completed"
    assert store.gets == 1


def test_a_made_up_context_has_no_conversation_to_read(
    configure: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send without a contextId gets a new one: its run reads no
    conversation (none can have it yet); a send naming one reads it."""
    from toolnexus_django.agent.conversations import DjangoConversationStore

    configure(fake_llm, store="django")
    fake_llm.push(Text("filed: EXP-1"), Text("filed: EXP-2"))
    reads: list[str] = []
    real = DjangoConversationStore.get_sync
    monkeypatch.setattr(
        DjangoConversationStore, "get_sync", lambda self, key: reads.append(key) or real(self, key)
    )
    store = DjangoTaskStore()
    db = runner.CallerThread()
    task = submitted(store)
    assert db.serve(get_runtime().run_coroutine(runner.fulfil(task["id"], store, db))) == (
        "completed"
    )
    assert reads == []
    message = {"messageId": str(uuid.uuid4()), "role": "user", "contextId": task["contextId"]}
    message["parts"] = [{"kind": "text", "text": "and another"}]
    again = lifecycle.submit(store, message, owner=None, text="and another").task
    assert db.serve(get_runtime().run_coroutine(runner.fulfil(again["id"], store, db))) == (
        "completed"
    )
    assert reads == [f"-/{task['contextId']}"]
